package server

import (
	"fmt"
	"math"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/rpc/rlmmpb"
)

// Conversions between the frames' messages and rlmm's types. A message from
// the network is checked here only for what the types cannot hold (a
// missing field, a number outside int8's range); rlmm's own validation runs
// in the manager, so the server refuses exactly what the library refuses.

// badRequest is a malformed request: rlmm.ErrInvalidArgument, nothing published.
func badRequest(format string, args ...any) error {
	return notPublished{fmt.Errorf("%w: %s", rlmm.ErrInvalidArgument, fmt.Sprintf(format, args...))}
}

func uuidFromProto(u *rlmmpb.Uuid) rlmm.Uuid {
	return rlmm.UuidFromBits(int64(u.GetMostSignificantBits()), int64(u.GetLeastSignificantBits()))
}

func uuidToProto(u rlmm.Uuid) *rlmmpb.Uuid {
	return &rlmmpb.Uuid{
		MostSignificantBits:  uint64(u.MostSignificantBits()),
		LeastSignificantBits: uint64(u.LeastSignificantBits()),
	}
}

// tpFromProto converts a request's partition; field names the field in the
// error when it is missing.
func tpFromProto(p *rlmmpb.TopicIdPartition, field string) (rlmm.TopicIDPartition, error) {
	if p == nil {
		return rlmm.TopicIDPartition{}, badRequest("%s is missing", field)
	}
	if p.GetTopicId() == nil {
		return rlmm.TopicIDPartition{}, badRequest("%s.topic_id is missing", field)
	}
	return rlmm.TopicIDPartition{TopicID: uuidFromProto(p.TopicId), Topic: p.Topic, Partition: p.Partition}, nil
}

func tpsFromProto(ps []*rlmmpb.TopicIdPartition, field string) ([]rlmm.TopicIDPartition, error) {
	out := make([]rlmm.TopicIDPartition, len(ps))
	for i, p := range ps {
		tp, err := tpFromProto(p, fmt.Sprintf("%s[%d]", field, i))
		if err != nil {
			return nil, err
		}
		out[i] = tp
	}
	return out, nil
}

func tpToProto(tp rlmm.TopicIDPartition) *rlmmpb.TopicIdPartition {
	return &rlmmpb.TopicIdPartition{TopicId: uuidToProto(tp.TopicID), Topic: tp.Topic, Partition: tp.Partition}
}

// segmentIDFromProto converts the (partition, segment id) pair of a message.
func segmentIDFromProto(tp *rlmmpb.TopicIdPartition, id *rlmmpb.Uuid, field string) (rlmm.SegmentID, error) {
	p, err := tpFromProto(tp, field+".topic_id_partition")
	if err != nil {
		return rlmm.SegmentID{}, err
	}
	if id == nil {
		return rlmm.SegmentID{}, badRequest("%s.segment_id is missing", field)
	}
	return rlmm.SegmentID{TopicIDPartition: p, ID: uuidFromProto(id)}, nil
}

// segmentStateFromProto keeps an undefined state undefined (the manager's
// validation names it) unless it does not even fit Kafka's byte.
func segmentStateFromProto(s rlmmpb.SegmentState, field string) (rlmm.SegmentState, error) {
	if s < math.MinInt8 || s > math.MaxInt8 {
		return 0, badRequest("%s %d is not a segment state", field, int32(s))
	}
	return rlmm.SegmentState(s), nil
}

func segmentFromProto(m *rlmmpb.SegmentMetadata) (rlmm.SegmentMetadata, error) {
	if m == nil {
		return rlmm.SegmentMetadata{}, badRequest("segment is missing")
	}
	id, err := segmentIDFromProto(m.TopicIdPartition, m.SegmentId, "segment")
	if err != nil {
		return rlmm.SegmentMetadata{}, err
	}
	st, err := segmentStateFromProto(m.State, "segment.state")
	if err != nil {
		return rlmm.SegmentMetadata{}, err
	}
	out := rlmm.SegmentMetadata{
		ID:               id,
		StartOffset:      m.StartOffset,
		EndOffset:        m.EndOffset,
		MaxTimestampMs:   m.MaxTimestampMs,
		BrokerID:         m.BrokerId,
		EventTimestampMs: m.EventTimestampMs,
		SizeInBytes:      m.SegmentSizeInBytes,
		CustomMetadata:   customFromProto(m.CustomMetadata),
		State:            st,
		TxnIndexEmpty:    m.TxnIndexEmpty,
	}
	if len(m.LeaderEpochs) > 0 {
		out.LeaderEpochs = make([]rlmm.EpochStart, len(m.LeaderEpochs))
		for i, e := range m.LeaderEpochs {
			if e == nil {
				return rlmm.SegmentMetadata{}, badRequest("segment.leader_epochs[%d] is missing", i)
			}
			out.LeaderEpochs[i] = rlmm.EpochStart{Epoch: e.Epoch, StartOffset: e.StartOffset}
		}
	}
	return out, nil
}

// customFromProto keeps absent (nil) and present-but-empty apart: the
// generated code gives a present empty field as a non-nil empty slice.
func customFromProto(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}

func segmentToProto(m *rlmm.SegmentMetadata) *rlmmpb.SegmentMetadata {
	out := &rlmmpb.SegmentMetadata{
		TopicIdPartition:   tpToProto(m.ID.TopicIDPartition),
		SegmentId:          uuidToProto(m.ID.ID),
		StartOffset:        m.StartOffset,
		EndOffset:          m.EndOffset,
		MaxTimestampMs:     m.MaxTimestampMs,
		BrokerId:           m.BrokerID,
		EventTimestampMs:   m.EventTimestampMs,
		LeaderEpochs:       make([]*rlmmpb.EpochStart, len(m.LeaderEpochs)),
		SegmentSizeInBytes: m.SizeInBytes,
		CustomMetadata:     m.CustomMetadata,
		State:              rlmmpb.SegmentState(m.State),
		TxnIndexEmpty:      m.TxnIndexEmpty,
	}
	// One allocation for every epoch entry of the segment.
	epochs := make([]rlmmpb.EpochStart, len(m.LeaderEpochs))
	for i, e := range m.LeaderEpochs {
		epochs[i].Epoch, epochs[i].StartOffset = e.Epoch, e.StartOffset
		out.LeaderEpochs[i] = &epochs[i]
	}
	return out
}

func updateFromProto(u *rlmmpb.SegmentUpdate) (rlmm.SegmentUpdate, error) {
	if u == nil {
		return rlmm.SegmentUpdate{}, badRequest("update is missing")
	}
	id, err := segmentIDFromProto(u.TopicIdPartition, u.SegmentId, "update")
	if err != nil {
		return rlmm.SegmentUpdate{}, err
	}
	st, err := segmentStateFromProto(u.State, "update.state")
	if err != nil {
		return rlmm.SegmentUpdate{}, err
	}
	return rlmm.SegmentUpdate{
		ID:               id,
		EventTimestampMs: u.EventTimestampMs,
		CustomMetadata:   customFromProto(u.CustomMetadata),
		State:            st,
		BrokerID:         u.BrokerId,
	}, nil
}

func deleteFromProto(d *rlmmpb.PartitionDelete) (rlmm.PartitionDelete, error) {
	if d == nil {
		return rlmm.PartitionDelete{}, badRequest("delete is missing")
	}
	tp, err := tpFromProto(d.TopicIdPartition, "delete.topic_id_partition")
	if err != nil {
		return rlmm.PartitionDelete{}, err
	}
	if d.State < math.MinInt8 || d.State > math.MaxInt8 {
		return rlmm.PartitionDelete{}, badRequest("delete.state %d is not a partition delete state", int32(d.State))
	}
	return rlmm.PartitionDelete{
		TopicIDPartition: tp,
		State:            rlmm.PartitionDeleteState(d.State),
		EventTimestampMs: d.EventTimestampMs,
		BrokerID:         d.BrokerId,
	}, nil
}

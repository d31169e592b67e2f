package server

import (
	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/rpc/rlmmpb"
)

// lookupAnswerer answers the lookups of one framed connection, one request
// at a time: the segment is filled in place (SegmentForOffsetInto) and the
// reply refilled for every answer (lookupAnswer), so a hit allocates
// nothing of its own.
type lookupAnswerer struct {
	v   *service
	md  rlmm.SegmentMetadata
	ans lookupAnswer
}

// find looks the request up into a.md: whether a segment was found, or
// the error (a request without a partition, a server still starting, a
// partition not assigned or not ready).
func (a *lookupAnswerer) find(q *rlmmpb.SegmentForOffsetRequest) (bool, error) {
	tp, err := tpFromProto(q.GetTopicIdPartition(), "topic_id_partition")
	if err != nil {
		return false, err
	}
	m, err := a.v.reader()
	if err != nil {
		return false, err
	}
	return m.SegmentForOffsetInto(tp, q.GetLeaderEpoch(), q.GetOffset(), &a.md)
}

// lookupAnswer is a lookup's reply and every message inside it, kept by
// the connection and refilled for each answer: on a hit, the reply points
// at the segment's fields as SegmentForOffsetInto filled them, and nothing
// is allocated but what grows (the epochs, once per connection). The
// connection encodes one answer before it fills the next.
type lookupAnswer struct {
	found  rlmmpb.SegmentReply
	seg    rlmmpb.SegmentMetadata
	tp     rlmmpb.TopicIdPartition
	topic  rlmmpb.Uuid
	id     rlmmpb.Uuid
	epochs []rlmmpb.EpochStart
	ptrs   []*rlmmpb.EpochStart
}

// hit answers md (segmentToProto's message, field for field).
func (a *lookupAnswer) hit(md *rlmm.SegmentMetadata) {
	a.topic.MostSignificantBits = uint64(md.ID.TopicIDPartition.TopicID.MostSignificantBits())
	a.topic.LeastSignificantBits = uint64(md.ID.TopicIDPartition.TopicID.LeastSignificantBits())
	a.tp.TopicId, a.tp.Topic, a.tp.Partition = &a.topic, md.ID.TopicIDPartition.Topic, md.ID.TopicIDPartition.Partition
	a.id.MostSignificantBits = uint64(md.ID.ID.MostSignificantBits())
	a.id.LeastSignificantBits = uint64(md.ID.ID.LeastSignificantBits())
	if n := len(md.LeaderEpochs); cap(a.epochs) < n {
		a.epochs = make([]rlmmpb.EpochStart, n)
		a.ptrs = make([]*rlmmpb.EpochStart, n)
		for i := range a.epochs {
			a.ptrs[i] = &a.epochs[i]
		}
	}
	for i, e := range md.LeaderEpochs {
		a.epochs[i].Epoch, a.epochs[i].StartOffset = e.Epoch, e.StartOffset
	}
	s := &a.seg
	s.TopicIdPartition, s.SegmentId = &a.tp, &a.id
	s.StartOffset, s.EndOffset = md.StartOffset, md.EndOffset
	s.MaxTimestampMs, s.BrokerId, s.EventTimestampMs = md.MaxTimestampMs, md.BrokerID, md.EventTimestampMs
	s.LeaderEpochs = a.ptrs[:len(md.LeaderEpochs)]
	s.SegmentSizeInBytes, s.CustomMetadata = md.SizeInBytes, md.CustomMetadata
	s.State, s.TxnIndexEmpty = rlmmpb.SegmentState(md.State), md.TxnIndexEmpty
	a.found.Found, a.found.Segment = true, s
}

// miss answers "no segment" (an empty SegmentReply).
func (a *lookupAnswer) miss() {
	a.found.Found, a.found.Segment = false, nil
}

package wire

import (
	"fmt"
	"math"

	"github.com/rlmm-go/rlmm"
	"github.com/twmb/franz-go/pkg/kbin"
)

// frameVersion is the version of the frame AbstractApiMessageSerde writes
// before every record: 1 in every Kafka release (its javadoc says 0).
const frameVersion = 1

// recordVersion is the record version AppendEvent writes: 0, the only one
// of every released Kafka (4.4 included), for all four record types.
const recordVersion = 0

// maxRecordVersion is the highest record version DecodeEvent reads: 1, as
// KIP-1266 (apache/kafka PR #22459, unreleased) defines it.
const maxRecordVersion = 1

// maxStringLen is Kafka's limit for a compact string (a topic name).
const maxStringLen = math.MaxInt16

// maxBytesLen is the longest byte array a compact length (an int32 holding
// length+1) can describe.
const maxBytesLen = math.MaxInt32 - 1

// customMetadata returns the custom metadata the event carries, if any.
func (e *Event) customMetadata() []byte {
	switch e.Key {
	case KeySegment, KeySnapshot:
		return e.Segment.CustomMetadata
	case KeyUpdate:
		return e.Update.CustomMetadata
	}
	return nil
}

// AppendEvent appends the record value of e, exactly as Kafka 4.x's
// RemoteLogMetadataSerde writes it, to dst and returns the extended slice.
// It allocates nothing when dst has room. It writes record version 0
// whatever e.Version says, without e's version 1 fields and unknown tagged
// fields, as every released Kafka writes (the record's key stays null).
//
// It refuses (with an error wrapping rlmm.ErrInvalidArgument, and dst
// returned unchanged) what Kafka's own model could not hold, so that every
// record it writes is one that Java brokers read: an unknown key, an
// undefined state, a topic name longer than 32767 bytes, and for segments
// anything SegmentMetadata.Validate rejects (for a snapshot, which Kafka does
// not check for offsets: empty or unsorted leader epochs).
func AppendEvent(dst []byte, e *Event) ([]byte, error) {
	if err := checkEncodable(e); err != nil {
		return dst, err
	}
	dst = append(dst, frameVersion, byte(e.Key), recordVersion)
	switch e.Key {
	case KeySegment:
		m := &e.Segment
		dst = appendSegmentID(dst, &m.ID)
		dst = appendSegmentFields(dst, m)
	case KeyUpdate:
		u := &e.Update
		dst = appendSegmentID(dst, &u.ID)
		dst = kbin.AppendInt32(dst, u.BrokerID)
		dst = kbin.AppendInt64(dst, u.EventTimestampMs)
		dst = kbin.AppendCompactNullableBytes(dst, u.CustomMetadata)
		dst = append(dst, byte(u.State), 0)
	case KeyPartitionDelete:
		d := &e.PartitionDelete
		dst = appendTopicIDPartition(dst, &d.TopicIDPartition)
		dst = kbin.AppendInt32(dst, d.BrokerID)
		dst = kbin.AppendInt64(dst, d.EventTimestampMs)
		dst = append(dst, byte(d.State), 0)
	case KeySnapshot:
		m := &e.Segment
		dst = kbin.AppendUuid(dst, m.ID.ID)
		dst = appendSegmentFields(dst, m)
	}
	return dst, nil
}

// checkEncodable is AppendEvent's refusal list; it allocates only on error.
func checkEncodable(e *Event) error {
	var tp *rlmm.TopicIDPartition
	switch e.Key {
	case KeySegment:
		if err := e.Segment.Validate(); err != nil {
			return fmt.Errorf("wire: cannot encode %s: %w", e.Key, err)
		}
		tp = &e.Segment.ID.TopicIDPartition
	case KeyUpdate:
		if !e.Update.State.Valid() {
			return fmt.Errorf("%w: wire: cannot encode %s of segment %s: undefined state %d",
				rlmm.ErrInvalidArgument, e.Key, e.Update.ID.ID, int8(e.Update.State))
		}
		tp = &e.Update.ID.TopicIDPartition
	case KeyPartitionDelete:
		if err := e.PartitionDelete.Validate(); err != nil {
			return fmt.Errorf("wire: cannot encode %s: %w", e.Key, err)
		}
		tp = &e.PartitionDelete.TopicIDPartition
	case KeySnapshot:
		m := &e.Segment
		if len(m.LeaderEpochs) == 0 {
			return fmt.Errorf("%w: wire: cannot encode %s of segment %s: leader epochs are empty",
				rlmm.ErrInvalidArgument, e.Key, m.ID.ID)
		}
		for i := 1; i < len(m.LeaderEpochs); i++ {
			if m.LeaderEpochs[i].Epoch <= m.LeaderEpochs[i-1].Epoch {
				return fmt.Errorf("%w: wire: cannot encode %s of segment %s: leader epochs not sorted without duplicates",
					rlmm.ErrInvalidArgument, e.Key, m.ID.ID)
			}
		}
		if !m.State.Valid() {
			return fmt.Errorf("%w: wire: cannot encode %s of segment %s: undefined state %d",
				rlmm.ErrInvalidArgument, e.Key, m.ID.ID, int8(m.State))
		}
	default:
		return fmt.Errorf("%w: wire: cannot encode an event with unknown key %d", rlmm.ErrInvalidArgument, int16(e.Key))
	}
	if c := e.customMetadata(); len(c) > maxBytesLen {
		return fmt.Errorf("%w: wire: cannot encode %s: custom metadata of %d bytes is too long",
			rlmm.ErrInvalidArgument, e.Key, len(c))
	}
	if tp == nil {
		return nil
	}
	if len(tp.Topic) > maxStringLen {
		return fmt.Errorf("%w: wire: cannot encode %s: topic name of %d bytes is longer than Kafka's limit of %d",
			rlmm.ErrInvalidArgument, e.Key, len(tp.Topic), maxStringLen)
	}
	return nil
}

// appendTopicIDPartition writes TopicIdPartitionEntry: name, id, partition,
// and an empty tagged-field section.
func appendTopicIDPartition(dst []byte, tp *rlmm.TopicIDPartition) []byte {
	dst = kbin.AppendCompactString(dst, tp.Topic)
	dst = kbin.AppendUuid(dst, tp.TopicID)
	dst = kbin.AppendInt32(dst, tp.Partition)
	return append(dst, 0)
}

// appendSegmentID writes RemoteLogSegmentIdEntry.
func appendSegmentID(dst []byte, id *rlmm.SegmentID) []byte {
	dst = appendTopicIDPartition(dst, &id.TopicIDPartition)
	dst = kbin.AppendUuid(dst, id.ID)
	return append(dst, 0)
}

// appendSegmentFields writes what segment and snapshot records share after
// their ids: offsets, broker, timestamps, epochs, size, custom metadata,
// state and the top-level tagged fields (TxnIndexEmpty, tag 0, only when
// true).
func appendSegmentFields(dst []byte, m *rlmm.SegmentMetadata) []byte {
	dst = kbin.AppendInt64(dst, m.StartOffset)
	dst = kbin.AppendInt64(dst, m.EndOffset)
	dst = kbin.AppendInt32(dst, m.BrokerID)
	dst = kbin.AppendInt64(dst, m.MaxTimestampMs)
	dst = kbin.AppendInt64(dst, m.EventTimestampMs)
	dst = kbin.AppendCompactArrayLen(dst, len(m.LeaderEpochs))
	for _, le := range m.LeaderEpochs {
		dst = kbin.AppendInt32(dst, le.Epoch)
		dst = kbin.AppendInt64(dst, le.StartOffset)
		dst = append(dst, 0)
	}
	dst = kbin.AppendInt32(dst, m.SizeInBytes)
	dst = kbin.AppendCompactNullableBytes(dst, m.CustomMetadata)
	dst = append(dst, byte(m.State))
	if m.TxnIndexEmpty {
		// One tagged field: tag 0, size 1, value true.
		return append(dst, 1, 0, 1, 1)
	}
	return append(dst, 0)
}

package rlmm

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// TopicIDPartition names a user partition: Kafka's TopicIdPartition. As in
// Kafka, equality includes the topic name.
type TopicIDPartition struct {
	TopicID   Uuid
	Topic     string
	Partition int32
}

// String prints Kafka's form, <topicId>:<topic>-<partition>.
func (tp TopicIDPartition) String() string {
	return tp.TopicID.String() + ":" + tp.Topic + "-" + strconv.FormatInt(int64(tp.Partition), 10)
}

// SegmentID identifies one remote log segment (one copy attempt) of a user
// partition: Kafka's RemoteLogSegmentId.
type SegmentID struct {
	TopicIDPartition TopicIDPartition
	ID               Uuid
}

// String prints Kafka's form, RemoteLogSegmentId{topicIdPartition=..., id=...}.
func (s SegmentID) String() string {
	return "RemoteLogSegmentId{topicIdPartition=" + s.TopicIDPartition.String() + ", id=" + s.ID.String() + "}"
}

// EpochStart is one entry of a segment's leader epoch map: the first offset of
// Epoch inside the segment.
type EpochStart struct {
	Epoch       int32
	StartOffset int64
}

// SegmentMetadata is the metadata of a remote log segment: Kafka's
// RemoteLogSegmentMetadata.
type SegmentMetadata struct {
	ID             SegmentID
	StartOffset    int64
	EndOffset      int64
	MaxTimestampMs int64
	BrokerID       int32
	// EventTimestampMs is when the event that produced this metadata happened.
	EventTimestampMs int64
	// LeaderEpochs maps each leader epoch of the segment to its first offset
	// in the segment, sorted by epoch, non-empty.
	LeaderEpochs []EpochStart
	SizeInBytes  int32
	// CustomMetadata is the remote storage plugin's opaque data. nil means
	// absent; a non-nil empty slice is present and empty (Kafka keeps the two
	// apart on the wire).
	CustomMetadata []byte
	State          SegmentState
	// TxnIndexEmpty is true when the segment has no transaction index (Kafka 4.0+).
	TxnIndexEmpty bool
}

// Validate applies exactly the rules of Kafka's RemoteLogSegmentMetadata
// constructor (start >= 0, end >= start, leader epochs non-empty) plus
// epochs sorted without duplicates and a defined state. It never rejects what
// Kafka accepts: events written by Java brokers must not be lost. Stricter
// sanity checks are in Sanity. The error wraps ErrInvalidArgument.
func (m *SegmentMetadata) Validate() error {
	if m.StartOffset < 0 {
		return fmt.Errorf("%w: segment %s: start offset %d is negative", ErrInvalidArgument, m.ID.ID, m.StartOffset)
	}
	if m.EndOffset < m.StartOffset {
		return fmt.Errorf("%w: segment %s: end offset %d is below start offset %d", ErrInvalidArgument, m.ID.ID, m.EndOffset, m.StartOffset)
	}
	if len(m.LeaderEpochs) == 0 {
		return fmt.Errorf("%w: segment %s: leader epochs are empty", ErrInvalidArgument, m.ID.ID)
	}
	for i := 1; i < len(m.LeaderEpochs); i++ {
		if m.LeaderEpochs[i].Epoch <= m.LeaderEpochs[i-1].Epoch {
			return fmt.Errorf("%w: segment %s: leader epochs not sorted without duplicates (epoch %d after %d)",
				ErrInvalidArgument, m.ID.ID, m.LeaderEpochs[i].Epoch, m.LeaderEpochs[i-1].Epoch)
		}
	}
	if !m.State.Valid() {
		return fmt.Errorf("%w: segment %s: undefined state %d", ErrInvalidArgument, m.ID.ID, int8(m.State))
	}
	return nil
}

// Sanity applies checks stricter than Kafka's: each epoch's start offset lies
// inside [StartOffset, EndOffset], the first equals StartOffset, and they
// increase with the epoch. Kafka accepts metadata that fails them, so rlmm
// never rejects an event for it; `rlmm verify` reports it as a warning.
func (m *SegmentMetadata) Sanity() error {
	for i, e := range m.LeaderEpochs {
		if e.StartOffset < m.StartOffset || e.StartOffset > m.EndOffset {
			return fmt.Errorf("segment %s: epoch %d starts at %d, outside [%d, %d]", m.ID.ID, e.Epoch, e.StartOffset, m.StartOffset, m.EndOffset)
		}
		if i == 0 && e.StartOffset != m.StartOffset {
			return fmt.Errorf("segment %s: first epoch %d starts at %d, not at the segment start %d", m.ID.ID, e.Epoch, e.StartOffset, m.StartOffset)
		}
		if i > 0 && e.StartOffset <= m.LeaderEpochs[i-1].StartOffset {
			return fmt.Errorf("segment %s: epoch %d starts at %d, not after epoch %d at %d", m.ID.ID, e.Epoch, e.StartOffset, m.LeaderEpochs[i-1].Epoch, m.LeaderEpochs[i-1].StartOffset)
		}
	}
	return nil
}

// EpochRange returns the offsets [start, end] that leader epoch covers inside
// the segment, as Kafka computes them: the epoch's start offset, and the
// next epoch's start minus one (or the segment's end offset for the last
// epoch). ok is false when the segment does not carry the epoch.
func (m *SegmentMetadata) EpochRange(epoch int32) (start, end int64, ok bool) {
	i, found := slices.BinarySearchFunc(m.LeaderEpochs, epoch, func(e EpochStart, t int32) int { return cmp.Compare(e.Epoch, t) })
	if !found {
		return 0, 0, false
	}
	return m.LeaderEpochs[i].StartOffset, EpochEnd(m.LeaderEpochs, i, m.EndOffset), true
}

// EpochEnd is Kafka's last offset of epochs[k] inside a segment ending at
// segmentEnd: the next epoch's start minus one, or segmentEnd for the last
// epoch. epochs is sorted by epoch.
func EpochEnd(epochs []EpochStart, k int, segmentEnd int64) int64 {
	if k+1 < len(epochs) {
		return epochs[k+1].StartOffset - 1
	}
	return segmentEnd
}

// Clone returns a deep copy: the caller may modify it freely.
func (m SegmentMetadata) Clone() SegmentMetadata {
	m.LeaderEpochs = slices.Clone(m.LeaderEpochs)
	if m.CustomMetadata != nil {
		m.CustomMetadata = append([]byte{}, m.CustomMetadata...)
	}
	return m
}

// Equal reports whether two metadata values are equal field by field, custom
// metadata by content with nil distinct from empty (Kafka's equals).
func (m *SegmentMetadata) Equal(o *SegmentMetadata) bool {
	return m.ID == o.ID && m.StartOffset == o.StartOffset && m.EndOffset == o.EndOffset &&
		m.MaxTimestampMs == o.MaxTimestampMs && m.BrokerID == o.BrokerID &&
		m.EventTimestampMs == o.EventTimestampMs && slices.Equal(m.LeaderEpochs, o.LeaderEpochs) &&
		m.SizeInBytes == o.SizeInBytes && customEqual(m.CustomMetadata, o.CustomMetadata) &&
		m.State == o.State && m.TxnIndexEmpty == o.TxnIndexEmpty
}

func customEqual(a, b []byte) bool { return (a == nil) == (b == nil) && bytes.Equal(a, b) }

// WithUpdate is Kafka's createWithUpdates: a copy of m that takes the broker
// id, event timestamp, custom metadata (replaced, possibly by absent) and
// state from u. The ids must be equal (ErrInvalidArgument otherwise).
func (m SegmentMetadata) WithUpdate(u SegmentUpdate) (SegmentMetadata, error) {
	if m.ID != u.ID {
		return SegmentMetadata{}, fmt.Errorf("%w: update for %s applied to segment %s", ErrInvalidArgument, u.ID, m.ID)
	}
	m = m.Clone()
	m.BrokerID = u.BrokerID
	m.EventTimestampMs = u.EventTimestampMs
	m.CustomMetadata = nil
	if u.CustomMetadata != nil {
		m.CustomMetadata = append([]byte{}, u.CustomMetadata...)
	}
	m.State = u.State
	return m, nil
}

// String prints Kafka 4.x's RemoteLogSegmentMetadata.toString form.
func (m SegmentMetadata) String() string {
	var b strings.Builder
	b.WriteString("RemoteLogSegmentMetadata{remoteLogSegmentId=")
	b.WriteString(m.ID.String())
	fmt.Fprintf(&b, ", startOffset=%d, endOffset=%d, brokerId=%d, maxTimestampMs=%d, eventTimestampMs=%d, segmentLeaderEpochs=",
		m.StartOffset, m.EndOffset, m.BrokerID, m.MaxTimestampMs, m.EventTimestampMs)
	WriteEpochs(&b, m.LeaderEpochs)
	fmt.Fprintf(&b, ", segmentSizeInBytes=%d, customMetadata=%s, state=%s, txnIdxEmpty=%t}",
		m.SizeInBytes, FormatCustomMetadata(m.CustomMetadata), m.State, m.TxnIndexEmpty)
	return b.String()
}

// WriteEpochs writes leader epochs the way Java prints a sorted map: {0=0, 1=20}.
func WriteEpochs(b *strings.Builder, epochs []EpochStart) {
	b.WriteByte('{')
	for i, e := range epochs {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.FormatInt(int64(e.Epoch), 10))
		b.WriteByte('=')
		b.WriteString(strconv.FormatInt(e.StartOffset, 10))
	}
	b.WriteByte('}')
}

// FormatCustomMetadata prints custom metadata the way Kafka prints its
// Optional<CustomMetadata>: Optional.empty or Optional[CustomMetadata{n bytes}].
func FormatCustomMetadata(c []byte) string {
	if c == nil {
		return "Optional.empty"
	}
	return "Optional[CustomMetadata{" + strconv.Itoa(len(c)) + " bytes}]"
}

// SegmentUpdate moves a segment to a new state: Kafka's
// RemoteLogSegmentMetadataUpdate.
type SegmentUpdate struct {
	ID               SegmentID
	EventTimestampMs int64
	// CustomMetadata replaces the segment's custom metadata; nil is absent.
	CustomMetadata []byte
	State          SegmentState
	BrokerID       int32
}

// Validate checks what Kafka's API checks before publishing an update: the
// target state is defined and is not COPY_SEGMENT_STARTED.
func (u *SegmentUpdate) Validate() error {
	if !u.State.Valid() {
		return fmt.Errorf("%w: update of segment %s: undefined state %d", ErrInvalidArgument, u.ID.ID, int8(u.State))
	}
	if u.State == CopySegmentStarted {
		return fmt.Errorf("%w: update of segment %s: an update cannot move a segment to %s", ErrInvalidArgument, u.ID.ID, CopySegmentStarted)
	}
	return nil
}

// String prints Kafka's RemoteLogSegmentMetadataUpdate.toString form.
func (u SegmentUpdate) String() string {
	return fmt.Sprintf("RemoteLogSegmentMetadataUpdate{remoteLogSegmentId=%s, customMetadata=%s, state=%s, eventTimestampMs=%d, brokerId=%d}",
		u.ID, FormatCustomMetadata(u.CustomMetadata), u.State, u.EventTimestampMs, u.BrokerID)
}

// PartitionDelete records the deletion state of a user partition's remote
// data: Kafka's RemotePartitionDeleteMetadata.
type PartitionDelete struct {
	TopicIDPartition TopicIDPartition
	State            PartitionDeleteState
	EventTimestampMs int64
	BrokerID         int32
}

// Validate checks that the state is defined.
func (d *PartitionDelete) Validate() error {
	if !d.State.Valid() {
		return fmt.Errorf("%w: partition delete of %s: undefined state %d", ErrInvalidArgument, d.TopicIDPartition, int8(d.State))
	}
	return nil
}

// String prints Kafka's RemotePartitionDeleteMetadata.toString form.
func (d PartitionDelete) String() string {
	return fmt.Sprintf("RemotePartitionDeleteMetadata{topicPartition=%s, state=%s, eventTimestampMs=%d, brokerId=%d}",
		d.TopicIDPartition, d.State, d.EventTimestampMs, d.BrokerID)
}

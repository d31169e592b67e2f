package wire

import (
	"slices"
	"strconv"

	"github.com/rlmm-go/rlmm"
)

// APIKey is the api key of a __remote_log_metadata record: which of Kafka's
// four record types the value holds.
type APIKey int16

// The four record types, with Kafka's api keys.
const (
	// KeySegment is RemoteLogSegmentMetadataRecord: a new segment (add).
	KeySegment APIKey = 0
	// KeyUpdate is RemoteLogSegmentMetadataUpdateRecord: a segment state change.
	KeyUpdate APIKey = 1
	// KeyPartitionDelete is RemotePartitionDeleteMetadataRecord.
	KeyPartitionDelete APIKey = 2
	// KeySnapshot is RemoteLogSegmentMetadataSnapshotRecord, used by Kafka
	// 3.1-3.7 in its local snapshot files; the serde still reads and writes it.
	KeySnapshot APIKey = 3
)

var apiKeyNames = [...]string{
	"RemoteLogSegmentMetadataRecord",
	"RemoteLogSegmentMetadataUpdateRecord",
	"RemotePartitionDeleteMetadataRecord",
	"RemoteLogSegmentMetadataSnapshotRecord",
}

// Valid reports whether k is one of the four record types.
func (k APIKey) Valid() bool { return k >= KeySegment && k <= KeySnapshot }

// String returns the Kafka name of the record type, or APIKey(n).
func (k APIKey) String() string {
	if k.Valid() {
		return apiKeyNames[k]
	}
	return "APIKey(" + strconv.Itoa(int(k)) + ")"
}

// Event is one decoded __remote_log_metadata record. Key says which field is
// set: KeySegment and KeySnapshot use Segment (for KeySnapshot only
// Segment.ID.ID is set, the TopicIDPartition is zero, because Kafka's
// snapshot record carries the segment id alone), KeyUpdate uses Update,
// KeyPartitionDelete uses PartitionDelete. The other fields are zero.
//
// Version, BrokerLeaderEpoch, EndOffset and UnknownTags say what a decoded
// record held beyond Kafka's model: they are read, shown (String, JSON) and
// compared by EqualRecord, never written (AppendEvent writes version 0),
// and the state machine does not hold them (Equal ignores them).
type Event struct {
	Key             APIKey
	Segment         rlmm.SegmentMetadata
	Update          rlmm.SegmentUpdate
	PartitionDelete rlmm.PartitionDelete

	// Version is the record version the frame names: 0, or 1 for a record
	// of KIP-1266 (apache/kafka PR #22459).
	Version int16
	// BrokerLeaderEpoch is version 1's tagged BrokerLeaderEpoch (tag 1 of a
	// segment or snapshot record, tag 0 of an update or partition delete),
	// or its record type's default when absent (V1Defaults); 0 in a
	// version 0 record.
	BrokerLeaderEpoch int32
	// EndOffset is version 1's tagged EndOffset (tag 1) of an update or
	// partition delete record, or its default when absent; 0 otherwise. A
	// segment's end offset is Segment.EndOffset.
	EndOffset int64
	// UnknownTags are the tagged fields the decoder does not know, in the
	// order read (nil when there are none): kept so that `rlmm decode` shows
	// what a newer writer added.
	UnknownTags []TaggedField
}

// TaggedField is a tagged field the decoder does not know, kept whole.
type TaggedField struct {
	// Struct names the struct whose tagged-field section held it: "" for
	// the record's own, else TopicIdPartition, RemoteLogSegmentId or
	// SegmentLeaderEpochs.
	Struct string
	// Index is the element of SegmentLeaderEpochs it belongs to (-1 for
	// every other struct).
	Index int
	// Tag is the field's tag.
	Tag uint32
	// Data is the field's bytes, copied from the record.
	Data []byte
}

// V1Defaults returns the values record version 1 of the record type key
// gives BrokerLeaderEpoch and EndOffset when they are absent (kip-1266.md):
// -1 and -1 for an update record, 0 and 0 for the others (a segment and a
// snapshot record have no EndOffset tag).
func V1Defaults(key APIKey) (brokerLeaderEpoch int32, endOffset int64) {
	if key == KeyUpdate {
		return -1, -1
	}
	return 0, 0
}

// SegmentEvent returns the event that adds segment m (api key 0).
func SegmentEvent(m rlmm.SegmentMetadata) Event { return Event{Key: KeySegment, Segment: m} }

// UpdateEvent returns the event that updates a segment (api key 1).
func UpdateEvent(u rlmm.SegmentUpdate) Event { return Event{Key: KeyUpdate, Update: u} }

// PartitionDeleteEvent returns the event that records a partition's deletion
// state (api key 2).
func PartitionDeleteEvent(d rlmm.PartitionDelete) Event {
	return Event{Key: KeyPartitionDelete, PartitionDelete: d}
}

// TopicIDPartition returns the user partition the event belongs to. It is
// false for KeySnapshot (whose record names no partition, as Kafka's
// snapshot throws UnsupportedOperationException there) and for an unknown key.
func (e *Event) TopicIDPartition() (rlmm.TopicIDPartition, bool) {
	switch e.Key {
	case KeySegment:
		return e.Segment.ID.TopicIDPartition, true
	case KeyUpdate:
		return e.Update.ID.TopicIDPartition, true
	case KeyPartitionDelete:
		return e.PartitionDelete.TopicIDPartition, true
	}
	return rlmm.TopicIDPartition{}, false
}

// Equal reports whether two events are equal: same key and the field that
// key selects equal, custom metadata by content with nil (absent) distinct
// from empty. Fields the key does not select are ignored, and so are what
// the record held beyond the model (Version, BrokerLeaderEpoch, EndOffset,
// UnknownTags): EqualRecord compares those too.
func (e *Event) Equal(o *Event) bool {
	if e.Key != o.Key {
		return false
	}
	switch e.Key {
	case KeySegment, KeySnapshot:
		return e.Segment.Equal(&o.Segment)
	case KeyUpdate:
		a, b := &e.Update, &o.Update
		return a.ID == b.ID && a.EventTimestampMs == b.EventTimestampMs && a.State == b.State &&
			a.BrokerID == b.BrokerID && sameCustom(a.CustomMetadata, b.CustomMetadata)
	case KeyPartitionDelete:
		return e.PartitionDelete == o.PartitionDelete
	}
	return true
}

// EqualRecord is Equal and also the record's version, its version 1 fields
// and its unknown tagged fields (in order).
func (e *Event) EqualRecord(o *Event) bool {
	return e.Equal(o) && e.Version == o.Version && e.BrokerLeaderEpoch == o.BrokerLeaderEpoch &&
		e.EndOffset == o.EndOffset && slices.EqualFunc(e.UnknownTags, o.UnknownTags, func(a, b TaggedField) bool {
		return a.Struct == b.Struct && a.Index == b.Index && a.Tag == b.Tag && string(a.Data) == string(b.Data)
	})
}

func sameCustom(a, b []byte) bool {
	return (a == nil) == (b == nil) && string(a) == string(b)
}

// String prints the event the way Kafka 4.x's model toString does
// (RemoteLogSegmentMetadata{...}, RemoteLogSegmentMetadataUpdate{...},
// RemotePartitionDeleteMetadata{...}, RemoteLogSegmentMetadataSnapshot{...}):
// the value: part of Kafka's RemoteLogMetadataFormatter line.
//
// A record of version 1, or with unknown tagged fields, is followed by what
// it held beyond the model, in brackets (see AppendText).
func (e *Event) String() string {
	if e.Version != 0 || len(e.UnknownTags) > 0 {
		return string(appendEventText(nil, e))
	}
	switch e.Key {
	case KeySegment:
		return e.Segment.String()
	case KeyUpdate:
		return e.Update.String()
	case KeyPartitionDelete:
		return e.PartitionDelete.String()
	}
	// Kafka 4.4's RemoteLogSegmentMetadataSnapshot.toString (no broker id or
	// event timestamp, the bare segment id), and a fallback for unknown keys.
	return string(appendEventText(nil, e))
}

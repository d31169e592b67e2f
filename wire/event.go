package wire

import (
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
type Event struct {
	Key             APIKey
	Segment         rlmm.SegmentMetadata
	Update          rlmm.SegmentUpdate
	PartitionDelete rlmm.PartitionDelete
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
// from empty. Fields the key does not select are ignored.
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

func sameCustom(a, b []byte) bool {
	return (a == nil) == (b == nil) && string(a) == string(b)
}

// String prints the event the way Kafka 4.x's model toString does
// (RemoteLogSegmentMetadata{...}, RemoteLogSegmentMetadataUpdate{...},
// RemotePartitionDeleteMetadata{...}, RemoteLogSegmentMetadataSnapshot{...}):
// the value: part of Kafka's RemoteLogMetadataFormatter line.
func (e *Event) String() string {
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

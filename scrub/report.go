package scrub

import (
	"time"
)

// The reasons an object is an orphan.
const (
	// ReasonNotInMetadata: no segment of the metadata has the object's id
	// (a copy never recorded, a deletion that finished, a deleted topic).
	// The only reason an orphan may be deleted for.
	ReasonNotInMetadata = "not_in_metadata"
	// ReasonCopyStarted: the segment is still COPY_SEGMENT_STARTED (a copy
	// in flight, or one that died): protected.
	ReasonCopyStarted = "copy_started"
	// ReasonMisplaced: the id is a live segment's, the key is not the one
	// its metadata calls for: protected.
	ReasonMisplaced = "misplaced"
	// ReasonDuplicate: a second object of the same kind for one segment:
	// protected.
	ReasonDuplicate = "duplicate"
	// ReasonUnrecognized: a key the layout never writes: protected.
	ReasonUnrecognized = "unrecognized_key"
)

// The kinds of mismatch.
const (
	// MismatchSize: an object's size differs from the one the layout
	// records for it (or the sum of the segment's objects from the
	// recorded remote size).
	MismatchSize = "size"
	// MismatchPartial: the segment has its data object but not all the
	// others it needs (e.g. the log but not its indexes).
	MismatchPartial = "partial"
)

// Missing is a live segment whose data object is not in the storage.
type Missing struct {
	SegmentID   string `json:"segmentId"`
	State       string `json:"state"`
	StartOffset int64  `json:"startOffset"`
	EndOffset   int64  `json:"endOffset"`
	// Keys are the expected objects not found (the data object first).
	Keys []string `json:"missingKeys"`
}

// Orphan is an object no live segment owns.
type Orphan struct {
	Key       string    `json:"key"`
	Size      int64     `json:"size"`
	Modified  time.Time `json:"modified"`
	AgeMs     int64     `json:"ageMs"`
	Reason    string    `json:"reason"`
	SegmentID string    `json:"segmentId,omitempty"`
	// Protected orphans name a live or started segment, or are not the
	// layout's: never deleted.
	Protected bool `json:"protected"`
}

// Mismatch is an object or segment whose objects disagree with the metadata.
type Mismatch struct {
	Kind      string `json:"kind"`
	SegmentID string `json:"segmentId"`
	// Key is the object whose size differs (empty for a total or partial).
	Key string `json:"key,omitempty"`
	// Expected and Actual are sizes (MismatchSize).
	Expected int64 `json:"expectedSize,omitempty"`
	Actual   int64 `json:"actualSize,omitempty"`
	// MissingKeys are the absent objects (MismatchPartial).
	MissingKeys []string `json:"missingKeys,omitempty"`
}

// PartitionReport is the findings of one user partition.
type PartitionReport struct {
	// TopicIDPartition is Kafka's <topicId>:<topic>-<partition>, or
	// "(unrecognized keys)" for keys no layout parse names.
	TopicIDPartition string     `json:"topicIdPartition"`
	LiveSegments     int        `json:"liveSegments"`
	Missing          []Missing  `json:"missing"`
	Orphans          []Orphan   `json:"orphans"`
	OrphanBytes      int64      `json:"orphanBytes"`
	Mismatches       []Mismatch `json:"mismatches"`
}

// Summary sums a scrub up.
type Summary struct {
	Objects          int64 `json:"objects"`
	Bytes            int64 `json:"bytes"`
	LiveSegments     int   `json:"liveSegments"`
	Partitions       int   `json:"userPartitions"`
	Missing          int   `json:"missing"`
	Orphans          int   `json:"orphans"`
	OrphanBytes      int64 `json:"orphanBytes"`
	ProtectedOrphans int   `json:"protectedOrphans"`
	Mismatches       int   `json:"mismatches"`
	// Excluded counts the objects under the excluded prefix
	// (Comparer.Exclude: repair's quarantine), not compared.
	Excluded      int64 `json:"excluded,omitempty"`
	ExcludedBytes int64 `json:"excludedBytes,omitempty"`
}

// Findings returns the number of findings of every kind.
func (s Summary) Findings() int { return s.Missing + s.Orphans + s.Mismatches }

// Report is the outcome of a scrub: partitions with findings, those with
// missing segments first, then in topic and partition order.
type Report struct {
	Layout     string            `json:"layout"`
	Summary    Summary           `json:"summary"`
	Warnings   []string          `json:"warnings"`
	Partitions []PartitionReport `json:"partitions"`
}

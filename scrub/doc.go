// Package scrub holds a cluster's remote log metadata against what is really
// in its remote storage: the engine of `rlmm scrub`.
//
// An Index is built from the metadata (the segments a view of the metadata
// log holds, every state but DELETE_SEGMENT_FINISHED) and a layout (package
// scrub/layout), then every listed object (package scrub/store) is compared
// as it streams by; only the segments are held, never the listing, so a
// bucket of millions of objects costs the memory of its segments (about 80
// bytes each: see docs/BENCHMARKS.md). The findings, per user partition:
//
//   - missing: a COPY_SEGMENT_FINISHED or DELETE_SEGMENT_STARTED segment
//     whose data object (the log) is not there: data loss;
//   - orphans: objects no live segment owns: a segment id the metadata does
//     not know (a copy never recorded, a deletion that finished, a deleted
//     topic), with their size and age. Objects of a segment still in
//     COPY_SEGMENT_STARTED, objects naming a live segment at another key,
//     and keys the layout never writes are reported as orphans too, but
//     marked protected: they are never deleted;
//   - mismatches: an object whose size differs from what the layout records
//     (LocalTieredStorage's log is the segment's bytes; Aiven's remote size
//     is the sum of its objects), or a segment with some of its objects only.
//
// Deletion (Plan, Delete) only ever takes unprotected orphans older than a
// threshold, because an object whose copy is in flight looks like an orphan
// until its COPY_SEGMENT_STARTED event is read.
//
// For rlmm repair (package repair), a Comparer can exclude a key prefix
// (Exclude: the quarantine, counted apart, never a finding) and names the
// COPY_SEGMENT_STARTED segments of which no object was listed
// (WithoutObjects).
//
// The index is an open-addressing hash table of 4-byte slots over a slice of
// fixed-size entries, keyed by the segment id (Kafka's ids are random), so a
// lookup costs one hash and usually one probe and nothing is allocated per
// object (the layouts parse keys without allocating). The package uses only
// the standard library and the rlmm packages; it starts no goroutine.
package scrub

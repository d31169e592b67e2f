// Package memory is the in-memory remote log metadata manager: the lifecycle
// state machine of remote log segments and the canonical cache that answers
// every read. It implements rlmm.Manager on its own (every partition counts
// as assigned and ready; a mutation applies at once and returns the state
// machine's verdict), and the topic-based manager wraps it as its cache,
// using CheckAddSegment / CheckUpdateSegment / CheckPartitionDelete to
// validate before publishing, Export for snapshots, PartitionBuilder and
// Install to restore one (a decoder feeds a builder segment by segment, on
// its own goroutine, and the owner of the Manager installs the finished
// builders), DropPartition when a metadata partition is unassigned, View
// for the CLI, and EachSegment for the remote size views (inspect --sizes,
// rlmm serve's gauges: every live segment's facts, without a copy).
//
// It is a pure state machine: no method does I/O, reads files or starts a
// goroutine (Import alone builds large inputs on several goroutines and
// waits for them). The state is plain Go data behind sync locks; besides
// the standard library it uses golang.org/x/sys/unix for one hint to the
// kernel, that a bulk build's new arrays be mapped in one call rather than
// a page fault at a time (prefault_linux.go).
//
// # Semantics
//
// Kafka's RemoteLogMetadataCache (KIP-405), with these deliberate
// differences:
//
//   - A rejected mutation changes nothing and says why: an invalid argument
//     (rlmm.ErrInvalidArgument), an update of an unknown segment
//     (rlmm.ErrUnknownSegment) or a transition the state forbids
//     (*rlmm.TransitionError, matching rlmm.ErrInvalidTransition). Kafka
//     drops such events with a log line, or (before 3.7, and for an update
//     to COPY_SEGMENT_STARTED still today) stops its consumer thread. An
//     update of an unknown segment is always rlmm.ErrUnknownSegment; Kafka
//     drops it silently while a partition is still catching up (the caller,
//     such as the topic-based manager, decides what to make of the error).
//     Self-transitions are idempotent successes, as in Kafka.
//   - Adding a segment id that exists is the transition from its state to
//     COPY_SEGMENT_STARTED: while it is still STARTED a success that changes
//     nothing (a retried add keeps the first metadata), otherwise a
//     *rlmm.TransitionError. Kafka drops it silently.
//   - SegmentForOffset returns a COPY_SEGMENT_FINISHED segment whose range
//     for the epoch covers the offset whenever one exists; where several
//     do, the one that finished last (Kafka's intent: a re-upload after a
//     leader change replaces the older copy). Kafka's floor-entry index can
//     answer empty although a finished segment covers the offset, and can
//     lose a segment from its epoch list (kafka-rlmm.md §5.3): with A =
//     [0, 100] then B = [50, 80] finished in one epoch, Kafka finds nothing
//     at 90, we find A; with C = [200, 300] then D = [200, 250], Kafka
//     drops C from the epoch's list and finds nothing at 260, we list both
//     and find C. When the newest segment is deleted, the older ones it
//     covered become visible again. Only finished segments are returned.
//   - HighestOffsetForEpoch is Kafka's: the highest epoch end offset of any
//     segment that reached COPY_SEGMENT_FINISHED; it never decreases, not
//     even when every segment of the epoch is deleted (the broker resumes
//     copying after it). Kafka keeps such an emptied epoch's whole state
//     forever, so its heap grows with every leader change; we keep only
//     that offset (see Representation).
//   - ListSegments (unordered in Kafka) and ListSegmentsForEpoch (ties in
//     hash order in Kafka) return every segment not yet
//     DELETE_SEGMENT_FINISHED ordered by start offset, then end offset,
//     then segment id. RemoteLogSize sums ListSegmentsForEpoch.
//   - NextSegmentWithTxnIndex is Kafka 4.0's walk over SegmentForOffset,
//     with one guard: Kafka continues at the found segment's end offset + 1,
//     which finds the same segment forever when an epoch start lies past the
//     segment's end (metadata Kafka accepts); we continue after the epoch's
//     range when it reaches further, so the walk always ends.
//   - Partition deletion, as in Kafka, accepts any state in any order:
//     MARKED and STARTED keep the segments visible, FINISHED drops the
//     partition's whole state. A partition that holds nothing at all (no
//     segment, no epoch, no delete state) is forgotten.
//   - A partition nobody wrote to is a miss (false, empty, 0, no error);
//     Kafka's cache throws RemoteResourceNotFoundException.
//   - Returned values are copies: nothing a caller does to a returned slice
//     reaches the cache, and the cache keeps its own copy of what it is
//     given. Copying a segment's leader epochs costs an allocation, so
//     SegmentForOffset allocates once per hit; SegmentForOffsetInto reuses
//     the caller's slices and is the zero-allocation path for the fetch loop.
//
// # Concurrency
//
// Safe for concurrent use: any number of readers and one writer at a time
// (mutations are serialized by a writer lock). Readers find a partition
// without locking (a directory of immutable hash tables behind atomic
// pointers, replaced by copies on change), then take that partition's read
// lock, which a mutation holds only while it writes that one event: a
// reader waits at most for one event's apply, and never takes the writer
// lock. Export holds only the writer lock and builds nothing, so it delays
// mutations but never reads; Import and Install publish each new partition
// state before they retire the old one, so a reader sees one or the other.
//
// # Representation
//
// A partition interns its TopicIDPartition once and stores each segment as
// a 64-byte record (one cache line): the common single leader epoch that
// starts at the segment's start is inline; other epoch lists and custom
// metadata live in a side table indexed by slot that places them in two
// arenas of the partition, by position, so that none of it holds a pointer
// for the collector to scan. Records sit in chunks of 256, so growing a
// partition never copies more than a chunk while readers wait; an id map
// serves updates. Each leader epoch keeps an "envelope": the runs of
// offsets, sorted by start, each naming the newest finished segment that
// covers them (a run's end is implied by the next run's start and its
// segment's end, so it is not stored). Offsets are dense, so a lookup first
// interpolates the run's index from the first and last start and checks that
// guess (one cache line, usually right); if a few corrections miss, it
// binary-searches a small summary of every fourth start, then one cache line
// of runs. Finishing a
// segment paints its range over the envelope; deleting it uncovers what
// lies beneath. Where no finished segments of an epoch overlap, that is one
// run removed; once some do, the epoch also lists its finished segments (4
// bytes each), and a delete searches that list, not the whole partition. About 120-145 bytes of heap per live
// single-epoch segment (see docs/bench/memory.md).
//
// An epoch keeps that state only while a live segment carries it. Once
// retention has deleted its last one, all that is left of it is its
// highest finished offset, packed with the other emptied epochs' as
// varints of the differences from the one before, in blocks of 64 sorted
// by epoch: about 4 bytes an epoch (emptied.go). It is the only read an
// emptied epoch still answers; a segment carrying it again makes it whole
// again from that offset. So the heap follows the live segments, not the
// leader epochs a partition has been through: retiring 30 times the live
// count with a leader change every 10 segments leaves 1.09 times the heap
// of before (1.3-1.4 with a 12-byte record per emptied epoch, 9.3 when
// the whole state was kept; BenchmarkEpochChurnHeap, docs/BENCHMARKS.md).
//
// Lists are built on demand (a scan and a sort, O(n log n)): they are
// called by retention and tools, not on the fetch path.
package memory

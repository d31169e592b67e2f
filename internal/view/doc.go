// Package view materializes a remote log metadata log (Kafka's
// __remote_log_metadata, or rlmm's embedded filelog) into a per-partition view
// and finds the anomalies an operator must act on. It is the engine of
// `rlmm inspect` and `rlmm verify`.
//
// Reading is read-only and bounded: ReadLog samples every metadata
// partition's log start offset and high-water mark once, reads each partition
// from its start up to that mark, and stops; records appended meanwhile are
// not read, and a partition whose records were all deleted is not waited for.
// Where records were deleted at the start (retention, DeleteRecords), the
// Builder (SetHistory) reports where the history begins (HistoryLost) and
// counts updates of segments it never saw added there as UnknownSegment
// warnings rather than rejected events.
//
// Each record is decoded with package wire and applied to a memory.Manager,
// the same state machine the brokers' caches run, so the view is what a
// broker would see. Anomalies come from two places:
//   - the record stream (Builder.Apply): undecodable records, events the
//     state machine rejects (invalid transitions, updates of unknown
//     segments), events sent to the wrong metadata partition, segment
//     metadata failing rlmm's Sanity checks (warnings), partition-delete
//     events out of order (warnings), snapshot records in the topic
//     (warnings);
//   - the final state (CheckSegments): segments in COPY_SEGMENT_STARTED or
//     DELETE_SEGMENT_STARTED older than a threshold, finished segments
//     overlapping in one leader epoch, and gaps in an epoch's remote offset
//     coverage.
//
// Age is measured against a reference time the caller chooses (`rlmm verify`
// defaults to the newest event timestamp of the log, so verifying an old copy
// of a log is reproducible). The package uses only the standard library and
// the rlmm packages; it starts no goroutine.
package view

// Package topicbased is the topic-based remote log metadata manager: Kafka's
// TopicBasedRemoteLogMetadataManager rebuilt in Go over any eventlog.Log
// (memlog, filelog, kafkalog), with the memory manager as its cache and an
// on-disk snapshot so a restart replays only the tail of the log.
//
// Start returns a *Manager that implements rlmm.Manager:
//
//   - The broker drives what is consumed. OnPartitionLeadershipChanges and
//     OnStopPartitions keep the set of hosted user partitions; the manager
//     consumes exactly the metadata partitions that cover them (Kafka's
//     partitioner, wire.MetadataPartition), plus those given to
//     ReconcileAssignment. A newly added metadata partition is consumed from
//     the snapshot's committed offset + 1 (or 0) and is ready once it has
//     applied up to the high-water mark observed when it was added. A removed
//     one stops being consumed and its user partitions are dropped from the
//     cache and its offsets forgotten: adding it back replays it from 0.
//   - Reads are local lookups in the cache, gated per metadata partition: an
//     unassigned one is a miss (false, empty, 0; never stale data), one that
//     is catching up answers rlmm.ErrNotReady.
//   - Mutations check their argument and, once the metadata partition is
//     ready, the transition against the cache (failing fast, publishing
//     nothing); then they encode the event (wire), publish it, and wait until
//     the pump has applied that offset, returning the state machine's verdict
//     for it. Every wait is bounded by the context and Config.ConsumeWait.
//   - One goroutine, the pump, is the only writer of the cache. It applies
//     records in log order and skips (logs, counts, keeps in a bounded list)
//     records it cannot decode or the state machine rejects, instead of
//     stopping as Kafka's consumer thread does.
//   - The snapshotter writes the snapshot periodically when the cache
//     advanced, and ShutdownAndFlush writes a final one. A snapshot file is
//     versioned and CRC-32C checked and written atomically; an unusable one
//     is logged and ignored (full replay), never fatal.
//   - Start checks the snapshot whole but does not decode it: each user
//     partition is built from its block when first needed, and all of them
//     in the background (memory.ImportLazy), so a restart is ready after
//     one read of the file. A block that cannot be built makes its metadata
//     partition replay from offset 0.
//
// Metrics go through the small Metrics interface (NopMetrics to embed);
// logs through an injected *slog.Logger.
//
// It uses only the standard library and the rlmm, memory, wire and eventlog
// packages; docs/ARCHITECTURE.md explains the design and where it differs
// from Kafka.
package topicbased

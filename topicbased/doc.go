// Package topicbased is the topic-based remote log metadata manager: Kafka's
// TopicBasedRemoteLogMetadataManager rebuilt in Go over any eventlog.Log
// (memlog, filelog, kafkalog), with the memory manager as its cache and an
// on-disk snapshot so a restart replays only the tail of the log.
//
// Start returns a *Manager that implements rlmm.Manager:
//
//   - The broker drives what is consumed and kept. OnPartitionLeadershipChanges
//     and OnStopPartitions keep the set of hosted user partitions; the
//     manager consumes exactly the metadata partitions that cover them
//     (Kafka's partitioner, wire.MetadataPartition) and keeps the state of
//     exactly the hosted user partitions: the events of the others are
//     routed from the record's bytes (wire.PeekPartition) and skipped
//     before they are decoded (internal/apply, the one event path). A newly
//     added metadata partition is consumed from the snapshot's committed
//     offset + 1 (or 0), never below its log start offset, and is ready
//     once it has applied up to the high-water mark observed when it was
//     added (at once when every record was deleted: start = high-water
//     mark). A user partition hosted after its metadata partition was
//     consumed is rebuilt by a pass that reads that metadata partition again
//     from its log start, applying only the events of the partitions being
//     rebuilt; partitions hosted while a pass runs wait for the next one,
//     which takes them all. A stopped user partition leaves the readers'
//     view and then the cache; a metadata partition left with no hosted
//     partition stops being consumed and its offsets are forgotten: adding
//     it back replays it from 0. Once the broker has named what it hosts,
//     the snapshot's state of metadata partitions it does not need is
//     dropped.
//   - Reads are local lookups in the cache, gated per user partition: one
//     not hosted is refused with rlmm.ErrNotAssigned (never an empty
//     answer, never stale data), one being rebuilt or whose metadata
//     partition is catching up answers rlmm.ErrNotReady. ReadinessChanged
//     and HostedReadiness let a server push readiness instead of being
//     asked.
//   - Mutations check their argument and, once the metadata partition is
//     ready, the transition against the cache (failing fast, publishing
//     nothing); then they encode the event (wire), publish it, and wait until
//     the pump has applied that offset, returning the state machine's verdict
//     for it. Every wait is bounded by the context and Config.ConsumeWait.
//   - Records deleted before they were applied (retention, DeleteRecords:
//     the log start offset above where the snapshot's state or a replay
//     from 0 needs to start, or records deleted while a partition catches
//     up) are history lost: the state is the snapshot's up to where it
//     holds plus the log from its start, and each gap [A, B) is logged,
//     counted (Metrics.HistoryLost, Stats.HistoryLost) and kept in Rejected
//     (ReasonHistoryLost, a *HistoryLostError: "history lost between
//     offsets A and B of metadata partition P"). A snapshot written
//     for another log (its log id differs from Config.Log.ID(): a topic
//     deleted and created again under the same name) is not used, however
//     many events the new log holds; for a log that cannot say its id, a
//     snapshot that claims more events than the log holds is dropped for
//     that metadata partition. Either way the reason is logged and the
//     metadata partitions dropped are counted (Stats.SnapshotDropped).
//   - One goroutine, the pump, is the only writer of the cache. It applies
//     records in log order and skips (logs, counts, keeps in a bounded list)
//     records it cannot decode or the state machine rejects, instead of
//     stopping as Kafka's consumer thread does.
//   - The housekeeper writes the snapshot periodically when the cache
//     advanced (and samples the log's high-water marks for the lag metric,
//     handing them to the pump), and ShutdownAndFlush writes a final
//     snapshot. The file's format is the snapshot package's (versioned,
//     CRC-32C checked, streamed block by block into a temporary file that
//     replaces the old one atomically); an unusable one is logged and
//     ignored (full replay), never fatal. A write that fails (a full or
//     read-only disk) removes its temporary file, leaves the last snapshot
//     as it was, is counted (Metrics.SnapshotWritten) and logged, and is
//     tried again at every interval until one succeeds, which is logged
//     too; serving never depends on it.
//   - Start checks the snapshot's header and index (for format 4, the
//     footer found through its trailer) and returns; the restorer then
//     decodes its blocks on every core, each block's checksum checked as it
//     is decoded (one read per block), straight into
//     memory.PartitionBuilders and hands each metadata
//     partition's finished builders to the pump, which installs them
//     (memory.Install) and only then consumes that metadata partition from
//     the snapshot's committed offset + 1. Until then an assigned metadata
//     partition the snapshot holds answers rlmm.ErrNotReady and mutations
//     wait, as for any partition catching up. A block that cannot be built
//     takes the ordinary path: its metadata partition is replayed from
//     offset 0.
//
// Metrics go through the small Metrics interface (NopMetrics to embed);
// one that also implements SplitMetrics gets each published mutation's
// phases (MutationSplit: where its time went). Logs go through an injected
// *slog.Logger. Skipped events carry a Reason.
// The lock order and the one writer of every field are written at the top
// of manager.go.
//
// It uses only the standard library and the rlmm, memory, wire, eventlog
// and snapshot packages (and internal/atomicfile);
// docs/ARCHITECTURE.md explains the design and where it differs from Kafka.
package topicbased

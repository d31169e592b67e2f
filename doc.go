// Package rlmm is the vocabulary of rlmm, a Go implementation of Apache
// Kafka's tiered-storage Remote Log Metadata Manager (KIP-405).
//
// It holds the types every other package speaks (Kafka's Uuid, topic
// partitions, remote log segment metadata, its updates and partition-delete
// records), the lifecycle state machines with Kafka's transition rules, the
// Manager interface (Kafka's RemoteLogMetadataManager in Go) and the
// sentinel errors that callers match with errors.Is.
//
// The packages around it:
//   - memory: the in-memory manager, the canonical cache and state machine;
//   - wire: Kafka's __remote_log_metadata record bytes and partitioner;
//   - eventlog (memlog, filelog, kafkalog): the durable event log;
//   - topicbased: the manager over an event log, with snapshots;
//   - cmd/rlmm: the operator command.
//
// This package does no I/O and starts no goroutine.
package rlmm

// Package eventlog is the seam between the topic-based manager and its durable
// truth: a log of numbered partitions of opaque records, the shape of Kafka's
// __remote_log_metadata topic.
//
// Three implementations live beside it: memlog (in process, for tests and for
// several simulated brokers sharing one log), filelog (the embedded durable
// default) and kafkalog (a real Apache Kafka topic through franz-go). The
// package eventlogtest holds the conformance suite that all three pass.
//
// Contract, beyond the method docs:
//   - Offsets of a partition start at 0 and grow by one per record.
//   - The records below a partition's log start offset are gone (Kafka's
//     retention or DeleteRecords); the log start offset only grows, up to
//     the high-water mark (every record deleted). StartOffsets reads it.
//   - Subscription.Add(p, o) with o below the log start offset delivers from
//     the log start: it never waits for o nor skips records that exist, and
//     the first record Poll returns for p has an offset above o, which tells
//     the caller that the records in [o, that offset) are gone. (Kafka
//     answers such a fetch with OFFSET_OUT_OF_RANGE; kafkalog resets to the
//     earliest offset, as a Java consumer with auto.offset.reset=earliest.)
//   - ID names the log itself, not its content: a log deleted and created
//     again (a Kafka topic recreated under the same name, an embedded log
//     directory made anew) gets another, so a snapshot of the old one is
//     told apart from the new one even when the new one holds more records.
//     rlmm.ZeroUuid means the log cannot say (a filelog created before logs
//     had an id); nothing is then compared.
//   - Publish returns only once the record is durable (fsync, acks=all), and
//     concurrent publishers are batched (group commit).
//   - Errors are wrapped rlmm sentinels where one applies: rlmm.ErrClosed after
//     Close, rlmm.ErrInvalidArgument for a partition out of range, rlmm.ErrCorrupt
//     for undecodable storage; context errors are returned wrapped as is.
package eventlog

import (
	"context"

	"github.com/rlmm-go/rlmm"
)

// Record is one record of the log as a subscription delivers it.
type Record struct {
	// Partition is the log partition the record belongs to.
	Partition int32
	// Offset is the record's position in its partition.
	Offset int64
	// Value is the record's bytes. The receiver owns it: the log never
	// modifies a slice once it has handed it out.
	Value []byte
	// Tombstone is set for a record without any value (a Kafka record
	// whose value is null, as a compacted topic holds to delete a key:
	// KIP-1266 proposes keyed, compacted metadata records); Value is then
	// nil. Only kafkalog delivers one: rlmm never writes one.
	Tombstone bool
	// Key is the record's key, nil for a null key. Only kafkalog delivers
	// one (KIP-1266's writers key every record): rlmm writes none, as
	// released Kafka writes none. Like Value, the receiver owns it.
	Key []byte
}

// Log is a partitioned, append-only, durable log of opaque records.
// All methods are safe for concurrent use.
type Log interface {
	// Partitions returns the number of partitions, fixed for the log's life.
	Partitions() int32

	// ID returns the log's identity, fixed for the log's life and different
	// for a log created again under the same name (see the package doc):
	// Kafka's topic id for kafkalog, an id written at creation for filelog,
	// a random one per memlog.Log. It does no I/O.
	ID() rlmm.Uuid

	// Publish appends value to partition and returns its offset once the
	// record is durable. An error means the record may or may not have been
	// appended (a timeout cannot tell), except for argument errors and a
	// *RefusedError, which append nothing.
	Publish(ctx context.Context, partition int32, value []byte) (int64, error)

	// HighWaterMarks returns, for each of the given partitions in order, the
	// offset the next record will get (0 for an empty partition).
	HighWaterMarks(ctx context.Context, partitions []int32) ([]int64, error)

	// StartOffsets returns, for each of the given partitions in order, the
	// log start offset: the first offset still held (0 until records are
	// deleted; equal to the high-water mark when every record is deleted).
	StartOffsets(ctx context.Context, partitions []int32) ([]int64, error)

	// Subscribe returns a new subscription that consumes no partition yet.
	Subscribe(ctx context.Context) (Subscription, error)

	// Close releases the log. Blocked calls return rlmm.ErrClosed. Close is
	// idempotent; subscriptions should be closed before the log.
	Close() error
}

// Subscription delivers the records of a changing set of partitions. Add and
// Remove may be called from any goroutine, also while Poll is blocked; Poll
// must be called from one goroutine at a time.
//
// Assignment changes are exact: once Remove(p) has returned, Poll never
// returns a record of p again (also not one fetched before the call); once
// Add(p, o) has returned, the next record of p that Poll returns has offset o,
// then o+1 and so on, replaying what exists and then following new appends
// (when o is below the partition's log start offset: the first record held,
// see the package doc).
type Subscription interface {
	// Add starts (or restarts, if p is already consumed) delivery of
	// partition p at offset. An offset past the high-water mark waits for
	// that offset to be written. A partition out of range or a negative
	// offset is an rlmm.ErrInvalidArgument.
	Add(p int32, offset int64) error

	// Remove stops delivery of partition p. Removing a partition that is not
	// consumed is not an error.
	Remove(p int32) error

	// Poll blocks until at least one record is available, ctx is done, or
	// the subscription or its log is closed, and returns a batch of records
	// in order per partition.
	Poll(ctx context.Context) ([]Record, error)

	// Close ends the subscription; a blocked Poll returns rlmm.ErrClosed.
	// Close is idempotent.
	Close() error
}

// RefusedError is Publish's error when the log refused the record before
// appending it: the cluster denied the write (authorization) or would never
// take the record (too large). Unlike a timeout, it says that nothing was
// appended, so the caller can report the record as not recorded. Match it
// with errors.As.
type RefusedError struct {
	// Err is the log's error, naming the cause.
	Err error
}

func (e *RefusedError) Error() string {
	return e.Err.Error() + " (refused: nothing was appended)"
}

func (e *RefusedError) Unwrap() error { return e.Err }

package apply

import (
	"context"
	"fmt"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/eventlog"
	"github.com/rlmm-go/rlmm/memory"
	"github.com/rlmm-go/rlmm/wire"
)

// Result is what Record did with one record.
type Result struct {
	// Reason is 0 when the event was applied, else why not.
	Reason Reason
	// Err says what was wrong (nil when applied or not kept): the decoder's
	// *wire.DecodeError, the state machine's refusal, or the misrouting.
	Err error
	// Key is the record's user partition (zero when it names none or
	// could not be read).
	Key wire.PartitionKey
	// Decoded: the record was decoded into the caller's event (applied or
	// rejected by the state machine, and a snapshot record).
	Decoded bool
}

// LogRecord is Record for a record of an eventlog.Log: a tombstone (a
// record without a value) is ReasonTombstone, never decoded; every other
// record goes through Record.
func LogRecord(cache *memory.Manager, n int32, rec *eventlog.Record, keep func(wire.PartitionKey) bool, ev *wire.Event) Result {
	if rec.Tombstone {
		return Result{Reason: ReasonTombstone, Err: fmt.Errorf("metadata partition %d offset %d: a tombstone (a record with a null value, as a compacted topic holds): not an event",
			rec.Partition, rec.Offset)}
	}
	return Record(cache, n, rec.Partition, rec.Offset, rec.Value, keep, ev)
}

// Record routes one record of metadata partition partition (offset is for
// messages) of a log of n partitions and applies its event to cache when
// keep says the user partition is kept (nil keeps every one). A record in
// the wrong metadata partition is ReasonMisrouted whether kept or not, and
// is never applied. The decoded event is written to *ev (nil: the caller
// does not need it) by wire.DecodeEventInto, which reuses what ev held: a
// caller decoding record after record passes the same ev, one that keeps
// the event's slices a fresh one. A skipped record is not decoded, so
// skipping costs only the routing.
func Record(cache *memory.Manager, n, partition int32, offset int64, value []byte, keep func(wire.PartitionKey) bool, ev *wire.Event) Result {
	key, k, named, err := wire.PeekPartition(value)
	if err != nil {
		return Result{Reason: ReasonUndecodable, Err: fmt.Errorf("metadata partition %d offset %d: %w", partition, offset, err)}
	}
	if !named {
		res := Result{Reason: ReasonUnexpected, Err: fmt.Errorf("%w: metadata partition %d offset %d: record of api key %d does not belong in the metadata topic",
			rlmm.ErrCorrupt, partition, offset, key)}
		if ev == nil {
			ev = new(wire.Event)
		}
		if derr := wire.DecodeEventInto(value, ev); derr != nil {
			res.Reason, res.Err = ReasonUndecodable, fmt.Errorf("metadata partition %d offset %d: %w", partition, offset, derr)
		} else {
			res.Decoded = true
		}
		return res
	}
	if want := wire.MetadataPartitionOfKey(k, n); n > 0 && want != partition {
		return Result{Reason: ReasonMisrouted, Key: k, Err: fmt.Errorf("%w: metadata partition %d offset %d: event of %s-%d (topic id %s) belongs in metadata partition %d of %d",
			rlmm.ErrInvalidArgument, partition, offset, topicOf(value), k.Partition, k.TopicID, want, n)}
	}
	if keep != nil && !keep(k) {
		return Result{Reason: ReasonNotKept, Key: k}
	}
	if ev == nil {
		ev = new(wire.Event) // after the skip: a skipped record never pays for it
	}
	if err := wire.DecodeEventInto(value, ev); err != nil {
		return Result{Reason: ReasonUndecodable, Key: k, Err: fmt.Errorf("metadata partition %d offset %d: %w", partition, offset, err)}
	}
	ctx := context.Background()
	switch ev.Key {
	case wire.KeySegment:
		err = cache.AddSegment(ctx, ev.Segment)
	case wire.KeyUpdate:
		err = cache.UpdateSegment(ctx, ev.Update)
	case wire.KeyPartitionDelete:
		err = cache.PutPartitionDelete(ctx, ev.PartitionDelete)
	}
	if err != nil {
		return Result{Reason: ReasonRejected, Key: k, Decoded: true, Err: err}
	}
	return Result{Key: k, Decoded: true}
}

// topicOf returns the topic name of a record that peeked cleanly, for a
// message ("?" if the full decode fails).
func topicOf(value []byte) string {
	ev, err := wire.DecodeEvent(value)
	if err != nil {
		return "?"
	}
	tp, _ := ev.TopicIDPartition()
	return tp.Topic
}

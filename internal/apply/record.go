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
		return tombstone(rec)
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
	var pr Prepared
	pr.peek(value)
	if ev == nil {
		ev = &pr.Event
	}
	return pr.apply(cache, n, partition, offset, value, keep, ev)
}

// Prepared is a record read ahead of its apply, by a goroutine other than
// the applier's (the pump's read-ahead): its routing (the peek) and, when
// Prepare was asked to, its event decoded into Event. Applying it
// (ApplyPrepared) decides exactly as Record does, in the same order; a
// record Prepare did not decode is decoded then, if it is kept. A Prepared
// is reused record after record, as DecodeEventInto reuses an Event.
type Prepared struct {
	api   wire.APIKey
	key   wire.PartitionKey
	named bool
	// peekErr is the peek's failure: the record is ReasonUndecodable.
	peekErr error
	// decoded: Event holds the record's event, or decodeErr says why the
	// full decode failed.
	decoded   bool
	decodeErr error
	// Event is the decoded event once the record is decoded (by Prepare
	// or ApplyPrepared); valid until the Prepared is prepared again.
	Event wire.Event
}

// Prepare reads rec for a later ApplyPrepared: its user partition always,
// its whole event when decode (nil: never) says the applier will probably
// keep that user partition. The guess only moves work between goroutines:
// ApplyPrepared asks its own keep and decodes what Prepare did not.
// Prepare touches nothing but p and rec's bytes, so it may run beside the
// applier.
func Prepare(p *Prepared, rec *eventlog.Record, decode func(wire.PartitionKey) bool) {
	p.decoded, p.decodeErr = false, nil
	if rec.Tombstone {
		p.peekErr = nil
		return
	}
	p.peek(rec.Value)
	if p.peekErr == nil && p.named && decode != nil && decode(p.key) {
		p.decodeErr = wire.DecodeEventInto(rec.Value, &p.Event)
		p.decoded = true
	}
}

// ApplyPrepared is LogRecord for a record Prepare read: the same decision,
// in the same order, with the decode Prepare did reused. The event applied
// (when Result.Decoded) is p.Event.
func ApplyPrepared(cache *memory.Manager, n int32, rec *eventlog.Record, keep func(wire.PartitionKey) bool, p *Prepared) Result {
	if rec.Tombstone {
		return tombstone(rec)
	}
	return p.apply(cache, n, rec.Partition, rec.Offset, rec.Value, keep, &p.Event)
}

// peek reads value's routing into p, forgetting any decode.
func (p *Prepared) peek(value []byte) {
	p.api, p.key, p.named, p.peekErr = wire.PeekPartition(value)
}

// decode decodes value into ev unless Prepare did (into ev, which is then
// p.Event), and returns the decode's error.
func (p *Prepared) decode(value []byte, ev *wire.Event) error {
	if !p.decoded || ev != &p.Event {
		p.decodeErr = wire.DecodeEventInto(value, ev)
		p.decoded = true
	}
	return p.decodeErr
}

// apply is the one decision of Record and ApplyPrepared for a peeked
// record: route, check the metadata partition, ask keep, decode (into ev),
// apply.
func (p *Prepared) apply(cache *memory.Manager, n, partition int32, offset int64, value []byte, keep func(wire.PartitionKey) bool, ev *wire.Event) Result {
	if p.peekErr != nil {
		return Result{Reason: ReasonUndecodable, Err: fmt.Errorf("metadata partition %d offset %d: %w", partition, offset, p.peekErr)}
	}
	k := p.key
	if !p.named {
		res := Result{Reason: ReasonUnexpected, Err: fmt.Errorf("%w: metadata partition %d offset %d: record of api key %d does not belong in the metadata topic",
			rlmm.ErrCorrupt, partition, offset, p.api)}
		if derr := p.decode(value, ev); derr != nil {
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
	if err := p.decode(value, ev); err != nil {
		return Result{Reason: ReasonUndecodable, Key: k, Err: fmt.Errorf("metadata partition %d offset %d: %w", partition, offset, err)}
	}
	var err error
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

// tombstone is a tombstone's Result.
func tombstone(rec *eventlog.Record) Result {
	return Result{Reason: ReasonTombstone, Err: fmt.Errorf("metadata partition %d offset %d: a tombstone (a record with a null value, as a compacted topic holds): not an event",
		rec.Partition, rec.Offset)}
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

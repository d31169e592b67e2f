package topicbased

import "time"

// MutationSplit is where one mutation's time went, phase by phase, from
// the call to its return. The phases follow one another, so they add up
// to the mutation's latency (less the argument check before the gate);
// when the pump fetched the event before Publish returned (FetchedFirst),
// Fetch is 0 and Apply counts from Publish's return.
type MutationSplit struct {
	// Ready is the wait for the metadata partition's readiness and the
	// check of the transition against the cache.
	Ready time.Duration
	// Encode is the event's encoding (wire).
	Encode time.Duration
	// Publish is Log.Publish, from the call to the offset returned: the
	// record queued in the log's client, sent, made durable (acks=all, an
	// fsync) and acknowledged.
	Publish time.Duration
	// Fetch is from Publish's return until the pump's Poll returned the
	// record (the consumer's fetch back).
	Fetch time.Duration
	// Apply is from the fetch until the pump had applied every record of
	// that Poll and was about to wake their mutations.
	Apply time.Duration
	// Wake is from there until this mutation's goroutine ran again with
	// its verdict.
	Wake time.Duration
	// FetchedFirst is set when the pump had the record before Publish
	// returned (the consumer saw it before the producer's acknowledgement
	// arrived).
	FetchedFirst bool
	// Batch is how many records the pump's Poll that carried the event
	// held, of every metadata partition: the records sharing one fetch
	// back and one wake-up round.
	Batch int
}

// SplitMetrics is an optional extension of Metrics: when Config.Metrics
// implements it, every mutation that published its event and got the
// pump's verdict also reports where its time went. It costs a few clock
// reads per mutation and a few per batch the pump applies; without it the
// manager reads no extra clock.
type SplitMetrics interface {
	// MutationSplit reports one mutation's phases (see MutationSplit).
	MutationSplit(op Op, split MutationSplit)
}

// splitStamps is how many of a metadata partition's latest applied batches
// keep their times for the mutations that read them after being woken
// (or after finding their offset applied already).
const splitStamps = 16

// batchStamp is when the pump fetched and applied one batch's records of
// one metadata partition, offsets from through to.
type batchStamp struct {
	from, to         int64
	fetched, applied time.Time
	records          int
}

// stampBatch keeps the times of the batch that applied [from, to] of p.
// Caller is the pump, holding mu.
func (p *metaPartition) stampBatch(from, to int64, fetched, applied time.Time, records int) {
	p.stamps[p.stampNext] = batchStamp{from: from, to: to, fetched: fetched, applied: applied, records: records}
	p.stampNext = (p.stampNext + 1) % splitStamps
}

// stampOf returns the kept times of the batch that applied offset. Caller
// holds mu.
func (p *metaPartition) stampOf(offset int64) (batchStamp, bool) {
	for _, s := range p.stamps {
		if s.records > 0 && s.from <= offset && offset <= s.to {
			return s, true
		}
	}
	return batchStamp{}, false
}

// mutationClock holds a mutation's own times for its split.
type mutationClock struct {
	start, encoding, publishing, published time.Time
}

// splitOf builds a mutation's split from its own times, the pump's times of
// the batch that applied it, and when it woke.
func splitOf(c mutationClock, b batchStamp, woken time.Time) MutationSplit {
	s := MutationSplit{
		Ready:   c.encoding.Sub(c.start),
		Encode:  c.publishing.Sub(c.encoding),
		Publish: c.published.Sub(c.publishing),
		Batch:   b.records,
	}
	// Each later phase starts where the one before it ended, whichever of
	// the producer's and the consumer's sides got there last.
	last := c.published
	if b.fetched.Before(last) {
		s.FetchedFirst = true
	} else {
		s.Fetch = b.fetched.Sub(last)
		last = b.fetched
	}
	if b.applied.After(last) {
		s.Apply = b.applied.Sub(last)
		last = b.applied
	}
	if woken.After(last) {
		s.Wake = woken.Sub(last)
	}
	return s
}

// reportSplit reports a mutation's split, given the pump's times of the
// batch that applied its event (none, records 0, when they are no longer
// kept: nothing is reported). Caller holds no lock.
func (m *Manager) reportSplit(op Op, b batchStamp, c mutationClock, woken time.Time) {
	if b.records > 0 {
		m.splits.MutationSplit(op, splitOf(c, b, woken))
	}
}

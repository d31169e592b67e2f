package topicbased

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/rlmm-go/rlmm/eventlog"
	"github.com/rlmm-go/rlmm/internal/apply"
	"github.com/rlmm-go/rlmm/wire"
)

// maxPrepared bounds the records of one batch the read-ahead prepares (an
// apply.Prepared holds a whole decoded event, about 330 bytes): a catch-up
// Poll of Kafka can return hundreds of thousands of records, and the pump
// decodes those past the bound itself.
const maxPrepared = 8192

// readAheadDepth is how many batches the read-ahead may have read, or be
// reading, beyond the one the pump applies: with one, the two goroutines
// overlapped only partly (a batch slower to read than the one before to
// apply left the pump waiting, and the other way round); with two, a
// replay of 100,000,000 events kept both cores busy.
const readAheadDepth = 2

// catchUpBatch is the size of a batch that says the pump is catching up
// (a steady one holds the few records published since the last): only
// then does it read ahead readAheadDepth batches, so that a lone mutation
// is not slowed by a second Poll started beside its apply (over kfake the
// p50 went from about 218 to 237 µs with both always outstanding).
const catchUpBatch = 256

// readAhead runs the subscription's Poll, and prepares the records it
// returns (apply.Prepare: the routing, and the decode of the events of
// hosted user partitions), on a goroutine of its own: the pump applies one
// batch while the next ones are read and decoded on the other core, which
// is where a replay from scratch spends its time.
//
// The subscription stays the pump's: the goroutine runs one Poll at a
// time, for the jobs the pump queued (startPoll, at most readAheadDepth
// outstanding), and hands their batches back in order (waitPoll); the
// pump calls Add or Remove only with nothing outstanding (quiet). So
// records are still applied in the order the subscription delivered them,
// and a record fetched under one assignment is applied before the next
// assignment change, as when the pump called Poll itself.
//
// Owners: start, done and the goroutine are fixed by newReadAhead; the
// pump owns outstanding, ctx, cancel, spare and the batches it was given,
// the goroutine a job's batch until it sends it back on done.
type readAhead struct {
	start chan pollJob
	done  chan *fetchedBatch // buffered readAheadDepth: the goroutine never blocks on it
	wg    sync.WaitGroup

	outstanding int                // the pump: jobs queued and not yet waited for
	ctx         context.Context    // the pump: the outstanding jobs' context (one for all)
	cancel      context.CancelFunc // the pump: ctx's
	spare       []*fetchedBatch    // the pump: batches the next jobs fill
}

// pollJob asks the read-ahead for one Poll under ctx, into b.
type pollJob struct {
	ctx context.Context
	b   *fetchedBatch
}

// fetchedBatch is one Poll's answer, prepared.
type fetchedBatch struct {
	records []eventlog.Record
	// prepared[i] is records[i] read ahead, for i < len(prepared) (at most
	// maxPrepared).
	prepared []apply.Prepared
	err      error
	// interrupted: the Poll's context was done when it returned (a control
	// request, or quiet).
	interrupted bool
	// at is when Poll returned, for the mutations' splits.
	at time.Time
	// drop lists metadata partitions whose records in this batch are not
	// applied: the subscription was told to deliver them again (quiet).
	drop []int32
}

// newReadAhead starts the read-ahead's goroutine over sub; decode is
// apply.Prepare's guess of what the pump keeps. stop ends it.
func newReadAhead(sub eventlog.Subscription, decode func() func(mp int32, k wire.PartitionKey) bool) *readAhead {
	r := &readAhead{start: make(chan pollJob, readAheadDepth), done: make(chan *fetchedBatch, readAheadDepth)}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		for job := range r.start {
			b := job.b
			b.records, b.err = sub.Poll(job.ctx)
			b.interrupted = job.ctx.Err() != nil
			b.at = time.Now()
			n := min(len(b.records), maxPrepared)
			if cap(b.prepared) < n {
				b.prepared = make([]apply.Prepared, n)
			}
			b.prepared = b.prepared[:n]
			// One guess per batch, asked for the metadata partition of the
			// record being prepared.
			var keep func(wire.PartitionKey) bool
			var from int32
			if guess := decode(); guess != nil {
				keep = func(k wire.PartitionKey) bool { return guess(from, k) }
			}
			for i := range b.prepared {
				from = b.records[i].Partition
				apply.Prepare(&b.prepared[i], &b.records[i], keep)
			}
			r.done <- b
		}
	}()
	return r
}

// stop interrupts the outstanding Polls and waits for the goroutine to
// end. Pump, once, as it returns.
func (r *readAhead) stop() {
	if r.outstanding > 0 {
		r.cancel()
	}
	close(r.start)
	r.wg.Wait()
}

// startPoll queues a Poll on the read-ahead unless readAheadDepth are
// outstanding. Like the pump's own Poll before it, the Polls are
// interrupted at once when a control request is queued (submit cancels
// their context). Pump.
func (m *Manager) startPoll(ctx context.Context) {
	r := m.ahead
	if r.outstanding >= readAheadDepth {
		return
	}
	if r.outstanding == 0 {
		pollCtx, cancel := context.WithCancel(ctx)
		m.mu.Lock()
		pending := len(m.controlQueue) > 0
		m.pollCancel = cancel
		m.mu.Unlock()
		if pending {
			cancel()
		}
		r.ctx, r.cancel = pollCtx, cancel
	}
	var b *fetchedBatch
	if n := len(r.spare); n > 0 {
		b, r.spare = r.spare[n-1], r.spare[:n-1]
	} else {
		b = &fetchedBatch{}
	}
	b.drop = b.drop[:0]
	r.outstanding++
	r.start <- pollJob{ctx: r.ctx, b: b}
}

// waitPoll waits for the oldest outstanding Poll and returns its batch.
// Pump.
func (m *Manager) waitPoll() *fetchedBatch {
	r := m.ahead
	b := <-r.done
	r.outstanding--
	if r.outstanding == 0 {
		m.mu.Lock()
		m.pollCancel = nil
		m.mu.Unlock()
		r.cancel()
		r.ctx, r.cancel = nil, nil
	}
	return b
}

// recycle gives a batch the pump applied back for the next Poll (its
// prepared events are reused; its records, the log's memory, are let go).
// Pump.
func (m *Manager) recycle(b *fetchedBatch) {
	b.records, b.err = nil, nil
	m.ahead.spare = append(m.ahead.spare, b)
}

// quiet makes the subscription idle before the pump changes what it
// consumes: the outstanding Polls are interrupted and their batches held,
// in order, for the pump to apply next (held). The records of drop (-1:
// none) in the held batches are not applied: the change about to be made
// delivers them again. Pump, under applyMu when called from an apply.
func (m *Manager) quiet(drop int32) {
	if m.ahead.outstanding > 0 {
		m.ahead.cancel()
		for m.ahead.outstanding > 0 {
			m.held = append(m.held, m.waitPoll())
		}
	}
	if drop < 0 {
		return
	}
	for _, b := range m.held {
		if !slices.Contains(b.drop, drop) {
			b.drop = append(b.drop, drop)
		}
	}
}

// hostedGuess returns apply.Prepare's guess of the user partitions the pump
// keeps: those in the readers' view (kept, being rebuilt or queued). It is
// read beside the pump and may be a change behind: the pump decides, and
// decodes what the guess left out.
func (m *Manager) hostedGuess() func(mp int32, k wire.PartitionKey) bool {
	v := m.keep.Load()
	if v == nil || v.hosted == 0 {
		return nil
	}
	// A record is guessed against the map of the metadata partition it was
	// read from (one misrouted is guessed not kept; the pump decides).
	return func(mp int32, k wire.PartitionKey) bool {
		if mp < 0 || int(mp) >= len(v.byMP) {
			return false
		}
		_, ok := v.byMP[mp][k]
		return ok
	}
}

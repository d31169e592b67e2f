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

// readAhead runs the subscription's Poll, and prepares the records it
// returns (apply.Prepare: the routing, and the decode of the events of
// hosted user partitions), on a goroutine of its own: the pump applies one
// batch while the next is read and decoded on the other core, which is
// where a replay from scratch spends its time.
//
// The subscription stays the pump's: at most one Poll is in flight, the
// pump starts it (startPoll) and takes its batch (waitPoll), and it calls
// Add or Remove only with no Poll in flight (quiet). So records are still
// applied in the order the subscription delivered them, and a record
// fetched under one assignment is applied before the next assignment
// change, as when the pump called Poll itself.
//
// Owners: start, done and the goroutine are fixed by newReadAhead; the
// pump owns inFlight, cancel, spare and the batch it was given, the
// goroutine the batch it was sent until it sends it back on done.
type readAhead struct {
	start chan pollJob
	done  chan *fetchedBatch // buffered 1: the goroutine never blocks on it
	wg    sync.WaitGroup

	inFlight bool               // the pump: a Poll was started and not yet waited for
	cancel   context.CancelFunc // the pump: the Poll in flight's
	spare    *fetchedBatch      // the pump: the batch the next Poll fills
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
func newReadAhead(sub eventlog.Subscription, decode func() func(wire.PartitionKey) bool) *readAhead {
	r := &readAhead{start: make(chan pollJob), done: make(chan *fetchedBatch, 1)}
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
			keep := decode()
			for i := range b.prepared {
				apply.Prepare(&b.prepared[i], &b.records[i], keep)
			}
			r.done <- b
		}
	}()
	return r
}

// stop interrupts a Poll in flight and waits for the goroutine to end.
// Pump, once, as it returns.
func (r *readAhead) stop() {
	if r.inFlight {
		r.cancel()
	}
	close(r.start)
	r.wg.Wait()
}

// startPoll starts a Poll on the read-ahead unless one is in flight.
// Like the pump's own Poll before it, the Poll is interrupted at once when
// a control request is queued (submit cancels it). Pump.
func (m *Manager) startPoll(ctx context.Context) {
	r := m.ahead
	if r.inFlight {
		return
	}
	pollCtx, cancel := context.WithCancel(ctx)
	m.mu.Lock()
	pending := len(m.controlQueue) > 0
	m.pollCancel = cancel
	m.mu.Unlock()
	if pending {
		cancel()
	}
	b := r.spare
	r.spare = nil
	if b == nil {
		b = &fetchedBatch{}
	}
	b.drop = b.drop[:0]
	r.inFlight, r.cancel = true, cancel
	r.start <- pollJob{ctx: pollCtx, b: b}
}

// waitPoll waits for the Poll in flight and returns its batch. Pump.
func (m *Manager) waitPoll() *fetchedBatch {
	r := m.ahead
	b := <-r.done
	m.mu.Lock()
	m.pollCancel = nil
	m.mu.Unlock()
	r.cancel()
	r.inFlight, r.cancel = false, nil
	return b
}

// recycle gives a batch the pump applied back for the next Poll (its
// prepared events are reused; its records, the log's memory, are let go).
// Pump.
func (m *Manager) recycle(b *fetchedBatch) {
	b.records, b.err = nil, nil
	m.ahead.spare = b
}

// quiet makes the subscription idle before the pump changes what it
// consumes: a Poll in flight is interrupted and its batch held for the
// pump to apply next (held). The records of drop (-1: none) in the held
// batch are not applied: the change about to be made delivers them again.
// Pump, under applyMu when called from an apply.
func (m *Manager) quiet(drop int32) {
	if m.ahead.inFlight {
		m.ahead.cancel()
		m.held = m.waitPoll()
	}
	if drop >= 0 && m.held != nil && !slices.Contains(m.held.drop, drop) {
		m.held.drop = append(m.held.drop, drop)
	}
}

// hostedGuess returns apply.Prepare's guess of the user partitions the pump
// keeps: those in the readers' view (kept, being rebuilt or queued). It is
// read beside the pump and may be a change behind: the pump decides, and
// decodes what the guess left out.
func (m *Manager) hostedGuess() func(wire.PartitionKey) bool {
	v := m.keep.Load()
	if v == nil || len(v.parts) == 0 {
		return nil
	}
	return func(k wire.PartitionKey) bool {
		_, ok := v.parts[k]
		return ok
	}
}

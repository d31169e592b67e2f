package sim

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/rlmm-go/rlmm"
)

// The load the scenario drives: each round's mutations and reads per
// partition (copies, retention, lookups), and the lookup burst that
// measures read throughput at the end.

// parallel runs fn for every partition selected by keep, at most
// Concurrency at a time, and adds the time taken to the busy time.
func (e *engine) parallel(ctx context.Context, phase string, keep func(*partitionModel) bool, fn func(context.Context, int, *partitionModel) error) error {
	start := time.Now()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(e.cfg.Concurrency)
	for i, p := range e.parts {
		if !keep(p) {
			continue
		}
		g.Go(func() error {
			if err := fn(gctx, i, p); err != nil {
				return err
			}
			e.step(phase)
			return nil
		})
	}
	err := g.Wait()
	e.mu.Lock()
	e.busy += time.Since(start)
	e.mu.Unlock()
	return err
}

// partitionWork is one partition's share of a round: its own random source
// (so the workload does not depend on scheduling), clock and samples.
type partitionWork struct {
	e       *engine
	p       *partitionModel
	rng     *rand.Rand
	nowMs   int64
	mutLat  []time.Duration
	lookLat []time.Duration
}

func (e *engine) work(r, i int, p *partitionModel) *partitionWork {
	return &partitionWork{e: e, p: p, rng: rand.New(rand.NewPCG(uint64(e.cfg.Seed), uint64(r)<<32|uint64(i))),
		nowMs: e.baseMs + int64(r)*roundMs}
}

// flush hands the samples to the engine.
func (w *partitionWork) flush() {
	w.e.mu.Lock()
	defer w.e.mu.Unlock()
	w.e.mutLat = append(w.e.mutLat, w.mutLat...)
	w.e.lookLat = append(w.e.lookLat, w.lookLat...)
}

func (w *partitionWork) tick() int64 { w.nowMs++; return w.nowMs }

func (w *partitionWork) leader() *broker { return w.e.brokers[w.p.leader] }

// mutate runs one mutation on the leader and records its latency.
func (w *partitionWork) mutate(ctx context.Context, what string, op func(rlmm.Manager) error) error {
	b := w.leader()
	start := time.Now()
	err := op(b.mgr)
	took := time.Since(start)
	if err != nil {
		return fmt.Errorf("broker %d, partition %s: %s: %w", b.id, w.p.tp, what, err)
	}
	w.mutLat = append(w.mutLat, took)
	w.e.mutations.Add(1)
	return nil
}

func (w *partitionWork) add(ctx context.Context, m rlmm.SegmentMetadata) error {
	if err := w.mutate(ctx, "add segment "+m.ID.ID.String(), func(mg rlmm.Manager) error { return mg.AddSegment(ctx, m) }); err != nil {
		return err
	}
	w.p.add(m)
	return nil
}

func (w *partitionWork) update(ctx context.Context, id rlmm.SegmentID, st rlmm.SegmentState, custom []byte) error {
	u := rlmm.SegmentUpdate{ID: id, EventTimestampMs: w.tick(), CustomMetadata: custom, State: st, BrokerID: w.p.leader}
	if err := w.mutate(ctx, fmt.Sprintf("update segment %s to %s", id.ID, st), func(mg rlmm.Manager) error { return mg.UpdateSegment(ctx, u) }); err != nil {
		return err
	}
	return w.p.update(u)
}

func (w *partitionWork) putDelete(ctx context.Context, st rlmm.PartitionDeleteState) error {
	d := rlmm.PartitionDelete{TopicIDPartition: w.p.tp, State: st, EventTimestampMs: w.tick(), BrokerID: w.p.leader}
	if err := w.mutate(ctx, "partition delete "+st.String(), func(mg rlmm.Manager) error { return mg.PutPartitionDelete(ctx, d) }); err != nil {
		return err
	}
	w.p.putDelete(st)
	return nil
}

// catchUp waits, after a leadership move, until the new leader has applied
// everything the previous leaders wrote for the partition.
func (w *partitionWork) catchUp(ctx context.Context) error {
	if !w.p.catchUp {
		return nil
	}
	diff, err := w.e.awaitView(ctx, w.leader(), w.p)
	if err != nil {
		return err
	}
	if diff != "" {
		return fmt.Errorf("new leader never caught up: %s", diff)
	}
	w.p.catchUp = false
	return nil
}

// round runs every live partition's copy, retention and reads.
func (e *engine) round(ctx context.Context, r int) error {
	phase := fmt.Sprintf("round %d/%d", r+1, e.cfg.Rounds)
	return e.parallel(ctx, phase, func(p *partitionModel) bool { return !p.deleted }, func(ctx context.Context, i int, p *partitionModel) error {
		w := e.work(r, i, p)
		defer w.flush()
		if err := w.catchUp(ctx); err != nil {
			return err
		}
		if err := w.copySegment(ctx); err != nil {
			return err
		}
		if err := w.retention(ctx); err != nil {
			return err
		}
		for range e.cfg.LookupsPerRound {
			if err := w.lookup(ctx); err != nil {
				return err
			}
		}
		return nil
	})
}

// copySegment copies the uncopied part of the local log as one segment,
// failing and cleaning up some attempts first.
func (w *partitionWork) copySegment(ctx context.Context) error {
	p := w.p
	start, end := p.copiedEnd, p.logEnd-1
	epochs := p.segmentEpochs(start, end)
	for attempt := 0; ; attempt++ {
		m := rlmm.SegmentMetadata{
			ID:          rlmm.SegmentID{TopicIDPartition: p.tp, ID: randomUuid(w.rng)},
			StartOffset: start, EndOffset: end, MaxTimestampMs: w.nowMs - 1, BrokerID: p.leader,
			EventTimestampMs: w.tick(), LeaderEpochs: slices.Clone(epochs),
			SizeInBytes: int32(min((end-start+1)*100, 1<<30)), State: rlmm.CopySegmentStarted,
			TxnIndexEmpty: w.rng.IntN(2) == 0,
		}
		if w.rng.IntN(4) == 0 {
			m.CustomMetadata = []byte{}
		}
		if err := w.add(ctx, m); err != nil {
			return err
		}
		if attempt < 3 && w.rng.Float64() < w.e.cfg.CopyFailureRate {
			// The copy to remote storage failed: clean up, then retry with a new id.
			if err := w.update(ctx, m.ID, rlmm.DeleteSegmentStarted, nil); err != nil {
				return err
			}
			if err := w.update(ctx, m.ID, rlmm.DeleteSegmentFinished, nil); err != nil {
				return err
			}
			w.e.failed.Add(1)
			continue
		}
		var custom []byte
		if w.rng.IntN(2) == 0 {
			custom = make([]byte, 8)
			for i := range custom {
				custom[i] = byte(w.rng.IntN(256))
			}
		}
		if err := w.update(ctx, m.ID, rlmm.CopySegmentFinished, custom); err != nil {
			return err
		}
		break
	}
	w.e.copied.Add(1)
	if len(epochs) > 1 {
		w.e.multiEpoch.Add(1)
	}
	p.copiedEnd = end + 1
	return nil
}

// retention deletes the oldest finished segments beyond Retain.
func (w *partitionWork) retention(ctx context.Context) error {
	for w.p.finishedCount() > w.e.cfg.Retain {
		old, _ := w.p.oldestFinished()
		if err := w.update(ctx, old.ID, rlmm.DeleteSegmentStarted, nil); err != nil {
			return err
		}
		if err := w.update(ctx, old.ID, rlmm.DeleteSegmentFinished, nil); err != nil {
			return err
		}
		w.e.retired.Add(1)
	}
	return nil
}

// lookup is one fetch-path read by (epoch, offset) from a random live
// replica: exact against the model on the leader, consistent on followers.
func (w *partitionWork) lookup(ctx context.Context) error {
	p := w.p
	var live []int32
	for _, r := range p.replicas {
		if w.e.brokers[r].mgr != nil {
			live = append(live, r)
		}
	}
	id := live[w.rng.IntN(len(live))]
	b := w.e.brokers[id]
	epoch, offset := w.target()
	for try := 0; ; try++ {
		start := time.Now()
		got, found, err := b.mgr.SegmentForOffset(p.tp, epoch, offset)
		w.lookLat = append(w.lookLat, time.Since(start))
		w.e.lookups.Add(1)
		if errors.Is(err, rlmm.ErrNotReady) && try < 1000 {
			w.e.notReady.Add(1)
			if err := sleep(ctx, time.Millisecond); err != nil {
				return err
			}
			continue
		}
		if err != nil {
			w.e.addDifference("broker %d: SegmentForOffset(%s, epoch %d, offset %d): %v", id, p.tp, epoch, offset, err)
			return nil
		}
		want := p.finishedCovering(epoch, offset)
		leader := id == p.leader
		switch {
		case found && (got.State != rlmm.CopySegmentFinished || !covers(&got, epoch, offset)):
			w.e.addDifference("broker %d: SegmentForOffset(%s, epoch %d, offset %d) returned a segment that does not qualify: %s", id, p.tp, epoch, offset, got)
		case found && leader && !slices.Contains(want, got.ID.ID):
			w.e.addDifference("leader %d: SegmentForOffset(%s, epoch %d, offset %d) returned %s; model has %v", id, p.tp, epoch, offset, got.ID.ID, want)
		case found && !leader:
			if _, known := p.ever[got.ID.ID]; !known {
				w.e.addDifference("follower %d: SegmentForOffset(%s, epoch %d, offset %d) returned unknown segment %s", id, p.tp, epoch, offset, got.ID.ID)
			}
		case !found && len(want) > 0 && leader:
			w.e.addDifference("leader %d: SegmentForOffset(%s, epoch %d, offset %d) found nothing; model has %v", id, p.tp, epoch, offset, want)
		case !found && len(want) > 0:
			w.e.stale.Add(1)
		}
		return nil
	}
}

// target picks a read position: mostly inside a finished segment, else
// anywhere in the local log under any epoch (often a miss).
func (w *partitionWork) target() (int32, int64) {
	p := w.p
	if w.rng.IntN(5) > 0 {
		var fin []*rlmm.SegmentMetadata
		for i := range p.segs {
			if p.segs[i].State == rlmm.CopySegmentFinished {
				fin = append(fin, &p.segs[i])
			}
		}
		if len(fin) > 0 {
			m := fin[w.rng.IntN(len(fin))]
			ep := m.LeaderEpochs[w.rng.IntN(len(m.LeaderEpochs))].Epoch
			if s, end, ok := epochRange(m, ep); ok && end >= s {
				return ep, s + w.rng.Int64N(end-s+1)
			}
		}
	}
	return p.epochs[w.rng.IntN(len(p.epochs))].Epoch, w.rng.Int64N(max(p.logEnd, 1))
}

// lookupTarget is a read whose answer the model knows.
type lookupTarget struct {
	tp     rlmm.TopicIDPartition
	epoch  int32
	offset int64
	want   []rlmm.Uuid
}

// lookupBurst measures lookup throughput on the live brokers with
// GOMAXPROCS readers, each read checked against the model.
func (e *engine) lookupBurst(ctx context.Context) (int64, time.Duration) {
	// Each broker is asked only about the partitions it hosts: the others
	// are refused (finalCheck checks that).
	var live []*broker
	var targets [][]lookupTarget
	for _, b := range e.brokers {
		if b.mgr == nil {
			continue
		}
		var ts []lookupTarget
		for _, p := range e.parts {
			if p.deleted || !slices.Contains(p.replicas, b.id) {
				continue
			}
			for i := range p.segs {
				m := &p.segs[i]
				if m.State != rlmm.CopySegmentFinished {
					continue
				}
				for _, le := range m.LeaderEpochs {
					if s, end, ok := epochRange(m, le.Epoch); ok && end >= s {
						off := (s + end) / 2
						ts = append(ts, lookupTarget{p.tp, le.Epoch, off, p.finishedCovering(le.Epoch, off)})
					}
				}
			}
		}
		if len(ts) > 0 {
			live = append(live, b)
			targets = append(targets, ts)
		}
	}
	if len(live) == 0 {
		return 0, 0
	}
	readers := runtime.GOMAXPROCS(0)
	const perReader = 100_000
	var wg sync.WaitGroup
	start := time.Now()
	for r := range readers {
		wg.Go(func() {
			b, ts := live[r%len(live)], targets[r%len(live)]
			for i := range perReader {
				if i%4096 == 0 && ctx.Err() != nil {
					return
				}
				t := &ts[(i*7919+r*104729)%len(ts)]
				got, found, err := b.mgr.SegmentForOffset(t.tp, t.epoch, t.offset)
				switch {
				case errors.Is(err, rlmm.ErrNotReady):
					// Every hosted partition was ready before the burst.
					e.notReady.Add(1)
					e.lookupErrors.Add(1)
					continue
				case err != nil:
					e.lookupErrors.Add(1)
					e.addDifference("broker %d: SegmentForOffset(%s, epoch %d, offset %d) during the lookup burst: %v", b.id, t.tp, t.epoch, t.offset, err)
					continue
				}
				if found && !slices.Contains(t.want, got.ID.ID) {
					e.addDifference("broker %d: SegmentForOffset(%s, epoch %d, offset %d) = %s; model %v", b.id, t.tp, t.epoch, t.offset, got.ID.ID, t.want)
				}
			}
		})
	}
	wg.Wait()
	return int64(readers * perReader), time.Since(start)
}

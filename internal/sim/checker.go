package sim

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/rlmm-go/rlmm"
)

// The checker: every read compared with the model, the differences
// collected for the report.

// awaitView polls until b lists exactly the model's segments for p,
// bounded by SettleTimeout. It returns the last difference on timeout.
func (e *engine) awaitView(ctx context.Context, b *broker, p *partitionModel) (string, error) {
	want := p.expectedList()
	deadline := time.Now().Add(e.cfg.SettleTimeout)
	pause := 100 * time.Microsecond
	for {
		got, err := b.mgr.ListSegments(p.tp)
		var diff string
		switch {
		case errors.Is(err, rlmm.ErrNotReady):
			diff = "not ready"
		case err != nil:
			return "", fmt.Errorf("broker %d: listing %s: %w", b.id, p.tp, err)
		default:
			if diff = diffSegments(got, want); diff == "" {
				return "", nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Sprintf("broker %d, partition %s, after waiting %s: %s", b.id, p.tp, e.cfg.SettleTimeout, diff), nil
		}
		if err := sleep(ctx, pause); err != nil {
			return "", err
		}
		pause = min(2*pause, 5*time.Millisecond)
	}
}

func (e *engine) addDifference(format string, args ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.differences) < 1000 {
		e.differences = append(e.differences, fmt.Sprintf(format, args...))
	}
}

// finalCheck compares every live broker's view of every partition with the
// model: hosted partitions list exactly the model's segments and answer
// lookups and highest offsets like it; deleted partitions list nothing.
func (e *engine) finalCheck(ctx context.Context) error {
	for _, b := range e.brokers {
		if b.mgr == nil {
			continue
		}
		phase := fmt.Sprintf("checking broker %d", b.id)
		err := e.parallel(ctx, phase, func(*partitionModel) bool { return true }, func(ctx context.Context, _ int, p *partitionModel) error {
			if p.deleted || !slices.Contains(p.replicas, b.id) {
				// Not hosted (a deleted partition was stopped): refused,
				// never an answer, stale or empty.
				got, err := b.mgr.ListSegments(p.tp)
				if !errors.Is(err, rlmm.ErrNotAssigned) || len(got) > 0 {
					e.addDifference("broker %d, partition %s it does not host: %d segments, %v; want ErrNotAssigned", b.id, p.tp, len(got), err)
				}
				return nil
			}
			diff, err := e.awaitView(ctx, b, p)
			if err != nil {
				return err
			}
			if diff != "" {
				e.addDifference("%s", diff)
				return nil
			}
			e.checkReads(b, p)
			return nil
		})
		if err != nil {
			return err
		}
		e.checkHoldings(b)
	}
	return nil
}

// checkHoldings compares what b's cache holds with the model restricted
// to what b hosts: exactly the live segments of its partitions.
func (e *engine) checkHoldings(b *broker) {
	h := e.holdingOf(b)
	if h.CachedSegments != h.HostedSegments || h.CachedPartitions > h.HostedPartitions {
		e.addDifference("broker %d holds %d user partitions with %d segments; it hosts %d partitions with %d live segments",
			b.id, h.CachedPartitions, h.CachedSegments, h.HostedPartitions, h.HostedSegments)
	}
}

// holdingOf is b's hosted share of the model beside what its cache holds.
func (e *engine) holdingOf(b *broker) Holding {
	st := b.mgr.Stats()
	h := Holding{Broker: b.id, CachedPartitions: st.CachedPartitions, CachedSegments: st.CachedSegments}
	for _, p := range e.parts {
		if !p.deleted && slices.Contains(p.replicas, b.id) {
			h.HostedPartitions++
			h.HostedSegments += int64(len(p.segs))
		}
	}
	return h
}

// checkReads compares lookups at both ends of every finished segment's
// epochs, and the highest offset of every epoch, with the model.
func (e *engine) checkReads(b *broker, p *partitionModel) {
	for ep, want := range p.highestFinished() {
		got, ok, err := b.mgr.HighestOffsetForEpoch(p.tp, ep)
		if err != nil || !ok || got != want {
			e.addDifference("broker %d: HighestOffsetForEpoch(%s, %d) = %d, %v, %v; model %d", b.id, p.tp, ep, got, ok, err, want)
		}
	}
	for i := range p.segs {
		m := &p.segs[i]
		if m.State != rlmm.CopySegmentFinished {
			continue
		}
		for _, le := range m.LeaderEpochs {
			s, end, ok := epochRange(m, le.Epoch)
			if !ok || end < s {
				continue
			}
			for _, off := range []int64{s, end} {
				got, found, err := b.mgr.SegmentForOffset(p.tp, le.Epoch, off)
				if err != nil || !found || !slices.Contains(p.finishedCovering(le.Epoch, off), got.ID.ID) {
					e.addDifference("broker %d: SegmentForOffset(%s, epoch %d, offset %d) = %v, %v, %v; model %v",
						b.id, p.tp, le.Epoch, off, got.ID.ID, found, err, p.finishedCovering(le.Epoch, off))
				}
			}
		}
	}
}

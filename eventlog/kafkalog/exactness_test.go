package kafkalog

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rlmm-go/rlmm/eventlog"
)

type (
	atomicInt64    = atomic.Int64
	eventlogRecord = eventlog.Record
)

// TestRandomAssignmentChangesAreExact drives one subscription through random
// Add (at random offsets, also past the end), Remove and Poll steps while
// publishers keep appending, so kgo always holds fetched records when the
// assignment changes. A sequential model checks every delivered record:
// only consumed partitions, exactly the next offset, the published value.
func TestRandomAssignmentChangesAreExact(t *testing.T) {
	for _, brokers := range []int{1, 3} {
		t.Run(fmt.Sprintf("brokers=%d", brokers), func(t *testing.T) {
			testRandomAssignmentChanges(t, openLog(t, testConfig(t, fakeCluster(t, brokers).ListenAddrs(), 3)), 150)
		})
	}
}

func TestRandomAssignmentChangesAreExactRealKafka(t *testing.T) {
	addr := realBootstrap(t)
	testRandomAssignmentChanges(t, openLog(t, testConfig(t, []string{addr}, 3)), 100)
}

func testRandomAssignmentChanges(t *testing.T, l *Log, steps int) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed>>1))
	parts := l.Partitions()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	// Publishers: record i of partition p is recordValue(p, i) at offset i.
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel() // runs before wg.Wait: stops the publishers on a failure
	pubErr := make(chan error, parts)
	publishContinuously(ctx, &wg, l, time.Millisecond, pubErr, func(p int32, i int, off int64) error {
		if off != int64(i) {
			return fmt.Errorf("publish %d to %d got offset %d", i, p, off)
		}
		return nil
	})

	sub := subscribeLog(t, l)
	next := map[int32]int64{} // the model: consumed partitions and their next offset
	delivered := 0
	for step := range steps {
		select {
		case err := <-pubErr:
			t.Fatal(err)
		default:
		}
		p := int32(rng.IntN(int(parts)))
		switch op := rng.IntN(10); {
		case op < 3:
			hw, err := l.HighWaterMarks(ctx, []int32{p})
			if err != nil {
				t.Fatal(err)
			}
			off := rng.Int64N(hw[0] + 3) // sometimes past the end
			if err := sub.Add(p, off); err != nil {
				t.Fatalf("step %d: Add(%d, %d): %v", step, p, off, err)
			}
			next[p] = off
		case op < 5:
			if err := sub.Remove(p); err != nil {
				t.Fatalf("step %d: Remove(%d): %v", step, p, err)
			}
			delete(next, p)
		default:
			pollCtx, pollCancel := context.WithTimeout(ctx, 30*time.Millisecond)
			recs, err := sub.Poll(pollCtx)
			pollCancel()
			if err != nil && !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("step %d: Poll: %v", step, err)
			}
			for _, r := range recs {
				want, ok := next[r.Partition]
				if !ok {
					t.Fatalf("step %d: got %d/%d from a partition that is not consumed (model %v)", step, r.Partition, r.Offset, next)
				}
				if r.Offset != want {
					t.Fatalf("step %d: got %d/%d, want offset %d", step, r.Partition, r.Offset, want)
				}
				if string(r.Value) != string(recordValue(r.Partition, int(r.Offset))) {
					t.Fatalf("step %d: %d/%d holds %q", step, r.Partition, r.Offset, r.Value)
				}
				next[r.Partition]++
				delivered++
			}
		}
	}
	// Every consumed partition still catches up to what was published.
	cancel()
	wg.Wait()
	for p, from := range next {
		hw, err := l.HighWaterMarks(context.Background(), []int32{p})
		if err != nil {
			t.Fatal(err)
		}
		want := int(max(0, hw[0]-from))
		if want == 0 {
			continue
		}
		// Drop the other partitions so pollN sees only p.
		for q := range next {
			if q != p {
				if err := sub.Remove(q); err != nil {
					t.Fatal(err)
				}
			}
		}
		got := pollN(t, sub, want)
		for i, r := range got {
			if r.Partition != p || r.Offset != from+int64(i) {
				t.Fatalf("catch-up of %d from %d: record %d is %d/%d", p, from, i, r.Partition, r.Offset)
			}
		}
		delivered += len(got)
		break // one partition suffices; the others were removed
	}
	ks := sub.(*subscription)
	ks.mu.Lock()
	reseeks := ks.reseeks
	ks.mu.Unlock()
	t.Logf("%d steps, %d records delivered and checked, %d re-seeks after stale records", steps, delivered, reseeks)
}

// assignOp is one completed Add (remove false) or Remove of the concurrent
// exactness test.
type assignOp struct {
	p      int32
	off    int64
	remove bool
}

// assignModel is one possible state of a subscription: consumed partitions
// and the next offset each must deliver.
type assignModel map[int32]int64

func (m assignModel) clone() assignModel {
	c := make(assignModel, len(m))
	for p, o := range m {
		c[p] = o
	}
	return c
}

func (m assignModel) apply(ops []assignOp) {
	for _, op := range ops {
		if op.remove {
			delete(m, op.p)
		} else {
			m[op.p] = op.off
		}
	}
}

func (m assignModel) key() string {
	parts := make([]string, 0, len(m))
	for p := range int32(64) {
		if o, ok := m[p]; ok {
			parts = append(parts, fmt.Sprintf("%d:%d", p, o))
		}
	}
	return fmt.Sprint(parts)
}

// TestConcurrentAssignmentChangesAreExact changes the assignment from one
// goroutine while another polls and publishers append. A Poll takes effect
// at one instant between its call and its return, so its batch must match
// the model after some prefix of the Add/Remove calls that completed while
// it ran; the checker keeps every model state still possible.
func TestConcurrentAssignmentChangesAreExact(t *testing.T) {
	for _, brokers := range []int{1, 3} {
		t.Run(fmt.Sprintf("brokers=%d", brokers), func(t *testing.T) {
			testConcurrentAssignmentChanges(t, openLog(t, testConfig(t, fakeCluster(t, brokers).ListenAddrs(), 3)), 300)
		})
	}
}

func TestConcurrentAssignmentChangesAreExactRealKafka(t *testing.T) {
	addr := realBootstrap(t)
	testConcurrentAssignmentChanges(t, openLog(t, testConfig(t, []string{addr}, 3)), 150)
}

func testConcurrentAssignmentChanges(t *testing.T, l *Log, polls int) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed>>1))
	parts := l.Partitions()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()

	var published [64]atomicInt64
	errs := make(chan error, parts+1)
	publishContinuously(ctx, &wg, l, 500*time.Microsecond, errs, func(p int32, i int, _ int64) error {
		published[p].Store(int64(i + 1))
		return nil
	})

	sub := subscribeLog(t, l)
	var (
		opsMu sync.Mutex
		ops   []assignOp
	)
	opRng := rand.New(rand.NewPCG(seed+1, seed))
	wg.Go(func() {
		for ctx.Err() == nil {
			time.Sleep(time.Duration(opRng.IntN(4000)) * time.Microsecond)
			p := int32(opRng.IntN(int(parts)))
			op := assignOp{p: p, remove: opRng.IntN(3) == 0}
			var err error
			if op.remove {
				err = sub.Remove(p)
			} else {
				op.off = opRng.Int64N(published[p].Load() + 3)
				err = sub.Add(p, op.off)
			}
			if err != nil {
				errs <- fmt.Errorf("assignment change %+v: %w", op, err)
				return
			}
			opsMu.Lock()
			ops = append(ops, op)
			opsMu.Unlock()
		}
	})
	seq := func() int {
		opsMu.Lock()
		defer opsMu.Unlock()
		return len(ops)
	}
	window := func(from, to int) []assignOp {
		opsMu.Lock()
		defer opsMu.Unlock()
		return append([]assignOp(nil), ops[from:to]...)
	}

	candidates := []assignModel{{}}
	applied, delivered := 0, 0
	for n := range polls {
		select {
		case err := <-errs:
			t.Fatal(err)
		default:
		}
		start := seq()
		pollCtx, pollCancel := context.WithTimeout(ctx, time.Duration(10+rng.IntN(40))*time.Millisecond)
		recs, err := sub.Poll(pollCtx)
		pollCancel()
		end := seq()
		if err != nil && !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("poll %d: %v", n, err)
		}
		before := window(applied, start)
		during := window(start, end)
		next := map[string]assignModel{}
		for _, c := range candidates {
			c = c.clone()
			c.apply(before)
			for k := 0; k <= len(during); k++ {
				m := c.clone()
				m.apply(during[:k])
				if batchFits(m, recs) {
					m.apply(during[k:])
					next[m.key()] = m
				}
			}
		}
		if len(next) == 0 {
			t.Fatalf("poll %d returned %s, which no order of the %d assignment changes made during it explains (before the poll the state was one of %v; changes during it %+v)",
				n, fmtRecords(recs), len(during), candidateKeys(candidates, before), during)
		}
		candidates = candidates[:0]
		for _, m := range next {
			candidates = append(candidates, m)
		}
		applied = end
		delivered += len(recs)
	}
	cancel()
	ks := sub.(*subscription)
	ks.mu.Lock()
	reseeks := ks.reseeks
	ks.mu.Unlock()
	t.Logf("%d polls, %d assignment changes, %d records delivered and checked, %d re-seeks after stale records",
		polls, seq(), delivered, reseeks)
}

// batchFits applies a Poll batch to m and reports whether every record was
// the next one of a consumed partition.
func batchFits(m assignModel, recs []eventlogRecord) bool {
	for _, r := range recs {
		want, ok := m[r.Partition]
		if !ok || r.Offset != want || string(r.Value) != string(recordValue(r.Partition, int(r.Offset))) {
			return false
		}
		m[r.Partition] = want + 1
	}
	return true
}

func fmtRecords(recs []eventlogRecord) string {
	var b []string
	for _, r := range recs {
		b = append(b, fmt.Sprintf("%d/%d", r.Partition, r.Offset))
	}
	return fmt.Sprint(b)
}

func candidateKeys(cs []assignModel, before []assignOp) []string {
	var out []string
	for _, c := range cs {
		c = c.clone()
		c.apply(before)
		out = append(out, c.key())
	}
	return out
}

package memory

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/rlmm-go/rlmm"
)

// lazySource fills a Manager with a few partitions of varied state and
// returns it with its export.
func lazySource(t *testing.T) (*Manager, []PartitionState) {
	t.Helper()
	m := New()
	addFinished(t, m, segMD(tpFoo, 1, 0, 100))
	addFinished(t, m, segMD(tpFoo, 2, 50, 80))
	mustOK(t, m.AddSegment(ctx, segMD(tpFoo, 3, 101, 200, ep(0, 101), ep(2, 150))))
	addFinished(t, m, segMD(tpBar1, 4, 0, 10))
	mustOK(t, m.PutPartitionDelete(ctx, rlmm.PartitionDelete{TopicIDPartition: tpBar1, State: rlmm.DeletePartitionMarked}))
	addFinished(t, m, segMD(tpFooRenamed, 5, 0, 9))
	return m, m.Export(nil)
}

// lazyOf turns states into LazyPartitions whose builds are counted per
// partition; fail lists partitions whose build fails.
func lazyOf(states []PartitionState, calls map[rlmm.TopicIDPartition]*atomic.Int32, fail ...rlmm.TopicIDPartition) []LazyPartition {
	out := make([]LazyPartition, len(states))
	for i := range states {
		st := states[i]
		n := &atomic.Int32{}
		calls[st.TopicIDPartition] = n
		failing := false
		for _, tp := range fail {
			failing = failing || tp == st.TopicIDPartition
		}
		out[i] = LazyPartition{TopicIDPartition: st.TopicIDPartition, Build: func() (*PartitionBuilder, error) {
			n.Add(1)
			if failing {
				return nil, fmt.Errorf("%w: block 7 is damaged", rlmm.ErrCorrupt)
			}
			return builderOf(&st)
		}}
	}
	return out
}

func TestImportLazyBuildsOnFirstUse(t *testing.T) {
	src, states := lazySource(t)
	m := New()
	calls := map[rlmm.TopicIDPartition]*atomic.Int32{}
	mustOK(t, m.ImportLazy(lazyOf(states, calls)))
	if got := m.PendingCount(); got != 3 {
		t.Fatalf("PendingCount = %d, want 3", got)
	}
	if got := len(m.Partitions()); got != 3 {
		t.Errorf("Partitions lists %d partitions before any build, want 3", got)
	}
	for tp, n := range calls {
		if n.Load() != 0 {
			t.Errorf("%s built before use", tp)
		}
	}
	// A read builds its partition only, once.
	if got := lookupNo(t, m, tpFoo, 0, 60); got != 2 {
		t.Errorf("lookup(60) = s%d, want s2", got)
	}
	_ = lookupNo(t, m, tpFoo, 0, 60)
	if calls[tpFoo].Load() != 1 || calls[tpBar1].Load() != 0 || m.PendingCount() != 2 {
		t.Errorf("after reads of %s: builds %d/%d, pending %d; want 1/0, 2", tpFoo, calls[tpFoo].Load(), calls[tpBar1].Load(), m.PendingCount())
	}
	// A change builds its partition first, then applies on the built state.
	mustOK(t, m.UpdateSegment(ctx, upd(tpBar1, 4, rlmm.DeleteSegmentStarted)))
	mustOK(t, src.UpdateSegment(ctx, upd(tpBar1, 4, rlmm.DeleteSegmentStarted)))
	if calls[tpBar1].Load() != 1 {
		t.Errorf("update built %s %d times, want 1", tpBar1, calls[tpBar1].Load())
	}
	mustOK(t, m.BuildPending(ctx, 2))
	if m.PendingCount() != 0 || calls[tpFooRenamed].Load() != 1 || calls[tpFoo].Load() != 1 {
		t.Errorf("after BuildPending: pending %d, builds %d/%d; want 0, 1/1", m.PendingCount(), calls[tpFooRenamed].Load(), calls[tpFoo].Load())
	}
	if err := equalStates(m.Export(nil), src.Export(nil)); err != nil {
		t.Error(err)
	}
}

func TestImportLazyBuildFailure(t *testing.T) {
	_, states := lazySource(t)
	var told []error
	m := New(WithBuildFailure(func(tp rlmm.TopicIDPartition, err error) {
		if tp != tpFoo {
			t.Errorf("failure told for %s", tp)
		}
		told = append(told, err)
	}))
	calls := map[rlmm.TopicIDPartition]*atomic.Int32{}
	mustOK(t, m.ImportLazy(lazyOf(states, calls, tpFoo)))
	checks := map[string]error{
		"SegmentForOffset": third(m.SegmentForOffset(tpFoo, 0, 1)),
		"ListSegments":     second(m.ListSegments(tpFoo)),
		"RemoteLogSize":    second(m.RemoteLogSize(tpFoo, 0)),
		"AddSegment":       m.AddSegment(ctx, segMD(tpFoo, 9, 300, 400)),
		"UpdateSegment":    m.UpdateSegment(ctx, upd(tpFoo, 1, rlmm.DeleteSegmentStarted)),
		"PartitionDelete":  m.PutPartitionDelete(ctx, rlmm.PartitionDelete{TopicIDPartition: tpFoo, State: rlmm.DeletePartitionMarked}),
		"ExportChecked":    second(m.ExportChecked(nil)),
	}
	for name, err := range checks {
		if !errors.Is(err, rlmm.ErrCorrupt) {
			t.Errorf("%s of a partition whose build failed: %v; want ErrCorrupt", name, err)
		}
	}
	if len(told) != 1 || calls[tpFoo].Load() != 1 {
		t.Errorf("failure told %d times after %d builds; want once after 1", len(told), calls[tpFoo].Load())
	}
	// The other partitions are unaffected, and Export leaves the failed one out.
	if got := lookupNo(t, m, tpFooRenamed, 0, 3); got != 5 {
		t.Errorf("lookup in a healthy partition = s%d, want s5", got)
	}
	if got := m.Export(nil); len(got) != 2 {
		t.Errorf("Export holds %d partitions, want the 2 healthy ones", len(got))
	}
	// DELETE_PARTITION_FINISHED needs no state: it drops the failed
	// partition without building it again, a plain miss afterwards.
	mustOK(t, m.PutPartitionDelete(ctx, rlmm.PartitionDelete{TopicIDPartition: tpFoo, State: rlmm.DeletePartitionFinished}))
	if calls[tpFoo].Load() != 1 {
		t.Errorf("built %d times; want once", calls[tpFoo].Load())
	}
	if _, ok, err := m.SegmentForOffset(tpFoo, 0, 1); ok || err != nil {
		t.Errorf("read after drop = %v, %v; want a miss", ok, err)
	}
	if m.PendingCount() != 0 {
		t.Errorf("PendingCount = %d after everything was built or dropped", m.PendingCount())
	}
}

func TestImportLazyReplacedBeforeUse(t *testing.T) {
	_, states := lazySource(t)
	m := New()
	calls := map[rlmm.TopicIDPartition]*atomic.Int32{}
	mustOK(t, m.ImportLazy(lazyOf(states, calls)))
	mustOK(t, m.Import([]PartitionState{{TopicIDPartition: tpFoo}})) // empty: removes it
	m.DropPartition(tpBar1)
	mustOK(t, m.BuildPending(ctx, 1))
	if calls[tpFoo].Load() != 0 || calls[tpBar1].Load() != 0 || m.PendingCount() != 0 {
		t.Errorf("builds %d/%d, pending %d; want 0/0, 0", calls[tpFoo].Load(), calls[tpBar1].Load(), m.PendingCount())
	}
	if got := m.Partitions(); len(got) != 1 || got[0] != tpFooRenamed {
		t.Errorf("Partitions = %v, want [%s]", got, tpFooRenamed)
	}
	if err := m.ImportLazy([]LazyPartition{{TopicIDPartition: tpFoo}}); !errors.Is(err, rlmm.ErrInvalidArgument) {
		t.Errorf("ImportLazy without Build: %v; want ErrInvalidArgument", err)
	}
}

// Readers, a writer and BuildPending race over lazily installed
// partitions: every partition is built once and every read sees the state.
func TestImportLazyConcurrent(t *testing.T) {
	src := New()
	const parts = 40
	tps := make([]rlmm.TopicIDPartition, parts)
	for i := range tps {
		tps[i] = rlmm.TopicIDPartition{TopicID: rlmm.UuidFromBits(9, int64(i)), Topic: "lazy", Partition: int32(i)}
		for k := range 20 {
			addFinished(t, src, segMD(tps[i], i*100+k, int64(k)*10, int64(k)*10+9))
		}
	}
	m := New()
	calls := map[rlmm.TopicIDPartition]*atomic.Int32{}
	mustOK(t, m.ImportLazy(lazyOf(src.Export(nil), calls)))
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for r := range 4 {
		wg.Go(func() {
			for i := range parts {
				tp := tps[(i+r*7)%parts]
				md, ok, err := m.SegmentForOffset(tp, 0, 55)
				if err != nil || !ok || md.StartOffset != 50 {
					errs <- fmt.Errorf("read of %s: %v, %v, %v", tp, md, ok, err)
					return
				}
			}
		})
	}
	wg.Go(func() {
		for i := range parts {
			md := segMD(tps[i], 10_000+i, 1000, 1009)
			if err := m.AddSegment(ctx, md); err != nil {
				errs <- err
				return
			}
		}
	})
	wg.Go(func() {
		if err := m.BuildPending(ctx, 2); err != nil {
			errs <- err
		}
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for tp, n := range calls {
		if n.Load() != 1 {
			t.Errorf("%s built %d times", tp, n.Load())
		}
	}
	if m.PendingCount() != 0 {
		t.Errorf("PendingCount = %d", m.PendingCount())
	}
}

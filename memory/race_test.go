package memory

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/rlmm-go/rlmm"
)

// TestConcurrentReadersAndWriter runs readers against a writer that copies
// segments, deletes old ones and re-imports the partition, and checks that
// every read is one the writer's history allows. Run it with -race.
func TestConcurrentReadersAndWriter(t *testing.T) {
	const segments, retained, readers = 600, 20, 4
	m := New()
	var done atomic.Bool
	var wg sync.WaitGroup
	errs := make(chan error, readers+1)

	// Segment k covers [10k, 10k+9] in epoch 0 and nothing overlaps, so a
	// lookup of offset o can only ever return segment o/10.
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer done.Store(true)
		for k := 0; k < segments; k++ {
			md := segMD(tpFoo, k, int64(k)*10, int64(k)*10+9)
			if err := m.AddSegment(ctx, md); err != nil {
				errs <- err
				return
			}
			if err := m.UpdateSegment(ctx, upd(tpFoo, k, rlmm.CopySegmentFinished)); err != nil {
				errs <- err
				return
			}
			if old := k - retained; old >= 0 {
				for _, s := range []rlmm.SegmentState{rlmm.DeleteSegmentStarted, rlmm.DeleteSegmentFinished} {
					if err := m.UpdateSegment(ctx, upd(tpFoo, old, s)); err != nil {
						errs <- err
						return
					}
				}
			}
			if k%97 == 0 {
				if err := m.Import(m.Export(nil)); err != nil {
					errs <- err
					return
				}
			}
		}
	}()

	for r := 0; r < readers; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var dst rlmm.SegmentMetadata
			var lastHighest int64 = -1
			for !done.Load() {
				o := rand.Int64N(segments * 10)
				ok, err := m.SegmentForOffsetInto(tpFoo, 0, o, &dst)
				if err == nil && ok && (segNo(dst) != int(o/10) || dst.State != rlmm.CopySegmentFinished) {
					err = fmt.Errorf("lookup(%d) returned %v", o, dst)
				}
				if err == nil {
					var h int64
					h, ok, err = m.HighestOffsetForEpoch(tpFoo, 0)
					if err == nil && ok {
						if h < lastHighest {
							err = fmt.Errorf("highest offset went down from %d to %d", lastHighest, h)
						}
						lastHighest = h
					}
				}
				if err == nil {
					var list []rlmm.SegmentMetadata
					list, err = m.ListSegments(tpFoo)
					if err == nil && (len(list) > retained+1 || !slices.IsSortedFunc(list, func(a, b rlmm.SegmentMetadata) int { return int(a.StartOffset - b.StartOffset) })) {
						err = fmt.Errorf("list of %d segments, or unsorted: %v", len(list), segNos(list))
					}
				}
				if err == nil {
					if v, ok := m.View(tpFoo); ok && v.SegmentsByState[rlmm.CopySegmentFinished]+v.SegmentsByState[rlmm.CopySegmentStarted]+v.SegmentsByState[rlmm.DeleteSegmentStarted] > retained+1 {
						err = fmt.Errorf("view counts %v", v.SegmentsByState)
					}
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	list, err := m.ListSegments(tpFoo)
	mustOK(t, err)
	if len(list) != retained {
		t.Errorf("%d segments at the end, want %d", len(list), retained)
	}
}

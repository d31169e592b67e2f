package topicbased

import (
	"sync"
	"testing"
	"time"

	"github.com/rlmm-go/rlmm"
)

// With a short LagInterval and SnapshotInterval the housekeeper samples
// high-water marks and writes snapshots all the time while mutations and
// reads run: under the race detector this checks that every field has one
// writer (the samples reach the partitions' marks through the pump) and
// that the results stay right.
func TestHousekeeperRacesMutationsAndReads(t *testing.T) {
	l := newLog(t, 4)
	met := &countingMetrics{}
	m := startManager(t, Config{Log: l, SnapshotDir: t.TempDir(), SnapshotInterval: 3 * time.Millisecond,
		LagInterval: time.Millisecond, Metrics: met})
	tps := distinctPartitions(t, 4, 4)
	assign(t, m, tps...)
	ctx := testCtx(t)
	const perPartition = 40
	stop := make(chan struct{})
	var readers sync.WaitGroup
	for _, tp := range tps {
		readers.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := m.ListSegments(tp); err != nil {
					t.Errorf("ListSegments(%s): %v", tp, err)
					return
				}
				_, _, _ = m.SegmentForOffset(tp, 0, 50)
				_ = m.Stats()
			}
		})
	}
	var writers sync.WaitGroup
	for _, tp := range tps {
		writers.Go(func() {
			for k := range int64(perPartition) {
				md := segment(tp, uint64(tp.Partition)*1000+uint64(k), k*100, k*100+99)
				if err := m.AddSegment(ctx, md); err != nil {
					t.Errorf("AddSegment: %v", err)
					return
				}
				if err := m.UpdateSegment(ctx, update(md, rlmm.CopySegmentFinished)); err != nil {
					t.Errorf("UpdateSegment: %v", err)
					return
				}
			}
		})
	}
	writers.Wait()
	// Let the housekeeper sample at least once after the last write.
	time.Sleep(5 * time.Millisecond)
	close(stop)
	readers.Wait()
	for _, tp := range tps {
		got, err := m.ListSegments(tp)
		if err != nil || len(got) != perPartition {
			t.Errorf("%s: %d segments, %v; want %d", tp, len(got), err, perPartition)
		}
	}
	waitFor(t, "the sampled high-water marks", func() bool {
		met.mu.Lock()
		defer met.mu.Unlock()
		for _, tp := range tps {
			mp := m.MetadataPartitionOf(tp)
			if pr := met.progress[mp]; pr[1] != pr[0]+1 {
				return false
			}
		}
		return true
	})
	for _, st := range m.Stats().Partitions {
		if st.HighWaterMark != st.Applied+1 {
			t.Errorf("metadata partition %d: high-water mark %d, applied %d", st.Partition, st.HighWaterMark, st.Applied)
		}
	}
}

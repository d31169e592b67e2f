package memory

import (
	"flag"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/rlmm-go/rlmm"
)

// The scale curves (docs/bench/scale.md): memory only,
// so they may run on a busy machine. Sizes are flags of the test binary, as
// the largest need minutes and gigabytes:
//
//	go test -run '^$' -bench ScaleHeap -benchtime 1x ./memory -args -scale-segments 1000000,3000000,10000000
//	go test -run '^$' -bench ChurnHeapCurve -benchtime 1x -timeout 60m ./memory -args -churn-events 10000000,30000000,100000000
var (
	scaleSegments = counts{1_000_000}
	churnEvents   = counts{10_000_000}
)

func init() {
	flag.Var(&scaleSegments, "scale-segments", "live segments at each point of BenchmarkScaleHeap (a comma-separated list)")
	flag.Var(&churnEvents, "churn-events", "events applied at each checkpoint of BenchmarkChurnHeapCurve (a comma-separated list)")
}

// counts is a flag.Value: a comma-separated list of positive counts.
type counts []int

func (c *counts) String() string {
	s := make([]string, len(*c))
	for i, n := range *c {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

func (c *counts) Set(v string) error {
	var out counts
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return fmt.Errorf("want a comma-separated list of positive counts, got %q in %q", f, v)
		}
		out = append(out, n)
	}
	*c = out
	return nil
}

// liveHeapNow is the heap in use after a collection.
func liveHeapNow() uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// BenchmarkScaleHeap: the heap retained per live finished single-epoch
// segment (1,000 per user partition) at each size of
// -scale-segments (default 1,000,000); it fails above
// retainedHeapLimit, the target at 10,000,000.
func BenchmarkScaleHeap(b *testing.B) {
	const perPartition = 1000
	for _, segments := range scaleSegments {
		b.Run(fmt.Sprintf("segments=%d", segments), func(b *testing.B) {
			var perSeg float64
			for b.Loop() {
				before := liveHeapNow()
				m := New()
				md := newBenchMD()
				for i := 0; i*perPartition < segments; i++ {
					fillPartition(b, m, benchTP(i), min(perPartition, segments-i*perPartition), &md)
				}
				perSeg = float64(liveHeapNow()-before) / float64(segments)
				runtime.KeepAlive(m)
			}
			b.ReportMetric(perSeg, "bytes/segment")
			if perSeg > retainedHeapLimit {
				b.Errorf("%d segments: %.0f bytes of heap per segment; the target is at most %d", segments, perSeg, retainedHeapLimit)
			}
		})
	}
}

// BenchmarkChurnHeapCurve: 1,000,000 live finished segments (1,000
// partitions of 1,000, the leader epoch advancing every 10 segments) under
// retention's churn, each new segment copied (add, finish) and the oldest
// of its partition retired (delete started, finished), until the events
// applied reach each count of -churn-events (default 10,000,000);
// at each it reports the heap per live segment against before the churn.
// It fails when that grows past 1.5 times (the heap must follow the live
// state, not the history).
func BenchmarkChurnHeapCurve(b *testing.B) {
	const partitions, live, perEpoch = 1000, 1000, 10
	checkpoints := []int(churnEvents)
	for b.Loop() {
		base := liveHeapNow()
		m := New()
		md := newBenchMD()
		tps := make([]rlmm.TopicIDPartition, partitions)
		next := make([]int, partitions) // the next segment number of each partition
		id := func(p, k int) rlmm.Uuid { return rlmm.UuidFromBits(int64(p)<<32|int64(k), 0x5ca1e) }
		copySeg := func(p int) {
			k := next[p]
			next[p]++
			md.ID = rlmm.SegmentID{TopicIDPartition: tps[p], ID: id(p, k)}
			md.StartOffset, md.EndOffset = int64(k)*100, int64(k)*100+99
			md.LeaderEpochs[0] = rlmm.EpochStart{Epoch: int32(k / perEpoch), StartOffset: md.StartOffset}
			if err := m.AddSegment(ctx, md); err != nil {
				b.Fatal(err)
			}
			if err := m.UpdateSegment(ctx, rlmm.SegmentUpdate{ID: md.ID, State: rlmm.CopySegmentFinished, BrokerID: 1}); err != nil {
				b.Fatal(err)
			}
		}
		events := 0
		for p := range tps {
			tps[p] = benchTP(p)
			for range live {
				copySeg(p)
			}
		}
		events += 2 * partitions * live
		before := float64(liveHeapNow()-base) / float64(partitions*live)
		b.ReportMetric(before, "bytes/live-seg-before")
		for _, target := range checkpoints {
			for events < target {
				for p := range tps {
					copySeg(p)
					oldest := rlmm.SegmentID{TopicIDPartition: tps[p], ID: id(p, next[p]-1-live)}
					for _, s := range []rlmm.SegmentState{rlmm.DeleteSegmentStarted, rlmm.DeleteSegmentFinished} {
						if err := m.UpdateSegment(ctx, rlmm.SegmentUpdate{ID: oldest, State: s}); err != nil {
							b.Fatal(err)
						}
					}
				}
				events += 4 * partitions
			}
			after := float64(liveHeapNow()-base) / float64(partitions*live)
			b.ReportMetric(after, fmt.Sprintf("bytes/live-seg-at-%dM-events", target/1_000_000))
			b.ReportMetric(after/before, fmt.Sprintf("ratio-at-%dM-events", target/1_000_000))
			if after > 1.5*before {
				b.Errorf("after %d events of churn the heap per live segment is %.0f bytes, %.2fx the %.0f before: more than 1.5x",
					events, after, after/before, before)
			}
		}
		runtime.KeepAlive(m)
	}
}

// TestCountsFlag: the benchmarks' size lists parse, and a wrong one is
// refused naming the bad entry.
func TestCountsFlag(t *testing.T) {
	tests := []struct {
		in, want, err string
	}{
		{"1000000", "1000000", ""},
		{"1000000, 3000000,10000000", "1000000,3000000,10000000", ""},
		{"", "", `got "" in ""`},
		{"10,x", "", `got "x" in "10,x"`},
		{"10,0", "", `got "0" in "10,0"`},
	}
	for _, tt := range tests {
		c := counts{7}
		err := c.Set(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("Set(%q) = %v, want an error containing %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || c.String() != tt.want {
			t.Errorf("Set(%q) = %v, %q; want %q", tt.in, err, c.String(), tt.want)
		}
	}
}

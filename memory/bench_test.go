package memory

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/rlmm-go/rlmm"
)

// benchTP names user partition i of the benchmarks.
func benchTP(i int) rlmm.TopicIDPartition {
	return rlmm.TopicIDPartition{TopicID: rlmm.UuidFromBits(int64(i/100+1), 7), Topic: fmt.Sprintf("topic-%d", i/100), Partition: int32(i % 100)}
}

// fillPartition adds and finishes n single-epoch segments of 100 offsets each
// to tp, the way a broker copies them, reusing one metadata value.
func fillPartition(b *testing.B, m *Manager, tp rlmm.TopicIDPartition, n int, md *rlmm.SegmentMetadata) {
	for k := 0; k < n; k++ {
		md.ID = rlmm.SegmentID{TopicIDPartition: tp, ID: rlmm.UuidFromBits(int64(k)+1, rand.Int64())}
		md.StartOffset, md.EndOffset = int64(k)*100, int64(k)*100+99
		md.LeaderEpochs[0] = rlmm.EpochStart{Epoch: 0, StartOffset: md.StartOffset}
		if err := m.AddSegment(ctx, *md); err != nil {
			b.Fatal(err)
		}
		if err := m.UpdateSegment(ctx, rlmm.SegmentUpdate{ID: md.ID, State: rlmm.CopySegmentFinished, BrokerID: 1}); err != nil {
			b.Fatal(err)
		}
	}
}

// cpuTime returns the CPU time (user + system) the process has used so far.
// On a shared machine it tells the cost of an op apart from the time spent
// waiting for a CPU, which wall-clock ns/op includes.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports the CPU time per op since start.
func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
}

func newBenchMD() rlmm.SegmentMetadata {
	return rlmm.SegmentMetadata{MaxTimestampMs: 1, BrokerID: 1, LeaderEpochs: make([]rlmm.EpochStart, 1), SizeInBytes: 1 << 20, State: rlmm.CopySegmentStarted}
}

// BenchmarkSegmentForOffset looks up random offsets of 8 partitions holding
// 10,000 finished segments each, in a manager of 10,000 partitions (the
// other 9,992 hold 10 segments each).
func BenchmarkSegmentForOffset(b *testing.B) {
	const partitions, big, bigSegs, smallSegs = 10_000, 8, 10_000, 10
	m := New()
	md := newBenchMD()
	for i := 0; i < partitions; i++ {
		n := smallSegs
		if i < big {
			n = bigSegs
		}
		fillPartition(b, m, benchTP(i), n, &md)
	}
	type query struct {
		tp     rlmm.TopicIDPartition
		offset int64
	}
	queries := make([]query, 1<<14)
	for k := range queries {
		queries[k] = query{benchTP(rand.IntN(big)), rand.Int64N(bigSegs * 100)}
	}
	b.Run("into", func(b *testing.B) {
		var dst rlmm.SegmentMetadata
		b.ReportAllocs()
		k := 0
		start := cpuTime()
		for b.Loop() {
			q := &queries[k&(len(queries)-1)]
			k++
			if ok, err := m.SegmentForOffsetInto(q.tp, 0, q.offset, &dst); !ok || err != nil {
				b.Fatalf("miss at %d: %v", q.offset, err)
			}
		}
		reportCPU(b, start)
	})
	b.Run("into-1partition", func(b *testing.B) {
		// All queries in one partition of 10,000 segments: its index and
		// segments stay in the CPU caches more, as on a fetch-heavy partition.
		var dst rlmm.SegmentMetadata
		tp := benchTP(0)
		b.ReportAllocs()
		k := 0
		start := cpuTime()
		for b.Loop() {
			q := &queries[k&(len(queries)-1)]
			k++
			if ok, err := m.SegmentForOffsetInto(tp, 0, q.offset, &dst); !ok || err != nil {
				b.Fatalf("miss at %d: %v", q.offset, err)
			}
		}
		reportCPU(b, start)
	})
	b.Run("copy", func(b *testing.B) {
		b.ReportAllocs()
		k := 0
		start := cpuTime()
		for b.Loop() {
			q := &queries[k&(len(queries)-1)]
			k++
			if _, ok, err := m.SegmentForOffset(q.tp, 0, q.offset); !ok || err != nil {
				b.Fatalf("miss at %d: %v", q.offset, err)
			}
		}
		reportCPU(b, start)
	})
	b.Run("copy-1partition", func(b *testing.B) {
		// Like for like with Kafka's bench-lookup (KafkaRlmmDriver), which
		// queries one partition's cache of 10,000 finished segments: the
		// copying API on one partition, random offsets.
		tp := benchTP(0)
		b.ReportAllocs()
		k := 0
		start := cpuTime()
		for b.Loop() {
			q := &queries[k&(len(queries)-1)]
			k++
			if _, ok, err := m.SegmentForOffset(tp, 0, q.offset); !ok || err != nil {
				b.Fatalf("miss at %d: %v", q.offset, err)
			}
		}
		reportCPU(b, start)
	})
	b.Run("parallel-into", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			var dst rlmm.SegmentMetadata
			k := rand.IntN(len(queries))
			for pb.Next() {
				q := &queries[k&(len(queries)-1)]
				k++
				if ok, err := m.SegmentForOffsetInto(q.tp, 0, q.offset, &dst); !ok || err != nil {
					b.Errorf("miss at %d: %v", q.offset, err)
					return
				}
			}
		})
	})
}

// BenchmarkSegmentForOffsetUneven is into-1partition with segments of
// uneven sizes (1 to 400 offsets, drawn at random), where a start guessed
// from the offset (the envelope's interpolation) is often wrong: the cost
// of the fallback to the summary search.
func BenchmarkSegmentForOffsetUneven(b *testing.B) {
	const segs = 10_000
	m := New()
	md := newBenchMD()
	tp := benchTP(0)
	var next int64
	for k := 0; k < segs; k++ {
		md.ID = rlmm.SegmentID{TopicIDPartition: tp, ID: rlmm.UuidFromBits(int64(k)+1, rand.Int64())}
		md.StartOffset = next
		next += 1 + rand.Int64N(400)
		md.EndOffset = next - 1
		md.LeaderEpochs[0] = rlmm.EpochStart{Epoch: 0, StartOffset: md.StartOffset}
		if err := m.AddSegment(ctx, md); err != nil {
			b.Fatal(err)
		}
		if err := m.UpdateSegment(ctx, rlmm.SegmentUpdate{ID: md.ID, State: rlmm.CopySegmentFinished, BrokerID: 1}); err != nil {
			b.Fatal(err)
		}
	}
	offsets := make([]int64, 1<<14)
	for k := range offsets {
		offsets[k] = rand.Int64N(next)
	}
	var dst rlmm.SegmentMetadata
	b.ReportAllocs()
	k := 0
	start := cpuTime()
	for b.Loop() {
		off := offsets[k&(len(offsets)-1)]
		k++
		if ok, err := m.SegmentForOffsetInto(tp, 0, off, &dst); !ok || err != nil {
			b.Fatalf("miss at %d: %v", off, err)
		}
	}
	reportCPU(b, start)
}

// BenchmarkAddFinish applies an add and a finish (two events) per op, as a
// broker does for each copied segment, spread over 1,000 partitions.
func BenchmarkAddFinish(b *testing.B) {
	const partitions = 1000
	m := New()
	tps := make([]rlmm.TopicIDPartition, partitions)
	for i := range tps {
		tps[i] = benchTP(i)
	}
	md := newBenchMD()
	b.ReportAllocs()
	k := 0
	start := cpuTime()
	for b.Loop() {
		tp := tps[k%partitions]
		off := int64(k/partitions) * 100
		md.ID = rlmm.SegmentID{TopicIDPartition: tp, ID: rlmm.UuidFromBits(int64(k)+1, 42)}
		md.StartOffset, md.EndOffset = off, off+99
		md.LeaderEpochs[0] = rlmm.EpochStart{Epoch: 0, StartOffset: off}
		if err := m.AddSegment(ctx, md); err != nil {
			b.Fatal(err)
		}
		if err := m.UpdateSegment(ctx, rlmm.SegmentUpdate{ID: md.ID, State: rlmm.CopySegmentFinished, BrokerID: 1}); err != nil {
			b.Fatal(err)
		}
		k++
	}
	reportCPU(b, start)
	b.ReportMetric(float64(2*b.N)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(2e9*float64(b.N)/float64(cpuTime()-start), "events/cpu-s")
}

// BenchmarkRetainedHeap measures the heap retained per live single-epoch
// finished segment without custom metadata, at 1,000,000 segments, with
// runtime.MemStats after a GC. The time per op is the cost of building it.
// It fails above retainedHeapLimit bytes per segment (the bound that holds
// at 10,000,000 segments), so make test's memory step holds the figure.
func BenchmarkRetainedHeap(b *testing.B) {
	for _, shape := range []struct{ partitions, perPartition int }{{1000, 1000}, {100, 10_000}, {10, 100_000}} {
		b.Run(fmt.Sprintf("%dx%d", shape.partitions, shape.perPartition), func(b *testing.B) {
			var perSeg float64
			for b.Loop() {
				perSeg = retainedPerSegment(shape.partitions*shape.perPartition, func(m *Manager) {
					md := newBenchMD()
					for i := 0; i < shape.partitions; i++ {
						fillPartition(b, m, benchTP(i), shape.perPartition, &md)
					}
				})
			}
			b.ReportMetric(perSeg, "bytes/segment")
			if perSeg > retainedHeapLimit {
				b.Errorf("%.0f bytes of heap per live finished segment; the target is at most %d", perSeg, retainedHeapLimit)
			}
		})
	}
}

// BenchmarkRetainedHeapCustom is BenchmarkRetainedHeap's 1,000 × 1,000
// with 16 bytes of custom metadata on every segment (as an RSM that names
// its objects there gives each): what the extras cost on top. It holds no
// bound (the target is of segments without custom metadata) and is not in
// make test.
func BenchmarkRetainedHeapCustom(b *testing.B) {
	const partitions, perPartition = 1000, 1000
	var perSeg float64
	for b.Loop() {
		perSeg = retainedPerSegment(partitions*perPartition, func(m *Manager) {
			md := newBenchMD()
			custom := make([]byte, 16)
			for i := range partitions {
				tp := benchTP(i)
				for k := range int64(perPartition) {
					// As Kafka sets it: on the COPY_SEGMENT_FINISHED update.
					md.ID = rlmm.SegmentID{TopicIDPartition: tp, ID: rlmm.UuidFromBits(k+1, rand.Int64())}
					md.StartOffset, md.EndOffset = k*100, k*100+99
					md.LeaderEpochs[0] = rlmm.EpochStart{Epoch: 0, StartOffset: md.StartOffset}
					if err := m.AddSegment(ctx, md); err != nil {
						b.Fatal(err)
					}
					u := rlmm.SegmentUpdate{ID: md.ID, State: rlmm.CopySegmentFinished, BrokerID: 1, CustomMetadata: custom}
					if err := m.UpdateSegment(ctx, u); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
	b.ReportMetric(perSeg, "bytes/segment")
}

// retainedPerSegment builds a manager with build and returns the heap it
// retains after a GC, per segment of segments.
func retainedPerSegment(segments int, build func(*Manager)) float64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	m := New()
	build(m)
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(m)
	return float64(after.HeapAlloc-before.HeapAlloc) / float64(segments)
}

// retainedHeapLimit is the most heap a live single-epoch finished segment
// may retain: 10,000,000 segments in at most 1.5 GB.
const retainedHeapLimit = 150

// BenchmarkImport imports the Export of 1,000,000 finished single-epoch
// segments (1,000 partitions × 1,000) into a fresh Manager: the restart path
// of the topic-based manager's snapshot.
func BenchmarkImport(b *testing.B) {
	const partitions, perPartition = 1000, 1000
	src := New()
	md := newBenchMD()
	for i := 0; i < partitions; i++ {
		fillPartition(b, src, benchTP(i), perPartition, &md)
	}
	states := src.Export(nil)
	b.ReportAllocs()
	start := cpuTime()
	for b.Loop() {
		if err := New().Import(states); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, start)
	b.ReportMetric(float64(b.N*partitions*perPartition)/b.Elapsed().Seconds(), "segments/s")
}

// BenchmarkExport exports 1,000,000 finished single-epoch segments (1,000
// partitions × 1,000): the snapshot path of the topic-based manager.
func BenchmarkExport(b *testing.B) {
	const partitions, perPartition = 1000, 1000
	m := New()
	md := newBenchMD()
	for i := 0; i < partitions; i++ {
		fillPartition(b, m, benchTP(i), perPartition, &md)
	}
	b.ReportAllocs()
	start := cpuTime()
	for b.Loop() {
		if got := m.Export(nil); len(got) != partitions {
			b.Fatalf("exported %d partitions", len(got))
		}
	}
	reportCPU(b, start)
	b.ReportMetric(float64(b.N*partitions*perPartition)/b.Elapsed().Seconds(), "segments/s")
}

// BenchmarkRetention holds one partition at 100,000 finished segments while
// per op a new segment is copied (add, finish) and the oldest deleted
// (delete started, finished): four events, the broker's steady state.
func BenchmarkRetention(b *testing.B) {
	const live = 100_000
	m := New()
	md := newBenchMD()
	tp := benchTP(0)
	ids := make([]rlmm.SegmentID, 0, live)
	add := func(k int) {
		md.ID = rlmm.SegmentID{TopicIDPartition: tp, ID: rlmm.UuidFromBits(int64(k)+1, 99)}
		md.StartOffset, md.EndOffset = int64(k)*100, int64(k)*100+99
		md.LeaderEpochs[0] = rlmm.EpochStart{Epoch: 0, StartOffset: md.StartOffset}
		if err := m.AddSegment(ctx, md); err != nil {
			b.Fatal(err)
		}
		if err := m.UpdateSegment(ctx, rlmm.SegmentUpdate{ID: md.ID, State: rlmm.CopySegmentFinished}); err != nil {
			b.Fatal(err)
		}
		ids = append(ids, md.ID)
	}
	for k := 0; k < live; k++ {
		add(k)
	}
	b.ReportAllocs()
	k := live
	start := cpuTime()
	for b.Loop() {
		add(k)
		k++
		oldest := ids[0]
		ids = ids[1:]
		for _, s := range []rlmm.SegmentState{rlmm.DeleteSegmentStarted, rlmm.DeleteSegmentFinished} {
			if err := m.UpdateSegment(ctx, rlmm.SegmentUpdate{ID: oldest, State: s}); err != nil {
				b.Fatal(err)
			}
		}
	}
	reportCPU(b, start)
	b.ReportMetric(float64(4*b.N)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkEpochChurnHeap measures the heap retained per live segment
// before and after retention retires 30 times the live count, while the
// leader epoch advances every 10 segments (every leader change does), with
// runtime.MemStats after a GC. Each partition keeps its live count: every
// new segment copied (add, finish) is followed by the deletion of its
// oldest (delete started, finished). The target: the heap after the churn
// at most 1.5 times the heap before it (the benchmark fails above that).
func BenchmarkEpochChurnHeap(b *testing.B) {
	const churn, perEpoch = 30, 10
	for _, shape := range []struct{ partitions, live int }{{1000, 100}, {10, 10_000}} {
		b.Run(fmt.Sprintf("%dx%d", shape.partitions, shape.live), func(b *testing.B) {
			var before, after float64
			for b.Loop() {
				before, after = epochChurnHeap(b, shape.partitions, shape.live, churn, perEpoch)
			}
			b.ReportMetric(before, "bytes/live-seg-before")
			b.ReportMetric(after, "bytes/live-seg-after")
			b.ReportMetric(after/before, "after/before")
			if after > 1.5*before {
				b.Errorf("heap per live segment grew from %.0f to %.0f bytes (%.2fx) after retiring %d times the live count: more than 1.5x",
					before, after, after/before, churn)
			}
		})
	}
}

// epochChurnHeap fills partitions with live finished segments each (epoch
// k/perEpoch for segment k), measures the heap per live segment, retires
// churn*live segments of each partition as retention does, and measures
// again.
func epochChurnHeap(b *testing.B, partitions, live, churn, perEpoch int) (before, after float64) {
	var base, ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&base)
	m := New()
	md := newBenchMD()
	tps := make([]rlmm.TopicIDPartition, partitions)
	for i := range tps {
		tps[i] = benchTP(i)
	}
	id := func(k int) rlmm.Uuid { return rlmm.UuidFromBits(int64(k)+1, 0x5eed) }
	copySeg := func(tp rlmm.TopicIDPartition, k int) {
		md.ID = rlmm.SegmentID{TopicIDPartition: tp, ID: id(k)}
		md.StartOffset, md.EndOffset = int64(k)*100, int64(k)*100+99
		md.LeaderEpochs[0] = rlmm.EpochStart{Epoch: int32(k / perEpoch), StartOffset: md.StartOffset}
		if err := m.AddSegment(ctx, md); err != nil {
			b.Fatal(err)
		}
		if err := m.UpdateSegment(ctx, rlmm.SegmentUpdate{ID: md.ID, State: rlmm.CopySegmentFinished, BrokerID: 1}); err != nil {
			b.Fatal(err)
		}
	}
	for _, tp := range tps {
		for k := range live {
			copySeg(tp, k)
		}
	}
	perLive := func() float64 {
		runtime.GC()
		runtime.ReadMemStats(&ms)
		return float64(ms.HeapAlloc-base.HeapAlloc) / float64(partitions*live)
	}
	before = perLive()
	for _, tp := range tps {
		for k := live; k < live+churn*live; k++ {
			copySeg(tp, k)
			oldest := rlmm.SegmentID{TopicIDPartition: tp, ID: id(k - live)}
			for _, s := range []rlmm.SegmentState{rlmm.DeleteSegmentStarted, rlmm.DeleteSegmentFinished} {
				if err := m.UpdateSegment(ctx, rlmm.SegmentUpdate{ID: oldest, State: s}); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	after = perLive()
	// The answer that must survive: the highest offset of an emptied epoch.
	if h, ok, err := m.HighestOffsetForEpoch(tps[0], 0); err != nil || !ok || h != int64(perEpoch)*100-1 {
		b.Fatalf("HighestOffsetForEpoch of emptied epoch 0 = %d, %t, %v; want %d", h, ok, err, int64(perEpoch)*100-1)
	}
	runtime.KeepAlive(m)
	return before, after
}

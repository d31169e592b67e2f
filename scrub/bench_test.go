package scrub_test

import (
	"runtime"
	"testing"
	"time"

	"github.com/rlmm-go/rlmm/scrub"
	"github.com/rlmm-go/rlmm/scrub/layout"
	"github.com/rlmm-go/rlmm/scrub/scrubtest"
)

// BenchmarkScrub measures the metadata side (building the index from the
// segments' metadata, custom metadata decoded) and the comparison of a
// listing of every segment's objects, for 1,000,000 segments in 1,000
// partitions. The listing is made in process beforehand: the benchmark
// measures scrub's own cost, not the storage's. Reported: objects/s (listed
// objects compared per second, index build included), segments/s, and the
// memory the scrub holds (heap retained after a GC by the index and the
// comparer) per listed object and per segment.
func BenchmarkScrub(b *testing.B) {
	for _, c := range []struct {
		layout string
		custom bool
	}{{layout.AivenName, true}, {layout.AivenName, false}, {layout.LocalName, false}} {
		const parts, perPart = 1000, 1000
		name := c.layout + "/segments=" + sizeLabel(parts*perPart)
		if c.custom {
			name += "/custom-metadata"
		}
		b.Run(name, func(b *testing.B) {
			prefix := ""
			if c.layout == layout.AivenName {
				prefix = "tiered/"
			}
			l := mustLayout(b, c.layout, prefix)
			f := scrubtest.New(scrubtest.Options{Layout: l, Topics: 10, PartitionsPerTopic: parts / 10,
				SegmentsPerPartition: perPart, CustomMetadata: c.custom})
			now := time.Now()
			objs := listing(f, now.Add(-time.Hour))
			b.ReportAllocs()
			var heap int64
			var cpu time.Duration
			for b.Loop() {
				b.StopTimer()
				var before runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				cpu0 := cpuTime(b)
				b.StartTimer()
				x := indexOf(f)
				cmp := scrub.NewComparer(x, now)
				cmp.ObservePage(objs)
				b.StopTimer()
				cpu += cpuTime(b) - cpu0
				var after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&after)
				heap = int64(after.HeapAlloc) - int64(before.HeapAlloc)
				rep := cmp.Report()
				if rep.Summary.Findings() != 0 || rep.Summary.Objects != int64(len(objs)) {
					b.Fatalf("clean listing: %+v", rep.Summary)
				}
				b.StartTimer()
			}
			sec := b.Elapsed().Seconds()
			b.ReportMetric(float64(len(objs))*float64(b.N)/sec, "objects/s")
			b.ReportMetric(float64(len(f.Segments))*float64(b.N)/sec, "segments/s")
			b.ReportMetric(float64(len(objs))*float64(b.N)/cpu.Seconds(), "objects/cpu-s")
			b.ReportMetric(float64(heap)/float64(len(objs)), "bytes/object")
			b.ReportMetric(float64(heap)/float64(len(f.Segments)), "bytes/segment")
		})
	}
}

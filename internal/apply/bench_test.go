package apply

import (
	"testing"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/memory"
	"github.com/rlmm-go/rlmm/wire"
)

// BenchmarkRecord is the one event path's cost per event, alone (no log,
// no pump): an add and a finish applied to a cache, against the same two
// records of a partition the caller does not keep (routed from the
// record's bytes and skipped before the decode). The target: the
// skip costs at most a quarter of an apply.
func BenchmarkRecord(b *testing.B) {
	const n = 50
	const segments = 4096
	tp := rlmm.TopicIDPartition{TopicID: rlmm.UuidFromBits(11, 12), Topic: "bench-topic", Partition: 7}
	mp := wire.MetadataPartition(tp, n)
	var values [][]byte
	for i := range segments {
		md := rlmm.SegmentMetadata{ID: rlmm.SegmentID{TopicIDPartition: tp, ID: rlmm.UuidFromBits(int64(i+1), 99)},
			StartOffset: int64(i) * 100, EndOffset: int64(i)*100 + 99, LeaderEpochs: []rlmm.EpochStart{{Epoch: 0, StartOffset: int64(i) * 100}},
			SizeInBytes: 1 << 20, MaxTimestampMs: 1, EventTimestampMs: 1, State: rlmm.CopySegmentStarted}
		for _, ev := range []wire.Event{wire.SegmentEvent(md), wire.UpdateEvent(rlmm.SegmentUpdate{ID: md.ID, State: rlmm.CopySegmentFinished, EventTimestampMs: 2})} {
			v, err := wire.AppendEvent(nil, &ev)
			if err != nil {
				b.Fatal(err)
			}
			values = append(values, v)
		}
	}
	kept := map[wire.PartitionKey]struct{}{{TopicID: rlmm.UuidFromBits(1, 1), Partition: 1}: {}}
	keep := func(k wire.PartitionKey) bool { _, ok := kept[k]; return ok }
	b.Run("apply", func(b *testing.B) {
		var cache *memory.Manager
		i := 0
		for b.Loop() {
			if i%len(values) == 0 {
				b.StopTimer()
				cache = memory.New()
				b.StartTimer()
			}
			if r := Record(cache, n, mp, int64(i), values[i%len(values)], nil, nil); r.Reason != 0 {
				b.Fatal(r.Err)
			}
			i++
		}
	})
	b.Run("skip", func(b *testing.B) {
		cache := memory.New()
		i := 0
		for b.Loop() {
			if r := Record(cache, n, mp, int64(i), values[i%len(values)], keep, nil); r.Reason != ReasonNotKept {
				b.Fatal(r.Reason, r.Err)
			}
			i++
		}
	})
}

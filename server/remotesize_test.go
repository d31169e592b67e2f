package server

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/internal/view"
	"github.com/rlmm-go/rlmm/memory"
)

// TestLimitRows holds the cardinality rule: the n largest rows keep their
// labels, the others are summed under _other with the lowest timestamp and
// no offset; n <= 0 keeps none; rows of one label are merged first.
func TestLimitRows(t *testing.T) {
	row := func(topic string, part int32, bytes int64, ts int64) view.Size {
		return view.Size{Topic: topic, Partition: part, Partitions: 1, Segments: 1, RemoteBytes: bytes, OldestOffset: 5, OldestTimestampMs: ts}
	}
	rows := []view.Size{row("a", -1, 10, 300), row("b", -1, 30, 200), row("c", -1, 20, 100), row("d", -1, 20, 400)}
	cases := []struct {
		n    int
		want []string // topic:bytes:offset:ts
	}{
		{0, nil},
		{-1, nil},
		{4, []string{"a:10:5:300", "b:30:5:200", "c:20:5:100", "d:20:5:400"}},
		{9, []string{"a:10:5:300", "b:30:5:200", "c:20:5:100", "d:20:5:400"}},
		{2, []string{"b:30:5:200", "c:20:5:100", "_other:30:-1:300"}}, // c before d: a tie goes to the topic name
		{1, []string{"b:30:5:200", "_other:50:-1:100"}},
	}
	for _, c := range cases {
		var got []string
		for _, r := range limitRows(rows, c.n) {
			got = append(got, fmt.Sprintf("%s:%d:%d:%d", r.Topic, r.RemoteBytes, r.OldestOffset, r.OldestTimestampMs))
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("limit %d: %v, want %v", c.n, got, c.want)
		}
	}
	topics, parts := splitRows([]view.Size{row("x", -1, 1, 50), row("x", -1, 2, 40), row("x", 0, 1, 50), row("x", 0, 2, 40), row("y", 0, 4, 10)})
	if len(topics) != 1 || topics[0].RemoteBytes != 3 || topics[0].OldestOffset != -1 || topics[0].OldestTimestampMs != 40 || topics[0].Partitions != 2 {
		t.Errorf("topics of one name: %+v, want one row of 3 bytes, 2 partitions, oldest timestamp 40 and no offset", topics)
	}
	if len(parts) != 2 || parts[0].RemoteBytes != 3 || parts[1].Topic != "y" {
		t.Errorf("partitions: %+v, want x-0 merged (3 bytes) and y-0", parts)
	}
}

// BenchmarkRemoteSizes is the cost of one computation of the remote size
// gauges (view.SizesOf over the cache, what a scrape does when the last one
// is older than --metrics-sizes-max-age) at 1M segments: 1,000 partitions of
// 1,000 finished segments. It allocates only the rows.
func BenchmarkRemoteSizes(b *testing.B) {
	for _, shape := range []struct{ partitions, perPartition int }{{10, 1000}, {1000, 1000}} {
		b.Run(fmt.Sprintf("%dx%d", shape.partitions, shape.perPartition), func(b *testing.B) {
			m := memory.New()
			defer m.Close()
			ctx := context.Background()
			parts := make([]rlmm.TopicIDPartition, shape.partitions)
			for i := range parts {
				parts[i] = rlmm.TopicIDPartition{TopicID: rlmm.UuidFromBits(int64(i/10+1), 7), Topic: fmt.Sprintf("topic-%d", i/10), Partition: int32(i % 10)}
				for k := range shape.perPartition {
					md := rlmm.SegmentMetadata{ID: rlmm.SegmentID{TopicIDPartition: parts[i], ID: rlmm.UuidFromBits(int64(i)+1, int64(k)+1)},
						StartOffset: int64(k) * 100, EndOffset: int64(k)*100 + 99, MaxTimestampMs: int64(k), BrokerID: 1,
						LeaderEpochs: []rlmm.EpochStart{{Epoch: 0, StartOffset: int64(k) * 100}}, SizeInBytes: 1 << 20, State: rlmm.CopySegmentStarted}
					if err := m.AddSegment(ctx, md); err != nil {
						b.Fatal(err)
					}
					if err := m.UpdateSegment(ctx, rlmm.SegmentUpdate{ID: md.ID, State: rlmm.CopySegmentFinished, BrokerID: 1}); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				rows := view.SizesOf(parts, m, true, 0)
				if len(rows) != shape.partitions+shape.partitions/10 {
					b.Fatalf("%d rows", len(rows))
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(shape.partitions*shape.perPartition), "ns/segment")
		})
	}
}

package consoletest

import (
	"context"
	"fmt"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/eventlog"
	"github.com/rlmm-go/rlmm/wire"
)

// MetadataPartitions is the partition count of the fixture's metadata log.
const MetadataPartitions = 3

// BaseMs is the time of the fixture's first event; every other event is a
// whole number of minutes after it.
const BaseMs int64 = 1_767_225_600_000 // 2026-01-01T00:00:00Z

// Orders is the partition the timeline test draws; Payments a second topic.
var (
	Orders   = rlmm.TopicIDPartition{TopicID: rlmm.UuidFromBits(0x0102030405060708, 0x1112131415161718), Topic: "orders", Partition: 0}
	Payments = rlmm.TopicIDPartition{TopicID: rlmm.UuidFromBits(0x2122232425262728, 0x3132333435363738), Topic: "payments", Partition: 2}
)

// SegmentID returns the id of segment n of tp.
func SegmentID(tp rlmm.TopicIDPartition, n int64) rlmm.SegmentID {
	return rlmm.SegmentID{TopicIDPartition: tp, ID: rlmm.UuidFromBits(0x7700+int64(tp.Partition), n)}
}

// minute returns the time m minutes after BaseMs.
func minute(m int64) int64 { return BaseMs + m*60_000 }

// segment is one segment of the fixture and the states it goes through.
type segment struct {
	tp         rlmm.TopicIDPartition
	n          int64
	start, end int64
	epochs     []rlmm.EpochStart
	size       int32
	broker     int32
	addedAt    int64
	// updates are the states after COPY_SEGMENT_STARTED, each a minute
	// after the one before.
	updates []rlmm.SegmentState
}

// The segments of Orders, by offset (epoch 0 then 1 from offset 300):
//
//	1 [0, 99]      epoch 0  DELETE_SEGMENT_STARTED (retention, recent: not stuck)
//	2 [100, 199]   epoch 0  COPY_SEGMENT_FINISHED
//	  gap [200, 249] of epoch 0
//	3 [250, 349]   epochs 0 (250-299) and 1 (300-349)  COPY_SEGMENT_FINISHED
//	4 [340, 449]   epoch 1  COPY_SEGMENT_FINISHED, same broker as 3: overlap [340, 349]
//	5 [450, 549]   epoch 1  COPY_SEGMENT_FINISHED
//	  gap [550, 599] of epoch 1
//	6 [600, 699]   epoch 1  COPY_SEGMENT_FINISHED
//	7 [700, 799]   epoch 1  COPY_SEGMENT_STARTED two hours before the newest event: a stuck copy
var segments = []segment{
	{Orders, 1, 0, 99, epochs(0, 0), 1000, 1, 0, []rlmm.SegmentState{rlmm.CopySegmentFinished}},
	{Orders, 2, 100, 199, epochs(0, 100), 1100, 1, 2, []rlmm.SegmentState{rlmm.CopySegmentFinished}},
	{Orders, 3, 250, 349, epochs(0, 250, 1, 300), 1200, 1, 4, []rlmm.SegmentState{rlmm.CopySegmentFinished}},
	{Orders, 4, 340, 449, epochs(1, 340), 1300, 1, 6, []rlmm.SegmentState{rlmm.CopySegmentFinished}},
	{Orders, 5, 450, 549, epochs(1, 450), 1400, 2, 8, []rlmm.SegmentState{rlmm.CopySegmentFinished}},
	{Orders, 6, 600, 699, epochs(1, 600), 1500, 2, 10, []rlmm.SegmentState{rlmm.CopySegmentFinished}},
	{Orders, 7, 700, 799, epochs(1, 700), 1600, 2, 12, nil},
	{Payments, 1, 0, 499, epochs(3, 0), 5000, 3, 14, []rlmm.SegmentState{rlmm.CopySegmentFinished}},
}

// retentionAt is when segment 1 of Orders starts being deleted: the newest
// event of the log, 120 minutes after the stuck copy's.
const retentionAt = 132

func epochs(pairs ...int64) []rlmm.EpochStart {
	out := make([]rlmm.EpochStart, 0, len(pairs)/2)
	for i := 0; i+1 < len(pairs); i += 2 {
		out = append(out, rlmm.EpochStart{Epoch: int32(pairs[i]), StartOffset: pairs[i+1]})
	}
	return out
}

// Events returns the fixture's events in log order.
func Events() []wire.Event {
	var out []wire.Event
	for _, s := range segments {
		id := SegmentID(s.tp, s.n)
		out = append(out, wire.SegmentEvent(rlmm.SegmentMetadata{ID: id, StartOffset: s.start, EndOffset: s.end,
			MaxTimestampMs: minute(s.addedAt) - 1000, BrokerID: s.broker, EventTimestampMs: minute(s.addedAt),
			LeaderEpochs: s.epochs, SizeInBytes: s.size, State: rlmm.CopySegmentStarted, TxnIndexEmpty: true}))
		for i, st := range s.updates {
			out = append(out, wire.UpdateEvent(rlmm.SegmentUpdate{ID: id, EventTimestampMs: minute(s.addedAt + 1 + int64(i)),
				State: st, BrokerID: s.broker}))
		}
	}
	out = append(out, wire.UpdateEvent(rlmm.SegmentUpdate{ID: SegmentID(Orders, 1), EventTimestampMs: minute(retentionAt),
		State: rlmm.DeleteSegmentStarted, BrokerID: 1}))
	return out
}

// Records returns the fixture's events as metadata log records, each in the
// metadata partition Kafka's partitioner gives it, with consecutive offsets
// per partition.
func Records() ([]eventlog.Record, error) {
	next := make([]int64, MetadataPartitions)
	var out []eventlog.Record
	for _, ev := range Events() {
		tp, _ := ev.TopicIDPartition()
		p := wire.MetadataPartition(tp, MetadataPartitions)
		b, err := wire.AppendEvent(nil, &ev)
		if err != nil {
			return nil, fmt.Errorf("encoding %v: %w", &ev, err)
		}
		out = append(out, eventlog.Record{Partition: p, Offset: next[p], Value: b})
		next[p]++
	}
	return out, nil
}

// Publish writes the fixture's events to log, each to its metadata
// partition. The log must have MetadataPartitions partitions.
func Publish(ctx context.Context, log eventlog.Log) error {
	if n := log.Partitions(); n != MetadataPartitions {
		return fmt.Errorf("the fixture needs a log of %d metadata partitions, not %d", MetadataPartitions, n)
	}
	recs, err := Records()
	if err != nil {
		return err
	}
	for _, r := range recs {
		if _, err := log.Publish(ctx, r.Partition, r.Value); err != nil {
			return fmt.Errorf("publishing to metadata partition %d: %w", r.Partition, err)
		}
	}
	return nil
}

// OrdersTimeline is what a timeline of Orders shows, derived by hand from
// the segments above (the tests compare it with what is drawn).
var OrdersTimeline = struct {
	// Segments counts the segments not DELETE_SEGMENT_FINISHED; Spans
	// their parts per leader epoch (segment 3 has two).
	Segments, Spans int
	// SpansByEpoch counts the parts per leader epoch.
	SpansByEpoch map[int32]int
	// Gaps and Overlaps are the [first, last] offsets marked.
	Gaps, Overlaps [][2]int64
	// Stuck are the numbers of the segments marked as stuck copies.
	Stuck []int64
	// Started and Deleting are the numbers of the segments in
	// COPY_SEGMENT_STARTED and DELETE_SEGMENT_STARTED.
	Started, Deleting []int64
}{
	Segments:     7,
	Spans:        8,
	SpansByEpoch: map[int32]int{0: 3, 1: 5},
	Gaps:         [][2]int64{{200, 249}, {550, 599}},
	Overlaps:     [][2]int64{{340, 349}},
	Stuck:        []int64{7},
	Started:      []int64{7},
	Deleting:     []int64{1},
}

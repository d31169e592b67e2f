package view

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/eventlog"
	"github.com/rlmm-go/rlmm/eventlog/memlog"
	"github.com/rlmm-go/rlmm/wire"
)

// TestReadLogFromTheLogStart: records deleted at the start of a metadata
// partition (memlog's DeleteRecordsBefore) are not waited for, a partition
// with every record deleted finishes at once, and the builder says where
// each history starts and reports the later events of segments added
// before it as unknown segments, not as rejected events.
func TestReadLogFromTheLogStart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	log := memlog.New(metadataPartitions)
	defer log.Close()
	home := wire.MetadataPartition(testTP, metadataPartitions)
	empty := (home + 1) % metadataPartitions // every record deleted
	put := func(p int32, ev wire.Event) int64 {
		off, err := log.Publish(ctx, p, encode(t, ev))
		if err != nil {
			t.Fatal(err)
		}
		return off
	}
	put(home, wire.SegmentEvent(seg(1, 0, 99, rlmm.CopySegmentStarted, 10))) // deleted below
	start := put(home, wire.SegmentEvent(seg(2, 100, 199, rlmm.CopySegmentStarted, 11)))
	updateOf1 := put(home, update(1, rlmm.CopySegmentFinished, 12))
	put(home, update(2, rlmm.CopySegmentFinished, 13))
	for range 3 {
		put(empty, wire.SegmentEvent(seg(9, 0, 9, rlmm.CopySegmentStarted, 5)))
	}
	if err := log.DeleteRecordsBefore(ctx, home, start); err != nil {
		t.Fatal(err)
	}
	if err := log.DeleteRecordsBefore(ctx, empty, 3); err != nil {
		t.Fatal(err)
	}

	b := NewBuilder(metadataPartitions)
	var plan Plan
	n, err := ReadLog(ctx, log, func(p Plan) { plan = p; b.SetHistory(p.Starts, p.HighWaterMarks) }, func(r eventlog.Record) error {
		_, _ = b.Apply(r)
		return nil
	})
	if err != nil {
		t.Fatalf("ReadLog: %v", err)
	}
	if n != 3 || plan.Total != 3 {
		t.Fatalf("read %d records of a plan of %d; want the 3 left after the log start", n, plan.Total)
	}
	hist := b.History()
	if len(hist) != 2 {
		t.Fatalf("History() = %+v, want metadata partitions %d and %d", hist, home, empty)
	}
	for _, h := range hist {
		switch h.MetadataPartition {
		case home:
			if h.LogStartOffset != start || h.HighWaterMark != 4 {
				t.Errorf("history of %d: %+v, want start %d, high-water mark 4", home, h, start)
			}
		case empty:
			if h.LogStartOffset != 3 || h.HighWaterMark != 3 || !strings.Contains(h.Meaning(), "every record of it was deleted") {
				t.Errorf("history of %d: %+v (%s), want start = high-water mark = 3, said so", empty, h, h.Meaning())
			}
		default:
			t.Errorf("history of metadata partition %d, which lost nothing: %+v", h.MetadataPartition, h)
		}
		if !strings.Contains(h.Meaning(), "unknown segments") {
			t.Errorf("Meaning() %q does not say what the loss means for the segments", h.Meaning())
		}
	}
	as := b.Anomalies(0, time.Hour)
	mustEqualKinds(t, as, HistoryLost, HistoryLost, UnknownSegment)
	if HasFailures(as) {
		t.Fatalf("a partly deleted history made verify fail: %v", as)
	}
	if u := as[2]; u.SegmentIDs[0] != segID(1).ID.String() || u.Record.Offset != updateOf1 {
		t.Errorf("unknown segment anomaly %+v, want segment 1 at offset %d", u, updateOf1)
	}
	if c := b.Counts(); c.Rejected != 0 || c.UnknownSegments != 1 {
		t.Errorf("counts %+v: want 0 rejected, 1 unknown segment event", c)
	}
	if segs := b.Segments(testTP); len(segs) != 1 || segs[0].ID != segID(2) {
		t.Errorf("segments %v, want only segment 2 (added after the start)", segs)
	}
}

// TestBuilderUnknownSegmentWithFullHistoryIsRejected: where nothing was
// deleted, an update of an unknown segment stays a rejected event.
func TestBuilderUnknownSegmentWithFullHistoryIsRejected(t *testing.T) {
	b := NewBuilder(metadataPartitions)
	b.SetHistory(make([]int64, metadataPartitions), []int64{1, 1, 1, 1})
	home := wire.MetadataPartition(testTP, metadataPartitions)
	_, _ = b.Apply(eventlog.Record{Partition: home, Offset: 0, Value: encode(t, update(1, rlmm.CopySegmentFinished, 1))})
	mustEqualKinds(t, b.Anomalies(0, time.Hour), RejectedEvent)
}

// hwmBeyondRecords says partition 1 holds one record more than it does, so
// a reader waits for a record that never comes.
type hwmBeyondRecords struct{ *memlog.Log }

func (l hwmBeyondRecords) HighWaterMarks(ctx context.Context, ps []int32) ([]int64, error) {
	hw, err := l.Log.HighWaterMarks(ctx, ps)
	for i, p := range ps {
		if p == 1 && err == nil {
			hw[i]++
		}
	}
	return hw, err
}

// TestReadLogNamesUnfinishedPartitions: a read that runs out of time names
// each metadata partition it did not finish, with where it stopped.
func TestReadLogNamesUnfinishedPartitions(t *testing.T) {
	log := memlog.New(3)
	defer log.Close()
	for p := range int32(3) {
		if _, err := log.Publish(context.Background(), p, []byte{1}); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := ReadLog(ctx, hwmBeyondRecords{log}, nil, func(eventlog.Record) error { return nil })
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "1 metadata partitions unfinished (1 at offset 1 of 2)") {
		t.Fatalf("ReadLog: %v; want a deadline error naming partition 1 at offset 1 of 2", err)
	}
}

package topicbased

import (
	"testing"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/wire"
)

// User partitions hosted while their metadata partition is still being
// caught up start rebuild passes while the read-ahead has the next Poll in
// flight: the batch it read is held, the re-read partition's records in it
// are not applied (the pass delivers them again), and every user partition
// ends with exactly the state of a manager that hosted it from the start,
// with no history reported lost.
func TestRebuildPassesWhileReadingAhead(t *testing.T) {
	l := newLog(t, 3)
	tps, _ := sharingPartitions(t, 3, 48)
	ctx := testCtx(t)
	// 48 partitions x 400 segments, each added, finished and every third
	// one deleted: about 45,000 records in one metadata partition, a dozen
	// Polls of the read-ahead.
	must(t, publishFromWorkers(ctx, l, tps, func(_ int, tp rlmm.TopicIDPartition) []wire.Event {
		var evs []wire.Event
		for k := range int64(400) {
			md := segment(tp, uint64(k+1), k*100, k*100+99, k/50, k*100)
			evs = append(evs, wire.SegmentEvent(md), wire.UpdateEvent(update(md, rlmm.CopySegmentFinished)))
			if k%3 == 0 {
				evs = append(evs, wire.UpdateEvent(update(md, rlmm.DeleteSegmentStarted)), wire.UpdateEvent(update(md, rlmm.DeleteSegmentFinished)))
			}
		}
		return evs
	}))
	writer := startManager(t, Config{Log: l})
	assign(t, writer, tps...)
	want := viewOf(t, writer, tps)

	met := &countingMetrics{}
	reader := startManager(t, Config{Log: l, Metrics: met})
	// Hosted a few at a time without waiting: the first call consumes the
	// metadata partition, each later one starts (or queues) a pass while
	// the catch-up reads on.
	for i := 0; i < len(tps); i += 4 {
		must(t, reader.OnPartitionLeadershipChanges(ctx, tps[i:i+4], nil))
	}
	for _, tp := range tps {
		must(t, reader.WaitReady(ctx, tp))
	}
	if s := reader.Stats(); s.Passes == 0 {
		t.Fatalf("no rebuild pass ran (stats %+v): the test did not exercise what it is for", s)
	}
	if lost := met.lostGaps(); len(lost) > 0 {
		t.Errorf("history reported lost: %v; want none (nothing was deleted)", lost)
	}
	must(t, sameViews(viewOf(t, reader, tps), want))
}

package brokertest

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/rlmm-go/rlmm"
)

// TestTieringLifecycle follows one partition through its whole tiered life
// on one broker: produce, every rolled segment copied and gone locally, read
// back from remote storage, remote retention, rlmm verify and inspect, and
// the topic's deletion.
func TestTieringLifecycle(t *testing.T) {
	ctx := testCtx(t)
	c := startCluster(t, 1)
	cl := c.client()
	tp := createTopic(ctx, t, cl, "tiered", []int32{1})

	// About 5 MiB: four or more rolled 1 MiB segments and the active one.
	const records = 5000
	produce(ctx, t, cl, tp.Topic, 0, records)
	ti := c.waitTiered(ctx, t, cl, tp, 0, 4)
	for _, s := range ti.finished {
		if !slices.Equal(s.states, []rlmm.SegmentState{rlmm.CopySegmentStarted, rlmm.CopySegmentFinished}) {
			t.Errorf("segment %s (%d..%d): states %v, want COPY_SEGMENT_STARTED then FINISHED", s.meta.ID.ID,
				s.meta.StartOffset, s.meta.EndOffset, s.states)
		}
	}
	c.checkRemoteFiles(ctx, t, tp, ti.finished)
	if start, err := listOffset(ctx, cl, tp.Topic, tsEarliest); err != nil || start != 0 {
		t.Fatalf("log start offset %d (%v), want 0: the remote segments count", start, err)
	}
	t.Logf("%d segments copied (offsets 0..%d), local log starts at %d", len(ti.finished), ti.remoteEnd, ti.localStart)

	// Offsets below the local log start exist only in remote storage.
	c.consume(ctx, t, tp.Topic, 0, records)

	// Remote retention by size: keep about two segments' worth.
	alterTopic(ctx, t, cl, tp.Topic, map[string]string{"retention.bytes": strconv.Itoa(2*segmentBytes + segmentBytes/2)})
	var deleted, kept []*segment
	waitFor(ctx, t, "retention to delete the oldest remote segments", func() (bool, string, error) {
		v, err := c.readMetadata(ctx)
		if err != nil {
			return false, "", err
		}
		all := v.segments(tp)
		deleted = inState(all, rlmm.DeleteSegmentFinished)
		kept = inState(all, rlmm.CopySegmentFinished)
		status := describe(all)
		if len(deleted) == 0 || len(inState(all, rlmm.DeleteSegmentStarted)) > 0 {
			return false, status, nil
		}
		start, err := listOffset(ctx, cl, tp.Topic, tsEarliest)
		if err != nil {
			return false, status, err
		}
		return len(kept) > 0 && start == kept[0].meta.StartOffset, fmt.Sprintf("%s log start %d", status, start), nil
	})
	for _, s := range deleted {
		if !slices.Equal(s.states, []rlmm.SegmentState{rlmm.CopySegmentStarted, rlmm.CopySegmentFinished,
			rlmm.DeleteSegmentStarted, rlmm.DeleteSegmentFinished}) {
			t.Errorf("deleted segment %s: states %v, want the four in order", s.meta.ID.ID, s.states)
		}
		if s.meta.EndOffset >= kept[0].meta.StartOffset {
			t.Errorf("retention deleted segment %d..%d but kept the older %d..", s.meta.StartOffset, s.meta.EndOffset, kept[0].meta.StartOffset)
		}
	}
	if _, err := contiguous(kept, kept[0].meta.StartOffset); err != nil {
		t.Error(err)
	}
	// The deleted segments' files go with them (LocalTieredStorage and the
	// fixture RSM delete synchronously before the broker writes
	// DELETE_SEGMENT_FINISHED); the kept ones' stay.
	c.checkRemoteFiles(ctx, t, tp, kept)
	t.Logf("retention deleted %d segments (%s), kept %d", len(deleted), describe(deleted), len(kept))
	c.consume(ctx, t, tp.Topic, kept[0].meta.StartOffset, records)

	c.verifyAndInspect(ctx, t, tp)

	// Deleting the topic deletes its remote data. Kafka's broker (4.0.1 to
	// 4.4.0, as these tests ran it) deletes every remote segment
	// (DELETE_SEGMENT_STARTED, FINISHED) and writes no partition delete
	// event (in 4.3.1's jars nothing calls
	// putRemotePartitionDeleteMetadata but the RLMMs themselves). If a
	// broker does write them, they must come in order.
	resps, err := kadm.NewClient(cl).DeleteTopics(ctx, tp.Topic)
	must(t, err)
	must(t, resps.Error())
	waitFor(ctx, t, "the deleted topic's remote segments and files to go", func() (bool, string, error) {
		v, err := c.readMetadata(ctx)
		if err != nil {
			return false, "", err
		}
		files, err := c.remoteFiles(tp)
		if err != nil {
			return false, "", err
		}
		all := v.segments(tp)
		status := fmt.Sprintf("partition delete states %v, segments %s, remote files %v", v.deletes[tp], describe(all), files)
		return len(inState(all, rlmm.DeleteSegmentFinished)) == len(all) && len(files) == 0, status, nil
	})
	v, err := c.readMetadata(ctx)
	must(t, err)
	for _, s := range v.segments(tp) {
		if s.states[len(s.states)-2] != rlmm.DeleteSegmentStarted {
			t.Errorf("segment %s of the deleted topic: states %v, want DELETE_SEGMENT_STARTED before FINISHED", s.meta.ID.ID, s.states)
		}
	}
	states := v.deletes[tp]
	if len(states) > 0 && !slices.Equal(states, []rlmm.PartitionDeleteState{rlmm.DeletePartitionMarked,
		rlmm.DeletePartitionStarted, rlmm.DeletePartitionFinished}) {
		t.Errorf("partition delete states %v, want none or DELETE_PARTITION_MARKED, STARTED, FINISHED", states)
	}
	bootstrap := strings.Join(c.addrs, ",")
	if out, code := rlmmRun(ctx, t, "verify", "--kafka", bootstrap, "-q"); code != 0 {
		t.Errorf("rlmm verify --kafka after the topic's deletion: exit %d:\n%s", code, out)
	}
	t.Logf("topic deleted: %d segments DELETE_SEGMENT_FINISHED, no remote file left, partition delete events %v",
		len(v.segments(tp)), states)
}

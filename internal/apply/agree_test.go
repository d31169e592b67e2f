package apply_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/eventlog/memlog"
	"github.com/rlmm-go/rlmm/internal/view"
	"github.com/rlmm-go/rlmm/topicbased"
	"github.com/rlmm-go/rlmm/wire"
)

// The pump and inspect/verify's view take the one event path: over a log
// holding good events, an undecodable record, a misrouted event, a snapshot
// record and events the state machine rejects, a manager hosting every
// partition and the view hold the same segments, and neither holds the
// misrouted one.
func TestPumpAndViewAgree(t *testing.T) {
	const n = 3
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	l := memlog.New(n)
	var tps []rlmm.TopicIDPartition
	for p := range int32(6) {
		tps = append(tps, rlmm.TopicIDPartition{TopicID: rlmm.UuidFromBits(7, 8), Topic: "agree", Partition: p})
	}
	publish := func(mp int32, ev wire.Event) {
		t.Helper()
		value, err := wire.AppendEvent(nil, &ev)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Publish(ctx, mp, value); err != nil {
			t.Fatal(err)
		}
	}
	seg := func(tp rlmm.TopicIDPartition, id int64, start int64) rlmm.SegmentMetadata {
		return rlmm.SegmentMetadata{ID: rlmm.SegmentID{TopicIDPartition: tp, ID: rlmm.UuidFromBits(id, id)},
			StartOffset: start, EndOffset: start + 9, LeaderEpochs: []rlmm.EpochStart{{Epoch: 0, StartOffset: start}},
			SizeInBytes: 100, State: rlmm.CopySegmentStarted}
	}
	for i, tp := range tps {
		mp := wire.MetadataPartition(tp, n)
		s := seg(tp, int64(10+i), 0)
		publish(mp, wire.SegmentEvent(s))
		publish(mp, wire.UpdateEvent(rlmm.SegmentUpdate{ID: s.ID, State: rlmm.CopySegmentFinished}))
		// Rejected: an update of a segment never added.
		publish(mp, wire.UpdateEvent(rlmm.SegmentUpdate{ID: seg(tp, int64(90+i), 0).ID, State: rlmm.CopySegmentFinished}))
		// Misrouted: never applied anywhere.
		publish((mp+1)%n, wire.SegmentEvent(seg(tp, int64(50+i), 100)))
	}
	if _, err := l.Publish(ctx, 0, []byte{0xde, 0xad}); err != nil {
		t.Fatal(err)
	}
	publish(1, wire.Event{Key: wire.KeySnapshot, Segment: rlmm.SegmentMetadata{ID: rlmm.SegmentID{ID: rlmm.UuidFromBits(3, 3)},
		EndOffset: 9, LeaderEpochs: []rlmm.EpochStart{{Epoch: 0}}}})

	m, err := topicbased.Start(ctx, topicbased.Config{Log: l})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = m.Close() }()
	if err := m.OnPartitionLeadershipChanges(ctx, tps, nil); err != nil {
		t.Fatal(err)
	}
	b := view.NewBuilder(n)
	for mp := range int32(n) {
		sub, err := l.Subscribe(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := sub.Add(mp, 0); err != nil {
			t.Fatal(err)
		}
		hw, err := l.HighWaterMarks(ctx, []int32{mp})
		if err != nil {
			t.Fatal(err)
		}
		for next := int64(0); next < hw[0]; {
			recs, err := sub.Poll(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range recs {
				b.Apply(r)
				next = r.Offset + 1
			}
		}
		_ = sub.Close()
	}
	for _, tp := range tps {
		if err := m.WaitReady(ctx, tp); err != nil {
			t.Fatal(err)
		}
		got, err := m.ListSegments(tp)
		if err != nil {
			t.Fatal(err)
		}
		want := b.Segments(tp)
		if len(got) != 1 || !slices.EqualFunc(got, want, func(a, b rlmm.SegmentMetadata) bool { return a.Equal(&b) }) {
			t.Errorf("%s: the pump holds %v, the view %v; want the same one segment", tp, got, want)
		}
	}
	st := m.Stats()
	if c := b.Counts(); st.Undecodable != uint64(c.Undecodable) || st.Rejected != uint64(c.Rejected+c.Misrouted+c.Snapshots) {
		t.Errorf("pump: %d undecodable, %d rejected (misrouted and unexpected included); view: %+v", st.Undecodable, st.Rejected, c)
	}
}

package topicbased

import (
	"errors"
	"strings"
	"testing"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/wire"
)

// The behaviour of kafka-rlmm.md §8.2, through a topic-based manager over
// memlog: every mutation goes through the log and the pump.

const mib = 1 << 20

func newKafkaFixture(t *testing.T) (*Manager, rlmm.TopicIDPartition) {
	l := newLog(t, 3)
	m := startManager(t, Config{Log: l})
	tp := topicPartition("foo", 1, 0)
	assign(t, m, tp)
	return m, tp
}

// Scenarios 1, 2, 3, 5, 6: one multi-epoch segment through its lifecycle.
func TestKafkaSegmentLifecycle(t *testing.T) {
	m, tp := newKafkaFixture(t)
	ctx := testCtx(t)
	seg0 := segment(tp, 0, 0, 100, 0, 0, 1, 20, 2, 80)

	// 1: STARTED: no lookup, no highest offset, listed by both lists.
	must(t, m.AddSegment(ctx, seg0))
	for _, c := range []struct {
		epoch int32
		off   int64
	}{{0, 0}, {1, 40}, {2, 90}} {
		if _, ok, err := m.SegmentForOffset(tp, c.epoch, c.off); ok || err != nil {
			t.Errorf("STARTED: SegmentForOffset(%d,%d) = %v, %v; want miss", c.epoch, c.off, ok, err)
		}
	}
	for e := int32(0); e <= 2; e++ {
		if _, ok, err := m.HighestOffsetForEpoch(tp, e); ok || err != nil {
			t.Errorf("STARTED: HighestOffsetForEpoch(%d) = %v, %v; want none", e, ok, err)
		}
	}
	all, err := m.ListSegments(tp)
	must(t, err)
	must(t, sameSegments(all, []rlmm.SegmentMetadata{seg0}))
	byEpoch, err := m.ListSegmentsForEpoch(tp, 1)
	must(t, err)
	must(t, sameSegments(byEpoch, []rlmm.SegmentMetadata{seg0}))

	// 2 and 3: FINISHED: found with the update's fields inside each epoch's range.
	must(t, m.UpdateSegment(ctx, update(seg0, rlmm.CopySegmentFinished)))
	want := finished(t, seg0)
	lookups := []struct {
		epoch int32
		off   int64
		found bool
	}{
		{0, 0, true}, {0, 19, true}, {0, 20, false}, {1, 20, true}, {1, 79, true}, {1, 80, false},
		{2, 80, true}, {2, 100, true}, {2, 101, false}, {1, 110, false}, {5, 50, false},
	}
	for _, c := range lookups {
		got, ok, err := m.SegmentForOffset(tp, c.epoch, c.off)
		if err != nil || ok != c.found || (ok && !got.Equal(&want)) {
			t.Errorf("FINISHED: SegmentForOffset(%d,%d) = %v, %v, %v; want found=%v", c.epoch, c.off, got, ok, err, c.found)
		}
	}
	for epoch, wantHigh := range map[int32]int64{0: 19, 1: 79, 2: 100} {
		h, ok, err := m.HighestOffsetForEpoch(tp, epoch)
		if err != nil || !ok || h != wantHigh {
			t.Errorf("HighestOffsetForEpoch(%d) = %d, %v, %v; want %d", epoch, h, ok, err, wantHigh)
		}
	}

	// 5: DELETE_STARTED: not found, still listed.
	must(t, m.UpdateSegment(ctx, update(seg0, rlmm.DeleteSegmentStarted)))
	if _, ok, _ := m.SegmentForOffset(tp, 1, 40); ok {
		t.Error("DELETE_STARTED segment still found by SegmentForOffset")
	}
	all, _ = m.ListSegments(tp)
	if len(all) != 1 || all[0].State != rlmm.DeleteSegmentStarted {
		t.Errorf("DELETE_STARTED: ListSegments = %v", all)
	}
	byEpoch, _ = m.ListSegmentsForEpoch(tp, 2)
	if len(byEpoch) != 1 || byEpoch[0].State != rlmm.DeleteSegmentStarted {
		t.Errorf("DELETE_STARTED: ListSegmentsForEpoch = %v", byEpoch)
	}

	// 6: DELETE_FINISHED: gone; a further update is unknown and publishes nothing.
	must(t, m.UpdateSegment(ctx, update(seg0, rlmm.DeleteSegmentFinished)))
	all, _ = m.ListSegments(tp)
	byEpoch, _ = m.ListSegmentsForEpoch(tp, 0)
	if len(all) != 0 || len(byEpoch) != 0 {
		t.Errorf("DELETE_FINISHED: lists = %v, %v; want empty", all, byEpoch)
	}
	mp := m.MetadataPartitionOf(tp)
	before := hwm(t, m.log, mp)
	if err := m.UpdateSegment(ctx, update(seg0, rlmm.DeleteSegmentFinished)); !errors.Is(err, rlmm.ErrUnknownSegment) {
		t.Errorf("update after DELETE_FINISHED: %v; want ErrUnknownSegment", err)
	}
	if after := hwm(t, m.log, mp); after != before {
		t.Errorf("a rejected update published %d records", after-before)
	}
	// 4: the highest offsets do not go down after the deletion.
	for epoch, wantHigh := range map[int32]int64{0: 19, 1: 79, 2: 100} {
		if h, ok, _ := m.HighestOffsetForEpoch(tp, epoch); !ok || h != wantHigh {
			t.Errorf("after delete: HighestOffsetForEpoch(%d) = %d, %v; want %d", epoch, h, ok, wantHigh)
		}
	}
}

// Scenario 7 (and the RemoteLogMetadataCacheTest sequence): invalid
// transitions fail before publishing and change nothing.
func TestKafkaTransitionSequence(t *testing.T) {
	m, tp := newKafkaFixture(t)
	ctx := testCtx(t)
	seg := segment(tp, 1, 10, 100, 5, 10)
	must(t, m.AddSegment(ctx, seg))
	mp := m.MetadataPartitionOf(tp)
	steps := []struct {
		to        rlmm.SegmentState
		want      error
		wantState rlmm.SegmentState
	}{
		{rlmm.DeleteSegmentFinished, rlmm.ErrInvalidTransition, rlmm.CopySegmentStarted},
		{rlmm.CopySegmentFinished, nil, rlmm.CopySegmentFinished},
		{rlmm.DeleteSegmentFinished, rlmm.ErrInvalidTransition, rlmm.CopySegmentFinished},
		{rlmm.CopySegmentStarted, rlmm.ErrInvalidArgument, rlmm.CopySegmentFinished},
		{rlmm.DeleteSegmentStarted, nil, rlmm.DeleteSegmentStarted},
		{rlmm.CopySegmentFinished, rlmm.ErrInvalidTransition, rlmm.DeleteSegmentStarted},
		{rlmm.CopySegmentStarted, rlmm.ErrInvalidArgument, rlmm.DeleteSegmentStarted},
		{rlmm.DeleteSegmentFinished, nil, -1},
	}
	for i, s := range steps {
		before := hwm(t, m.log, mp)
		err := m.UpdateSegment(ctx, update(seg, s.to))
		if !isErr(err, s.want) {
			t.Fatalf("step %d: update to %s: %v; want %v", i+1, s.to, err, s.want)
		}
		published := hwm(t, m.log, mp) - before
		if (s.want == nil) != (published == 1) {
			t.Errorf("step %d: published %d records (error %v)", i+1, published, err)
		}
		list, err := m.ListSegmentsForEpoch(tp, 5)
		must(t, err)
		if s.wantState < 0 {
			if len(list) != 0 {
				t.Errorf("step %d: list = %v; want empty", i+1, list)
			}
			continue
		}
		if len(list) != 1 || list[0].State != s.wantState {
			t.Errorf("step %d: list = %v; want one segment in %s", i+1, list, s.wantState)
		}
	}
	// An add in a state other than STARTED is an invalid argument.
	for _, st := range []rlmm.SegmentState{rlmm.CopySegmentFinished, rlmm.DeleteSegmentStarted, rlmm.DeleteSegmentFinished} {
		bad := segment(tp, 2, 0, 5)
		bad.State = st
		if err := m.AddSegment(ctx, bad); !errors.Is(err, rlmm.ErrInvalidArgument) {
			t.Errorf("add in %s: %v; want ErrInvalidArgument", st, err)
		}
	}
	// Retrying an add of a STARTED segment is an idempotent success.
	s3 := segment(tp, 3, 200, 300)
	must(t, m.AddSegment(ctx, s3))
	must(t, m.AddSegment(ctx, s3))
}

// Scenarios 4, 8, 9: displacement, highest offsets across segments, order.
func TestKafkaOverlapAndOrder(t *testing.T) {
	m, tp := newKafkaFixture(t)
	ctx := testCtx(t)
	s1 := segment(tp, 1, 10, 100, 0, 10)
	s2 := segment(tp, 2, 5, 150, 0, 5)
	addFinished(t, m, s1)
	addFinished(t, m, s2)
	got, ok, err := m.SegmentForOffset(tp, 0, 11)
	if want := finished(t, s2); err != nil || !ok || !got.Equal(&want) {
		t.Errorf("lookup(0,11) = %v, %v, %v; want S2", got, ok, err)
	}
	if h, _, _ := m.HighestOffsetForEpoch(tp, 0); h != 150 {
		t.Errorf("highest = %d; want 150", h)
	}
	list, err := m.ListSegmentsForEpoch(tp, 0)
	must(t, err)
	must(t, sameSegments(list, []rlmm.SegmentMetadata{finished(t, s2), finished(t, s1)}))

	// 9: STARTED, FINISHED and DELETE_STARTED segments carrying the epoch, by start offset.
	s3 := segment(tp, 3, 300, 400, 0, 300)
	s4 := segment(tp, 4, 151, 299, 0, 151)
	must(t, m.AddSegment(ctx, s3))
	addFinished(t, m, s4)
	must(t, m.UpdateSegment(ctx, update(s4, rlmm.DeleteSegmentStarted)))
	list, err = m.ListSegmentsForEpoch(tp, 0)
	must(t, err)
	var starts []int64
	for _, s := range list {
		starts = append(starts, s.StartOffset)
	}
	if len(starts) != 4 || starts[0] != 5 || starts[1] != 10 || starts[2] != 151 || starts[3] != 300 {
		t.Errorf("ListSegmentsForEpoch starts = %v; want [5 10 151 300]", starts)
	}
}

// Scenario 10: remote log size.
func TestKafkaRemoteLogSize(t *testing.T) {
	cases := []struct {
		name  string
		segs  [][]int64 // start, end, size in MiB, epoch
		epoch int32
		want  int64
	}{
		{"same epoch", [][]int64{{0, 100, 1, 0}, {100, 200, 2, 0}, {200, 300, 3, 0}}, 0, 6 * mib},
		{"epoch 1", [][]int64{{0, 100, 1, 0}, {100, 200, 2, 1}, {200, 300, 3, 2}}, 1, 2 * mib},
		{"epoch 2", [][]int64{{0, 100, 1, 0}, {100, 200, 2, 1}, {200, 300, 3, 2}}, 2, 3 * mib},
		{"unknown epoch", [][]int64{{0, 100, 1, 0}, {100, 200, 2, 1}}, 9001, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, tp := newKafkaFixture(t)
			for i, s := range c.segs {
				md := segment(tp, uint64(i), s[0], s[1], s[3], s[0])
				md.SizeInBytes = int32(s[2] * mib)
				must(t, m.AddSegment(testCtx(t), md))
			}
			got, err := m.RemoteLogSize(tp, c.epoch)
			if err != nil || got != c.want {
				t.Errorf("RemoteLogSize = %d, %v; want %d", got, err, c.want)
			}
		})
	}
}

// Scenario 11: a partition never assigned: every read is refused with
// ErrNotAssigned (Kafka's RemoteResourceNotFoundException), never an empty
// answer; a mutation fails at once with ErrNotAssigned and publishes
// nothing (Kafka publishes and then fails its future; rlmm does not write
// what it could not read back).
func TestKafkaNeverAssigned(t *testing.T) {
	l := newLog(t, 3)
	m := startManager(t, Config{Log: l})
	tp := topicPartition("foo", 1, 0)
	for _, err := range unhostedReads(m, tp) {
		if !errors.Is(err, rlmm.ErrNotAssigned) {
			t.Errorf("%v; want ErrNotAssigned", err)
		}
	}
	if m.IsReady(tp) {
		t.Error("IsReady of an unassigned partition")
	}
	err := m.AddSegment(testCtx(t), segment(tp, 1, 0, 10))
	if !errors.Is(err, rlmm.ErrNotAssigned) {
		t.Errorf("AddSegment: %v; want ErrNotAssigned", err)
	}
	if h := hwm(t, l, m.MetadataPartitionOf(tp)); h != 0 {
		t.Errorf("AddSegment of an unassigned partition published %d records", h)
	}
}

// Scenario 12 and several user partitions sharing one metadata partition:
// events already in the log are applied exactly once on assignment, and
// only for the hosted user partition (the others' are skipped, their reads
// refused); a user partition hosted later is rebuilt by one pass over the
// metadata partition; an empty metadata partition is ready at once.
func TestKafkaSharedMetadataPartition(t *testing.T) {
	l := newLog(t, 3)
	tps, mp := sharingPartitions(t, 3, 3)
	writer := startManager(t, Config{Log: l})
	assign(t, writer, tps...)
	for i, tp := range tps {
		addFinished(t, writer, segment(tp, uint64(i), 0, 99))
	}

	reader := startManager(t, Config{Log: l})
	// An empty metadata partition is ready at once.
	other := distinctPartitions(t, 3, 3)[(mp+1)%3]
	assign(t, reader, other)
	lookup := func(i int) {
		t.Helper()
		got, ok, err := reader.SegmentForOffset(tps[i], 0, 50)
		want := finished(t, segment(tps[i], uint64(i), 0, 99))
		if err != nil || !ok || !got.Equal(&want) {
			t.Errorf("partition %d: lookup = %v, %v, %v", i, got, ok, err)
		}
	}
	// Hosting one user partition consumes the metadata partition and keeps
	// that user partition only.
	assign(t, reader, tps[0])
	lookup(0)
	for _, tp := range tps[1:] {
		if _, _, err := reader.SegmentForOffset(tp, 0, 50); !errors.Is(err, rlmm.ErrNotAssigned) || reader.IsReady(tp) {
			t.Errorf("%s, not hosted: lookup error %v, ready %v; want ErrNotAssigned, not ready", tp, err, reader.IsReady(tp))
		}
	}
	if s := reader.Stats(); s.Applied != 2 || s.Skipped != uint64(2*(len(tps)-1)) || s.Rejected != 0 || s.CachedPartitions != 1 {
		t.Errorf("applied %d, skipped %d, rejected %d, cached %d; want 2, %d, 0, 1", s.Applied, s.Skipped, s.Rejected, s.CachedPartitions, 2*(len(tps)-1))
	}
	// Hosting the other two later rebuilds both with one pass.
	assign(t, reader, tps[1:]...)
	for i := range tps {
		lookup(i)
	}
	if s := reader.Stats(); s.Passes != 1 || s.Rebuilt != 2 || s.Applied != uint64(2*len(tps)) {
		t.Errorf("passes %d, rebuilt %d, applied %d; want 1 pass rebuilding 2, %d applied", s.Passes, s.Rebuilt, s.Applied, 2*len(tps))
	}
	// Stopping one hosted user partition drops its state only; stopping
	// the last one drops the metadata partition.
	ctx := testCtx(t)
	must(t, reader.OnStopPartitions(ctx, tps[:1]))
	if !reader.IsReady(tps[1]) {
		t.Error("stopping one of the hosted partitions unassigned their metadata partition")
	}
	lookup(1)
	must(t, reader.OnStopPartitions(ctx, tps[1:]))
	for _, tp := range tps {
		if _, ok, err := reader.SegmentForOffset(tp, 0, 50); ok || !errors.Is(err, rlmm.ErrNotAssigned) {
			t.Errorf("after stop: lookup = %v, %v; want ErrNotAssigned", ok, err)
		}
		if reader.IsReady(tp) {
			t.Errorf("after stop: %s is still ready", tp)
		}
	}
	if !reader.IsReady(other) {
		t.Error("the other metadata partition was dropped too")
	}
	if s := reader.Stats(); s.CachedPartitions != 0 {
		t.Errorf("%d user partitions cached after every one was stopped; want 0", s.CachedPartitions)
	}
}

// Scenario 13: a partition that is catching up answers ErrNotReady and
// IsReady is false; mutations wait for readiness.
func TestKafkaNotReadyWhileCatchingUp(t *testing.T) {
	base := newLog(t, 3)
	tp := topicPartition("foo", 1, 0)
	writer := startManager(t, Config{Log: base})
	assign(t, writer, tp)
	seg := segment(tp, 1, 0, 99)
	addFinished(t, writer, seg)

	pl := newPausableLog(base)
	pl.Pause()
	m := startManager(t, Config{Log: pl})
	must(t, m.OnPartitionLeadershipChanges(testCtx(t), []rlmm.TopicIDPartition{tp}, nil))
	if m.IsReady(tp) {
		t.Fatal("ready before catching up")
	}
	if _, _, err := m.SegmentForOffset(tp, 0, 5); !errors.Is(err, rlmm.ErrNotReady) || !rlmm.IsRetriable(err) {
		t.Errorf("SegmentForOffset while catching up: %v; want ErrNotReady", err)
	}
	for name, read := range map[string]func() error{
		"HighestOffsetForEpoch":   func() error { _, _, err := m.HighestOffsetForEpoch(tp, 0); return err },
		"ListSegments":            func() error { _, err := m.ListSegments(tp); return err },
		"ListSegmentsForEpoch":    func() error { _, err := m.ListSegmentsForEpoch(tp, 0); return err },
		"RemoteLogSize":           func() error { _, err := m.RemoteLogSize(tp, 0); return err },
		"NextSegmentWithTxnIndex": func() error { _, _, err := m.NextSegmentWithTxnIndex(tp, 0, 0); return err },
		"SegmentForOffsetInto": func() error {
			var dst rlmm.SegmentMetadata
			_, err := m.SegmentForOffsetInto(tp, 0, 5, &dst)
			return err
		},
		"View": func() error { _, _, err := m.View(tp); return err },
	} {
		if err := read(); !errors.Is(err, rlmm.ErrNotReady) {
			t.Errorf("%s while catching up: %v; want ErrNotReady", name, err)
		}
	}
	// A mutation waits for readiness, then succeeds.
	done := make(chan error, 1)
	seg2 := segment(tp, 2, 100, 199)
	go func() { done <- m.AddSegment(testCtx(t), seg2) }()
	pl.Resume()
	must(t, <-done)
	if !m.IsReady(tp) {
		t.Error("not ready after catching up")
	}
	list, err := m.ListSegments(tp)
	must(t, err)
	must(t, sameSegments(list, []rlmm.SegmentMetadata{finished(t, seg), seg2}))
}

// Scenario 14: partition deletion states.
func TestKafkaPartitionDelete(t *testing.T) {
	m, tp := newKafkaFixture(t)
	ctx := testCtx(t)
	seg := segment(tp, 1, 0, 100, 0, 0, 1, 20, 2, 50, 3, 80)
	addFinished(t, m, seg)
	for _, st := range []rlmm.PartitionDeleteState{rlmm.DeletePartitionMarked, rlmm.DeletePartitionStarted} {
		must(t, m.PutPartitionDelete(ctx, rlmm.PartitionDelete{TopicIDPartition: tp, State: st, BrokerID: 1}))
		if _, ok, err := m.SegmentForOffset(tp, 1, 30); !ok || err != nil {
			t.Errorf("after %s: lookup = %v, %v; want found", st, ok, err)
		}
	}
	must(t, m.PutPartitionDelete(ctx, rlmm.PartitionDelete{TopicIDPartition: tp, State: rlmm.DeletePartitionFinished, BrokerID: 1}))
	if _, ok, err := m.SegmentForOffset(tp, 1, 30); ok || err != nil {
		t.Errorf("after FINISHED: lookup = %v, %v; want miss", ok, err)
	}
	if list, _ := m.ListSegments(tp); len(list) != 0 {
		t.Errorf("after FINISHED: ListSegments = %v", list)
	}
	if err := m.PutPartitionDelete(ctx, rlmm.PartitionDelete{TopicIDPartition: tp, State: 9}); !errors.Is(err, rlmm.ErrInvalidArgument) {
		t.Errorf("undefined delete state: %v; want ErrInvalidArgument", err)
	}
}

// Scenario 15, hardened: undecodable, misrouted and unexpected records are
// skipped, counted and listed, and the pump keeps applying.
func TestKafkaBadRecordsDoNotStopThePump(t *testing.T) {
	l := newLog(t, 3)
	met := &countingMetrics{}
	m := startManager(t, Config{Log: l, Metrics: met, RejectedLimit: 2})
	tp := topicPartition("foo", 1, 0)
	assign(t, m, tp)
	ctx := testCtx(t)
	mp := m.MetadataPartitionOf(tp)
	garbageOffset, err := l.Publish(ctx, mp, []byte{0xde, 0xad})
	must(t, err)
	// Applied before the records of the other partition are published, so
	// the ring of 2 ends with the two rejections whatever order a Poll
	// returns two partitions' records in.
	waitFor(t, "the garbage to be skipped", func() bool { return m.Stats().Undecodable == 1 })
	// An event of tp in a metadata partition that is not tp's.
	ev := wire.SegmentEvent(segment(tp, 9, 0, 1))
	value, err := wire.AppendEvent(nil, &ev)
	must(t, err)
	wrong := (mp + 1) % 3
	// Hosting a partition of the wrong metadata partition makes it consumed.
	otherTP := distinctPartitions(t, 3, 3)[wrong]
	assign(t, m, otherTP)
	_, err = l.Publish(ctx, wrong, value)
	must(t, err)
	// An update of an unknown segment, written by "another broker".
	upd := wire.UpdateEvent(update(segment(tp, 8, 0, 1), rlmm.CopySegmentFinished))
	value, err = wire.AppendEvent(nil, &upd)
	must(t, err)
	_, err = l.Publish(ctx, mp, value)
	must(t, err)

	seg := segment(tp, 1, 0, 10)
	must(t, m.AddSegment(ctx, seg))
	if list, _ := m.ListSegments(tp); len(list) != 1 {
		t.Fatalf("pump did not apply the event after the bad records: %v", list)
	}
	// The misrouted record may be handled after the add (another partition).
	must(t, m.AddSegment(ctx, segment(otherTP, 2, 0, 1)))
	s := m.Stats()
	if s.Undecodable != 1 || s.Rejected != 2 || s.Applied != 2 {
		t.Errorf("stats = %+v; want 1 undecodable, 2 rejected, 2 applied", s)
	}
	met.mu.Lock()
	if met.undecodable != 1 || met.rejected != 2 || met.applied != 2 {
		t.Errorf("metrics = %d undecodable, %d rejected, %d applied", met.undecodable, met.rejected, met.applied)
	}
	if met.mutations != 2 {
		t.Errorf("metrics saw %d mutations, want 2", met.mutations)
	}
	if !met.ready[mp] || !met.ready[wrong] {
		t.Errorf("metrics readiness = %v; want metadata partitions %d and %d ready", met.ready, mp, wrong)
	}
	if got, want := met.progress[mp], [2]int64{2, 3}; got != want {
		t.Errorf("metrics progress of metadata partition %d = %v; want applied 2 of high-water mark 3", mp, got)
	}
	met.mu.Unlock()
	rej := m.Rejected()
	if len(rej) != 2 {
		t.Fatalf("Rejected() kept %d events; the limit is 2", len(rej))
	}
	reasons := rej[0].Reason.String() + "," + rej[1].Reason.String()
	if !strings.Contains(reasons, "rejected") || !strings.Contains(reasons, "misrouted") {
		t.Errorf("Rejected() reasons = %s (offset %d was the garbage)", reasons, garbageOffset)
	}
	for _, r := range rej {
		if r.Err == nil || r.Offset < 0 {
			t.Errorf("rejected event without an error or offset: %+v", r)
		}
	}
}

// A conflicting event of another broker that the pump applies first decides
// the verdict: the mutation returns the state machine's error.
func TestConcurrentConflictVerdict(t *testing.T) {
	base := newLog(t, 3)
	tp := topicPartition("foo", 1, 0)
	b := startManager(t, Config{Log: base})
	pl := newPausableLog(base)
	a := startManager(t, Config{Log: pl})
	assign(t, a, tp)
	assign(t, b, tp)
	seg := segment(tp, 1, 0, 10)
	addFinished(t, b, seg)
	must(t, b.UpdateSegment(testCtx(t), update(seg, rlmm.DeleteSegmentStarted)))
	// A self-transition through a: once it returns, a has applied b's events.
	must(t, a.UpdateSegment(testCtx(t), update(seg, rlmm.DeleteSegmentStarted)))
	pl.Pause()
	// b deletes first; a, not having seen it, publishes the same deletion.
	must(t, b.UpdateSegment(testCtx(t), update(seg, rlmm.DeleteSegmentFinished)))
	done := make(chan error, 1)
	go func() { done <- a.UpdateSegment(testCtx(t), update(seg, rlmm.DeleteSegmentFinished)) }()
	// Wait until a's event is in the log, then let a's pump run.
	mp := a.MetadataPartitionOf(tp)
	waitFor(t, "a's event in the log", func() bool {
		select {
		case err := <-done:
			t.Fatalf("mutation returned before its event was applied: %v", err)
		default:
		}
		return hwm(t, base, mp) == 6
	})
	pl.Resume()
	if err := <-done; !errors.Is(err, rlmm.ErrUnknownSegment) {
		t.Errorf("conflicting deletion: %v; want ErrUnknownSegment", err)
	}
}

// NextSegmentWithTxnIndex skips finished segments without a transaction
// index, within the epoch (kafka-rlmm.md §5.11).
func TestKafkaNextSegmentWithTxnIndex(t *testing.T) {
	m, tp := newKafkaFixture(t)
	a := segment(tp, 1, 0, 99)
	b := segment(tp, 2, 100, 199)
	b.TxnIndexEmpty = false
	addFinished(t, m, a)
	addFinished(t, m, b)
	got, ok, err := m.NextSegmentWithTxnIndex(tp, 0, 50)
	if want := finished(t, b); err != nil || !ok || !got.Equal(&want) {
		t.Errorf("NextSegmentWithTxnIndex(0, 50) = %v, %v, %v; want segment b", got, ok, err)
	}
	if _, ok, err := m.NextSegmentWithTxnIndex(tp, 0, 200); ok || err != nil {
		t.Errorf("NextSegmentWithTxnIndex past the end = %v, %v; want a miss", ok, err)
	}
}

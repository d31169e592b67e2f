package topicbased

import (
	"errors"
	"maps"
	"reflect"
	"testing"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/wire"
)

// User partitions hosted after their metadata partition was consumed are
// rebuilt from its log start: a batch of them in one call costs one pass,
// and each then answers exactly what a manager that hosted it from the
// start answers.
func TestNewlyHostedPartitionsRebuiltInOnePass(t *testing.T) {
	l := newLog(t, 3)
	tps, _ := sharingPartitions(t, 3, 200)
	writer := startManager(t, Config{Log: l})
	assign(t, writer, tps...)
	workload(t, writer, tps, 0, 2)
	want := viewOf(t, writer, tps)

	reader := startManager(t, Config{Log: l})
	assign(t, reader, tps[0])
	if s := reader.Stats(); s.Passes != 0 || s.CachedPartitions != 1 {
		t.Fatalf("after hosting one: %d passes, %d cached; want 0 and 1", s.Passes, s.CachedPartitions)
	}
	assign(t, reader, tps[1:]...)
	s := reader.Stats()
	if s.Passes != 1 || s.Rebuilt != uint64(len(tps)-1) {
		t.Errorf("%d passes rebuilding %d partitions; want 1 pass rebuilding %d", s.Passes, s.Rebuilt, len(tps)-1)
	}
	if s.Hosted != len(tps) || s.CachedPartitions != len(tps) {
		t.Errorf("hosted %d, cached %d; want %d each", s.Hosted, s.CachedPartitions, len(tps))
	}
	must(t, sameViews(viewOf(t, reader, tps), want))
	// New events of rebuilt partitions are applied as they come.
	workload(t, writer, tps[1:3], 1000, 1)
	for _, tp := range tps[1:3] {
		must(t, reader.Sync(testCtx(t), tp))
	}
	must(t, sameViews(viewOf(t, reader, tps[1:3]), viewOf(t, writer, tps[1:3])))
}

// While a pass runs, its partitions answer ErrNotReady (a mutation waits),
// the partitions kept before are served, and partitions hosted meanwhile
// wait for the next pass, which takes them all; a partition stopped in the
// middle of its pass leaves nothing behind.
func TestPartitionsHostedDuringAPassWaitForTheNext(t *testing.T) {
	base := newLog(t, 3)
	tps, _ := sharingPartitions(t, 3, 5)
	writer := startManager(t, Config{Log: base})
	assign(t, writer, tps...)
	workload(t, writer, tps, 0, 2)
	want := viewOf(t, writer, tps)

	pl := newPausableLog(base)
	reader := startManager(t, Config{Log: pl})
	assign(t, reader, tps[0])
	ctx := testCtx(t)
	pl.Pause()
	must(t, reader.OnPartitionLeadershipChanges(ctx, tps[1:2], nil))
	must(t, reader.OnPartitionLeadershipChanges(ctx, tps[2:4], nil))
	must(t, reader.OnPartitionLeadershipChanges(ctx, tps[4:], nil))
	for _, tp := range tps[1:] {
		if _, err := reader.ListSegments(tp); !errors.Is(err, rlmm.ErrNotReady) || reader.IsReady(tp) {
			t.Errorf("%s during its pass: %v, ready %v; want ErrNotReady", tp, err, reader.IsReady(tp))
		}
	}
	if _, err := reader.ListSegments(tps[0]); err != nil || !reader.IsReady(tps[0]) {
		t.Errorf("a partition kept before the pass: %v, ready %v; want it served", err, reader.IsReady(tps[0]))
	}
	// A mutation of a partition being rebuilt waits for it.
	added := make(chan error, 1)
	go func() { added <- reader.AddSegment(ctx, segment(tps[1], 9000, 5000, 5099)) }()
	must(t, reader.OnStopPartitions(ctx, tps[4:]))
	pl.Resume()
	must(t, <-added)
	for _, tp := range tps[1:4] {
		must(t, reader.WaitReady(ctx, tp))
	}
	s := reader.Stats()
	if s.Passes != 2 || s.Rebuilt != 3 {
		t.Errorf("%d passes rebuilding %d; want 2 passes (the first for 1, the second for the 2 hosted meanwhile, the stopped one dropped)", s.Passes, s.Rebuilt)
	}
	if s.Hosted != 4 || s.CachedPartitions != 4 {
		t.Errorf("hosted %d, cached %d; want 4 each (the stopped one left nothing)", s.Hosted, s.CachedPartitions)
	}
	// The reference: the writer, hosting every partition from the start,
	// caught up with the reader's new segment.
	must(t, writer.Sync(ctx, tps[1]))
	must(t, sameViews(viewOf(t, reader, tps[:4]), viewOf(t, writer, tps[:4])))
	_ = want
}

// A hosted partition with no event is kept in the snapshot as an empty
// block: a restart hosting it again needs no pass.
func TestRestartKeepsHostedPartitionsWithoutEvents(t *testing.T) {
	l := newLog(t, 3)
	dir := t.TempDir()
	tps, _ := sharingPartitions(t, 3, 3)
	m := startManager(t, Config{Log: l, SnapshotDir: dir, SnapshotInterval: -1})
	assign(t, m, tps...)
	workload(t, m, tps[:1], 0, 2) // tps[1] and tps[2] have no events
	want := viewOf(t, m, tps)
	must(t, m.ShutdownAndFlush(testCtx(t)))

	m2 := startManager(t, Config{Log: l, SnapshotDir: dir, SnapshotInterval: -1})
	assign(t, m2, tps...)
	if s := m2.Stats(); s.Passes != 0 || s.Consumed() != 0 {
		t.Errorf("restart: %d passes, %d events replayed; want none", s.Passes, s.Consumed())
	}
	must(t, sameViews(viewOf(t, m2, tps), want))
}

// ReadinessChanged fires on every change of the hosted set or of a hosted
// partition's readiness, and HostedReadiness lists the hosted partitions.
func TestReadinessIsPushed(t *testing.T) {
	base := newLog(t, 3)
	pl := newPausableLog(base)
	tps := distinctPartitions(t, 3, 2)
	writer := startManager(t, Config{Log: base})
	assign(t, writer, tps...)
	workload(t, writer, tps, 0, 1)

	m := startManager(t, Config{Log: pl})
	ctx := testCtx(t)
	if got := m.HostedReadiness(); len(got) != 0 {
		t.Fatalf("before any assignment: %v; want nothing hosted", got)
	}
	changed := m.ReadinessChanged()
	pl.Pause()
	must(t, m.OnPartitionLeadershipChanges(ctx, tps[:1], tps[1:]))
	waitChanged(t, changed)
	changed = m.ReadinessChanged()
	for _, r := range m.HostedReadiness() {
		if r.Ready {
			t.Errorf("%s ready while its metadata partition is held back", r.TopicIDPartition)
		}
	}
	if got := m.HostedReadiness(); len(got) != 2 {
		t.Fatalf("hosted %v; want the 2 partitions", got)
	}
	pl.Resume()
	for _, tp := range tps {
		must(t, m.WaitReady(ctx, tp))
	}
	waitChanged(t, changed)
	for _, r := range m.HostedReadiness() {
		if !r.Ready {
			t.Errorf("%s not ready after WaitReady", r.TopicIDPartition)
		}
	}
	changed = m.ReadinessChanged()
	must(t, m.OnStopPartitions(ctx, tps[1:]))
	waitChanged(t, changed)
	if got := m.HostedReadiness(); len(got) != 1 || got[0].TopicIDPartition != tps[0] || !got[0].Ready {
		t.Errorf("after stopping one: %v; want %s alone, ready", got, tps[0])
	}
}

// waitChanged waits, bounded by the test's context, for ch to close.
func waitChanged(t *testing.T, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-testCtx(t).Done():
		t.Fatal("ReadinessChanged did not fire")
	}
}

// The readers' view is the pump's sets, one map per metadata partition:
// after every change each map holds exactly the entries a rebuild from the
// sets gives, and a change of one metadata partition leaves the other
// maps as they were (shared with the view before). A restore installs the
// snapshot's metadata partitions one at a time through the same path.
func TestViewFollowsEachMetadataPartition(t *testing.T) {
	const n = 4
	l := newLog(t, n)
	dir := t.TempDir()
	tps := distinctPartitions(t, n, n)
	m := startManager(t, Config{Log: l, SnapshotDir: dir, SnapshotInterval: -1})
	assign(t, m, tps...)
	workload(t, m, tps, 0, 2)
	checkView(t, m)
	must(t, m.ShutdownAndFlush(testCtx(t)))

	m2 := startManager(t, Config{Log: l, SnapshotDir: dir, SnapshotInterval: -1})
	assign(t, m2, tps...)
	checkView(t, m2)
	if s := m2.Stats(); s.Hosted != n || s.Consumed() != 0 {
		t.Fatalf("restored: %d hosted, %d events replayed; want %d and none", s.Hosted, s.Consumed(), n)
	}
	before := m2.keep.Load()
	// Stopping tps[1] changes only its metadata partition's map.
	must(t, m2.OnStopPartitions(testCtx(t), tps[1:2]))
	waitFor(t, "tps[1] no longer hosted", func() bool { return m2.Stats().Hosted == n-1 })
	checkView(t, m2)
	after := m2.keep.Load()
	for mp := range int32(n) {
		same := reflect.ValueOf(after.byMP[mp]).UnsafePointer() == reflect.ValueOf(before.byMP[mp]).UnsafePointer()
		if want := mp != 1; same != want {
			t.Errorf("metadata partition %d: map shared with the view before %v, want %v", mp, same, want)
		}
	}
	if _, ok := after.entry(1, wire.KeyOf(tps[1])); ok {
		t.Errorf("%s still in the view after it stopped being hosted", tps[1])
	}
	if err := m2.WaitReady(testCtx(t), tps[1]); !errors.Is(err, rlmm.ErrNotAssigned) {
		t.Errorf("WaitReady of a partition no longer hosted: %v, want ErrNotAssigned", err)
	}
	for _, tp := range []rlmm.TopicIDPartition{tps[0], tps[2], tps[3]} {
		if !m2.IsReady(tp) {
			t.Errorf("%s not ready after another metadata partition's change", tp)
		}
	}
}

// checkView fails unless every metadata partition's map in m's view holds
// what a rebuild from the pump's sets gives.
func checkView(t *testing.T, m *Manager) {
	t.Helper()
	m.applyMu.Lock()
	defer m.applyMu.Unlock()
	v := m.keep.Load()
	hosted := 0
	for i := range m.parts {
		p := &m.parts[i]
		var want map[wire.PartitionKey]keepEntry
		if p.assigned && len(p.want) > 0 {
			want = p.viewEntries()
		}
		if !maps.Equal(v.byMP[i], want) {
			t.Errorf("metadata partition %d: view %v, the sets give %v", i, v.byMP[i], want)
		}
		hosted += len(want)
	}
	if v.hosted != hosted {
		t.Errorf("view counts %d hosted, its maps hold %d", v.hosted, hosted)
	}
}

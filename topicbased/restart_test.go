package topicbased

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/memory"
	"github.com/rlmm-go/rlmm/snapshot"
)

// A restart from a snapshot replays only the events after it.
func TestRestartFromSnapshotReplaysOnlyTheTail(t *testing.T) {
	l := newLog(t, 3)
	dir := t.TempDir()
	tps := distinctPartitions(t, 3, 3)
	m1 := startManager(t, Config{Log: l, SnapshotDir: dir, SnapshotInterval: -1})
	assign(t, m1, tps...)
	workload(t, m1, tps, 0, 4)
	must(t, m1.WriteSnapshot(testCtx(t)))
	tail := workload(t, m1, tps, 100, 2)
	want := viewOf(t, m1, tps)
	must(t, m1.Close()) // a crash: no final snapshot

	m2 := startManager(t, Config{Log: l, SnapshotDir: dir})
	s := m2.Stats()
	if s.SnapshotError != nil || s.SnapshotSegments == 0 {
		t.Fatalf("snapshot not loaded: %+v", s)
	}
	assign(t, m2, tps...)
	if got := m2.Stats().Consumed(); got != uint64(tail) {
		t.Errorf("replayed %d events after the snapshot; want the tail of %d", got, tail)
	}
	must(t, sameViews(viewOf(t, m2, tps), want))
}

// ShutdownAndFlush writes a final snapshot: the next start replays nothing.
func TestShutdownAndFlushThenRestartReplaysNothing(t *testing.T) {
	l := newLog(t, 3)
	dir := t.TempDir()
	tps := distinctPartitions(t, 3, 3)
	m1 := startManager(t, Config{Log: l, SnapshotDir: dir, SnapshotInterval: -1})
	assign(t, m1, tps...)
	workload(t, m1, tps, 0, 3)
	want := viewOf(t, m1, tps)
	must(t, m1.ShutdownAndFlush(testCtx(t)))
	if _, _, err := m1.SegmentForOffset(tps[0], 0, 0); !errors.Is(err, rlmm.ErrClosed) {
		t.Errorf("read after ShutdownAndFlush: %v; want ErrClosed", err)
	}

	restartReplaysNothing(t, l, dir, tps, want)
}

// Without a snapshot, or with an unusable one, a restart replays everything
// and reaches the same state; it never fails to start.
func TestRestartWithoutUsableSnapshotReplaysAll(t *testing.T) {
	cases := []struct {
		name    string
		damage  func(t *testing.T, path string) // nil: no snapshot dir at all
		wantErr string                          // in Stats().SnapshotError; "" = none
	}{
		{"no snapshot dir", nil, ""},
		{"missing file", func(t *testing.T, path string) { must(t, os.Remove(path)) }, ""},
		{"flipped trailer byte", func(t *testing.T, path string) { flipByte(t, path, -5) }, "trailer"},
		{"flipped footer byte", func(t *testing.T, path string) { flipByte(t, path, footerOffset(t, path)+2) }, "footer (file bytes"},
		{"flipped magic", func(t *testing.T, path string) { flipByte(t, path, 0) }, "magic"},
		{"future version", func(t *testing.T, path string) { flipByte(t, path, 8) }, "version"},
		{"truncated", func(t *testing.T, path string) {
			b, err := os.ReadFile(path)
			must(t, err)
			must(t, os.WriteFile(path, b[:len(b)/2], 0o644))
		}, "torn"},
		{"empty file", func(t *testing.T, path string) { must(t, os.WriteFile(path, nil, 0o644)) }, "shorter"},
		{"a directory", func(t *testing.T, path string) {
			must(t, os.Remove(path))
			must(t, os.Mkdir(path, 0o755))
		}, "read snapshot"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := newLog(t, 3)
			dir := t.TempDir()
			tps := distinctPartitions(t, 3, 3)
			want, total := flushedRun(t, l, dir, tps, 3)

			cfg := Config{Log: l}
			if c.damage != nil {
				c.damage(t, filepath.Join(dir, SnapshotFileName))
				cfg.SnapshotDir = dir
			}
			m2 := startManager(t, cfg)
			s := m2.Stats()
			if c.wantErr == "" && s.SnapshotError != nil {
				t.Errorf("SnapshotError = %v; want none", s.SnapshotError)
			}
			if c.wantErr != "" && (s.SnapshotError == nil || !strings.Contains(s.SnapshotError.Error(), c.wantErr)) {
				t.Errorf("SnapshotError = %v; want one saying %q", s.SnapshotError, c.wantErr)
			}
			assign(t, m2, tps...)
			if got := m2.Stats().Consumed(); got != uint64(total) {
				t.Errorf("replayed %d events; want all %d", got, total)
			}
			must(t, sameViews(viewOf(t, m2, tps), want))
		})
	}
}

// flipByte inverts one byte of a file (negative: from the end).
func flipByte(t *testing.T, path string, at int) {
	t.Helper()
	b, err := os.ReadFile(path)
	must(t, err)
	if at < 0 {
		at += len(b)
	}
	b[at] ^= 0xff
	must(t, os.WriteFile(path, b, 0o644))
}

// A snapshot taken with another partition count is not used.
func TestSnapshotOfAnotherPartitionCountIsIgnored(t *testing.T) {
	dir := t.TempDir()
	l3 := newLog(t, 3)
	m1 := startManager(t, Config{Log: l3, SnapshotDir: dir, SnapshotInterval: -1})
	tps := distinctPartitions(t, 3, 3)
	assign(t, m1, tps...)
	workload(t, m1, tps, 0, 1)
	must(t, m1.ShutdownAndFlush(testCtx(t)))

	l5 := newLog(t, 5)
	m2 := startManager(t, Config{Log: l5, SnapshotDir: dir})
	if err := m2.Stats().SnapshotError; err == nil || !strings.Contains(err.Error(), "metadata partitions") {
		t.Errorf("SnapshotError = %v; want a partition count mismatch", err)
	}
	assign(t, m2, tps...)
	for _, tp := range tps {
		if l, err := m2.ListSegments(tp); len(l) != 0 || err != nil {
			t.Errorf("%s: %v, %v; want empty (the snapshot's state must not be used)", tp, l, err)
		}
	}
}

// A snapshot ahead of the log (the log was recreated) is dropped for that
// metadata partition, which is replayed from 0.
//
// The logs here cannot say their ids, so the offsets are all there is to
// compare (TestSnapshotOfAnotherLogIsDropped: logs that can).
func TestSnapshotAheadOfTheLogIsDropped(t *testing.T) {
	dir := t.TempDir()
	old := logWithoutID{newLog(t, 3)}
	tps := distinctPartitions(t, 3, 3)
	m1 := startManager(t, Config{Log: old, SnapshotDir: dir, SnapshotInterval: -1})
	assign(t, m1, tps...)
	workload(t, m1, tps, 0, 2)
	must(t, m1.ShutdownAndFlush(testCtx(t)))

	fresh := logWithoutID{newLog(t, 3)}
	logs := &logRecorder{}
	m2 := startManager(t, Config{Log: fresh, SnapshotDir: dir, Logger: slog.New(logs)})
	assign(t, m2, tps...)
	for _, tp := range tps {
		if l, err := m2.ListSegments(tp); len(l) != 0 || err != nil {
			t.Errorf("%s: %v, %v; want empty: the new log has no events", tp, l, err)
		}
	}
	addFinished(t, m2, segment(tps[0], 1, 0, 9))
	if l, _ := m2.ListSegments(tps[0]); len(l) != 1 {
		t.Errorf("after a new add: %v", l)
	}
	if got := logs.matching("snapshot dropped for a metadata partition", "past the log's high-water mark"); len(got) != 3 {
		t.Errorf("%d lines dropping a metadata partition's snapshot state by its offsets, want 3: %q", len(got), logs.matching("snapshot"))
	}
}

// A version 2 snapshot (written before snapshots named their log) is still
// used after an upgrade: a restart on it replays nothing.
func TestVersion2SnapshotIsUsed(t *testing.T) {
	l := newLog(t, 3)
	dir := t.TempDir()
	tps := distinctPartitions(t, 3, 3)
	want, _ := flushedRun(t, l, dir, tps, 3)
	path := filepath.Join(dir, SnapshotFileName)
	v4, err := os.ReadFile(path)
	must(t, err)
	s, err := decodeSnapshot(v4)
	must(t, err)
	v3 := encodeSnapshotV3(s)
	// Version 2 is version 3 without the 16-byte log id that starts the head.
	headLen := binary.LittleEndian.Uint64(v3[14:22])
	v2 := append(slices.Clone(v3[:snapshot.HeadFirstHeaderSize]), v3[snapshot.HeadFirstHeaderSize+16:]...)
	binary.LittleEndian.PutUint16(v2[8:], snapshot.VersionWithoutLogID)
	binary.LittleEndian.PutUint64(v2[14:], headLen-16)
	binary.LittleEndian.PutUint32(v2[10:], crc32.Checksum(v2[snapshot.HeadFirstHeaderSize:snapshot.HeadFirstHeaderSize+headLen-16], crc32.MakeTable(crc32.Castagnoli)))
	must(t, os.WriteFile(path, v2, 0o600))
	restartReplaysNothing(t, l, dir, tps, want)
}

// A snapshot written for another log (its id differs: a metadata topic
// deleted and created again under the same name) is dropped whole, also
// when the new log already holds more events than the snapshot claims,
// which offsets alone cannot tell: the state is the new log's, the reason
// is logged and every metadata partition it held is counted as dropped.
func TestSnapshotOfAnotherLogIsDropped(t *testing.T) {
	dir := t.TempDir()
	old := newLog(t, 3)
	tps := distinctPartitions(t, 3, 3)
	m1 := startManager(t, Config{Log: old, SnapshotDir: dir, SnapshotInterval: -1})
	assign(t, m1, tps...)
	workload(t, m1, tps, 0, 2)
	must(t, m1.ShutdownAndFlush(testCtx(t)))

	// The new log's history is longer than the old one's in every
	// metadata partition, and of other segments.
	fresh := newLog(t, 3)
	m2 := startManager(t, Config{Log: fresh, SnapshotInterval: -1})
	assign(t, m2, tps...)
	workload(t, m2, tps, 100, 6)
	must(t, m2.Close())
	for mp := range int32(3) {
		if o, f := hwm(t, old, mp), hwm(t, fresh, mp); f <= o {
			t.Fatalf("metadata partition %d: the new log has %d events, the old one %d: want more", mp, f, o)
		}
	}
	expected := memory.New()
	for mp := range int32(3) {
		replayInto(t, expected, readAll(t, fresh, mp))
	}

	m3 := restartOnAnotherLog(t, fresh, old.ID(), dir, tps, expected, 3)
	// The next snapshot is the new log's: a restart replays nothing.
	must(t, m3.ShutdownAndFlush(testCtx(t)))
	restartReplaysNothing(t, fresh, dir, tps, viewOf(t, expected, tps))
}

// A snapshot's state of metadata partitions that this run does not host is
// kept until the broker names what it hosts, and dropped then: memory and
// the next snapshot follow what the broker hosts. A later restart that
// hosts them again replays them from 0.
func TestSnapshotStateOfUnhostedPartitionsIsDropped(t *testing.T) {
	l := newLog(t, 3)
	dir := t.TempDir()
	tps := distinctPartitions(t, 3, 3)
	want, _ := flushedRun(t, l, dir, tps, 2)

	m2 := startManager(t, Config{Log: l, SnapshotDir: dir, SnapshotInterval: -1})
	<-m2.Restored()
	if s := m2.Stats(); s.CachedPartitions != 3 {
		t.Errorf("before any assignment the snapshot's %d user partitions are held; want 3", s.CachedPartitions)
	}
	assign(t, m2, tps[0])
	if _, ok, err := m2.SegmentForOffset(tps[1], 0, 0); ok || !errors.Is(err, rlmm.ErrNotAssigned) {
		t.Errorf("unhosted partition held from the snapshot served a read: %v, %v; want ErrNotAssigned", ok, err)
	}
	if s := m2.Stats(); s.CachedPartitions != 1 || s.Hosted != 1 {
		t.Errorf("after hosting one partition: %d cached, %d hosted; want 1 and 1", s.CachedPartitions, s.Hosted)
	}
	must(t, m2.ShutdownAndFlush(testCtx(t)))

	m3 := startManager(t, Config{Log: l, SnapshotDir: dir, SnapshotInterval: -1})
	assign(t, m3, tps...)
	must(t, sameViews(viewOf(t, m3, tps), want))
	s := m3.Stats()
	if s.SnapshotSegments != len(want[tps[0]].Segments) {
		t.Errorf("the snapshot held %d segments; want the hosted partition's %d", s.SnapshotSegments, len(want[tps[0]].Segments))
	}
	if s.Consumed() == 0 {
		t.Error("nothing replayed for the partitions the snapshot no longer held")
	}
}

// Removing a metadata partition and adding it back replays it from 0: it is
// not ready mid-replay and a deleted segment never reappears (the seed kept
// the applied offset and got both wrong).
func TestReassignAfterRemovalReplaysFromZero(t *testing.T) {
	base := newLog(t, 3)
	pl := newPausableLog(base)
	dir := t.TempDir()
	m := startManager(t, Config{Log: pl, SnapshotDir: dir, SnapshotInterval: -1})
	tp := topicPartition("foo", 1, 0)
	assign(t, m, tp)
	gone := segment(tp, 1, 0, 99)
	kept := segment(tp, 2, 100, 199)
	addFinished(t, m, gone)
	addFinished(t, m, kept)
	ctx := testCtx(t)
	must(t, m.UpdateSegment(ctx, update(gone, rlmm.DeleteSegmentStarted)))
	must(t, m.UpdateSegment(ctx, update(gone, rlmm.DeleteSegmentFinished)))
	want := viewOf(t, m, []rlmm.TopicIDPartition{tp})

	must(t, m.OnStopPartitions(ctx, []rlmm.TopicIDPartition{tp}))
	if l, err := m.ListSegments(tp); len(l) != 0 || !errors.Is(err, rlmm.ErrNotAssigned) {
		t.Errorf("after stop: %v, %v; want ErrNotAssigned", l, err)
	}
	// The dropped state is not in a snapshot taken now either.
	must(t, m.WriteSnapshot(ctx))
	before := m.Stats().Consumed()

	pl.Pause()
	must(t, m.OnPartitionLeadershipChanges(ctx, []rlmm.TopicIDPartition{tp}, nil))
	if m.IsReady(tp) {
		t.Fatal("re-added metadata partition is ready before replaying")
	}
	if _, err := m.ListSegments(tp); !errors.Is(err, rlmm.ErrNotReady) {
		t.Errorf("re-added partition mid-replay: %v; want ErrNotReady", err)
	}
	pl.Resume()
	must(t, m.WaitReady(ctx, tp))
	if got := m.Stats().Consumed() - before; got != 6 {
		t.Errorf("re-add replayed %d events; want all 6 from offset 0", got)
	}
	must(t, sameViews(viewOf(t, m, []rlmm.TopicIDPartition{tp}), want))

	// A restart from the snapshot written while unassigned replays it all too.
	must(t, m.Close())
	m2 := startManager(t, Config{Log: base, SnapshotDir: dir})
	assign(t, m2, tp)
	if got := m2.Stats().Consumed(); got != 6 {
		t.Errorf("restart replayed %d events; want 6", got)
	}
	must(t, sameViews(viewOf(t, m2, []rlmm.TopicIDPartition{tp}), want))
}

// The housekeeper's periodic snapshot writes when the cache advanced.
func TestPeriodicSnapshot(t *testing.T) {
	l := newLog(t, 3)
	dir := t.TempDir()
	met := &countingMetrics{}
	m := startManager(t, Config{Log: l, SnapshotDir: dir, SnapshotInterval: 5 * 1e6, Metrics: met})
	tp := topicPartition("foo", 1, 0)
	assign(t, m, tp)
	addFinished(t, m, segment(tp, 1, 0, 9))
	waitFor(t, "a periodic snapshot", func() bool {
		met.mu.Lock()
		defer met.mu.Unlock()
		return met.snapshots > 0
	})
	if _, err := os.Stat(filepath.Join(dir, SnapshotFileName)); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	must(t, err)
	for _, e := range entries {
		if e.Name() != SnapshotFileName {
			t.Errorf("stray file %s in the snapshot directory", e.Name())
		}
	}
}

// A snapshot whose checksums hold but one of whose partitions cannot be
// built (a bug, or a hand-edited file) loads, then the metadata partition
// of that partition is replayed from 0: reads say NotReady meanwhile, a
// mutation waits, and the state ends up what the log says.
func TestSnapshotStateThatCannotBeBuiltIsReplayed(t *testing.T) {
	l := newLog(t, 3)
	dir := t.TempDir()
	tps := distinctPartitions(t, 3, 3)
	flushedRun(t, l, dir, tps, 3)

	// Break one segment of one partition, keeping every checksum valid.
	path := filepath.Join(dir, SnapshotFileName)
	data, err := os.ReadFile(path)
	must(t, err)
	s, err := decodeSnapshot(data)
	must(t, err)
	k := slices.IndexFunc(s.states, func(st memory.PartitionState) bool { return len(st.Segments) > 0 })
	if k < 0 {
		t.Fatal("the workload left no live segment")
	}
	broken := s.states[k].TopicIDPartition
	seg := &s.states[k].Segments[0]
	seg.EndOffset = seg.StartOffset - 1
	must(t, os.WriteFile(path, encodeSnapshot(s), 0o644))

	m2 := startManager(t, Config{Log: l, SnapshotDir: dir, SnapshotInterval: -1})
	if st := m2.Stats(); st.SnapshotError != nil || st.SnapshotSegments == 0 {
		t.Fatalf("the snapshot was not loaded: %+v", st)
	}
	assign(t, m2, tps...)
	// A mutation of the broken partition right away: it waits for the
	// replay and is then applied.
	extra := segment(broken, 9_999, 10_000, 10_099)
	if err := m2.AddSegment(testCtx(t), extra); err != nil {
		t.Fatalf("AddSegment on the partition being replayed: %v", err)
	}
	// The reference: a manager that replays the whole log.
	m3 := startManager(t, Config{Log: l})
	assign(t, m3, tps...)
	want := viewOf(t, m3, tps)
	waitForNil(t, "the replayed state", func() error {
		for _, tp := range tps {
			if _, err := m2.ListSegments(tp); err != nil {
				if !errors.Is(err, rlmm.ErrNotReady) {
					t.Fatalf("read of %s during the replay: %v; want ErrNotReady or an answer", tp, err)
				}
				return err
			}
		}
		return sameViews(viewOf(t, m2, tps), want)
	})
	if got := m2.Stats().SnapshotBuildFailures; got != 1 {
		t.Errorf("SnapshotBuildFailures = %d, want 1", got)
	}
	waitFor(t, "the background build", func() bool { return m2.Stats().SnapshotPending == 0 })
	// The next snapshot holds the replayed state.
	must(t, m2.ShutdownAndFlush(testCtx(t)))
	restartReplaysNothing(t, l, dir, tps, want)
}

// After a restart from a snapshot the state is built in the background:
// Stats says when it is done, and reads meanwhile build what they need.
func TestSnapshotStateBuiltInBackground(t *testing.T) {
	l := newLog(t, 10)
	dir := t.TempDir()
	tps := distinctPartitions(t, 10, 6)
	want, _ := flushedRun(t, l, dir, tps, 5)

	met := &countingMetrics{}
	m2 := startManager(t, Config{Log: l, SnapshotDir: dir, SnapshotInterval: -1, Metrics: met})
	assign(t, m2, tps...)
	must(t, sameViews(viewOf(t, m2, tps), want))
	waitFor(t, "the background build", func() bool {
		st := m2.Stats()
		return st.SnapshotPending == 0 && st.SnapshotBuildDuration > 0
	})
	if st := m2.Stats(); st.SnapshotBuildFailures != 0 {
		t.Errorf("SnapshotBuildFailures = %d", st.SnapshotBuildFailures)
	}
	met.mu.Lock()
	defer met.mu.Unlock()
	if !slices.Equal(met.built, []uint64{0}) {
		t.Errorf("SnapshotBuilt reported %v; want once, without failures", met.built)
	}
}

// While the restorer decodes the snapshot, an assigned metadata partition
// it holds answers rlmm.ErrNotReady or the whole restored state, never a
// part of it, and a mutation waits for the restore, then applies.
func TestReadsDuringTheRestoreAreNotReadyOrComplete(t *testing.T) {
	l := newLog(t, 4)
	dir := t.TempDir()
	tps := distinctPartitions(t, 4, 4)
	want, _ := flushedRun(t, l, dir, tps, 150)

	m := startManager(t, Config{Log: l, SnapshotDir: dir, SnapshotInterval: -1})
	ctx := testCtx(t)
	// Not assign: it would wait for readiness, after the restore.
	must(t, m.OnPartitionLeadershipChanges(ctx, tps, nil))
	notReady := 0
	for _, tp := range tps {
		for {
			segs, err := m.ListSegments(tp)
			if errors.Is(err, rlmm.ErrNotReady) {
				notReady++
				continue
			}
			must(t, err)
			must(t, sameSegments(segs, want[tp].Segments))
			break
		}
	}
	t.Logf("%d reads answered ErrNotReady during the restore", notReady)
	extra := segment(tps[0], 99_999, 1_000_000, 1_000_099)
	must(t, m.AddSegment(ctx, extra))
	if st := m.Stats(); st.SnapshotPending != 0 || st.SnapshotBuildFailures != 0 || st.Consumed() != 1 {
		t.Errorf("after the restore: %d pending, %d failures, %d events consumed; want 0, 0, 1 (the new segment)",
			st.SnapshotPending, st.SnapshotBuildFailures, st.Consumed())
	}
}

// Restored is closed at Start without a snapshot to decode, and once the
// snapshot's state is installed otherwise (nothing pending then).
func TestRestoredIsClosedOnceTheStateIsBuilt(t *testing.T) {
	l := newLog(t, 3)
	dir := t.TempDir()
	tps := distinctPartitions(t, 3, 3)
	m1 := startManager(t, Config{Log: l, SnapshotDir: dir, SnapshotInterval: -1})
	select {
	case <-m1.Restored():
	default:
		t.Fatal("Restored not closed at Start without a snapshot")
	}
	assign(t, m1, tps...)
	workload(t, m1, tps, 0, 3)
	must(t, m1.ShutdownAndFlush(testCtx(t)))

	m2 := startManager(t, Config{Log: l, SnapshotDir: dir, SnapshotInterval: -1})
	select {
	case <-m2.Restored():
	case <-testCtx(t).Done():
		t.Fatal("Restored not closed after a restart from a snapshot")
	}
	if st := m2.Stats(); st.SnapshotPending != 0 || st.SnapshotSegments == 0 {
		t.Errorf("after Restored: %d user partitions pending, %d segments loaded; want 0 and some", st.SnapshotPending, st.SnapshotSegments)
	}
}

package topicbased

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rlmm-go/rlmm/eventlog/memlog"
	"github.com/rlmm-go/rlmm/test/faultdisk"
)

// snapshotWrites records the result of every snapshot write.
type snapshotWrites struct {
	NopMetrics
	mu         sync.Mutex
	ok, failed int
	lastErr    error
	lastBytes  int64
}

func (s *snapshotWrites) SnapshotWritten(_ time.Duration, bytes int64, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.failed++
		s.lastErr = err
		return
	}
	s.ok++
	s.lastBytes = bytes
}

func (s *snapshotWrites) counts() (ok, failed int, last error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ok, s.failed, s.lastErr
}

// snapshotCurrent says whether the last snapshot written holds every
// change applied.
func snapshotCurrent(m *Manager) bool {
	m.snapMu.Lock()
	defer m.snapMu.Unlock()
	return m.lastSnapVersion == m.version.Load()
}

// underSnapshotLock runs f while no snapshot write is under way.
func underSnapshotLock(m *Manager, f func()) {
	m.snapMu.Lock()
	defer m.snapMu.Unlock()
	f()
}

// A snapshot disk that is full, or read-only, or runs out of space in the
// middle of a write: the manager keeps serving reads and mutations, counts
// and logs every failed write, leaves the last good snapshot as it was and
// no temporary file (no space eaten), a restart from that snapshot gives
// the whole state, and once the disk is back the next periodic snapshot is
// written without anyone asking.
func TestSnapshotDiskFaults(t *testing.T) {
	const pageRoom = 4096
	for _, tc := range []struct {
		name  string
		fault func(*faultdisk.Disk) error
		undo  func(*faultdisk.Disk) error
		errno syscall.Errno
	}{
		{"disk full", (*faultdisk.Disk).Fill, (*faultdisk.Disk).Free, syscall.ENOSPC},
		{"disk full in the middle of a write", func(d *faultdisk.Disk) error { return d.FillLeaving(pageRoom) }, (*faultdisk.Disk).Free, syscall.ENOSPC},
		{"directory read-only", (*faultdisk.Disk).ReadOnly, (*faultdisk.Disk).ReadWrite, syscall.EROFS},
	} {
		t.Run(tc.name, func(t *testing.T) {
			disk := faultdisk.Mount(t, 1<<20)
			dir := filepath.Join(disk.Dir, "snapshots")
			path := filepath.Join(dir, SnapshotFileName)
			const n = 4
			l := memlog.New(n)
			tps := distinctPartitions(t, n, n)
			start := func() (*Manager, *snapshotWrites, *logRecorder) {
				met, logs := &snapshotWrites{}, &logRecorder{}
				m := startManager(t, Config{Log: l, SnapshotDir: dir, SnapshotInterval: 10 * time.Millisecond,
					Metrics: met, Logger: slog.New(logs)})
				assign(t, m, tps...)
				return m, met, logs
			}

			m, met, logs := start()
			workload(t, m, tps, 0, 100)
			waitFor(t, "a snapshot of the whole workload", func() bool { return snapshotCurrent(m) })
			if _, _, err := met.counts(); err != nil {
				t.Fatalf("a snapshot write failed before the fault: %v", err)
			}
			met.mu.Lock()
			size := met.lastBytes
			met.mu.Unlock()
			if size <= 3*pageRoom {
				t.Fatalf("the snapshot has %d bytes; the test needs more than %d to run out of space in the middle of a write", size, 3*pageRoom)
			}
			var good []byte
			var room int64
			underSnapshotLock(m, func() {
				must(t, tc.fault(disk))
				var err error
				good, err = os.ReadFile(path)
				must(t, err)
				room, err = disk.Available()
				must(t, err)
			})

			// Serving goes on: mutations are recorded, reads answer them.
			workload(t, m, tps, 10_000, 10)
			want := viewOf(t, m, tps)
			waitFor(t, "a failed periodic snapshot write counted", func() bool { _, failed, _ := met.counts(); return failed > 0 })
			if _, _, err := met.counts(); !errors.Is(err, tc.errno) {
				t.Errorf("the failed write reported %v, want %v", err, tc.errno)
			}
			// The housekeeper warns after writeSnapshot has counted the
			// failure, so the warning may come a moment after the count.
			warned := func() bool { return len(logs.matching("WARN", "periodic snapshot failed", tc.errno.Error())) > 0 }
			waitFor(t, "a warning naming the failed write ("+tc.errno.Error()+")", warned)
			if err := m.WriteSnapshot(testCtx(t)); !errors.Is(err, tc.errno) {
				t.Errorf("WriteSnapshot on the faulty disk: %v, want %v", err, tc.errno)
			}
			underSnapshotLock(m, func() { checkLastGoodSnapshot(t, disk, dir, good, room) })
			if err := m.ShutdownAndFlush(testCtx(t)); !errors.Is(err, tc.errno) {
				t.Errorf("the final snapshot on the faulty disk: %v, want %v", err, tc.errno)
			}
			checkLastGoodSnapshot(t, disk, dir, good, room)

			// A restart, the disk still faulty, starts from the last good
			// snapshot and replays the rest.
			m2, met2, logs2 := start()
			if st := m2.Stats(); st.SnapshotError != nil || st.SnapshotSegments == 0 {
				t.Errorf("the restart did not use the last good snapshot: %d segments, %v", st.SnapshotSegments, st.SnapshotError)
			}
			if err := sameViews(viewOf(t, m2, tps), want); err != nil {
				t.Errorf("state after a restart from the last good snapshot: %v", err)
			}

			// The disk back, the next periodic snapshot is written, with no
			// change after it to prompt it.
			waitFor(t, "a failed snapshot write after the restart", func() bool { _, failed, _ := met2.counts(); return failed > 0 })
			must(t, tc.undo(disk))
			waitFor(t, "a snapshot once the disk is back", func() bool { ok, _, _ := met2.counts(); return ok > 0 && snapshotCurrent(m2) })
			if got := logs2.matching("INFO", "snapshot written again", "failed_writes_before="); len(got) != 1 {
				t.Errorf("log lines saying the snapshot is written again: %q, want one", got)
			}
			must(t, m2.Close())
			restartReplaysNothing(t, l, dir, tps, want)
		})
	}
}

// checkLastGoodSnapshot checks that the snapshot file is still good, a
// whole snapshot that decodes, and that no temporary file is left on the
// disk: room bytes are still available.
func checkLastGoodSnapshot(t *testing.T, disk *faultdisk.Disk, dir string, good []byte, room int64) {
	t.Helper()
	got, err := os.ReadFile(filepath.Join(dir, SnapshotFileName))
	if err != nil || !slices.Equal(got, good) {
		t.Errorf("the snapshot file changed on the faulty disk (%d bytes, %v; was %d)", len(got), err, len(good))
	}
	if _, err := decodeSnapshot(got); err != nil {
		t.Errorf("the last good snapshot does not decode: %v", err)
	}
	entries, err := os.ReadDir(dir)
	must(t, err)
	for _, e := range entries {
		if e.Name() != SnapshotFileName {
			t.Errorf("the snapshot directory holds %s", e.Name())
		}
	}
	if avail, err := disk.Available(); err != nil || avail != room {
		t.Errorf("%d bytes available after the failed writes, %v; want the %d there were before them", avail, err, room)
	}
}

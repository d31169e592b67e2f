package topicbased

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/memory"
)

// A state of a metadata partition whose committed offset is -1 makes the
// snapshot inconsistent: Start ignores it.
func TestSnapshotInconsistentCommittedIsIgnored(t *testing.T) {
	dir := t.TempDir()
	tp := topicPartition("foo", 1, 0)
	l := newLog(t, 3)
	s := &snapshotContent{partitions: 3, committed: []int64{-1, -1, -1},
		states: []memory.PartitionState{{TopicIDPartition: tp, Segments: []rlmm.SegmentMetadata{segment(tp, 1, 0, 9)}}}}
	must(t, writeFileAtomic(dir, SnapshotFileName, encodeSnapshot(s)))
	m := startManager(t, Config{Log: l, SnapshotDir: dir})
	if err := m.Stats().SnapshotError; !errors.Is(err, rlmm.ErrCorrupt) {
		t.Errorf("SnapshotError = %v; want ErrCorrupt", err)
	}
	assign(t, m, tp)
	if list, _ := m.ListSegments(tp); len(list) != 0 {
		t.Errorf("state of an inconsistent snapshot served: %v", list)
	}
}

// Start removes temporary files of an interrupted snapshot write.
func TestStaleTemporarySnapshotFilesRemoved(t *testing.T) {
	dir := t.TempDir()
	stale := filepath.Join(dir, SnapshotFileName+".123.tmp")
	must(t, os.WriteFile(stale, []byte("half"), 0o644))
	startManager(t, Config{Log: newLog(t, 3), SnapshotDir: dir})
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stale temporary file still there: %v", err)
	}
}

// TestSnapshotLoadEqualsImport loads a snapshot of many partitions (built
// on several goroutines, each decoding its segments into one reused
// rlmm.SegmentMetadata) whose segments vary in every optional part, and
// checks that the cache holds exactly what importing the same states
// directly gives: nothing of a segment decoded earlier into the same value
// leaks into a later one.
func TestSnapshotLoadEqualsImport(t *testing.T) {
	const parts, perPartition = 120, 50
	s := &snapshotContent{partitions: 4, committed: []int64{0, 0, 0, 0}}
	// A seeded choice per segment, so that a reused buffer slot held a
	// segment with other optional parts before.
	rng := rand.New(rand.NewPCG(1, 2))
	for p := range int32(parts) {
		tp := topicPartition("recycle", 9, p)
		st := memory.PartitionState{TopicIDPartition: tp}
		for k := range int64(perPartition) {
			id := uint64(p)*perPartition + uint64(k)
			var md rlmm.SegmentMetadata
			if rng.IntN(4) == 0 {
				md = segment(tp, id, k*100, k*100+99, k, k*100, k+1, k*100+50)
			} else {
				md = segment(tp, id, k*100, k*100+99, k, k*100)
			}
			switch rng.IntN(3) {
			case 0:
				md.CustomMetadata = []byte{byte(k), byte(p)}
			case 1:
				md.CustomMetadata = []byte{}
			}
			md.TxnIndexEmpty = rng.IntN(2) == 0
			if rng.IntN(5) != 0 {
				md.State = rlmm.CopySegmentFinished
			}
			st.Segments = append(st.Segments, md)
		}
		s.states = append(s.states, st)
	}
	want := memory.New()
	must(t, want.Import(s.states))
	dir := t.TempDir()
	must(t, writeFileAtomic(dir, SnapshotFileName, encodeSnapshot(s)))
	m := startManager(t, Config{Log: newLog(t, 4), SnapshotDir: dir, SnapshotInterval: -1})
	if st := m.Stats(); st.SnapshotError != nil || st.SnapshotSegments != parts*perPartition {
		t.Fatalf("snapshot loaded %d segments (error %v), want %d", st.SnapshotSegments, st.SnapshotError, parts*perPartition)
	}
	waitFor(t, "the restore", func() bool { return m.Stats().SnapshotPending == 0 })
	got, exp := m.inner.Export(nil), want.Export(nil)
	if len(got) != parts || !reflect.DeepEqual(got, exp) {
		t.Fatalf("loaded %d partitions, differing from a direct import of %d", len(got), len(exp))
	}
}

package topicbased

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/eventlog/memlog"
	"github.com/rlmm-go/rlmm/memory"
	"github.com/rlmm-go/rlmm/snapshot"
)

// footerOffset returns the file offset of a version 4 snapshot's footer,
// as its trailer says.
func footerOffset(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	must(t, err)
	return int(binary.LittleEndian.Uint64(b[len(b)-snapshot.TrailerSize:]))
}

// snapshotVersion returns the format version of the snapshot file in dir.
func snapshotVersion(t *testing.T, dir string) uint16 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, SnapshotFileName))
	must(t, err)
	r, err := snapshot.Open(bytes.NewReader(b), int64(len(b)))
	must(t, err)
	return r.Version()
}

// A version 3 snapshot (written by a build before version 4) is used: a
// restart on it replays nothing, and the next snapshot it writes is
// version 4, which the restart after reads the same.
func TestVersion3SnapshotIsUsedAndRewrittenAsVersion4(t *testing.T) {
	l := newLog(t, 3)
	dir := t.TempDir()
	tps := distinctPartitions(t, 3, 3)
	want, _ := flushedRun(t, l, dir, tps, 3)
	if v := snapshotVersion(t, dir); v != snapshot.Version {
		t.Fatalf("the manager wrote a version %d snapshot, want %d", v, snapshot.Version)
	}
	path := filepath.Join(dir, SnapshotFileName)
	data, err := os.ReadFile(path)
	must(t, err)
	s, err := decodeSnapshot(data)
	must(t, err)
	must(t, writeFileAtomic(dir, SnapshotFileName, encodeSnapshotV3(s)))
	if v := snapshotVersion(t, dir); v != snapshot.VersionHeadFirst {
		t.Fatalf("the rewritten file is version %d, want %d", v, snapshot.VersionHeadFirst)
	}

	m := startManager(t, Config{Log: l, SnapshotDir: dir, SnapshotInterval: -1})
	assign(t, m, tps...)
	if st := m.Stats(); st.SnapshotError != nil || st.Consumed() != 0 {
		t.Fatalf("restart from the version 3 file: snapshot error %v, %d events replayed; want none", st.SnapshotError, st.Consumed())
	}
	must(t, sameViews(viewOf(t, m, tps), want))
	must(t, m.ShutdownAndFlush(testCtx(t)))
	if v := snapshotVersion(t, dir); v != snapshot.Version {
		t.Fatalf("after a restart from version 3 the snapshot is version %d, want %d", v, snapshot.Version)
	}
	restartReplaysNothing(t, l, dir, tps, want)
}

// A block whose checksum fails (found as the restorer decodes it, in its
// one read of the block) takes the path of a block that cannot be built:
// the reason is logged, that block's metadata partition is replayed from
// offset 0 and only it; the other metadata partitions come from the
// snapshot. The snapshot itself is not refused (its footer holds).
func TestSnapshotBlockWithABadChecksumIsReplayed(t *testing.T) {
	l := newLog(t, 3)
	dir := t.TempDir()
	tps := distinctPartitions(t, 3, 3)
	want, _ := flushedRun(t, l, dir, tps, 3)

	path := filepath.Join(dir, SnapshotFileName)
	data, err := os.ReadFile(path)
	must(t, err)
	r, err := snapshot.Open(bytes.NewReader(data), int64(len(data)))
	must(t, err)
	var bad snapshot.BlockInfo
	for _, blk := range r.Blocks() {
		if blk.Segments > 0 {
			bad = blk
			break
		}
	}
	if bad.Segments == 0 {
		t.Fatal("no block with segments")
	}
	flipByte(t, path, int(bad.Offset+bad.Length/2))

	logs := &logRecorder{}
	m := startManager(t, Config{Log: l, SnapshotDir: dir, SnapshotInterval: -1, Logger: slog.New(logs)})
	if err := m.Stats().SnapshotError; err != nil {
		t.Fatalf("SnapshotError = %v; want none (the footer holds)", err)
	}
	assign(t, m, tps...)
	must(t, sameViews(viewOf(t, m, tps), want))
	waitFor(t, "the restore", func() bool { return m.Stats().SnapshotPending == 0 })
	badMP := m.MetadataPartitionOf(bad.TopicIDPartition)
	if st := m.Stats(); st.SnapshotBuildFailures != 1 || int64(st.Consumed()) != hwm(t, l, badMP) {
		t.Errorf("%d build failures, %d events replayed; want 1, and the %d events of metadata partition %d only",
			st.SnapshotBuildFailures, st.Consumed(), hwm(t, l, badMP), badMP)
	}
	if got := logs.matching("snapshot block cannot be used", "checksum mismatch", bad.TopicIDPartition.String(),
		"file_offset="+strconv.FormatInt(bad.Offset, 10)); len(got) != 1 {
		t.Errorf("%d lines logging the bad block with its reason, want 1: %q", len(got), logs.matching("snapshot"))
	}
	// The next snapshot holds the replayed state.
	must(t, m.ShutdownAndFlush(testCtx(t)))
	restartReplaysNothing(t, l, dir, tps, want)
}

// loadedManager starts a manager whose cache holds segments finished
// single-epoch segments of perPartition each over parts metadata
// partitions, all held (restored from a snapshot), and returns it with the
// live heap it added.
func loadedManager(t testing.TB, segments, perPartition int, parts int32) (*Manager, uint64) {
	t.Helper()
	dir := t.TempDir()
	s := &snapshotContent{partitions: parts, committed: make([]int64, parts)}
	for p := range int32(segments / perPartition) {
		tp := topicPartition("mem", 6, p)
		st := memory.PartitionState{TopicIDPartition: tp, Segments: make([]rlmm.SegmentMetadata, 0, perPartition)}
		for k := range int64(perPartition) {
			md := segment(tp, uint64(p)*uint64(perPartition)+uint64(k), k*100, k*100+99)
			md.State = rlmm.CopySegmentFinished
			st.Segments = append(st.Segments, md)
		}
		st.HighestOffsets = []memory.EpochOffset{{Epoch: 0, Offset: int64(perPartition)*100 - 1}}
		s.states = append(s.states, st)
	}
	must(t, writeFileAtomic(dir, SnapshotFileName, encodeSnapshot(s)))
	s = nil
	l := memlog.New(parts)
	t.Cleanup(func() { _ = l.Close() })
	before := liveHeap()
	m := startManager(t, Config{Log: l, SnapshotDir: dir, SnapshotInterval: -1})
	waitFor(t, "the restore", func() bool { return m.Stats().SnapshotPending == 0 })
	if st := m.Stats(); st.SnapshotError != nil || st.SnapshotSegments != segments || st.SnapshotBuildFailures != 0 {
		t.Fatalf("snapshot loaded %d segments (error %v, %d failures), want %d", st.SnapshotSegments, st.SnapshotError, st.SnapshotBuildFailures, segments)
	}
	return m, liveHeap() - before
}

// liveHeap returns the bytes of live heap objects, after a collection.
func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// snapshotMemory is what measureSnapshotMemory found.
type snapshotMemory struct {
	// peakExtra is the most live heap a snapshot write added, sampled
	// after each metadata partition's export (when the most is held).
	peakExtra uint64
	// fullExport is the live heap of an export of the whole cache: what
	// a writer holding every metadata partition's copy at once adds.
	fullExport uint64
	fileBytes  int64
	samples    int
}

// measureSnapshotMemory writes a snapshot of m (into io.Discard: the file
// adds no memory) and measures the live heap it adds at its peak, and the
// live heap of a whole export for comparison.
func measureSnapshotMemory(t testing.TB, m *Manager) snapshotMemory {
	t.Helper()
	var out snapshotMemory
	base := liveHeap()
	testHookSnapshotExported = func() {
		out.samples++
		if h := liveHeap(); h > base && h-base > out.peakExtra {
			out.peakExtra = h - base
		}
	}
	size, _, err := m.streamSnapshot(io.Discard)
	testHookSnapshotExported = nil
	must(t, err)
	out.fileBytes = size
	base = liveHeap()
	all := m.inner.Export(nil)
	if h := liveHeap(); h > base {
		out.fullExport = h - base
	}
	runtime.KeepAlive(all)
	return out
}

// A snapshot write holds one metadata partition's export at a time, never
// the whole cache's: the live heap it adds at its peak is about one
// metadata partition's share of a whole export (here 1/50) plus the
// writer's 1 MiB buffer, measured after each export with the collector
// run first (so only live memory counts).
func TestSnapshotWriteHoldsOneMetadataPartitionAtATime(t *testing.T) {
	const segments, perPartition, parts = 200_000, 100, 50
	m, _ := loadedManager(t, segments, perPartition, parts)
	got := measureSnapshotMemory(t, m)
	if got.samples != parts || got.fullExport < segments*64 {
		t.Fatalf("%d samples (want %d), a whole export of %d bytes (want at least %d): the measurement does not measure",
			got.samples, parts, got.fullExport, segments*64)
	}
	// Twice a metadata partition's average share (the partitions hash
	// unevenly), the 1 MiB buffer and 1 MiB for the index and the rest.
	if limit := 2*got.fullExport/parts + 2<<20; got.peakExtra > limit {
		t.Errorf("a snapshot write added up to %d bytes of live heap; want at most %d (a whole export is %d bytes, %d metadata partitions)",
			got.peakExtra, limit, got.fullExport, parts)
	}
	t.Logf("peak extra %d bytes, whole export %d bytes (%.1f%%), file %d bytes",
		got.peakExtra, got.fullExport, 100*float64(got.peakExtra)/float64(got.fullExport), got.fileBytes)
}

// BenchmarkSnapshotWriteMemory: the live heap a snapshot write adds at its
// peak (sampled after each metadata partition's export, after a
// collection), against an export of the whole cache at once (what the
// writer held before format version 4) and against the cache's own heap:
// -snapshot-segments finished single-epoch segments (default
// 1,000,000), 1,000 per user partition, over 50 metadata partitions. Run
// with -benchtime 1x: each op runs 52 collections. It fails when the peak
// is above snapshotPeakLimit of the cache (make test's memory step).
func BenchmarkSnapshotWriteMemory(b *testing.B) {
	segments := 1_000_000
	if *snapshotSegmentsFlag > 0 {
		segments = *snapshotSegmentsFlag
	}
	const perPartition, parts = 1000, 50
	m, cache := loadedManager(b, segments, perPartition, parts)
	b.Run(fmt.Sprintf("segments=%d", segments), func(b *testing.B) {
		var got snapshotMemory
		for b.Loop() {
			got = measureSnapshotMemory(b, m)
		}
		b.ReportMetric(float64(got.peakExtra)/(1<<20), "peak-extra-MiB")
		b.ReportMetric(float64(got.fullExport)/(1<<20), "whole-export-MiB")
		b.ReportMetric(float64(cache)/(1<<20), "cache-MiB")
		b.ReportMetric(float64(got.peakExtra)/float64(got.fullExport), "extra/export")
		b.ReportMetric(float64(got.peakExtra)/float64(cache), "extra/cache")
		b.ReportMetric(float64(got.fileBytes)/float64(segments), "file-bytes/segment")
		if limit := float64(cache) * snapshotPeakLimit; float64(got.peakExtra) > limit {
			b.Errorf("a snapshot write added %.1f MiB of live heap at its peak, %.1f%% of the cache's %.1f MiB: the target is at most %.0f%%",
				float64(got.peakExtra)/(1<<20), 100*float64(got.peakExtra)/float64(cache), float64(cache)/(1<<20), 100*snapshotPeakLimit)
		}
	})
}

// snapshotPeakLimit is the most live heap a snapshot write may add at its
// peak, as a share of the cache's own heap.
const snapshotPeakLimit = 0.10

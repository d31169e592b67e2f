package clitest

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/snapshot"
)

// inspectSnapshotDoc is the part of inspect --snapshot --json the test
// checks.
type inspectSnapshotDoc struct {
	Bytes              int64   `json:"bytes"`
	Version            int     `json:"version"`
	Layout             string  `json:"layout"`
	LogID              string  `json:"logId"`
	MetadataPartitions int32   `json:"metadataPartitions"`
	Committed          []int64 `json:"committedOffsets"`
	UserPartitions     int     `json:"userPartitions"`
	TotalSegments      int     `json:"totalSegments"`
	BadBlocks          int     `json:"badBlocks"`
	Blocks             []struct {
		Partition   string            `json:"partition"`
		Segments    int               `json:"segments"`
		FileOffset  int64             `json:"fileOffset"`
		Length      int64             `json:"length"`
		CRC32C      string            `json:"crc32c"`
		Error       string            `json:"error"`
		SegmentList []json.RawMessage `json:"segmentList"`
	} `json:"blocks"`
}

// rlmm inspect --snapshot dumps the snapshot a simulated broker wrote, and
// reports a damaged block (exit 1) and a file that is not a snapshot (exit 2).
func TestInspectSnapshot(t *testing.T) {
	work, rep := simulate(t)
	var snap string
	_ = filepath.WalkDir(rep.RunDir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() == "rlmm.snapshot" && snap == "" {
			snap = path
		}
		return nil
	})
	if snap == "" {
		t.Fatalf("no rlmm.snapshot under %s", rep.RunDir)
	}
	args := []string{"inspect", "--snapshot", snap, "--segments", "--json"}
	r := run(t, work, args...)
	mustCode(t, r, 0, args...)
	var doc inspectSnapshotDoc
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("inspect --snapshot --json printed no JSON (%v):\n%s", err, r.stdout)
	}
	info, err := os.Stat(snap)
	if err != nil {
		t.Fatal(err)
	}
	if doc.Bytes != info.Size() || doc.MetadataPartitions != rep.MetadataPartitions || len(doc.Committed) != int(rep.MetadataPartitions) {
		t.Errorf("head: %d bytes, %d metadata partitions, %d committed offsets; the file has %d bytes, the run %d metadata partitions",
			doc.Bytes, doc.MetadataPartitions, len(doc.Committed), info.Size(), rep.MetadataPartitions)
	}
	// The snapshot names the log it was written for: the run's embedded
	// log, whose MANIFEST holds its id.
	var manifest struct {
		ID string `json:"id"`
	}
	mf, err := os.ReadFile(filepath.Join(rep.RunDir, "log", "MANIFEST"))
	if err == nil {
		err = json.Unmarshal(mf, &manifest)
	}
	if err != nil {
		t.Fatalf("the run's log manifest: %v", err)
	}
	if doc.Version != 4 || doc.Layout != "footer" || doc.LogID == "" || doc.LogID != manifest.ID {
		t.Errorf("snapshot version %d (index in the %q) written for log %q; want version 4 (\"footer\") and the run's log %q",
			doc.Version, doc.Layout, doc.LogID, manifest.ID)
	}
	if doc.UserPartitions == 0 || len(doc.Blocks) != doc.UserPartitions || doc.BadBlocks != 0 {
		t.Fatalf("%d user partitions, %d blocks shown, %d bad", doc.UserPartitions, len(doc.Blocks), doc.BadBlocks)
	}
	total := 0
	for _, b := range doc.Blocks {
		total += b.Segments
		if len(b.SegmentList) != b.Segments || len(b.CRC32C) != 8 || b.Error != "" {
			t.Errorf("block %s: %d segments listed of %d, checksum %q, error %q", b.Partition, len(b.SegmentList), b.Segments, b.CRC32C, b.Error)
		}
	}
	if total != doc.TotalSegments {
		t.Errorf("blocks hold %d segments, the head %d", total, doc.TotalSegments)
	}

	// The text form names every block and the log.
	r = run(t, work, "inspect", "--snapshot", snap)
	mustCode(t, r, 0, "inspect", "--snapshot", snap)
	if !strings.Contains(r.stdout, "version 4 (block index in the footer)") || !strings.Contains(r.stdout, "written for the log with id "+manifest.ID) {
		t.Errorf("text output does not name the log %s:\n%s", manifest.ID, r.stdout)
	}
	for _, b := range doc.Blocks {
		if !strings.Contains(r.stdout, b.Partition) {
			t.Errorf("text output does not name block %s:\n%s", b.Partition, r.stdout)
		}
	}

	// The last byte of the last block: its checksum fails.
	data, err := os.ReadFile(snap)
	if err != nil {
		t.Fatal(err)
	}
	damaged := filepath.Join(t.TempDir(), "damaged.snapshot")
	last := doc.Blocks[len(doc.Blocks)-1]
	if last.Length == 0 {
		t.Fatalf("the last block %s has no bytes", last.Partition)
	}
	data[last.FileOffset+last.Length-1] ^= 0xff
	if err := os.WriteFile(damaged, data, 0o644); err != nil {
		t.Fatal(err)
	}
	args = []string{"inspect", "--snapshot", damaged, "--json"}
	r = run(t, work, args...)
	mustCode(t, r, 1, args...)
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || doc.BadBlocks != 1 ||
		!strings.Contains(doc.Blocks[len(doc.Blocks)-1].Error, "checksum") {
		t.Errorf("damaged snapshot: %d bad blocks (%v); want the last one with a checksum error:\n%s", doc.BadBlocks, err, r.stdout)
	}

	// A torn file (its end, the trailer, missing) cannot be read (exit 2).
	data[last.FileOffset+last.Length-1] ^= 0xff
	torn := filepath.Join(t.TempDir(), "torn.snapshot")
	if err := os.WriteFile(torn, data[:len(data)-3], 0o644); err != nil {
		t.Fatal(err)
	}
	r = run(t, work, "inspect", "--snapshot", torn)
	mustCode(t, r, 2, "inspect", "--snapshot", torn)
	if !strings.Contains(r.stderr, "torn") || !strings.Contains(r.stderr, "file byte") {
		t.Errorf("stderr %q does not say the file is torn, naming the byte", r.stderr)
	}

	// The same content in the older layout, version 3 (the index in the
	// head): read alike, the version and layout said.
	v3 := filepath.Join(t.TempDir(), "v3.snapshot")
	if err := os.WriteFile(v3, rewriteAsVersion3(t, data), 0o644); err != nil {
		t.Fatal(err)
	}
	args = []string{"inspect", "--snapshot", v3, "--segments", "--json"}
	r = run(t, work, args...)
	mustCode(t, r, 0, args...)
	var doc3 inspectSnapshotDoc
	if err := json.Unmarshal([]byte(r.stdout), &doc3); err != nil {
		t.Fatalf("inspect --snapshot --json of a version 3 file printed no JSON (%v):\n%s", err, r.stdout)
	}
	if doc3.Version != 3 || doc3.Layout != "head" || doc3.UserPartitions != doc.UserPartitions ||
		doc3.TotalSegments != doc.TotalSegments || doc3.BadBlocks != 0 || doc3.LogID != doc.LogID {
		t.Errorf("version 3 file: version %d, layout %q, %d user partitions, %d segments, %d bad, log %q; want 3, \"head\", %d, %d, 0, %q",
			doc3.Version, doc3.Layout, doc3.UserPartitions, doc3.TotalSegments, doc3.BadBlocks, doc3.LogID,
			doc.UserPartitions, doc.TotalSegments, doc.LogID)
	}
	r = run(t, work, "inspect", "--snapshot", v3)
	mustCode(t, r, 0, "inspect", "--snapshot", v3)
	if !strings.Contains(r.stdout, "version 3 (block index in the head)") {
		t.Errorf("text output of a version 3 file does not say its version and layout:\n%s", r.stdout)
	}

	notSnap := filepath.Join(t.TempDir(), "not-a-snapshot")
	if err := os.WriteFile(notSnap, []byte("hello, this is not a snapshot file"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = run(t, work, "inspect", "--snapshot", notSnap)
	mustCode(t, r, 2, "inspect", "--snapshot", notSnap)
	if !strings.Contains(r.stderr, "not an rlmm snapshot") {
		t.Errorf("stderr %q does not say the file is not a snapshot", r.stderr)
	}
}

// memFile is an io.WriterAt over a growing byte slice.
type memFile struct{ b []byte }

func (f *memFile) WriteAt(p []byte, off int64) (int, error) {
	if end := int(off) + len(p); end > len(f.b) {
		f.b = append(f.b, make([]byte, end-len(f.b))...)
	}
	return copy(f.b[off:], p), nil
}

// rewriteAsVersion3 returns the snapshot data (any version) written again
// in version 3, as builds before version 4 wrote it.
func rewriteAsVersion3(t *testing.T, data []byte) []byte {
	t.Helper()
	r, err := snapshot.Open(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	var tps []rlmm.TopicIDPartition
	for _, blk := range r.Blocks() {
		tps = append(tps, blk.TopicIDPartition)
	}
	var out memFile
	w, err := snapshot.NewWriterV3(&out, r.Head(), tps)
	if err != nil {
		t.Fatal(err)
	}
	var buf []byte
	for k, blk := range r.Blocks() {
		if buf, err = r.ReadBlock(k, buf); err != nil {
			t.Fatal(err)
		}
		st, err := snapshot.DecodeState(buf, blk)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.WriteBlock(&st); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.Finish(); err != nil {
		t.Fatal(err)
	}
	return out.b
}

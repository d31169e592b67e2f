package filelog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/eventlog"
)

// logBuffer is a concurrency-safe buffer for a test's slog output.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// newLogger returns a logger writing text lines into a fresh buffer.
func newLogger() (*slog.Logger, *logBuffer) {
	b := &logBuffer{}
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug})), b
}

// mustOpen opens dir with opts and fails the test on error.
func mustOpen(t testing.TB, dir string, opts Options) *Log {
	t.Helper()
	l, err := Open(dir, opts)
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	return l
}

// mustClose closes l and fails the test on error.
func mustClose(t testing.TB, l *Log) {
	t.Helper()
	if err := l.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// crash abandons l as a killed process would: the committer stops after its
// current batch, files are closed without the final checkpoint, and the lock
// is released.
func crash(t testing.TB, l *Log) {
	t.Helper()
	l.mu.Lock()
	l.closed = true
	close(l.appended)
	l.mu.Unlock()
	l.closeOnce.Do(func() {
		close(l.stop)
		<-l.committerEnd
		l.files.Lock()
		defer l.files.Unlock()
		l.closeFiles()
	})
}

// publishValues publishes values to partition p and checks the offsets
// continue from the partition's high-water mark.
func publishValues(t testing.TB, l *Log, p int32, values ...string) {
	t.Helper()
	ctx := context.Background()
	for _, v := range values {
		if _, err := l.Publish(ctx, p, []byte(v)); err != nil {
			t.Fatalf("Publish(%d, %q): %v", p, v, err)
		}
	}
}

// readAllRecords reads partition p of l from offset 0 to its high-water mark.
func readAllRecords(t testing.TB, l *Log, p int32) ([]eventlog.Record, error) {
	t.Helper()
	return readRecordsFrom(t, l, p, 0)
}

// readRecordsFrom reads partition p of l from offset from to its high-water
// mark.
func readRecordsFrom(t testing.TB, l *Log, p int32, from int64) ([]eventlog.Record, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	hw, err := l.HighWaterMarks(ctx, []int32{p})
	if err != nil {
		return nil, err
	}
	sub, err := l.Subscribe(ctx)
	if err != nil {
		return nil, err
	}
	defer sub.Close()
	if err := sub.Add(p, from); err != nil {
		return nil, err
	}
	var recs []eventlog.Record
	for from+int64(len(recs)) < hw[0] {
		got, err := sub.Poll(ctx)
		if err != nil {
			return recs, err
		}
		recs = append(recs, got...)
	}
	return recs, nil
}

// values returns the values of recs as strings, checking offsets are dense
// from 0.
func values(t testing.TB, recs []eventlog.Record) []string {
	t.Helper()
	out := make([]string, len(recs))
	for i, r := range recs {
		if r.Offset != int64(i) {
			t.Fatalf("record %d has offset %d: offsets not dense", i, r.Offset)
		}
		out[i] = string(r.Value)
	}
	return out
}

// segmentFiles lists partition p's segment files in dir, in offset order.
func segmentFiles(t testing.TB, dir string, p int32) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, partitionDirName(p), "*"+segmentSuffix))
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// journalFile returns the one journal file in dir.
func journalFile(t testing.TB, dir string) string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, journalPrefix+"*"+journalSuffix))
	if err != nil || len(files) != 1 {
		t.Fatalf("journal files in %s: %v (%v), want exactly one", dir, files, err)
	}
	return files[0]
}

// fileSize returns the size of path.
func fileSize(t testing.TB, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// isCorrupt reports whether err wraps rlmm.ErrCorrupt.
func isCorrupt(err error) bool { return errors.Is(err, rlmm.ErrCorrupt) }

// recordValue is the fixed-length value of record i of partition p, so byte
// positions are easy to compute: record k of a segment starts at k*frameLen.
func recordValue(p int32, i int) string { return fmt.Sprintf("p%02d-r%06d", p, i) }

const frameLen = frameHeaderSize + 11 // 11 = len(recordValue(p, i))

func wantValues(p int32, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = recordValue(p, i)
	}
	return out
}

func publishRecords(t testing.TB, l *Log, p int32, from, n int) {
	t.Helper()
	for i := from; i < from+n; i++ {
		publishValues(t, l, p, recordValue(p, i))
	}
}

func checkPartition(t testing.TB, l *Log, p int32, n int) {
	t.Helper()
	recs, err := readAllRecords(t, l, p)
	if err != nil {
		t.Fatalf("reading partition %d: %v", p, err)
	}
	if got, want := values(t, recs), wantValues(p, n); !slices.Equal(got, want) {
		t.Fatalf("partition %d: %d records, want %d (first difference shown by values %v vs %v)", p, len(got), len(want), got[:min(3, len(got))], want[:min(3, len(want))])
	}
}

// --- file surgery ---------------------------------------------------------

func appendBytes(t *testing.T, path string, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
}

func cut(t *testing.T, path string, n int) {
	t.Helper()
	if err := os.Truncate(path, fileSize(t, path)-int64(n)); err != nil {
		t.Fatal(err)
	}
}

func flipByte(t *testing.T, path string, pos int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, pos); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x40
	if _, err := f.WriteAt(b, pos); err != nil {
		t.Fatal(err)
	}
}

func mkdir(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

package filelog

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/rlmm-go/rlmm"
)

func TestReopen(t *testing.T) {
	tests := []struct {
		name  string
		opts  Options
		crash bool // abandon the log instead of closing it
	}{
		{"close", Options{}, false},
		{"crash", Options{}, true},
		{"close with rolls and checkpoints", Options{SegmentBytes: 100, JournalBytes: 300}, false},
		{"crash with rolls and checkpoints", Options{SegmentBytes: 100, JournalBytes: 300}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "log")
			opts := tc.opts
			opts.Partitions = 3
			l := mustOpen(t, dir, opts)
			for p := range int32(3) {
				publishRecords(t, l, p, 0, 20+int(p))
			}
			if tc.crash {
				crash(t, l)
			} else {
				mustClose(t, l)
			}
			opts.Partitions = 0 // accept the stored count
			logger, logs := newLogger()
			opts.Logger = logger
			l = mustOpen(t, dir, opts)
			defer mustClose(t, l)
			if l.Partitions() != 3 {
				t.Fatalf("reopened with %d partitions, want 3", l.Partitions())
			}
			if torn := l.TornTails(); len(torn) != 0 {
				t.Fatalf("clean files reported torn tails: %+v", torn)
			}
			// A read from the middle first: after a clean close the records
			// below the checkpoint are indexed only now.
			mid, err := readRecordsFrom(t, l, 2, 7)
			if err != nil || len(mid) != 22-7 || mid[0].Offset != 7 || string(mid[0].Value) != recordValue(2, 7) {
				t.Fatalf("reading partition 2 from offset 7 after reopen: %d records (%v)", len(mid), err)
			}
			for p := range int32(3) {
				checkPartition(t, l, p, 20+int(p))
			}
			// Offsets continue where they stopped, and the whole partition
			// reads back.
			off, err := l.Publish(context.Background(), 1, []byte(recordValue(1, 21)))
			if err != nil || off != 21 {
				t.Fatalf("publish after reopen: offset %d, %v; want 21", off, err)
			}
			checkPartition(t, l, 1, 22)
			if !tc.crash && strings.Contains(logs.String(), "replayed") {
				t.Errorf("a cleanly closed log replayed its journal:\n%s", logs)
			}
		})
	}
}

func TestTornTail(t *testing.T) {
	const n = 10
	tests := []struct {
		name string
		// damage changes the files of a crashed log with n records in
		// partition 1; it returns the records that must survive.
		damage func(t *testing.T, dir string) int
		// wantLogged are substrings the recovery log must contain.
		wantLogged []string
	}{
		{
			name: "garbage after the last segment record",
			damage: func(t *testing.T, dir string) int {
				appendBytes(t, segmentFiles(t, dir, 1)[0], []byte("garbage!"))
				return n
			},
			wantLogged: []string{"torn tail", "partition=1", "offset=10", fmt.Sprintf("byte=%d", n*frameLen)},
		},
		{
			name: "last segment record cut (the journal restores it)",
			damage: func(t *testing.T, dir string) int {
				cut(t, segmentFiles(t, dir, 1)[0], 3)
				return n
			},
			wantLogged: []string{"torn tail", "partition=1", "offset=9", fmt.Sprintf("byte=%d", (n-1)*frameLen), "replayed"},
		},
		{
			name: "zeroed tail of the segment (the journal restores it)",
			damage: func(t *testing.T, dir string) int {
				seg := segmentFiles(t, dir, 1)[0]
				cut(t, seg, 2*frameLen)
				appendBytes(t, seg, make([]byte, 2*frameLen))
				return n
			},
			wantLogged: []string{"torn tail", "partition=1", "offset=8"},
		},
		{
			name: "last record cut from segment and journal (never acknowledged)",
			damage: func(t *testing.T, dir string) int {
				cut(t, segmentFiles(t, dir, 1)[0], 5)
				cut(t, journalFile(t, dir), 5)
				return n - 1
			},
			wantLogged: []string{"partition=1 offset=9", "partition=-1"},
		},
		{
			name: "garbage after the journal",
			damage: func(t *testing.T, dir string) int {
				appendBytes(t, journalFile(t, dir), []byte{1, 2, 3, 4, 5, 6, 7, 8, 9})
				return n
			},
			wantLogged: []string{"torn tail", "partition=-1", "journal-"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "log")
			l := mustOpen(t, dir, Options{Partitions: 2})
			publishRecords(t, l, 0, 0, 3)
			publishRecords(t, l, 1, 0, n)
			crash(t, l)
			survive := tc.damage(t, dir)

			logger, logs := newLogger()
			l = mustOpen(t, dir, Options{Partitions: 2, Logger: logger})
			if len(l.TornTails()) == 0 {
				t.Errorf("no torn tail reported")
			}
			for _, want := range tc.wantLogged {
				if !strings.Contains(logs.String(), want) {
					t.Errorf("recovery log lacks %q:\n%s", want, logs)
				}
			}
			checkPartition(t, l, 0, 3)
			checkPartition(t, l, 1, survive)
			publishRecords(t, l, 1, survive, 1) // the log goes on at the next offset
			mustClose(t, l)

			// The damage is gone: a second open reports nothing.
			l = mustOpen(t, dir, Options{})
			defer mustClose(t, l)
			if torn := l.TornTails(); len(torn) != 0 {
				t.Fatalf("second open still reports torn tails: %+v", torn)
			}
			checkPartition(t, l, 1, survive+1)
		})
	}
}

func TestCorruptionIsAnError(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		// records published to partition 0 before a clean close
		records int
		damage  func(t *testing.T, dir string) (file string, pos int64)
		// atOpen: Open fails; otherwise reading partition 0 fails.
		atOpen bool
	}{
		{
			name:    "checksum of a checkpointed record in the last segment (found when read)",
			records: 10,
			damage: func(t *testing.T, dir string) (string, int64) {
				seg := segmentFiles(t, dir, 0)[0]
				flipByte(t, seg, 4*frameLen+10)
				return seg, 4 * frameLen
			},
		},
		{
			name:    "length of a checkpointed record in the last segment (found when read)",
			records: 10,
			damage: func(t *testing.T, dir string) (string, int64) {
				seg := segmentFiles(t, dir, 0)[0]
				flipByte(t, seg, 2*frameLen+1)
				return seg, 2 * frameLen
			},
		},
		{
			name:    "truncated below the checkpoint",
			records: 10,
			damage: func(t *testing.T, dir string) (string, int64) {
				seg := segmentFiles(t, dir, 0)[0]
				cut(t, seg, frameLen+1)
				return seg, 9*frameLen - 1 // where the file now ends
			},
			atOpen: true,
		},
		{
			name:    "record in an old segment (found when read)",
			opts:    Options{SegmentBytes: 3 * frameLen},
			records: 12,
			damage: func(t *testing.T, dir string) (string, int64) {
				seg := segmentFiles(t, dir, 0)[0]
				flipByte(t, seg, frameLen+12)
				return seg, frameLen
			},
		},
		{
			name:    "old segment shorter than its successor's name says",
			opts:    Options{SegmentBytes: 3 * frameLen},
			records: 12,
			damage: func(t *testing.T, dir string) (string, int64) {
				seg := segmentFiles(t, dir, 0)[1]
				cut(t, seg, frameLen)
				return seg, -1
			},
		},
		{
			name:    "first segment missing",
			opts:    Options{SegmentBytes: 3 * frameLen},
			records: 12,
			damage: func(t *testing.T, dir string) (string, int64) {
				seg := segmentFiles(t, dir, 0)[0]
				if err := os.Remove(seg); err != nil {
					t.Fatal(err)
				}
				return segmentFiles(t, dir, 0)[0], -1
			},
			atOpen: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "log")
			opts := tc.opts
			opts.Partitions = 1
			l := mustOpen(t, dir, opts)
			publishRecords(t, l, 0, 0, tc.records)
			mustClose(t, l)
			file, pos := tc.damage(t, dir)

			l, err := Open(dir, opts)
			if err == nil && !tc.atOpen {
				defer mustClose(t, l)
				_, err = readAllRecords(t, l, 0)
			} else if err == nil {
				mustClose(t, l)
				t.Fatalf("Open of a corrupt log succeeded")
			}
			if !isCorrupt(err) {
				t.Fatalf("got %v, want an error wrapping rlmm.ErrCorrupt", err)
			}
			if !strings.Contains(err.Error(), file) {
				t.Errorf("error %q does not name the file %s", err, file)
			}
			if pos >= 0 && !strings.Contains(err.Error(), fmt.Sprintf("byte %d", pos)) {
				t.Errorf("error %q does not name byte %d", err, pos)
			}
		})
	}
}

func TestJournalCorruptionBeforeItsTail(t *testing.T) {
	// A bad journal frame followed by more bytes than one batch can leave
	// unsynced is not a torn write.
	old := maxBatchBytes
	maxBatchBytes = 1024
	t.Cleanup(func() { maxBatchBytes = old })
	dir := filepath.Join(t.TempDir(), "log")
	l := mustOpen(t, dir, Options{Partitions: 1})
	big := strings.Repeat("x", 100<<10)
	for range 12 {
		publishValues(t, l, 0, big)
	}
	crash(t, l)
	j := journalFile(t, dir)
	hdr := int64(len(appendJournalHeader(nil, journalHeader{Checkpoint: make([]int64, 1)})))
	flipByte(t, j, hdr+20)
	_, err := Open(dir, Options{})
	if !isCorrupt(err) || !strings.Contains(err.Error(), j) || !strings.Contains(err.Error(), fmt.Sprintf("byte %d", hdr)) {
		t.Fatalf("got %v, want rlmm.ErrCorrupt naming %s byte %d", err, j, hdr)
	}
}

func TestOpenErrors(t *testing.T) {
	tests := []struct {
		name    string
		setup   func(t *testing.T, dir string) // dir does not exist before
		opts    Options
		wantIs  []error
		wantMsg []string
	}{
		{
			name:    "partition count mismatch",
			setup:   func(t *testing.T, dir string) { mustClose(t, mustOpen(t, dir, Options{Partitions: 4})) },
			opts:    Options{Partitions: 8},
			wantIs:  []error{rlmm.ErrInvalidArgument},
			wantMsg: []string{"4 partitions", "8 were asked"},
		},
		{
			name:    "missing directory without a partition count",
			setup:   func(*testing.T, string) {},
			wantIs:  []error{fs.ErrNotExist},
			wantMsg: []string{"does not exist"},
		},
		{
			name:    "missing directory read-only",
			setup:   func(*testing.T, string) {},
			opts:    Options{Partitions: 2, ReadOnly: true},
			wantIs:  []error{fs.ErrNotExist},
			wantMsg: []string{"does not exist"},
		},
		{
			name:    "empty directory without a partition count",
			setup:   func(t *testing.T, dir string) { mkdir(t, dir) },
			wantIs:  []error{fs.ErrNotExist},
			wantMsg: []string{"empty"},
		},
		{
			name: "not an rlmm log",
			setup: func(t *testing.T, dir string) {
				mkdir(t, dir)
				writeFile(t, filepath.Join(dir, "notes.txt"), "hello")
			},
			opts:    Options{Partitions: 2},
			wantIs:  []error{rlmm.ErrInvalidArgument},
			wantMsg: []string{"not an rlmm log", "notes.txt"},
		},
		{
			name:    "a file, not a directory",
			setup:   func(t *testing.T, dir string) { writeFile(t, dir, "x") },
			opts:    Options{Partitions: 2},
			wantIs:  []error{rlmm.ErrInvalidArgument},
			wantMsg: []string{"not a directory"},
		},
		{
			name: "garbage manifest",
			setup: func(t *testing.T, dir string) {
				mkdir(t, dir)
				writeFile(t, filepath.Join(dir, manifestName), "{not json")
			},
			wantIs:  []error{rlmm.ErrCorrupt},
			wantMsg: []string{manifestName},
		},
		{
			name: "future format version",
			setup: func(t *testing.T, dir string) {
				mkdir(t, dir)
				writeFile(t, filepath.Join(dir, manifestName), `{"format":"rlmm-filelog","version":9,"partitions":2}`)
			},
			wantIs:  []error{rlmm.ErrCorrupt},
			wantMsg: []string{"version 9"},
		},
		{
			name: "an id that is not a uuid",
			setup: func(t *testing.T, dir string) {
				mkdir(t, dir)
				writeFile(t, filepath.Join(dir, manifestName), `{"format":"rlmm-filelog","version":1,"partitions":2,"id":"short"}`)
			},
			wantIs:  []error{rlmm.ErrCorrupt},
			wantMsg: []string{manifestName, "short"},
		},
		{
			name:   "negative partition count",
			setup:  func(*testing.T, string) {},
			opts:   Options{Partitions: -1},
			wantIs: []error{rlmm.ErrInvalidArgument},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "log")
			tc.setup(t, dir)
			l, err := Open(dir, tc.opts)
			if err == nil {
				mustClose(t, l)
				t.Fatalf("Open succeeded, want an error")
			}
			for _, target := range tc.wantIs {
				if !errors.Is(err, target) {
					t.Errorf("error %q does not wrap %v", err, target)
				}
			}
			for _, msg := range tc.wantMsg {
				if !strings.Contains(err.Error(), msg) {
					t.Errorf("error %q does not say %q", err, msg)
				}
			}
		})
	}
}

// TestIDKeptAcrossOpens: the id written at creation is the log's for good
// (read-only opens too); a directory made anew gets another; a manifest
// from before logs had ids gives the zero id.
func TestIDKeptAcrossOpens(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "log")
	l := mustOpen(t, dir, Options{Partitions: 2})
	id := l.ID()
	publishRecords(t, l, 0, 0, 3)
	mustClose(t, l)
	for _, opts := range []Options{{Partitions: 2}, {}, {ReadOnly: true}} {
		l = mustOpen(t, dir, opts)
		if got := l.ID(); got != id {
			t.Errorf("reopened with %+v: ID %s, want %s", opts, got, id)
		}
		mustClose(t, l)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	l = mustOpen(t, dir, Options{Partitions: 2})
	if got := l.ID(); got == id || got == rlmm.ZeroUuid {
		t.Errorf("a log created again in the same directory has ID %s (the old one was %s)", got, id)
	}
	mustClose(t, l)

	old := filepath.Join(t.TempDir(), "old")
	mkdir(t, old)
	writeFile(t, filepath.Join(old, manifestName), fmt.Sprintf(`{"format":%q,"version":%d,"partitions":1}`, formatName, formatVersion))
	l = mustOpen(t, old, Options{})
	if got := l.ID(); got != rlmm.ZeroUuid {
		t.Errorf("a log whose manifest has no id: ID %s, want the zero id", got)
	}
	mustClose(t, l)
}

func TestSecondOpenerFails(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "log")
	l := mustOpen(t, dir, Options{Partitions: 2})
	publishRecords(t, l, 0, 0, 2)
	_, err := Open(dir, Options{Partitions: 2})
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), fmt.Sprintf("pid %d", os.Getpid())) {
		t.Fatalf("second Open: got %v, want ErrLocked naming pid %d", err, os.Getpid())
	}
	// A read-only opener is let in while the writer holds the lock.
	ro := mustOpen(t, dir, Options{ReadOnly: true})
	checkPartition(t, ro, 0, 2)
	mustClose(t, ro)
	mustClose(t, l)
	// Once the holder closes, the directory opens again.
	mustClose(t, mustOpen(t, dir, Options{Partitions: 2}))
}

func TestReadOnly(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "log")
	l := mustOpen(t, dir, Options{Partitions: 2})
	publishRecords(t, l, 0, 0, 5)
	publishRecords(t, l, 1, 0, 6)
	crash(t, l)
	seg := segmentFiles(t, dir, 1)[0]
	cut(t, seg, 3) // torn: offset 5 exists only in the journal now
	appendBytes(t, seg, []byte("junk"))
	sizes := map[string]int64{seg: fileSize(t, seg), journalFile(t, dir): fileSize(t, journalFile(t, dir))}

	ro := mustOpen(t, dir, Options{ReadOnly: true})
	torn := ro.TornTails()
	if len(torn) != 1 || torn[0].Partition != 1 || torn[0].Offset != 5 || torn[0].File != seg {
		t.Fatalf("torn tails %+v, want one in %s at partition 1 offset 5", torn, seg)
	}
	checkPartition(t, ro, 0, 5)
	checkPartition(t, ro, 1, 6) // offset 5 from the journal
	if _, err := ro.Publish(context.Background(), 0, []byte("x")); !errors.Is(err, rlmm.ErrInvalidArgument) {
		t.Errorf("Publish to a read-only log: got %v, want rlmm.ErrInvalidArgument", err)
	}
	mustClose(t, ro)
	for path, size := range sizes {
		if got := fileSize(t, path); got != size {
			t.Errorf("read-only open changed %s from %d to %d bytes", path, size, got)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, lockName)); err != nil {
		t.Errorf("lock file of the writer: %v", err)
	}
}

func TestPublishArguments(t *testing.T) {
	l := mustOpen(t, filepath.Join(t.TempDir(), "log"), Options{Partitions: 1})
	defer mustClose(t, l)
	if _, err := l.Publish(context.Background(), 0, make([]byte, MaxRecordBytes+1)); !errors.Is(err, rlmm.ErrInvalidArgument) {
		t.Errorf("oversized value: got %v, want rlmm.ErrInvalidArgument", err)
	}
	if _, err := l.Publish(context.Background(), 0, make([]byte, MaxRecordBytes)); err != nil {
		t.Errorf("value of exactly MaxRecordBytes: %v", err)
	}
}

func TestReadOnlyWhileWriting(t *testing.T) {
	// rlmm inspect opens a live log: every read-only open sees a dense,
	// correct prefix of what the writer publishes, across its rolls and
	// checkpoints.
	dir := filepath.Join(t.TempDir(), "log")
	l := mustOpen(t, dir, Options{Partitions: 1, SegmentBytes: 10 * frameLen, JournalBytes: 30 * frameLen})
	defer mustClose(t, l)
	stop := make(chan struct{})
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := l.Publish(context.Background(), 0, []byte(recordValue(0, i))); err != nil {
				t.Errorf("Publish: %v", err)
				return
			}
		}
	}()
	defer func() { close(stop); <-writerDone }()
	for range 20 {
		ro, err := Open(dir, Options{ReadOnly: true})
		if err != nil {
			t.Fatalf("read-only open of a live log: %v", err)
		}
		recs, err := readAllRecords(t, ro, 0)
		mustClose(t, ro)
		if err != nil {
			t.Fatalf("reading a live log read-only: %v", err)
		}
		if got, want := values(t, recs), wantValues(0, len(recs)); !slices.Equal(got, want) {
			t.Fatalf("read-only view of %d records differs from what was published", len(recs))
		}
	}
}

func TestFrameCRCIsCRC32COfSaltLengthPayload(t *testing.T) {
	tests := []struct {
		salt    uint64
		payload string
	}{
		{0, ""},
		{1, "a"},
		{1 << 40, "hello world"},
		{^uint64(0), strings.Repeat("z", 1000)},
	}
	for _, tc := range tests {
		var whole []byte
		whole = binary.LittleEndian.AppendUint64(whole, tc.salt)
		whole = binary.LittleEndian.AppendUint32(whole, uint32(len(tc.payload)))
		whole = append(whole, tc.payload...)
		if got, want := frameCRC(tc.salt, []byte(tc.payload)), crc32.Checksum(whole, crc32.MakeTable(crc32.Castagnoli)); got != want {
			t.Errorf("frameCRC(%d, %d bytes) = %08x, want CRC32C %08x", tc.salt, len(tc.payload), got, want)
		}
	}
}

func TestStatsCountGroupCommits(t *testing.T) {
	l := mustOpen(t, filepath.Join(t.TempDir(), "log"), Options{Partitions: 2})
	defer mustClose(t, l)
	publishRecords(t, l, 0, 0, 5) // one at a time: one fsync each
	if st := l.Stats(); st.Records != 5 || st.Syncs != 5 {
		t.Fatalf("after 5 sequential publishes: %+v, want 5 records in 5 syncs", st)
	}
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() { publishValues(t, l, 1, fmt.Sprint(g)) })
	}
	wg.Wait()
	if st := l.Stats(); st.Records != 21 || st.Syncs < 6 || st.Syncs > 21 {
		t.Fatalf("after 16 more concurrent publishes: %+v, want 21 records in 6 to 21 syncs", st)
	}
}

func TestWriteFailureStopsPublishing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "log")
	l := mustOpen(t, dir, Options{Partitions: 1})
	publishValues(t, l, 0, "a")
	l.journal.Close() // the next journal write fails, as on a dying disk
	ctx := context.Background()
	if _, err := l.Publish(ctx, 0, []byte("b")); err == nil {
		t.Fatalf("Publish succeeded although the journal write failed")
	}
	_, err := l.Publish(ctx, 0, []byte("c"))
	if err == nil || !strings.Contains(err.Error(), "refuses further publishes") {
		t.Fatalf("Publish after a failed write: got %v, want the failure repeated", err)
	}
	l.Close() // reports the already closed journal; the lock is released anyway
	// Reopening recovers: "a" is there; "b" reached its segment but not the
	// journal, so it may or may not be (its Publish failed either way).
	l = mustOpen(t, dir, Options{})
	defer mustClose(t, l)
	recs, err := readAllRecords(t, l, 0)
	if err != nil || len(recs) == 0 || string(recs[0].Value) != "a" || len(recs) > 2 {
		t.Fatalf("after reopening: %d records (%v), want \"a\" and at most \"b\"", len(recs), err)
	}
	if _, err := l.Publish(ctx, 0, []byte("d")); err != nil {
		t.Fatalf("Publish after reopening: %v", err)
	}
}

package topicbased

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/memory"
)

// decodeSnapshot checks and decodes a whole file held in memory into a
// snapshot (the states own their memory). Every failure wraps
// rlmm.ErrCorrupt and says what was wrong.
func decodeSnapshot(file []byte) (*snapshot, error) {
	return decodeSnapshotFrom(file, true)
}

// decodeSnapshotFrom is decodeSnapshot, checking the checksums only when
// verify is set (the fuzz target clears it to reach the decoders).
func decodeSnapshotFrom(file []byte, verify bool) (*snapshot, error) {
	f, err := openSnapshot(bytes.NewReader(file), int64(len(file)), verify)
	if err != nil {
		return nil, err
	}
	f.s.states = make([]memory.PartitionState, len(f.blocks))
	var buf []byte
	for i := range f.blocks {
		if buf, err = f.readBlock(i, buf, verify); err != nil {
			return nil, err
		}
		c := &stateCollector{ps: &f.s.states[i]}
		if err := decodeBlock(buf, f.blocks[i].off, f.blocks[i].expect(c.start)); err != nil {
			return nil, err
		}
	}
	return f.s, nil
}

// stateCollector is a stateSink that fills a memory.PartitionState with
// copies, checking only what a snapshot can be refused for without the
// cache's rules (Validate; Import checks the rest).
type stateCollector struct {
	ps *memory.PartitionState
}

func (c *stateCollector) start(tp rlmm.TopicIDPartition, z memory.BuildSizes) (stateSink, error) {
	c.ps.TopicIDPartition = tp
	if z.Segments > 0 {
		c.ps.Segments = make([]rlmm.SegmentMetadata, 0, z.Segments)
	}
	return c, nil
}

func (c *stateCollector) AddSegment(md *rlmm.SegmentMetadata) error {
	if err := md.Validate(); err != nil {
		return fmt.Errorf("segment %s: %w", md.ID, err)
	}
	c.ps.Segments = append(c.ps.Segments, md.Clone())
	return nil
}

func (c *stateCollector) AddHighestOffset(epoch int32, offset int64) error {
	c.ps.HighestOffsets = append(c.ps.HighestOffsets, memory.EpochOffset{Epoch: epoch, Offset: offset})
	return nil
}

func (c *stateCollector) SetDelete(d *rlmm.PartitionDelete) error {
	if err := d.Validate(); err != nil {
		return fmt.Errorf("partition %s: %w", d.TopicIDPartition, err)
	}
	dd := *d
	c.ps.Delete = &dd
	return nil
}

func sampleSnapshot(t testing.TB) *snapshot {
	tp := topicPartition("snap", 3, 7)
	a := segment(tp, 1, 0, 100, 0, 0, 1, 20, 2, 80)
	a.CustomMetadata = []byte{}
	a.TxnIndexEmpty = false
	b := finished(t, segment(tp, 2, 101, 200, 2, 101))
	b.CustomMetadata = []byte("plugin data")
	c := segment(tp, 3, -0, 0)
	c.MaxTimestampMs, c.EventTimestampMs, c.BrokerID, c.SizeInBytes = -1, 1<<62, -7, 1<<31-1
	return &snapshot{
		partitions: 4,
		committed:  []int64{-1, 0, 1 << 40, 12},
		states: []memory.PartitionState{
			{TopicIDPartition: tp, Segments: []rlmm.SegmentMetadata{a, b, c},
				HighestOffsets: []memory.EpochOffset{{Epoch: 0, Offset: 19}, {Epoch: 2, Offset: 200}},
				Delete:         &rlmm.PartitionDelete{TopicIDPartition: tp, State: rlmm.DeletePartitionStarted, EventTimestampMs: 5, BrokerID: 3}},
			{TopicIDPartition: topicPartition("empty-but-deleted", 4, 0)},
		},
	}
}

func TestSnapshotRoundTrip(t *testing.T) {
	s := sampleSnapshot(t)
	got, err := decodeSnapshot(encodeSnapshot(s))
	must(t, err)
	if !reflect.DeepEqual(got, s) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, s)
	}
	// Absent and empty custom metadata stay apart.
	if got.states[0].Segments[0].CustomMetadata == nil || got.states[0].Segments[2].CustomMetadata != nil {
		t.Error("custom metadata absent/empty not preserved")
	}
}

// Every single-byte change and every truncation is detected.
func TestSnapshotDamageIsDetected(t *testing.T) {
	good := encodeSnapshot(sampleSnapshot(t))
	for i := range good {
		b := bytes.Clone(good)
		b[i] ^= 0x5a
		if _, err := decodeSnapshot(b); !errors.Is(err, rlmm.ErrCorrupt) {
			t.Fatalf("byte %d changed: %v; want ErrCorrupt", i, err)
		}
	}
	for n := range len(good) {
		if _, err := decodeSnapshot(good[:n]); !errors.Is(err, rlmm.ErrCorrupt) {
			t.Fatalf("truncated to %d bytes: %v; want ErrCorrupt", n, err)
		}
	}
}

// Payloads with a valid checksum but invalid content are refused too.
func TestSnapshotInvalidContent(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(s *snapshot)
	}{
		{"committed below -1", func(s *snapshot) { s.committed[1] = -2 }},
		{"segment fails Validate", func(s *snapshot) { s.states[0].Segments[0].EndOffset = -5 }},
		{"segment without epochs", func(s *snapshot) { s.states[0].Segments[1].LeaderEpochs = nil }},
		{"undefined segment state", func(s *snapshot) { s.states[0].Segments[1].State = 9 }},
		{"undefined delete state", func(s *snapshot) { s.states[0].Delete.State = 7 }},
		{"zero partitions", func(s *snapshot) { s.partitions = 0; s.committed = nil }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := sampleSnapshot(t)
			c.mutate(s)
			if _, err := decodeSnapshot(encodeSnapshot(s)); !errors.Is(err, rlmm.ErrCorrupt) {
				t.Errorf("decode: %v; want ErrCorrupt", err)
			}
		})
	}
}

// A state of a metadata partition whose committed offset is -1 makes the
// snapshot inconsistent: Start ignores it.
func TestSnapshotInconsistentCommittedIsIgnored(t *testing.T) {
	dir := t.TempDir()
	tp := topicPartition("foo", 1, 0)
	l := newLog(t, 3)
	s := &snapshot{partitions: 3, committed: []int64{-1, -1, -1},
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

// FuzzDecodeSnapshot feeds arbitrary files to the decoder with the
// checksums ignored, so the fuzzer reaches the head and block decoders: it
// must never panic, fail only with ErrCorrupt, and what it accepts must
// survive a re-encoding unchanged.
func FuzzDecodeSnapshot(f *testing.F) {
	f.Add(encodeSnapshot(sampleSnapshot(f)))
	f.Add(encodeSnapshot(&snapshot{partitions: 1, committed: []int64{0},
		states: []memory.PartitionState{{TopicIDPartition: topicPartition("f", 1, 0)}}}))
	f.Fuzz(func(t *testing.T, file []byte) {
		s, err := decodeSnapshotFrom(file, false)
		if err != nil {
			if !errors.Is(err, rlmm.ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		again, err := decodeSnapshot(encodeSnapshot(s))
		if err != nil || !reflect.DeepEqual(again, s) {
			t.Fatalf("re-encoded snapshot decodes to %+v, %v; want %+v", again, err, s)
		}
	})
}

// TestSnapshotLoadEqualsImport loads a snapshot of many partitions (built
// on several goroutines, each decoding its segments into one reused
// rlmm.SegmentMetadata) whose segments vary in every optional part, and
// checks that the cache holds exactly what importing the same states
// directly gives: nothing of a segment decoded earlier into the same value
// leaks into a later one.
func TestSnapshotLoadEqualsImport(t *testing.T) {
	const parts, perPartition = 120, 50
	s := &snapshot{partitions: 4, committed: []int64{0, 0, 0, 0}}
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
	got, exp := m.inner.Export(nil), want.Export(nil)
	if len(got) != parts || !reflect.DeepEqual(got, exp) {
		t.Fatalf("loaded %d partitions, differing from a direct import of %d", len(got), len(exp))
	}
}

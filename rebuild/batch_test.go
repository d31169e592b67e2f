package rebuild

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/rlmm-go/rlmm"
)

func concat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

func TestReadLogSummary(t *testing.T) {
	b1 := v2Batch(100, 9, 3, 5000, 40)
	b2 := v2Batch(110, 0, 3, 4000, 10)
	b3 := v2Batch(111, 88, 4, 7000, 300)
	good := concat(b1, b2, b3)
	cases := []struct {
		name string
		file []byte
		want LogSummary
		// errAt, when not empty, is what the error must say (file and byte).
		errAt string
	}{
		{name: "three batches, two epochs", file: good, want: LogSummary{FirstOffset: 100, LastOffset: 199, MaxTimestampMs: 7000, Batches: 3,
			Epochs: []rlmm.EpochStart{{Epoch: 3, StartOffset: 100}, {Epoch: 4, StartOffset: 111}}}},
		{name: "one batch of one record", file: v2Batch(0, 0, 0, -1, 0), want: LogSummary{FirstOffset: 0, LastOffset: 0, MaxTimestampMs: -1, Batches: 1,
			Epochs: []rlmm.EpochStart{{Epoch: 0, StartOffset: 0}}}},
		{name: "no epoch", file: v2Batch(5, 1, -1, 9, 3), want: LogSummary{FirstOffset: 5, LastOffset: 6, MaxTimestampMs: 9, Batches: 1}},
		{name: "magic 1 messages", file: concat(v1Message(7, 70, 5), v1Message(8, 60, 0)),
			want: LogSummary{FirstOffset: 7, LastOffset: 8, MaxTimestampMs: 70, Batches: 2, OldFormat: true}},
		{name: "empty", file: nil, errAt: "empty log file"},
		{name: "truncated header", file: concat(b1, b2[:7]), errAt: "byte 101: truncated batch header"},
		{name: "truncated batch", file: concat(b1, b2[:len(b2)-1]), errAt: "byte 101: truncated batch"},
		{name: "truncated in the v2 header", file: good[:30], errAt: "byte 0: truncated batch"},
		{name: "zero length", file: make([]byte, 64), errAt: "byte 0: batch length 0"},
		{name: "negative length", file: concat(b1[:8], []byte{0xff, 0xff, 0xff, 0xff}, b1[12:]), errAt: "byte 0: batch length -1"},
		{name: "short v2 batch", file: func() []byte {
			b := v1Message(0, 1, 0)
			b[magicAt] = 2
			return b
		}(), errAt: "byte 0: batch length 22 is below a magic 2 header"},
		{name: "unknown magic", file: func() []byte { b := slices.Clone(b1); b[magicAt] = 3; return b }(), errAt: "byte 0: unknown magic 3"},
		{name: "negative delta", file: func() []byte { b := v2Batch(0, -2, 0, 0, 0); return b }(), errAt: "byte 0: last offset delta -2"},
		{name: "offsets go back", file: concat(b1, v2Batch(105, 0, 3, 1, 0)), errAt: "byte 101: batch at offset 105 after one that ended at offset 109"},
		{name: "negative base", file: v2Batch(-1, 0, 0, 0, 0), errAt: "byte 0: negative base offset"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ReadLogSummary(bytes.NewReader(c.file), int64(len(c.file)), "seg.log")
			if c.errAt != "" {
				if err == nil || !errors.Is(err, rlmm.ErrCorrupt) || !strings.Contains(err.Error(), "seg.log: ") || !strings.Contains(err.Error(), c.errAt) {
					t.Fatalf("error %v, want an ErrCorrupt naming seg.log and %q", err, c.errAt)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.FirstOffset != c.want.FirstOffset || got.LastOffset != c.want.LastOffset || got.MaxTimestampMs != c.want.MaxTimestampMs ||
				got.Batches != c.want.Batches || got.OldFormat != c.want.OldFormat || !slices.Equal(got.Epochs, c.want.Epochs) {
				t.Fatalf("got %+v, want %+v", got, c.want)
			}
		})
	}
}

// A read error is returned with the file and byte, not taken for the end.
func TestReadLogSummaryReadError(t *testing.T) {
	file := concat(v2Batch(0, 0, 0, 1, 0), v2Batch(1, 0, 0, 1, 0))
	_, err := ReadLogSummary(failingReader{bytes.NewReader(file), 61}, int64(len(file)), "x.log")
	if err == nil || !strings.Contains(err.Error(), "x.log: byte 61: reading a batch header") || !errors.Is(err, errDisk) {
		t.Fatalf("error %v", err)
	}
}

var errDisk = errors.New("disk on fire")

type failingReader struct {
	r  *bytes.Reader
	at int64
}

func (f failingReader) ReadAt(p []byte, off int64) (int, error) {
	if off >= f.at {
		return 0, errDisk
	}
	return f.r.ReadAt(p, off)
}

// The summary of a generated segment is what generated it.
func TestReadLogSummarySegment(t *testing.T) {
	epochs := []rlmm.EpochStart{{Epoch: 2, StartOffset: 1000}, {Epoch: 5, StartOffset: 1400}, {Epoch: 6, StartOffset: 1999}}
	file, maxTs := segmentLog(1000, 1999, epochs, 64, 1_700_000_000_000)
	got, err := ReadLogSummary(bytes.NewReader(file), int64(len(file)), "s.log")
	if err != nil {
		t.Fatal(err)
	}
	if got.FirstOffset != 1000 || got.LastOffset != 1999 || got.MaxTimestampMs != maxTs || !slices.Equal(got.Epochs, epochs) {
		t.Fatalf("got %+v; want 1000..1999, max timestamp %d, epochs %v", got, maxTs, epochs)
	}
}

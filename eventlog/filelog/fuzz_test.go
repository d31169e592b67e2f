package filelog

import (
	"bytes"
	"errors"
	"testing"

	"github.com/rlmm-go/rlmm"
)

// FuzzReadSegment feeds arbitrary bytes to the segment and journal decoders:
// they never panic, every failure wraps rlmm.ErrCorrupt, and the good prefix
// they accept re-encodes to the same bytes.
func FuzzReadSegment(f *testing.F) {
	var seg []byte
	for i, v := range []string{"a", "", "hello world", string(make([]byte, 300))} {
		seg = appendFrame(seg, uint64(7+i), []byte(v))
	}
	f.Add(seg, int64(7))
	f.Add(seg[:len(seg)-3], int64(7))
	f.Add(seg, int64(8))
	f.Add([]byte{0xff, 0xff, 0xff, 0x7f, 0, 0, 0, 0}, int64(0))
	f.Add(make([]byte, 40), int64(0))
	jr := appendJournalHeader(nil, journalHeader{Seq: 3, Checkpoint: []int64{1, 2, 3, 4}})
	jr = appendJournalRecord(jr, 3, 2, 3, []byte("value"))
	f.Add(jr, int64(3))

	f.Fuzz(func(t *testing.T, data []byte, base int64) {
		if base < 0 {
			base = -base
		}
		var re []byte
		count, end, err := scanSegment(data, base, func(off, pos int64, v []byte) {
			if pos != int64(len(re)) {
				t.Fatalf("record %d reported at byte %d, want %d", off, pos, len(re))
			}
			re = appendFrame(re, uint64(off), v)
		})
		if err != nil && !errors.Is(err, rlmm.ErrCorrupt) {
			t.Fatalf("scanSegment error %v does not wrap rlmm.ErrCorrupt", err)
		}
		if err == nil && end != int64(len(data)) {
			t.Fatalf("no error but stopped at byte %d of %d", end, len(data))
		}
		if end < 0 || end > int64(len(data)) || !bytes.Equal(re, data[:end]) {
			t.Fatalf("%d records up to byte %d do not re-encode to the input prefix", count, end)
		}
		h, recs, jend, err := readJournal(data, uint64(base), 4)
		if err != nil && !errors.Is(err, rlmm.ErrCorrupt) {
			t.Fatalf("readJournal error %v does not wrap rlmm.ErrCorrupt", err)
		}
		if jend < 0 || jend > int64(len(data)) {
			t.Fatalf("readJournal stopped at byte %d of %d", jend, len(data))
		}
		for _, r := range recs {
			if r.partition < 0 || r.partition >= 4 || r.offset < 0 {
				t.Fatalf("readJournal accepted partition %d offset %d", r.partition, r.offset)
			}
		}
		if len(recs) > 0 && len(h.Checkpoint) != 4 {
			t.Fatalf("records without a valid header")
		}
		if m, err := decodeManifest("fuzz", data); err == nil && (m.Partitions < 1 || m.Partitions > maxPartitions) {
			t.Fatalf("manifest with %d partitions accepted", m.Partitions)
		} else if err != nil && !errors.Is(err, rlmm.ErrCorrupt) {
			t.Fatalf("decodeManifest error %v does not wrap rlmm.ErrCorrupt", err)
		}
	})
}

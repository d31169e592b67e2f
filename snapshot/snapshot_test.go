package snapshot

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"reflect"
	"strings"
	"testing"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/memory"
)

// encoders are the two layouts written, by their version.
var encoders = []struct {
	version uint16
	encode  func(testing.TB, *file) []byte
}{{Version, encode}, {VersionHeadFirst, encodeV3}}

func TestRoundTrip(t *testing.T) {
	for _, e := range encoders {
		t.Run(fmt.Sprintf("version%d", e.version), func(t *testing.T) {
			s := sample()
			data := e.encode(t, s)
			got, err := decode(data)
			must(t, err)
			if !reflect.DeepEqual(got, s) {
				t.Fatalf("round trip:\n got %+v\nwant %+v", got, s)
			}
			// Absent and empty custom metadata stay apart.
			if got.states[0].Segments[0].CustomMetadata == nil || got.states[0].Segments[2].CustomMetadata != nil {
				t.Error("custom metadata absent/empty not preserved")
			}
			r, err := Open(bytes.NewReader(data), int64(len(data)))
			must(t, err)
			if r.Version() != e.version {
				t.Errorf("Version() = %d, want %d", r.Version(), e.version)
			}
		})
	}
}

// Every single-byte change and every truncation is detected, in both
// layouts.
func TestDamageIsDetected(t *testing.T) {
	for _, e := range encoders {
		t.Run(fmt.Sprintf("version%d", e.version), func(t *testing.T) {
			good := e.encode(t, sample())
			for i := range good {
				b := bytes.Clone(good)
				b[i] ^= 0x5a
				if _, err := decode(b); !errors.Is(err, rlmm.ErrCorrupt) {
					t.Fatalf("byte %d changed: %v; want ErrCorrupt", i, err)
				}
			}
			for n := range len(good) {
				if _, err := decode(good[:n]); !errors.Is(err, rlmm.ErrCorrupt) {
					t.Fatalf("truncated to %d bytes: %v; want ErrCorrupt", n, err)
				}
			}
		})
	}
}

// Payloads with a valid checksum but invalid content are refused too.
func TestInvalidContent(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(s *file)
	}{
		{"segment fails Validate", func(s *file) { s.states[0].Segments[0].EndOffset = -5 }},
		{"segment without epochs", func(s *file) { s.states[0].Segments[1].LeaderEpochs = nil }},
		{"undefined segment state", func(s *file) { s.states[0].Segments[1].State = 9 }},
		{"undefined delete state", func(s *file) { s.states[0].Delete.State = 7 }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := sample()
			c.mutate(s)
			for _, e := range encoders {
				if _, err := decode(e.encode(t, s)); !errors.Is(err, rlmm.ErrCorrupt) {
					t.Errorf("decode of version %d: %v; want ErrCorrupt", e.version, err)
				}
			}
		})
	}
}

// The version 3 writer refuses what the format cannot say, and what a
// reader would refuse (committed offsets below -1, no metadata partition).
func TestWriterV3RefusesInvalidHeads(t *testing.T) {
	tp := topicPartition("w", 1, 0)
	cases := []struct {
		name string
		head Head
		tps  []rlmm.TopicIDPartition
	}{
		{"committed below -1", Head{Partitions: 2, Committed: []int64{0, -2}}, nil},
		{"zero partitions", Head{}, nil},
		{"count and offsets differ", Head{Partitions: 3, Committed: []int64{0}}, nil},
		{"partition twice", Head{Partitions: 1, Committed: []int64{0}}, []rlmm.TopicIDPartition{tp, tp}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := NewWriterV3(&memFile{}, c.head, c.tps); !errors.Is(err, rlmm.ErrInvalidArgument) {
				t.Errorf("NewWriterV3: %v; want ErrInvalidArgument", err)
			}
		})
	}
	w, err := NewWriterV3(&memFile{}, Head{Partitions: 1, Committed: []int64{0}}, []rlmm.TopicIDPartition{tp})
	must(t, err)
	if _, err := w.Finish(); !errors.Is(err, rlmm.ErrInvalidArgument) {
		t.Errorf("Finish before every block: %v; want ErrInvalidArgument", err)
	}
	w, err = NewWriterV3(&memFile{}, Head{Partitions: 1, Committed: []int64{0}}, []rlmm.TopicIDPartition{tp})
	must(t, err)
	if err := w.WriteBlock(&memory.PartitionState{TopicIDPartition: topicPartition("other", 2, 0)}); !errors.Is(err, rlmm.ErrInvalidArgument) {
		t.Errorf("block of another partition: %v; want ErrInvalidArgument", err)
	}
}

// Version 3 heads whose checksum holds but whose content is invalid are
// refused.
func TestInvalidHead(t *testing.T) {
	cases := []struct {
		name string
		head []byte
	}{
		{"committed below -1", binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint32(logID(), 1), uint64(1<<64-2)), 0)},
		{"zero partitions", binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(logID(), 0), 0)},
		{"trailing bytes", append(binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint32(logID(), 1), 0), 0), 7)},
		{"a block past the end", append(binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint32(logID(), 1), 0), 1),
			encodeIndexEntry(1000, 0, topicPartition("t", 1, 0))...)},
		{"a log id cut short", logID()[:9]},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := openHead(c.head); !errors.Is(err, rlmm.ErrCorrupt) {
				t.Errorf("Open: %v; want ErrCorrupt", err)
			}
		})
	}
	// The smallest valid head, to show that the cases above fail for what
	// they name and not for a missing field.
	if _, err := openHead(binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint32(logID(), 1), 0), 0)); err != nil {
		t.Errorf("Open of a valid head: %v", err)
	}
}

// logID returns the head's first field, a log id.
func logID() []byte { u := uuidN(9); return u[:] }

// A version 2 file (no log id in the head, as topicbased wrote before
// version 3) reads with every block; its log id is the zero one.
func TestVersion2Reads(t *testing.T) {
	s := sample()
	v3 := encodeV3(t, s)
	headLen := binary.LittleEndian.Uint64(v3[14:22])
	v2 := append(bytes.Clone(v3[:HeadFirstHeaderSize]), v3[HeadFirstHeaderSize+16:]...)
	binary.LittleEndian.PutUint16(v2[8:], VersionWithoutLogID)
	binary.LittleEndian.PutUint64(v2[14:], headLen-16)
	binary.LittleEndian.PutUint32(v2[10:], crc32.Checksum(v2[HeadFirstHeaderSize:HeadFirstHeaderSize+headLen-16], crcTable))
	got, err := decode(v2)
	must(t, err)
	s.head.LogID = rlmm.ZeroUuid
	if !reflect.DeepEqual(got, s) {
		t.Fatalf("version 2 file:\n got %+v\nwant %+v", got, s)
	}
	r, err := Open(bytes.NewReader(v2), int64(len(v2)))
	must(t, err)
	if r.Version() != VersionWithoutLogID {
		t.Errorf("Version() = %d, want %d", r.Version(), VersionWithoutLogID)
	}
	v2[8] = 5 // an unknown version is refused by its number
	if _, err := Open(bytes.NewReader(v2), int64(len(v2))); !errors.Is(err, rlmm.ErrCorrupt) || !strings.Contains(err.Error(), "version 5") {
		t.Errorf("version 5: %v; want ErrCorrupt naming the version", err)
	}
}

// encodeIndexEntry returns one entry of the head's block index.
func encodeIndexEntry(length uint64, segments uint32, tp rlmm.TopicIDPartition) []byte {
	b := binary.LittleEndian.AppendUint64(nil, length)
	b = binary.LittleEndian.AppendUint32(b, 0)
	b = binary.LittleEndian.AppendUint32(b, segments)
	return appendTP(b, tp)
}

// openHead wraps a version 3 head's bytes in a valid header (checksum and
// length right) and opens the result, which has no blocks beyond what the
// head names.
func openHead(head []byte) (*Reader, error) {
	file := make([]byte, HeadFirstHeaderSize, HeadFirstHeaderSize+len(head))
	copy(file, Magic)
	binary.LittleEndian.PutUint16(file[8:], VersionHeadFirst)
	binary.LittleEndian.PutUint32(file[10:], crc32.Checksum(head, crcTable))
	binary.LittleEndian.PutUint64(file[14:], uint64(len(head)))
	file = append(file, head...)
	return Open(bytes.NewReader(file), int64(len(file)))
}

// ForEachBlock stops taking blocks once its context ends.
func TestForEachBlockStopsWithItsContext(t *testing.T) {
	s := sample()
	data := encode(t, s)
	r, err := Open(bytes.NewReader(data), int64(len(data)))
	must(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	err = r.ForEachBlock(ctx, 1, func(int, []byte, error) { calls++; cancel() })
	if !errors.Is(err, context.Canceled) || calls != 1 {
		t.Errorf("ForEachBlock: %v after %d calls; want context.Canceled after 1", err, calls)
	}
}

// FuzzReadHead feeds arbitrary version 3 heads (with a valid checksum, so
// that the fuzzer reaches the decoder) to Open: it must never panic, fail
// only with ErrCorrupt, and a head it accepts names blocks inside the file.
func FuzzReadHead(f *testing.F) {
	good := encodeV3(f, sample())
	f.Add(good[HeadFirstHeaderSize : HeadFirstHeaderSize+int(binary.LittleEndian.Uint64(good[14:22]))])
	f.Fuzz(func(t *testing.T, head []byte) {
		r, err := openHead(head)
		if err != nil {
			if !errors.Is(err, rlmm.ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		for _, blk := range r.Blocks() {
			if blk.Offset < HeadFirstHeaderSize || blk.Offset+blk.Length > r.Size() {
				t.Fatalf("block %+v outside the file of %d bytes", blk, r.Size())
			}
		}
	})
}

// FuzzReadBlock feeds arbitrary blocks to the block decoder: it must never
// panic, fail only with ErrCorrupt, and what it accepts must survive a
// re-encoding unchanged.
func FuzzReadBlock(f *testing.F) {
	for _, st := range sample().states {
		f.Add(encodeBlock(&st))
	}
	f.Fuzz(func(t *testing.T, block []byte) {
		// The block's own partition and count, as a head would give them.
		r := &fieldReader{b: block}
		tp := r.tp()
		n := int(r.u32("segments"))
		if r.err != nil {
			return
		}
		st, err := DecodeState(block, BlockInfo{TopicIDPartition: tp, Segments: n, Length: int64(len(block)),
			CRC: crc32.Checksum(block, crcTable)})
		if err != nil {
			if !errors.Is(err, rlmm.ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		again := encodeBlock(&st)
		if !bytes.Equal(again, block) {
			t.Fatalf("re-encoded block differs:\n got %x\nwant %x", again, block)
		}
	})
}

// encodeBlock returns st's block bytes.
func encodeBlock(st *memory.PartitionState) []byte {
	b := appendBlockHead(nil, st)
	for j := range st.Segments {
		b = appendSegment(b, &st.Segments[j])
	}
	return appendBlockTail(b, st)
}

// A restart from a snapshot answers HighestOffsetForEpoch the same for the
// epochs whose segments were all deleted (the broker resumes copying after
// that offset): the file carries them as highest offsets, and a cache
// restored through memory.PartitionBuilder keeps them, for a partition that
// still has segments and one that has none left.
func TestEmptiedEpochsSurviveASnapshot(t *testing.T) {
	live, gone := topicPartition("live", 5, 0), topicPartition("gone", 6, 1)
	src := memory.New()
	ctx := context.Background()
	const segs, perEpoch, keep = 400, 10, 25
	for k := range segs {
		for _, tp := range []rlmm.TopicIDPartition{live, gone} {
			start := int64(k) * 10
			md := segment(tp, uint64(k), start, start+9, int64(k/perEpoch), start)
			must(t, src.AddSegment(ctx, md))
			must(t, src.UpdateSegment(ctx, rlmm.SegmentUpdate{ID: md.ID, State: rlmm.CopySegmentFinished}))
			old := k - keep
			if tp == gone {
				old = k // every segment deleted
			}
			if old >= 0 {
				id := segment(tp, uint64(old), 0, 0).ID
				for _, s := range []rlmm.SegmentState{rlmm.DeleteSegmentStarted, rlmm.DeleteSegmentFinished} {
					must(t, src.UpdateSegment(ctx, rlmm.SegmentUpdate{ID: id, State: s}))
				}
			}
		}
	}
	states := src.Export(nil)
	data := encode(t, &file{head: Head{Partitions: 1, Committed: []int64{7}}, states: states})
	r, err := Open(bytes.NewReader(data), int64(len(data)))
	must(t, err)
	must(t, r.Verify(ctx, 1))
	var builders []*memory.PartitionBuilder
	for k, blk := range r.Blocks() {
		block, err := r.ReadBlock(k, nil)
		must(t, err)
		must(t, DecodeBlock(block, blk, func(tp rlmm.TopicIDPartition, z memory.BuildSizes) (Sink, error) {
			b := memory.NewPartitionBuilder(tp, z)
			builders = append(builders, b)
			return b, nil
		}))
	}
	restored := memory.New()
	must(t, restored.Install(builders))
	for _, tp := range []rlmm.TopicIDPartition{live, gone} {
		for e := int32(0); e <= segs/perEpoch; e++ {
			wh, wok, _ := src.HighestOffsetForEpoch(tp, e)
			h, ok, err := restored.HighestOffsetForEpoch(tp, e)
			if err != nil || ok != wok || h != wh {
				t.Fatalf("restored HighestOffsetForEpoch(%s, %d) = %d, %t, %v; before the restart %d, %t", tp, e, h, ok, err, wh, wok)
			}
			if e < segs/perEpoch && (!ok || h != int64(e+1)*perEpoch*10-1) {
				t.Fatalf("HighestOffsetForEpoch(%s, %d) = %d, %t; want %d", tp, e, h, ok, int64(e+1)*perEpoch*10-1)
			}
		}
	}
	if !reflect.DeepEqual(restored.Export(nil), states) {
		t.Error("the restored cache exports differently")
	}
}

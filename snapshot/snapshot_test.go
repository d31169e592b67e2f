package snapshot

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"reflect"
	"testing"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/memory"
)

func TestRoundTrip(t *testing.T) {
	s := sample()
	got, err := decode(encode(t, s))
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
func TestDamageIsDetected(t *testing.T) {
	good := encode(t, sample())
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
			if _, err := decode(encode(t, s)); !errors.Is(err, rlmm.ErrCorrupt) {
				t.Errorf("decode: %v; want ErrCorrupt", err)
			}
		})
	}
}

// The writer refuses what the format cannot say, and what a reader would
// refuse (committed offsets below -1, no metadata partition).
func TestWriterRefusesInvalidHeads(t *testing.T) {
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
			if _, err := NewWriter(&memFile{}, c.head, c.tps); !errors.Is(err, rlmm.ErrInvalidArgument) {
				t.Errorf("NewWriter: %v; want ErrInvalidArgument", err)
			}
		})
	}
	w, err := NewWriter(&memFile{}, Head{Partitions: 1, Committed: []int64{0}}, []rlmm.TopicIDPartition{tp})
	must(t, err)
	if _, err := w.Finish(); !errors.Is(err, rlmm.ErrInvalidArgument) {
		t.Errorf("Finish before every block: %v; want ErrInvalidArgument", err)
	}
	w, err = NewWriter(&memFile{}, Head{Partitions: 1, Committed: []int64{0}}, []rlmm.TopicIDPartition{tp})
	must(t, err)
	if err := w.WriteBlock(&memory.PartitionState{TopicIDPartition: topicPartition("other", 2, 0)}); !errors.Is(err, rlmm.ErrInvalidArgument) {
		t.Errorf("block of another partition: %v; want ErrInvalidArgument", err)
	}
}

// A head whose committed offsets are below -1 is refused (checksum valid).
func TestHeadCommittedBelowMinusOne(t *testing.T) {
	head := binary.LittleEndian.AppendUint32(nil, 1)
	head = binary.LittleEndian.AppendUint64(head, uint64(1<<64-2)) // -2
	head = binary.LittleEndian.AppendUint32(head, 0)
	if _, err := openHead(head); !errors.Is(err, rlmm.ErrCorrupt) {
		t.Errorf("Open: %v; want ErrCorrupt", err)
	}
}

// openHead wraps a head's bytes in a valid header (checksum and length
// right) and opens the result, which has no blocks beyond what the head
// names.
func openHead(head []byte) (*Reader, error) {
	file := make([]byte, HeaderSize, HeaderSize+len(head))
	copy(file, Magic)
	binary.LittleEndian.PutUint16(file[8:], Version)
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

// FuzzReadHead feeds arbitrary heads (with a valid checksum, so that the
// fuzzer reaches the decoder) to Open: it must never panic, fail only with
// ErrCorrupt, and a head it accepts names blocks inside the file.
func FuzzReadHead(f *testing.F) {
	good := encode(f, sample())
	f.Add(good[HeaderSize : HeaderSize+int(binary.LittleEndian.Uint64(good[14:22]))])
	f.Fuzz(func(t *testing.T, head []byte) {
		r, err := openHead(head)
		if err != nil {
			if !errors.Is(err, rlmm.ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		for _, blk := range r.Blocks() {
			if blk.Offset < HeaderSize || blk.Offset+blk.Length > r.Size() {
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
		st, err := DecodeState(block, BlockInfo{TopicIDPartition: tp, Segments: n, Length: int64(len(block))})
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

package snapshot

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/memory"
)

// The version 4 writer streams into a plain io.Writer: blocks in any order,
// committed offsets given before, between or after them, a metadata
// partition left at -1 when none is given, and a later SetCommitted
// replacing an earlier one. The reader gives the blocks in the order
// written, with their partitions and segment counts, before reading one.
func TestWriterStreams(t *testing.T) {
	s := sample()
	var out bytes.Buffer
	w, err := NewWriter(&out, s.head.LogID, 5)
	must(t, err)
	must(t, w.SetCommitted(3, 99))
	must(t, w.WriteBlock(&s.states[1]))
	must(t, w.SetCommitted(1, 4))
	must(t, w.SetCommitted(3, 12))
	must(t, w.WriteBlock(&s.states[0]))
	if w.Blocks() != 2 {
		t.Errorf("Blocks() = %d, want 2", w.Blocks())
	}
	size, err := w.Finish()
	must(t, err)
	if size != int64(out.Len()) {
		t.Fatalf("Finish says %d bytes, %d written", size, out.Len())
	}
	r, err := Open(bytes.NewReader(out.Bytes()), size)
	must(t, err)
	want := Head{LogID: s.head.LogID, Partitions: 5, Committed: []int64{-1, 4, -1, 12, -1}}
	if !reflect.DeepEqual(r.Head(), want) {
		t.Errorf("head %+v, want %+v", r.Head(), want)
	}
	blocks := r.Blocks()
	if len(blocks) != 2 || blocks[0].TopicIDPartition != s.states[1].TopicIDPartition || blocks[0].Segments != 0 ||
		blocks[1].TopicIDPartition != s.states[0].TopicIDPartition || blocks[1].Segments != 3 ||
		blocks[0].Offset != HeaderSize || blocks[1].Offset != blocks[0].Offset+blocks[0].Length {
		t.Fatalf("index %+v", blocks)
	}
	got, err := decode(out.Bytes())
	must(t, err)
	if !reflect.DeepEqual(got.states, []memory.PartitionState{s.states[1], s.states[0]}) {
		t.Errorf("states %+v", got.states)
	}
	if _, err := w.Finish(); !errors.Is(err, rlmm.ErrInvalidArgument) {
		t.Errorf("Finish twice: %v; want ErrInvalidArgument", err)
	}
}

// The version 4 writer refuses what a reader would refuse.
func TestWriterRefuses(t *testing.T) {
	if _, err := NewWriter(&bytes.Buffer{}, rlmm.ZeroUuid, 0); !errors.Is(err, rlmm.ErrInvalidArgument) {
		t.Errorf("NewWriter of 0 metadata partitions: %v; want ErrInvalidArgument", err)
	}
	w, err := NewWriter(&bytes.Buffer{}, rlmm.ZeroUuid, 2)
	must(t, err)
	for _, c := range []struct {
		mp     int32
		offset int64
	}{{2, 0}, {-1, 0}, {0, -2}} {
		if err := w.SetCommitted(c.mp, c.offset); !errors.Is(err, rlmm.ErrInvalidArgument) {
			t.Errorf("SetCommitted(%d, %d): %v; want ErrInvalidArgument", c.mp, c.offset, err)
		}
	}
	st := memory.PartitionState{TopicIDPartition: topicPartition("twice", 1, 0)}
	must(t, w.WriteBlock(&st))
	if err := w.WriteBlock(&st); !errors.Is(err, rlmm.ErrInvalidArgument) {
		t.Errorf("a partition twice: %v; want ErrInvalidArgument", err)
	}
}

// failingWriter fails every write.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

// An error of the destination is returned by the call that meets it (here
// Finish, the buffer's flush) and by every later one.
func TestWriterReturnsTheDestinationsError(t *testing.T) {
	w, err := NewWriter(failingWriter{}, rlmm.ZeroUuid, 1)
	must(t, err)
	st := sample().states[0]
	must(t, w.WriteBlock(&st)) // buffered
	if _, err := w.Finish(); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("Finish: %v; want the destination's error", err)
	}
	if _, err := w.Finish(); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("Finish again: %v; want the destination's error", err)
	}
}

// A torn file (a write that stopped before the trailer, or a file cut
// short) is refused by its trailer, with an error naming the byte: never a
// panic, never a read of the blocks.
func TestTornFileIsRefused(t *testing.T) {
	good := encode(t, sample())
	for n := HeaderSize; n < len(good); n++ {
		_, err := Open(bytes.NewReader(good[:n]), int64(n))
		if !errors.Is(err, rlmm.ErrCorrupt) {
			t.Fatalf("cut to %d bytes: %v; want ErrCorrupt", n, err)
		}
		if !strings.Contains(err.Error(), "torn") {
			t.Fatalf("cut to %d bytes: %v; want an error saying the file is torn", n, err)
		}
	}
	// The trailer's magic replaced by the bytes of a block, as a file whose
	// end was never written reads.
	b := bytes.Clone(good)
	copy(b[len(b)-8:], "\x00\x01\x02\x03\x04\x05\x06\x07")
	_, err := Open(bytes.NewReader(b), int64(len(b)))
	if !errors.Is(err, rlmm.ErrCorrupt) || !strings.Contains(err.Error(), "no trailer") ||
		!strings.Contains(err.Error(), "file byte "+strconv.Itoa(len(b)-8)) {
		t.Errorf("no trailer: %v; want ErrCorrupt naming file byte %d", err, len(b)-8)
	}
	// A trailer whose footer does not end where the trailer starts.
	b = bytes.Clone(good)
	binary.LittleEndian.PutUint64(b[len(b)-TrailerSize:], uint64(HeaderSize+1))
	if _, err := Open(bytes.NewReader(b), int64(len(b))); !errors.Is(err, rlmm.ErrCorrupt) || !strings.Contains(err.Error(), "places the footer") {
		t.Errorf("a trailer placing the footer wrong: %v; want ErrCorrupt", err)
	}
}

// A footer whose checksum fails is refused as a whole.
func TestCorruptFooterIsRefused(t *testing.T) {
	good := encode(t, sample())
	footerOff := int(binary.LittleEndian.Uint64(good[len(good)-TrailerSize:]))
	b := bytes.Clone(good)
	b[footerOff+3] ^= 0x10
	if _, err := Open(bytes.NewReader(b), int64(len(b))); !errors.Is(err, rlmm.ErrCorrupt) || !strings.Contains(err.Error(), "footer") ||
		!strings.Contains(err.Error(), "checksum") {
		t.Errorf("a footer with a changed byte: %v; want ErrCorrupt of the footer's checksum", err)
	}
}

// A block whose checksum fails leaves the file open (its index holds) and
// is reported when it is read, through ForEachBlock too, naming its bytes;
// the other blocks read.
func TestCorruptBlockIsReportedWhenRead(t *testing.T) {
	s := sample()
	good := encode(t, s)
	r, err := Open(bytes.NewReader(good), int64(len(good)))
	must(t, err)
	bad := r.Blocks()[0]
	b := bytes.Clone(good)
	b[bad.Offset+bad.Length-1] ^= 0x01
	r, err = Open(bytes.NewReader(b), int64(len(b)))
	must(t, err)
	errs := make([]error, len(r.Blocks()))
	must(t, r.ForEachBlock(context.Background(), 2, func(k int, block []byte, err error) {
		if err == nil {
			_, err = DecodeState(block, r.Blocks()[k])
		}
		errs[k] = err
	}))
	if !errors.Is(errs[0], rlmm.ErrCorrupt) || !strings.Contains(errs[0].Error(), "checksum") ||
		!strings.Contains(errs[0].Error(), "file bytes "+strconv.FormatInt(bad.Offset, 10)) {
		t.Errorf("block 0: %v; want ErrCorrupt of its checksum naming its bytes", errs[0])
	}
	if errs[1] != nil {
		t.Errorf("block 1: %v", errs[1])
	}
	// Read unchecked, as a restart reads: the decoder finds it.
	clear(errs)
	must(t, r.ForEachBlockUnchecked(context.Background(), 2, func(k int, block []byte, err error) {
		if err == nil {
			_, err = DecodeState(block, r.Blocks()[k])
		}
		errs[k] = err
	}))
	if !errors.Is(errs[0], rlmm.ErrCorrupt) || !strings.Contains(errs[0].Error(), "checksum mismatch") {
		t.Errorf("block 0 read unchecked: %v; want ErrCorrupt of its checksum", errs[0])
	}
	if errs[1] != nil {
		t.Errorf("block 1 read unchecked: %v", errs[1])
	}
}

// DecodeBlock checks the block's checksum as it decodes (in pieces ahead
// of the decoder): every single-byte change of a block, anywhere, is a
// checksum error, also where the damaged bytes still decode or fail to
// decode for another reason first; a block of many pieces decodes whole.
func TestDecodeBlockChecksTheChecksum(t *testing.T) {
	tp := topicPartition("big", 8, 1)
	st := memory.PartitionState{TopicIDPartition: tp}
	for k := range int64(3000) { // 3000 × 62 bytes: three pieces of the checksum
		st.Segments = append(st.Segments, segment(tp, uint64(k), k*10, k*10+9))
	}
	s := sample()
	s.states = append(s.states, st)
	data := encode(t, s)
	r, err := Open(bytes.NewReader(data), int64(len(data)))
	must(t, err)
	for k, blk := range r.Blocks() {
		block, err := r.ReadBlockUnchecked(k, nil)
		must(t, err)
		got, err := DecodeState(block, blk)
		must(t, err)
		if !reflect.DeepEqual(got, s.states[k]) {
			t.Fatalf("block %d decodes differently", k)
		}
		if k == len(s.states)-1 && blk.Length <= 2*crcChunk {
			t.Fatalf("the big block is %d bytes, want more than %d", blk.Length, 2*crcChunk)
		}
		step := 1
		if blk.Length > 1000 {
			step = 997
		}
		for i := 0; i < len(block); i += step {
			b := bytes.Clone(block)
			b[i] ^= 0x20
			if _, err := DecodeState(b, blk); !errors.Is(err, rlmm.ErrCorrupt) || !strings.Contains(err.Error(), "checksum mismatch") {
				t.Fatalf("block %d, byte %d changed: %v; want a checksum error", k, i, err)
			}
		}
	}
}

// Footers whose checksum holds but whose content is invalid are refused.
func TestInvalidFooter(t *testing.T) {
	tp := topicPartition("t", 1, 0)
	head := binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint32(logID(), 1), 0) // one metadata partition, committed 0
	entry := func(off, length uint64, segments uint32) []byte {
		return append(binary.LittleEndian.AppendUint64(nil, off), encodeIndexEntry(length, segments, tp)...)
	}
	blocks := make([]byte, 2*segmentFixedBytes)
	cases := []struct {
		name   string
		blocks []byte
		footer []byte
		want   string
	}{
		{"committed below -1", nil, binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint32(logID(), 1), uint64(1<<64-2)), 0), "below -1"},
		{"zero partitions", nil, binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(logID(), 0), 0), "invalid"},
		{"trailing bytes", nil, append(binary.LittleEndian.AppendUint32(bytes.Clone(head), 0), 7), "trailing"},
		{"a block past the footer", blocks, append(binary.LittleEndian.AppendUint32(bytes.Clone(head), 1), entry(HeaderSize, 1000, 0)...), "past the footer"},
		{"a gap before a block", blocks, append(binary.LittleEndian.AppendUint32(bytes.Clone(head), 1), entry(HeaderSize+1, 1, 0)...), "starts at"},
		{"bytes between the blocks and the footer", blocks, append(binary.LittleEndian.AppendUint32(bytes.Clone(head), 1), entry(HeaderSize, 1, 0)...), "the blocks end"},
		{"more segments than bytes", blocks, append(binary.LittleEndian.AppendUint32(bytes.Clone(head), 1), entry(HeaderSize, uint64(len(blocks)), 3)...), "cannot hold"},
		{"a count past the footer", nil, binary.LittleEndian.AppendUint32(bytes.Clone(head), 1000), "exceeds"},
		{"a log id cut short", nil, logID()[:9], "truncated"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := openFooterOf(c.blocks, c.footer)
			if !errors.Is(err, rlmm.ErrCorrupt) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "file byte") {
				t.Errorf("Open: %v; want ErrCorrupt naming a file byte and saying %q", err, c.want)
			}
		})
	}
	// The smallest valid footers, to show that the cases above fail for
	// what they name and not for a missing field.
	if _, err := openFooterOf(nil, binary.LittleEndian.AppendUint32(bytes.Clone(head), 0)); err != nil {
		t.Errorf("Open of a valid footer: %v", err)
	}
	if r, err := openFooterOf(blocks, append(binary.LittleEndian.AppendUint32(bytes.Clone(head), 1), entry(HeaderSize, uint64(len(blocks)), 2)...)); err != nil || len(r.Blocks()) != 1 {
		t.Errorf("Open of a valid footer naming one block: %v", err)
	}
}

// openFooterOf builds a version 4 file of a header, blocks (any bytes),
// footer and a valid trailer (the footer's place and checksum right) and
// opens it.
func openFooterOf(blocks, footer []byte) (*Reader, error) {
	file := append([]byte(Magic), byte(Version), byte(Version>>8))
	file = append(file, blocks...)
	footerOff := len(file)
	file = append(file, footer...)
	file = binary.LittleEndian.AppendUint64(file, uint64(footerOff))
	file = binary.LittleEndian.AppendUint64(file, uint64(len(footer)))
	file = binary.LittleEndian.AppendUint32(file, crc32.Checksum(footer, crcTable))
	file = append(file, Magic...)
	return Open(bytes.NewReader(file), int64(len(file)))
}

// FuzzReadFooter feeds arbitrary blocks and footers (with a valid trailer,
// so that the fuzzer reaches the footer's decoder) to Open, then reads and
// decodes every block it names: nothing may panic, every error wraps
// ErrCorrupt, and an index it accepts tiles the bytes between the header
// and the footer with its blocks.
func FuzzReadFooter(f *testing.F) {
	good := encode(f, sample())
	footerOff := binary.LittleEndian.Uint64(good[len(good)-TrailerSize:])
	f.Add(good[HeaderSize:footerOff], good[footerOff:len(good)-TrailerSize])
	f.Add([]byte{}, binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint32(logID(), 1), 0), 0))
	f.Fuzz(func(t *testing.T, blocks, footer []byte) {
		r, err := openFooterOf(blocks, footer)
		if err != nil {
			if !errors.Is(err, rlmm.ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		off := int64(HeaderSize)
		for _, blk := range r.Blocks() {
			if blk.Offset != off || blk.Length < 0 {
				t.Fatalf("block %+v does not start where the one before ended (%d)", blk, off)
			}
			off += blk.Length
		}
		if off != HeaderSize+int64(len(blocks)) {
			t.Fatalf("blocks end at %d, the footer starts at %d", off, HeaderSize+len(blocks))
		}
		decodeAll(t, r)
	})
}

// FuzzOpen feeds arbitrary whole files (seeded with a version 4 and a
// version 3 file) to Open and decodes every block of what opens: nothing
// may panic, and every error wraps ErrCorrupt.
func FuzzOpen(f *testing.F) {
	f.Add(encode(f, sample()))
	f.Add(encodeV3(f, sample()))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := Open(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			if !errors.Is(err, rlmm.ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		decodeAll(t, r)
	})
}

// decodeAll reads and decodes every block of r as a restart does (the
// checksum checked by the decoder, which so runs on every byte the fuzzer
// gives): each error must wrap ErrCorrupt.
func decodeAll(t *testing.T, r *Reader) {
	t.Helper()
	if err := r.ForEachBlockUnchecked(context.Background(), 1, func(k int, block []byte, err error) {
		if err == nil {
			_, err = DecodeState(block, r.Blocks()[k])
		}
		if err != nil && !errors.Is(err, rlmm.ErrCorrupt) {
			t.Errorf("block %d: error %v does not wrap ErrCorrupt", k, err)
		}
	}); err != nil {
		t.Fatal(err)
	}
}

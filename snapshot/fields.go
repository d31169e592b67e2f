package snapshot

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"

	"github.com/rlmm-go/rlmm"
)

// fieldReader reads fixed-width fields from a part of the file; every read
// checks the bounds first, so hostile bytes produce an error naming the
// file byte, never a panic or an unbounded allocation.
type fieldReader struct {
	b []byte
	// base is the file offset of b[0], for error messages.
	base int64
	pos  int
	err  error
	// verify: the CRC-32C of b[:checked] is crc, advanced by take ahead of
	// pos in pieces of crcChunk, so that the checksum is computed as the
	// bytes are decoded, while they are in the CPU's cache. Without verify,
	// checked jumps to the end at the first take.
	verify  bool
	checked int
	crc     uint32
	// avail is where take's fast path stops: checked, or -1 once err is
	// set.
	avail int
}

// crcChunk is how far ahead of the decoder the checksum is computed.
const crcChunk = 64 << 10

// finishCRC returns the CRC-32C of the whole of b (verify readers).
func (r *fieldReader) finishCRC() uint32 {
	r.crc = crc32.Update(r.crc, crcTable, r.b[r.checked:])
	r.checked = len(r.b)
	return r.crc
}

func (r *fieldReader) fail(format string, args ...any) {
	r.avail = -1
	if r.err == nil {
		r.err = fmt.Errorf("%w: snapshot file byte %d: %s", rlmm.ErrCorrupt, r.base+int64(r.pos), fmt.Sprintf(format, args...))
	}
}

// take returns the next n bytes, or nil (with the error set) when fewer
// remain. Its common case (bytes there, their checksum already computed)
// is small enough to be inlined into the decoder's loop.
func (r *fieldReader) take(what string, n int) []byte {
	if end := r.pos + n; n >= 0 && end <= r.avail {
		v := r.b[r.pos:end:end]
		r.pos = end
		return v
	}
	return r.takeSlow(what, n)
}

// takeSlow is take past the checksummed bytes (advancing the checksum
// first), or failing.
func (r *fieldReader) takeSlow(what string, n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b)-r.pos {
		r.fail("%s of %d bytes is truncated (%d left)", what, n, len(r.b)-r.pos)
		return nil
	}
	if r.pos+n > r.checked {
		end := len(r.b)
		if r.verify {
			end = max(r.pos+n, min(r.checked+crcChunk, len(r.b)))
			r.crc = crc32.Update(r.crc, crcTable, r.b[r.checked:end])
		}
		r.checked, r.avail = end, end
	}
	v := r.b[r.pos : r.pos+n : r.pos+n]
	r.pos += n
	return v
}

func (r *fieldReader) u8(what string) byte {
	if v := r.take(what, 1); v != nil {
		return v[0]
	}
	return 0
}

func (r *fieldReader) u32(what string) uint32 {
	if v := r.take(what, 4); v != nil {
		return binary.LittleEndian.Uint32(v)
	}
	return 0
}

func (r *fieldReader) i32(what string) int32 { return int32(r.u32(what)) }

func (r *fieldReader) u64(what string) uint64 {
	if v := r.take(what, 8); v != nil {
		return binary.LittleEndian.Uint64(v)
	}
	return 0
}

func (r *fieldReader) i64(what string) int64 { return int64(r.u64(what)) }

// tp reads a topic partition: uuid | u32 topic length | topic | i32.
func (r *fieldReader) tp() rlmm.TopicIDPartition {
	var tp rlmm.TopicIDPartition
	copy(tp.TopicID[:], r.take("topic id", 16))
	tp.Topic = string(r.take("topic name", int(r.u32("topic name length"))))
	tp.Partition = r.i32("partition")
	return tp
}

// count reads a u32 collection length and checks that at least minBytes
// per element remain, before anything is allocated for it.
func (r *fieldReader) count(what string, minBytes int) int {
	v := r.u32(what)
	if r.err == nil && uint64(v) > uint64(len(r.b)-r.pos)/uint64(minBytes) {
		r.fail("%s count %d exceeds the remaining %d bytes", what, v, len(r.b)-r.pos)
		return 0
	}
	return int(v)
}

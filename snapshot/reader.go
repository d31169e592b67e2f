package snapshot

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"sync"
	"sync/atomic"

	"github.com/rlmm-go/rlmm"
)

// BlockInfo locates one user partition's block in the file, as the block
// index (the footer's, or the head's in a version 2 or 3 file) gives it.
type BlockInfo struct {
	TopicIDPartition rlmm.TopicIDPartition
	// Segments is the block's segment count.
	Segments int
	// Offset and Length are the block's place in the file.
	Offset, Length int64
	// CRC is the CRC-32C (Castagnoli) of the block.
	CRC uint32
}

// Reader is an open snapshot: its index and head checked and decoded, its
// blocks located but not read. Its methods are safe for concurrent use
// (they only read the file at given offsets).
type Reader struct {
	r       io.ReaderAt
	size    int64
	version uint16
	head    Head
	blocks  []BlockInfo
}

// Version returns the file's format version (Version, VersionHeadFirst or
// VersionWithoutLogID).
func (r *Reader) Version() uint16 { return r.version }

// Head returns the snapshot's head (the caller must not modify Committed).
func (r *Reader) Head() Head { return r.head }

// Blocks returns the block index, in file order (the caller must not
// modify it).
func (r *Reader) Blocks() []BlockInfo { return r.blocks }

// Size returns the file's size.
func (r *Reader) Size() int64 { return r.size }

// Open reads and checks the size-byte snapshot r's index and head (in a
// version 4 file: the header, the trailer and the footer; in a version 2
// or 3 file: the header and the head) and locates the blocks, without
// reading them. Bad bytes are an error wrapping rlmm.ErrCorrupt that says
// what is wrong and names the file byte; an error of r is returned wrapped
// as it is.
func Open(r io.ReaderAt, size int64) (*Reader, error) {
	var h [HeadFirstHeaderSize]byte
	if size < HeaderSize {
		return nil, fmt.Errorf("%w: snapshot is %d bytes, shorter than its %d-byte header", rlmm.ErrCorrupt, size, HeaderSize)
	}
	if _, err := r.ReadAt(h[:HeaderSize], 0); err != nil {
		return nil, fmt.Errorf("read snapshot header: %w", err)
	}
	if string(h[0:8]) != Magic {
		return nil, fmt.Errorf("%w: not an rlmm snapshot (bad magic %q)", rlmm.ErrCorrupt, h[0:8])
	}
	switch version := binary.LittleEndian.Uint16(h[8:10]); version {
	case Version:
		return openFooter(r, size)
	case VersionHeadFirst, VersionWithoutLogID:
		if size < HeadFirstHeaderSize {
			return nil, fmt.Errorf("%w: snapshot is %d bytes, shorter than its %d-byte version %d header", rlmm.ErrCorrupt, size, HeadFirstHeaderSize, version)
		}
		if _, err := r.ReadAt(h[:], 0); err != nil {
			return nil, fmt.Errorf("read snapshot header: %w", err)
		}
		return openHeadFirst(r, size, version, h)
	default:
		return nil, fmt.Errorf("%w: snapshot version %d, this build reads versions %d to %d", rlmm.ErrCorrupt, version, VersionWithoutLogID, Version)
	}
}

// openFooter reads and checks a version 4 file's trailer and footer.
func openFooter(r io.ReaderAt, size int64) (*Reader, error) {
	if size < HeaderSize+TrailerSize {
		return nil, fmt.Errorf("%w: snapshot is %d bytes, too short for a version %d header and trailer (%d bytes): a torn or truncated file",
			rlmm.ErrCorrupt, size, Version, HeaderSize+TrailerSize)
	}
	var t [TrailerSize]byte
	tOff := size - TrailerSize
	if _, err := r.ReadAt(t[:], tOff); err != nil {
		return nil, fmt.Errorf("read snapshot trailer: %w", err)
	}
	if string(t[20:28]) != Magic {
		return nil, fmt.Errorf("%w: snapshot file byte %d: no trailer (the file ends in %q, not the magic): a torn or truncated file",
			rlmm.ErrCorrupt, tOff+20, t[20:28])
	}
	footerOff, footerLen := binary.LittleEndian.Uint64(t[0:8]), binary.LittleEndian.Uint64(t[8:16])
	if footerOff < HeaderSize || footerOff > uint64(tOff) || footerLen != uint64(tOff)-footerOff {
		return nil, fmt.Errorf("%w: snapshot file byte %d: the trailer places the footer at file bytes %d to %d+%d, the trailer starts at %d: a torn or damaged file",
			rlmm.ErrCorrupt, tOff, footerOff, footerOff, footerLen, tOff)
	}
	footer := make([]byte, footerLen)
	if _, err := r.ReadAt(footer, int64(footerOff)); err != nil && footerLen > 0 {
		return nil, fmt.Errorf("read snapshot footer: %w", err)
	}
	if want, got := binary.LittleEndian.Uint32(t[16:20]), crc32.Checksum(footer, crcTable); want != got {
		return nil, fmt.Errorf("%w: snapshot footer (file bytes %d to %d) checksum mismatch (trailer %08x, footer %08x)",
			rlmm.ErrCorrupt, footerOff, tOff, want, got)
	}
	rd := &fieldReader{b: footer, base: int64(footerOff)}
	out, err := readHead(rd, r, size, Version)
	if err != nil {
		return nil, err
	}
	n := rd.count("user partition", footerEntrySize(rlmm.TopicIDPartition{}))
	out.blocks = make([]BlockInfo, n)
	off := uint64(HeaderSize)
	for i := range out.blocks {
		at := rd.pos
		boff, length, crc := rd.u64("block offset"), rd.u64("block length"), rd.u32("block checksum")
		segments := int(rd.u32("block segments"))
		tp := rd.tp()
		if rd.err != nil {
			return nil, rd.err
		}
		switch {
		case boff != off:
			rd.pos = at
			rd.fail("block %d starts at file byte %d, the block before it ends at %d", i, boff, off)
		case length > footerOff-off:
			rd.pos = at
			rd.fail("block %d of %d bytes at file byte %d ends past the footer's start at %d", i, length, boff, footerOff)
		case uint64(segments) > length/segmentFixedBytes:
			rd.pos = at
			rd.fail("block %d of %d bytes cannot hold the %d segments the index says", i, length, segments)
		}
		if rd.err != nil {
			return nil, rd.err
		}
		out.blocks[i] = BlockInfo{TopicIDPartition: tp, Segments: segments, Offset: int64(boff), Length: int64(length), CRC: crc}
		off += length
	}
	if rd.err == nil && rd.pos != len(rd.b) {
		rd.fail("%d trailing bytes in the footer", len(rd.b)-rd.pos)
	}
	if rd.err != nil {
		return nil, rd.err
	}
	if off != footerOff {
		return nil, fmt.Errorf("%w: snapshot file byte %d: the blocks end there, the footer starts at %d", rlmm.ErrCorrupt, off, footerOff)
	}
	return out, nil
}

// readHead decodes the head's fields (log id, metadata partition count,
// committed offsets) of a version's head or footer.
func readHead(rd *fieldReader, r io.ReaderAt, size int64, version uint16) (*Reader, error) {
	var logID rlmm.Uuid
	if version != VersionWithoutLogID {
		copy(logID[:], rd.take("log id", 16))
	}
	parts := rd.count("metadata partition", 8)
	if rd.err == nil && (parts == 0 || parts > math.MaxInt32) {
		rd.fail("metadata partition count %d is invalid", parts)
	}
	if rd.err != nil {
		return nil, rd.err
	}
	out := &Reader{r: r, size: size, version: version,
		head: Head{LogID: logID, Partitions: int32(parts), Committed: make([]int64, parts)}}
	for i := range out.head.Committed {
		c := rd.i64("committed offset")
		if rd.err == nil && c < -1 {
			rd.fail("committed offset %d of metadata partition %d is below -1", c, i)
		}
		out.head.Committed[i] = c
	}
	if rd.err != nil {
		return nil, rd.err
	}
	return out, nil
}

// openHeadFirst reads and checks a version 2 or 3 file's head, after its
// header h.
func openHeadFirst(r io.ReaderAt, size int64, version uint16, h [HeadFirstHeaderSize]byte) (*Reader, error) {
	headLen := binary.LittleEndian.Uint64(h[14:22])
	if headLen > uint64(size-HeadFirstHeaderSize) {
		return nil, fmt.Errorf("%w: snapshot header says its head is %d bytes, the file has %d after the header",
			rlmm.ErrCorrupt, headLen, size-HeadFirstHeaderSize)
	}
	head := make([]byte, headLen)
	if _, err := r.ReadAt(head, HeadFirstHeaderSize); err != nil && headLen > 0 {
		return nil, fmt.Errorf("read snapshot head: %w", err)
	}
	if want, got := binary.LittleEndian.Uint32(h[10:14]), crc32.Checksum(head, crcTable); want != got {
		return nil, fmt.Errorf("%w: snapshot head checksum mismatch (header %08x, head %08x)", rlmm.ErrCorrupt, want, got)
	}
	return parseHead(r, size, version, head)
}

// parseHead decodes a version 2 or 3 head whose checksum held.
func parseHead(r io.ReaderAt, size int64, version uint16, head []byte) (*Reader, error) {
	rd := &fieldReader{b: head, base: HeadFirstHeaderSize}
	out, err := readHead(rd, r, size, version)
	if err != nil {
		return nil, err
	}
	n := rd.count("user partition", indexEntrySize(rlmm.TopicIDPartition{}))
	out.blocks = make([]BlockInfo, n)
	off := HeadFirstHeaderSize + int64(len(head))
	for i := range out.blocks {
		length, crc := rd.u64("block length"), rd.u32("block checksum")
		segments := int(rd.u32("block segments"))
		tp := rd.tp()
		if rd.err != nil {
			return nil, rd.err
		}
		if uint64(segments) > length/segmentFixedBytes {
			return nil, fmt.Errorf("%w: snapshot block %d of %d bytes cannot hold the %d segments the head says", rlmm.ErrCorrupt, i, length, segments)
		}
		if length > uint64(size-off) {
			return nil, fmt.Errorf("%w: snapshot block %d of %d bytes at file byte %d ends past the file's %d bytes",
				rlmm.ErrCorrupt, i, length, off, size)
		}
		out.blocks[i] = BlockInfo{TopicIDPartition: tp, Segments: segments, Offset: off, Length: int64(length), CRC: crc}
		off += int64(length)
	}
	if rd.err == nil && rd.pos != len(rd.b) {
		rd.fail("%d trailing bytes in the head", len(rd.b)-rd.pos)
	}
	if rd.err != nil {
		return nil, rd.err
	}
	if off != size {
		return nil, fmt.Errorf("%w: snapshot is %d bytes, its head accounts for %d", rlmm.ErrCorrupt, size, off)
	}
	return out, nil
}

// ReadBlock reads block k into buf (grown if needed; the caller may reuse
// it) and checks its checksum.
func (r *Reader) ReadBlock(k int, buf []byte) ([]byte, error) {
	buf, err := r.ReadBlockUnchecked(k, buf)
	if err != nil {
		return buf, err
	}
	blk := r.blocks[k]
	if got := crc32.Checksum(buf, crcTable); got != blk.CRC {
		return buf, checksumError(blk, got)
	}
	return buf, nil
}

// ReadBlockUnchecked reads block k into buf (grown if needed; the caller
// may reuse it) without checking its checksum: DecodeBlock checks it as it
// decodes, in the same pass.
func (r *Reader) ReadBlockUnchecked(k int, buf []byte) ([]byte, error) {
	blk := r.blocks[k]
	size := int(blk.Length)
	if cap(buf) < size {
		buf = make([]byte, size, max(size, 2*cap(buf)))
	}
	buf = buf[:size]
	if _, err := r.r.ReadAt(buf, blk.Offset); err != nil && size > 0 {
		return buf, fmt.Errorf("read snapshot block %d at file byte %d: %w", k, blk.Offset, err)
	}
	return buf, nil
}

// checksumError is the error of block blk whose bytes' CRC-32C is got.
func checksumError(blk BlockInfo, got uint32) error {
	return fmt.Errorf("%w: snapshot block of %s (file bytes %d to %d) checksum mismatch (index %08x, block %08x)",
		rlmm.ErrCorrupt, blk.TopicIDPartition, blk.Offset, blk.Offset+blk.Length, blk.CRC, got)
}

// ForEachBlock reads every block and checks its checksum on up to workers
// goroutines, each reusing one buffer, and calls fn with the block's index
// and bytes (valid only during the call) or with the error of reading it.
// Blocks are taken in file order; after ctx ends no block is taken and
// ForEachBlock returns ctx's error once the calls in progress returned. fn
// runs concurrently with itself.
func (r *Reader) ForEachBlock(ctx context.Context, workers int, fn func(k int, block []byte, err error)) error {
	return r.forEachBlock(ctx, workers, r.ReadBlock, fn)
}

// ForEachBlockUnchecked is ForEachBlock without the checksum check: fn
// decodes each block with DecodeBlock, which checks the checksum as it
// decodes. So each block is read once and passed over once (a restart's
// path).
func (r *Reader) ForEachBlockUnchecked(ctx context.Context, workers int, fn func(k int, block []byte, err error)) error {
	return r.forEachBlock(ctx, workers, r.ReadBlockUnchecked, fn)
}

func (r *Reader) forEachBlock(ctx context.Context, workers int, read func(int, []byte) ([]byte, error), fn func(k int, block []byte, err error)) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range max(min(workers, len(r.blocks)), 1) {
		wg.Go(func() {
			var buf []byte
			for ctx.Err() == nil {
				k := int(next.Add(1) - 1)
				if k >= len(r.blocks) {
					return
				}
				var err error
				buf, err = read(k, buf)
				fn(k, buf, err)
			}
		})
	}
	wg.Wait()
	return ctx.Err()
}

// Verify checks every block's checksum on up to workers goroutines and
// returns the error of the first bad block in file order.
func (r *Reader) Verify(ctx context.Context, workers int) error {
	errs := make([]error, len(r.blocks))
	var failed atomic.Bool
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := r.ForEachBlock(ctx, workers, func(k int, _ []byte, err error) {
		if err != nil {
			errs[k] = err
			failed.Store(true)
			cancel()
		}
	}); err != nil && !failed.Load() {
		return err
	}
	// Blocks are taken in order: every block before the first failure was
	// checked.
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

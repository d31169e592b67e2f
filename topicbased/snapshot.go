package topicbased

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/memory"
)

// SnapshotFileName is the name of the snapshot file inside Config.SnapshotDir.
const SnapshotFileName = "rlmm.snapshot"

// snapshotMagic starts every snapshot file, so a stray file is recognized as
// "not a snapshot" rather than as a corrupt one.
const snapshotMagic = "RLMMSNAP"

// snapshotVersion is the only layout this code writes and reads. A future
// layout gets a new number; an unknown number is refused (full replay).
// Version 1 (varint fields, one sequential stream) was replaced by version
// 2 (fixed-width fields, one length-prefixed block per user partition) so
// that a restart decodes and builds the partitions on every core at once.
const snapshotVersion uint16 = 2

// snapshotHeaderSize is magic(8) + version(2) + crc32c(4) + head length(8).
const snapshotHeaderSize = 8 + 2 + 4 + 8

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// snapshot is the content of a snapshot file, as written.
//
// Layout (all integers little-endian, fixed width):
//
//	header: "RLMMSNAP" | u16 version | u32 CRC-32C of the head | u64 head length
//	head:   u32 metadata partition count
//	        count × i64 committed offset (-1 = nothing of it is held)
//	        u32 user partition count, then for each:
//	          u64 block length | u32 CRC-32C of the block | u32 segments
//	          uuid(16) topic id | u32 topic length | topic | i32 partition
//	blocks: one per user partition, in the head's order, up to the end of the file
//	block:  uuid(16) topic id | u32 topic length | topic | i32 partition
//	        u32 segments | u32 extras | u32 extra epochs | u64 custom bytes
//	        segments × segment (see appendSegment)
//	        u32 highest offsets, each i32 epoch | i64 offset
//	        u8 0 (no delete state) or 1 then u8 state | i64 timestamp | i32 broker
//
// Each block has its own checksum so that the loader reads and checks the
// blocks on several goroutines, each into a buffer it reuses, instead of
// reading the whole file into fresh memory first (the page faults of that
// buffer cost as much as decoding it). The head names each block's
// partition and segment count, so that the loader can install every
// partition before decoding any block (memory.ImportLazy). The second line of a block counts
// what follows (extras: segments with an epoch list or custom metadata;
// extra epochs: the lengths of those lists summed; custom bytes: the custom
// metadata summed), so that the loader sizes the partition once; the
// decoder checks the counts against the block. The committed offset of a
// metadata partition is the offset of the last event of it that the dump
// reflects; restart resumes at committed + 1.
type snapshot struct {
	partitions int32
	committed  []int64
	states     []memory.PartitionState
}

// segmentFixedBytes is the fixed part of a segment: uuid(16) + 4 × i64 +
// 3 × i32 + 2 × u8.
const segmentFixedBytes = 16 + 4*8 + 3*4 + 2

// Bits of a segment's flags byte.
const (
	segTxnIndexEmpty = 1 << iota
	segCustom        // u32 length + custom metadata follow
	segEpochList     // u32 count + the epoch list follow (the epoch field is 0)
)

// encodeSnapshot returns the whole file content of s.
func encodeSnapshot(s *snapshot) []byte {
	headLen := 4 + 8*len(s.committed) + 4
	size := snapshotHeaderSize
	for i := range s.states {
		headLen += indexEntrySize(s.states[i].TopicIDPartition)
		size += blockSize(&s.states[i])
	}
	size += headLen
	b := make([]byte, snapshotHeaderSize, size)
	b = binary.LittleEndian.AppendUint32(b, uint32(s.partitions))
	for _, c := range s.committed {
		b = binary.LittleEndian.AppendUint64(b, uint64(c))
	}
	b = binary.LittleEndian.AppendUint32(b, uint32(len(s.states)))
	// The index entries, whose lengths and checksums are filled in below.
	entries := make([]int, len(s.states))
	for i := range s.states {
		entries[i] = len(b)
		tp := s.states[i].TopicIDPartition
		b = append(b, make([]byte, 12)...) // length and checksum
		b = binary.LittleEndian.AppendUint32(b, uint32(len(s.states[i].Segments)))
		b = append(b, tp.TopicID[:]...)
		b = binary.LittleEndian.AppendUint32(b, uint32(len(tp.Topic)))
		b = append(b, tp.Topic...)
		b = binary.LittleEndian.AppendUint32(b, uint32(tp.Partition))
	}
	for i := range s.states {
		start := len(b)
		b = appendBlock(b, &s.states[i])
		e := b[entries[i]:]
		binary.LittleEndian.PutUint64(e, uint64(len(b)-start))
		binary.LittleEndian.PutUint32(e[8:], crc32.Checksum(b[start:], crcTable))
	}
	copy(b[0:8], snapshotMagic)
	binary.LittleEndian.PutUint16(b[8:10], snapshotVersion)
	binary.LittleEndian.PutUint32(b[10:14], crc32.Checksum(b[snapshotHeaderSize:snapshotHeaderSize+headLen], crcTable))
	binary.LittleEndian.PutUint64(b[14:22], uint64(headLen))
	return b
}

// indexEntrySize is the length of tp's entry in the head's block index.
func indexEntrySize(tp rlmm.TopicIDPartition) int { return 8 + 4 + 4 + 16 + 4 + len(tp.Topic) + 4 }

// blockSize returns the length of ps's block.
func blockSize(ps *memory.PartitionState) int {
	n := 16 + 4 + len(ps.TopicIDPartition.Topic) + 4 + 4*3 + 8
	for j := range ps.Segments {
		md := &ps.Segments[j]
		n += segmentFixedBytes
		if !singleEpoch(md) {
			n += 4 + 12*len(md.LeaderEpochs)
		}
		if md.CustomMetadata != nil {
			n += 4 + len(md.CustomMetadata)
		}
	}
	n += 4 + 12*len(ps.HighestOffsets) + 1
	if ps.Delete != nil {
		n += 1 + 8 + 4
	}
	return n
}

// singleEpoch reports whether md's epochs are one epoch starting at its
// start offset: the common case, stored in the fixed part.
func singleEpoch(md *rlmm.SegmentMetadata) bool {
	return len(md.LeaderEpochs) == 1 && md.LeaderEpochs[0].StartOffset == md.StartOffset
}

// appendBlock writes ps's block.
func appendBlock(b []byte, ps *memory.PartitionState) []byte {
	tp := ps.TopicIDPartition
	b = append(b, tp.TopicID[:]...)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(tp.Topic)))
	b = append(b, tp.Topic...)
	b = binary.LittleEndian.AppendUint32(b, uint32(tp.Partition))
	z := memory.SizesOf(ps.Segments)
	b = binary.LittleEndian.AppendUint32(b, uint32(z.Segments))
	b = binary.LittleEndian.AppendUint32(b, uint32(z.Extras))
	b = binary.LittleEndian.AppendUint32(b, uint32(z.ExtraEpochs))
	b = binary.LittleEndian.AppendUint64(b, uint64(z.CustomBytes))
	for j := range ps.Segments {
		b = appendSegment(b, &ps.Segments[j])
	}
	b = binary.LittleEndian.AppendUint32(b, uint32(len(ps.HighestOffsets)))
	for _, h := range ps.HighestOffsets {
		b = binary.LittleEndian.AppendUint32(b, uint32(h.Epoch))
		b = binary.LittleEndian.AppendUint64(b, uint64(h.Offset))
	}
	if ps.Delete == nil {
		return append(b, 0)
	}
	b = append(b, 1, byte(ps.Delete.State))
	b = binary.LittleEndian.AppendUint64(b, uint64(ps.Delete.EventTimestampMs))
	return binary.LittleEndian.AppendUint32(b, uint32(ps.Delete.BrokerID))
}

// appendSegment writes one segment. Its partition is implied by the
// enclosing block, so only the segment's own id is written.
//
//	uuid(16) | i64 start | i64 end | i64 max timestamp | i64 event timestamp
//	i32 broker | i32 size | i32 epoch | u8 state | u8 flags
//	[flags&segEpochList: u32 count, each i32 epoch | i64 start offset]
//	[flags&segCustom: u32 length | custom metadata]
func appendSegment(b []byte, m *rlmm.SegmentMetadata) []byte {
	b = append(b, m.ID.ID[:]...)
	b = binary.LittleEndian.AppendUint64(b, uint64(m.StartOffset))
	b = binary.LittleEndian.AppendUint64(b, uint64(m.EndOffset))
	b = binary.LittleEndian.AppendUint64(b, uint64(m.MaxTimestampMs))
	b = binary.LittleEndian.AppendUint64(b, uint64(m.EventTimestampMs))
	b = binary.LittleEndian.AppendUint32(b, uint32(m.BrokerID))
	b = binary.LittleEndian.AppendUint32(b, uint32(m.SizeInBytes))
	var flags byte
	var epoch int32
	if single := singleEpoch(m); single {
		epoch = m.LeaderEpochs[0].Epoch
	} else {
		flags |= segEpochList
	}
	if m.TxnIndexEmpty {
		flags |= segTxnIndexEmpty
	}
	if m.CustomMetadata != nil {
		flags |= segCustom
	}
	b = binary.LittleEndian.AppendUint32(b, uint32(epoch))
	b = append(b, byte(m.State), flags)
	if flags&segEpochList != 0 {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(m.LeaderEpochs)))
		for _, e := range m.LeaderEpochs {
			b = binary.LittleEndian.AppendUint32(b, uint32(e.Epoch))
			b = binary.LittleEndian.AppendUint64(b, uint64(e.StartOffset))
		}
	}
	if flags&segCustom != 0 {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(m.CustomMetadata)))
		b = append(b, m.CustomMetadata...)
	}
	return b
}

// snapshotReader reads fixed-width fields from a part of the file; every
// read checks the bounds first, so hostile bytes produce an error naming
// the file byte, never a panic or an unbounded allocation.
type snapshotReader struct {
	b []byte
	// base is the file offset of b[0], for error messages.
	base int64
	pos  int
	err  error
}

func (r *snapshotReader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: snapshot file byte %d: %s", rlmm.ErrCorrupt, r.base+int64(r.pos), fmt.Sprintf(format, args...))
	}
}

// take returns the next n bytes, or nil (with the error set) when fewer
// remain.
func (r *snapshotReader) take(what string, n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b)-r.pos {
		r.fail("%s of %d bytes is truncated (%d left)", what, n, len(r.b)-r.pos)
		return nil
	}
	v := r.b[r.pos : r.pos+n : r.pos+n]
	r.pos += n
	return v
}

func (r *snapshotReader) u8(what string) byte {
	if v := r.take(what, 1); v != nil {
		return v[0]
	}
	return 0
}

func (r *snapshotReader) u32(what string) uint32 {
	if v := r.take(what, 4); v != nil {
		return binary.LittleEndian.Uint32(v)
	}
	return 0
}

func (r *snapshotReader) i32(what string) int32 { return int32(r.u32(what)) }

func (r *snapshotReader) u64(what string) uint64 {
	if v := r.take(what, 8); v != nil {
		return binary.LittleEndian.Uint64(v)
	}
	return 0
}

func (r *snapshotReader) i64(what string) int64 { return int64(r.u64(what)) }

func (r *snapshotReader) uuid(what string) rlmm.Uuid {
	var u rlmm.Uuid
	copy(u[:], r.take(what, 16))
	return u
}

// count reads a u32 collection length and checks that at least minBytes
// per element remain, before anything is allocated for it.
func (r *snapshotReader) count(what string, minBytes int) int {
	v := r.u32(what)
	if r.err == nil && uint64(v) > uint64(len(r.b)-r.pos)/uint64(minBytes) {
		r.fail("%s count %d exceeds the remaining %d bytes", what, v, len(r.b)-r.pos)
		return 0
	}
	return int(v)
}

// snapshotBlock locates one user partition's block in the file.
type snapshotBlock struct {
	off      int64
	size     int
	crc      uint32
	segments int
	tp       rlmm.TopicIDPartition
}

// snapshotFile is an open snapshot: its head decoded and its blocks
// located, not yet read.
type snapshotFile struct {
	r      io.ReaderAt
	closer io.Closer // nil for a file held in memory
	s      *snapshot
	blocks []snapshotBlock
}

// close closes the file.
func (f *snapshotFile) close() error {
	if f.closer == nil {
		return nil
	}
	return f.closer.Close()
}

// verify reads every block and checks its checksum, on up to GOMAXPROCS
// goroutines each reusing one buffer; the error is that of the first bad
// block in file order.
func (f *snapshotFile) verify() error {
	errs := make([]error, len(f.blocks))
	var next atomic.Int64
	var failed atomic.Bool
	var wg sync.WaitGroup
	for range max(min(runtime.GOMAXPROCS(0), len(f.blocks)), 1) {
		wg.Go(func() {
			var buf []byte
			for !failed.Load() {
				k := int(next.Add(1) - 1)
				if k >= len(f.blocks) {
					return
				}
				if buf, errs[k] = f.readBlock(k, buf, true); errs[k] != nil {
					failed.Store(true)
				}
			}
		})
	}
	wg.Wait()
	// Blocks are taken in order and none after a failure: every block
	// before the first failure was checked.
	return firstError(errs)
}

func firstError(errs []error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// blockBuffers recycles the buffers blocks are read into while partitions
// are built on first use.
var blockBuffers = sync.Pool{New: func() any { return new([]byte) }}

// builder reads block k (checking its checksum again: the file was only
// checked whole when loaded) and decodes it into a builder of its
// partition.
func (f *snapshotFile) builder(k int) (*memory.PartitionBuilder, error) {
	bp := blockBuffers.Get().(*[]byte)
	defer blockBuffers.Put(bp)
	buf, err := f.readBlock(k, *bp, true)
	*bp = buf[:0]
	if err != nil {
		return nil, err
	}
	var b *memory.PartitionBuilder
	err = decodeBlock(buf, f.blocks[k].off, f.blocks[k].expect(func(tp rlmm.TopicIDPartition, z memory.BuildSizes) (stateSink, error) {
		b = memory.NewPartitionBuilder(tp, z)
		return b, nil
	}))
	if err != nil {
		return nil, err
	}
	return b, nil
}

// openSnapshot reads and checks the header and the head of the size-byte
// snapshot r, and locates the blocks (they are read by readBlock, one block
// per goroutine if the caller likes). verify clears only for fuzzing.
func openSnapshot(r io.ReaderAt, size int64, verify bool) (*snapshotFile, error) {
	var h [snapshotHeaderSize]byte
	if size < snapshotHeaderSize {
		return nil, fmt.Errorf("%w: snapshot is %d bytes, shorter than its %d-byte header", rlmm.ErrCorrupt, size, snapshotHeaderSize)
	}
	if _, err := r.ReadAt(h[:], 0); err != nil {
		return nil, fmt.Errorf("read snapshot header: %w", err)
	}
	if string(h[0:8]) != snapshotMagic {
		return nil, fmt.Errorf("%w: not an rlmm snapshot (bad magic %q)", rlmm.ErrCorrupt, h[0:8])
	}
	if v := binary.LittleEndian.Uint16(h[8:10]); v != snapshotVersion {
		return nil, fmt.Errorf("%w: snapshot version %d, this build reads only version %d", rlmm.ErrCorrupt, v, snapshotVersion)
	}
	headLen := binary.LittleEndian.Uint64(h[14:22])
	if headLen > uint64(size-snapshotHeaderSize) {
		return nil, fmt.Errorf("%w: snapshot header says its head is %d bytes, the file has %d after the header",
			rlmm.ErrCorrupt, headLen, size-snapshotHeaderSize)
	}
	head := make([]byte, headLen)
	if _, err := r.ReadAt(head, snapshotHeaderSize); err != nil && headLen > 0 {
		return nil, fmt.Errorf("read snapshot head: %w", err)
	}
	if want, got := binary.LittleEndian.Uint32(h[10:14]), crc32.Checksum(head, crcTable); verify && want != got {
		return nil, fmt.Errorf("%w: snapshot head checksum mismatch (header %08x, head %08x)", rlmm.ErrCorrupt, want, got)
	}
	rd := &snapshotReader{b: head, base: snapshotHeaderSize}
	s := &snapshot{}
	parts := rd.count("metadata partition", 8)
	if rd.err == nil && (parts == 0 || parts > math.MaxInt32) {
		rd.fail("metadata partition count %d is invalid", parts)
	}
	if rd.err != nil {
		return nil, rd.err
	}
	s.partitions = int32(parts)
	s.committed = make([]int64, parts)
	for i := range s.committed {
		s.committed[i] = rd.i64("committed offset")
		if rd.err == nil && s.committed[i] < -1 {
			rd.fail("committed offset %d of metadata partition %d is below -1", s.committed[i], i)
		}
	}
	n := rd.count("user partition", indexEntrySize(rlmm.TopicIDPartition{}))
	blocks := make([]snapshotBlock, n)
	off := snapshotHeaderSize + int64(headLen)
	for i := range blocks {
		length, crc := rd.u64("block length"), rd.u32("block checksum")
		segments := int(rd.u32("block segments"))
		var tp rlmm.TopicIDPartition
		tp.TopicID = rd.uuid("topic id")
		tp.Topic = string(rd.take("topic name", int(rd.u32("topic name length"))))
		tp.Partition = rd.i32("partition")
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
		blocks[i] = snapshotBlock{off: off, size: int(length), crc: crc, segments: segments, tp: tp}
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
	return &snapshotFile{r: r, s: s, blocks: blocks}, nil
}

// readBlock reads block i into buf (grown if needed; the caller reuses it)
// and checks its checksum.
func (f *snapshotFile) readBlock(i int, buf []byte, verify bool) ([]byte, error) {
	blk := f.blocks[i]
	if cap(buf) < blk.size {
		buf = make([]byte, blk.size, max(blk.size, 2*cap(buf)))
	}
	buf = buf[:blk.size]
	if _, err := f.r.ReadAt(buf, blk.off); err != nil && blk.size > 0 {
		return buf, fmt.Errorf("read snapshot block %d at file byte %d: %w", i, blk.off, err)
	}
	if got := crc32.Checksum(buf, crcTable); verify && got != blk.crc {
		return buf, fmt.Errorf("%w: snapshot block %d (file bytes %d to %d) checksum mismatch (head %08x, block %08x)",
			rlmm.ErrCorrupt, i, blk.off, blk.off+int64(blk.size), blk.crc, got)
	}
	return buf, nil
}

// expect wraps a decodeBlock start function with the check that the block
// is of the partition and segment count the head gave for it.
func (blk *snapshotBlock) expect(start func(rlmm.TopicIDPartition, memory.BuildSizes) (stateSink, error)) func(rlmm.TopicIDPartition, memory.BuildSizes) (stateSink, error) {
	return func(tp rlmm.TopicIDPartition, z memory.BuildSizes) (stateSink, error) {
		if tp != blk.tp || z.Segments != blk.segments {
			return nil, fmt.Errorf("%w: snapshot block at file byte %d holds %d segments of %s, the head says %d of %s",
				rlmm.ErrCorrupt, blk.off, z.Segments, tp, blk.segments, blk.tp)
		}
		return start(tp, z)
	}
}

// stateSink receives a decoded user partition: memory.PartitionBuilder
// when loading, a collector of memory.PartitionState in the tests.
type stateSink interface {
	AddSegment(md *rlmm.SegmentMetadata) error
	AddHighestOffset(epoch int32, offset int64) error
	SetDelete(d *rlmm.PartitionDelete) error
}

// decodeBlock decodes one user partition's block into the sink that
// start returns for it (start may refuse the partition with an error). md
// passed to the sink is reused from segment to segment and its custom
// metadata aliases the file: the sink copies what it keeps.
func decodeBlock(blk []byte, base int64, start func(tp rlmm.TopicIDPartition, z memory.BuildSizes) (stateSink, error)) error {
	r := &snapshotReader{b: blk, base: base}
	var tp rlmm.TopicIDPartition
	tp.TopicID = r.uuid("topic id")
	tp.Topic = string(r.take("topic name", int(r.u32("topic name length"))))
	tp.Partition = r.i32("partition")
	var z memory.BuildSizes
	z.Segments = r.count("segment", segmentFixedBytes)
	z.Extras = r.count("extra", 4)
	z.ExtraEpochs = r.count("extra epoch", 12)
	custom := r.u64("custom bytes")
	switch {
	case r.err != nil:
		return r.err
	case z.Extras > z.Segments:
		r.fail("%d segments with extras among %d", z.Extras, z.Segments)
		return r.err
	case custom > uint64(len(r.b)-r.pos):
		r.fail("custom metadata of %d bytes exceeds the remaining %d", custom, len(r.b)-r.pos)
		return r.err
	}
	z.CustomBytes = int(custom)
	sink, err := start(tp, z)
	if err != nil {
		return err
	}
	var md rlmm.SegmentMetadata
	md.ID.TopicIDPartition = tp
	var single [1]rlmm.EpochStart
	var epochs []rlmm.EpochStart
	var got memory.BuildSizes
	for range z.Segments {
		f := r.take("segment", segmentFixedBytes)
		if f == nil {
			return r.err
		}
		_ = f[segmentFixedBytes-1]
		copy(md.ID.ID[:], f[0:16])
		md.StartOffset = int64(binary.LittleEndian.Uint64(f[16:]))
		md.EndOffset = int64(binary.LittleEndian.Uint64(f[24:]))
		md.MaxTimestampMs = int64(binary.LittleEndian.Uint64(f[32:]))
		md.EventTimestampMs = int64(binary.LittleEndian.Uint64(f[40:]))
		md.BrokerID = int32(binary.LittleEndian.Uint32(f[48:]))
		md.SizeInBytes = int32(binary.LittleEndian.Uint32(f[52:]))
		epoch := int32(binary.LittleEndian.Uint32(f[56:]))
		md.State = rlmm.SegmentState(int8(f[60]))
		flags := f[61]
		if flags&^(segTxnIndexEmpty|segCustom|segEpochList) != 0 {
			r.fail("segment %s: flags %#x has unknown bits", md.ID.ID, flags)
			return r.err
		}
		md.TxnIndexEmpty = flags&segTxnIndexEmpty != 0
		if flags&segEpochList == 0 {
			single[0] = rlmm.EpochStart{Epoch: epoch, StartOffset: md.StartOffset}
			md.LeaderEpochs = single[:]
		} else {
			n := r.count("leader epoch", 12)
			epochs = epochs[:0]
			for range n {
				epochs = append(epochs, rlmm.EpochStart{Epoch: r.i32("epoch"), StartOffset: r.i64("epoch start offset")})
			}
			md.LeaderEpochs = epochs
			if r.err == nil && (epoch != 0 || singleEpoch(&md)) {
				r.fail("segment %s: an epoch list where the single-epoch form applies", md.ID.ID)
			}
		}
		md.CustomMetadata = nil
		if flags&segCustom != 0 {
			md.CustomMetadata = r.take("custom metadata", int(r.u32("custom metadata length")))
		}
		if r.err != nil {
			return r.err
		}
		got.Segments++
		if flags&segEpochList != 0 || md.CustomMetadata != nil {
			got.Extras++
		}
		if flags&segEpochList != 0 {
			got.ExtraEpochs += len(md.LeaderEpochs)
		}
		got.CustomBytes += len(md.CustomMetadata)
		if err := sink.AddSegment(&md); err != nil {
			r.fail("%v", err)
			return r.err
		}
	}
	if got != z {
		r.fail("partition %s: the block counts %+v, its segments hold %+v", tp, z, got)
		return r.err
	}
	nHigh := r.count("highest offset", 12)
	for range nHigh {
		e, o := r.i32("epoch"), r.i64("highest offset")
		if r.err != nil {
			return r.err
		}
		if err := sink.AddHighestOffset(e, o); err != nil {
			r.fail("%v", err)
			return r.err
		}
	}
	switch flag := r.u8("delete flag"); {
	case r.err != nil:
		return r.err
	case flag == 1:
		d := rlmm.PartitionDelete{TopicIDPartition: tp}
		d.State = rlmm.PartitionDeleteState(int8(r.u8("delete state")))
		d.EventTimestampMs = r.i64("delete timestamp")
		d.BrokerID = r.i32("delete broker id")
		if r.err != nil {
			return r.err
		}
		if err := sink.SetDelete(&d); err != nil {
			r.fail("%v", err)
			return r.err
		}
	case flag != 0:
		r.fail("delete flag %d is neither 0 nor 1", flag)
		return r.err
	}
	if r.pos != len(r.b) {
		r.fail("partition %s: %d trailing bytes in its block", tp, len(r.b)-r.pos)
	}
	return r.err
}

// writeFileAtomic writes data to dir/name so that a crash leaves either the
// old file or the new one, never a mix: temp file, fsync, rename, fsync of
// the directory.
func writeFileAtomic(dir, name string, data []byte) (err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create snapshot directory: %w", err)
	}
	tmp, err := os.CreateTemp(dir, name+".*.tmp")
	if err != nil {
		return fmt.Errorf("create temporary snapshot in %s: %w", dir, err)
	}
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	if _, err = tmp.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", tmp.Name(), err)
	}
	if err = tmp.Sync(); err != nil {
		return fmt.Errorf("fsync %s: %w", tmp.Name(), err)
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("close %s: %w", tmp.Name(), err)
	}
	final := filepath.Join(dir, name)
	if err = os.Rename(tmp.Name(), final); err != nil {
		return fmt.Errorf("rename %s to %s: %w", tmp.Name(), final, err)
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open directory %s for fsync: %w", dir, err)
	}
	defer func() { _ = d.Close() }()
	if err = d.Sync(); err != nil {
		return fmt.Errorf("fsync directory %s: %w", dir, err)
	}
	return nil
}

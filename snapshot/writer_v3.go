package snapshot

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"hash"
	"hash/crc32"
	"io"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/memory"
)

// WriterV3 writes a snapshot in the older layout, version 3 (the index in
// the head, before the blocks), which builds before version 4 read: for a
// downgrade, and for tests of the version 3 reader. topicbased writes
// version 4 (Writer). Create it with NewWriterV3, call WriteBlock once per
// user partition in the order given to NewWriterV3, then Finish. It is not
// safe for concurrent use.
type WriterV3 struct {
	dst     io.WriterAt
	head    Head
	tps     []rlmm.TopicIDPartition
	blocks  []BlockInfo
	bw      *bufio.Writer
	crc     hash.Hash32
	off     int64 // file offset of the next block
	scratch []byte
	err     error
}

// NewWriterV3 returns a writer of a version 3 snapshot with h's committed offsets that
// holds exactly the user partitions tps, in that order, into dst (a file
// opened for writing, at offset 0). The committed offsets must be -1 or
// more, one per metadata partition, and tps must not repeat a partition
// (rlmm.ErrInvalidArgument).
func NewWriterV3(dst io.WriterAt, h Head, tps []rlmm.TopicIDPartition) (*WriterV3, error) {
	if h.Partitions <= 0 || int(h.Partitions) != len(h.Committed) {
		return nil, fmt.Errorf("%w: snapshot of %d metadata partitions with %d committed offsets", rlmm.ErrInvalidArgument, h.Partitions, len(h.Committed))
	}
	for i, c := range h.Committed {
		if c < -1 {
			return nil, fmt.Errorf("%w: committed offset %d of metadata partition %d is below -1", rlmm.ErrInvalidArgument, c, i)
		}
	}
	seen := make(map[rlmm.TopicIDPartition]struct{}, len(tps))
	for _, tp := range tps {
		if _, dup := seen[tp]; dup {
			return nil, fmt.Errorf("%w: snapshot: partition %s given twice", rlmm.ErrInvalidArgument, tp)
		}
		seen[tp] = struct{}{}
	}
	off := int64(HeadFirstHeaderSize + headSize(len(h.Committed), tps))
	w := &WriterV3{dst: dst, head: h, tps: tps, blocks: make([]BlockInfo, 0, len(tps)), off: off,
		crc: crc32.New(crcTable)}
	w.bw = bufio.NewWriterSize(io.NewOffsetWriter(dst, off), writeBuffer)
	return w, nil
}

// WriteBlock writes the block of the next user partition; ps must be of
// the partition NewWriterV3 was given at this place (rlmm.ErrInvalidArgument
// otherwise). ps is only read.
func (w *WriterV3) WriteBlock(ps *memory.PartitionState) error {
	if w.err != nil {
		return w.err
	}
	k := len(w.blocks)
	if k >= len(w.tps) || ps.TopicIDPartition != w.tps[k] {
		want := "none"
		if k < len(w.tps) {
			want = w.tps[k].String()
		}
		w.err = fmt.Errorf("%w: snapshot block %d is of %s, expected %s", rlmm.ErrInvalidArgument, k, ps.TopicIDPartition, want)
		return w.err
	}
	size, crc, err := writeBlock(w.bw, w.crc, &w.scratch, ps)
	if err != nil {
		w.err = fmt.Errorf("write snapshot block %d: %w", k, err)
		return w.err
	}
	w.blocks = append(w.blocks, BlockInfo{TopicIDPartition: ps.TopicIDPartition, Segments: len(ps.Segments),
		Offset: w.off, Length: size, CRC: crc})
	w.off += size
	return nil
}

// Finish flushes the blocks and writes the header and the head at the start
// of dst, after every block NewWriterV3 named was written. It returns the
// file's size; making it durable is the caller's (the file's Sync).
func (w *WriterV3) Finish() (int64, error) {
	if w.err != nil {
		return 0, w.err
	}
	if len(w.blocks) != len(w.tps) {
		w.err = fmt.Errorf("%w: snapshot finished after %d of its %d blocks", rlmm.ErrInvalidArgument, len(w.blocks), len(w.tps))
		return 0, w.err
	}
	if err := w.bw.Flush(); err != nil {
		w.err = fmt.Errorf("write snapshot blocks: %w", err)
		return 0, w.err
	}
	head := make([]byte, HeadFirstHeaderSize, HeadFirstHeaderSize+headSize(len(w.head.Committed), w.tps))
	head = append(head, w.head.LogID[:]...)
	head = binary.LittleEndian.AppendUint32(head, uint32(w.head.Partitions))
	for _, c := range w.head.Committed {
		head = binary.LittleEndian.AppendUint64(head, uint64(c))
	}
	head = binary.LittleEndian.AppendUint32(head, uint32(len(w.blocks)))
	for _, blk := range w.blocks {
		head = binary.LittleEndian.AppendUint64(head, uint64(blk.Length))
		head = binary.LittleEndian.AppendUint32(head, blk.CRC)
		head = binary.LittleEndian.AppendUint32(head, uint32(blk.Segments))
		head = appendTP(head, blk.TopicIDPartition)
	}
	copy(head[0:8], Magic)
	binary.LittleEndian.PutUint16(head[8:10], VersionHeadFirst)
	binary.LittleEndian.PutUint32(head[10:14], crc32.Checksum(head[HeadFirstHeaderSize:], crcTable))
	binary.LittleEndian.PutUint64(head[14:22], uint64(len(head)-HeadFirstHeaderSize))
	if _, err := w.dst.WriteAt(head, 0); err != nil {
		w.err = fmt.Errorf("write snapshot head: %w", err)
		return 0, w.err
	}
	w.err = fmt.Errorf("%w: snapshot writer used after Finish", rlmm.ErrInvalidArgument)
	return w.off, nil
}

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

// Head is what a snapshot records besides its blocks: the id of the log
// whose events it reflects, the metadata partition count and, per metadata
// partition, the offset of the last event its blocks reflect (-1: the
// snapshot holds nothing of it; a restart resumes at committed + 1). In a
// version 4 file it is in the footer; in older ones, in the head.
type Head struct {
	// LogID is the log's eventlog.Log.ID when the snapshot was written
	// (rlmm.ZeroUuid: unknown, as in a version 2 file).
	LogID      rlmm.Uuid
	Partitions int32
	Committed  []int64
}

// writeBuffer is the size of the buffer blocks go through: the file is
// written in pieces of this size, never held whole.
const writeBuffer = 1 << 20

// Writer writes a version 4 snapshot as one stream: the header, then each
// block as it is given, then the footer (the head and the block index) and
// the trailer. It needs to know neither the partitions nor the committed
// offsets up front, so a caller exports and writes one metadata partition
// at a time and never holds a copy of the whole cache; the writer itself
// keeps one index entry per block. Create it with NewWriter, call
// WriteBlock per user partition and SetCommitted per metadata partition
// held, in any order, then Finish. It is not safe for concurrent use.
type Writer struct {
	bw      *bufio.Writer
	head    Head
	blocks  []BlockInfo
	seen    map[rlmm.TopicIDPartition]struct{}
	crc     hash.Hash32
	off     int64 // file offset of the next block
	scratch []byte
	err     error
}

// NewWriter returns a writer of a version 4 snapshot of a log with the id
// logID (rlmm.ZeroUuid: unknown) and partitions metadata partitions (at
// least 1, rlmm.ErrInvalidArgument otherwise) into w, from w's current
// position. Every committed offset is -1 (nothing held) until SetCommitted.
// The header goes through the writer's buffer: nothing is written to w
// before the first MiB of blocks or Finish.
func NewWriter(w io.Writer, logID rlmm.Uuid, partitions int32) (*Writer, error) {
	if partitions <= 0 {
		return nil, fmt.Errorf("%w: snapshot of %d metadata partitions", rlmm.ErrInvalidArgument, partitions)
	}
	sw := &Writer{bw: bufio.NewWriterSize(w, writeBuffer),
		head: Head{LogID: logID, Partitions: partitions, Committed: make([]int64, partitions)},
		seen: make(map[rlmm.TopicIDPartition]struct{}), crc: crc32.New(crcTable), off: HeaderSize}
	for i := range sw.head.Committed {
		sw.head.Committed[i] = -1
	}
	var h [HeaderSize]byte
	copy(h[:8], Magic)
	binary.LittleEndian.PutUint16(h[8:], Version)
	if _, err := sw.bw.Write(h[:]); err != nil {
		return nil, fmt.Errorf("write snapshot header: %w", err)
	}
	return sw, nil
}

// SetCommitted records offset as the committed offset of metadata partition
// mp: the last event its blocks reflect (-1: nothing of it is held). mp
// must be a metadata partition of the snapshot and offset -1 or more
// (rlmm.ErrInvalidArgument). A later call for the same mp replaces it.
func (w *Writer) SetCommitted(mp int32, offset int64) error {
	if w.err != nil {
		return w.err
	}
	if mp < 0 || mp >= w.head.Partitions {
		return fmt.Errorf("%w: snapshot: metadata partition %d of %d", rlmm.ErrInvalidArgument, mp, w.head.Partitions)
	}
	if offset < -1 {
		return fmt.Errorf("%w: committed offset %d of metadata partition %d is below -1", rlmm.ErrInvalidArgument, offset, mp)
	}
	w.head.Committed[mp] = offset
	return nil
}

// WriteBlock writes the block of ps's user partition, which no earlier
// block may be of (rlmm.ErrInvalidArgument). ps is only read, and may be
// reused or dropped once WriteBlock returns. An error of the underlying
// writer is returned, and every later call returns it too.
func (w *Writer) WriteBlock(ps *memory.PartitionState) error {
	if w.err != nil {
		return w.err
	}
	if _, dup := w.seen[ps.TopicIDPartition]; dup {
		return fmt.Errorf("%w: snapshot: partition %s given twice", rlmm.ErrInvalidArgument, ps.TopicIDPartition)
	}
	size, crc, err := writeBlock(w.bw, w.crc, &w.scratch, ps)
	if err != nil {
		w.err = fmt.Errorf("write snapshot block %d: %w", len(w.blocks), err)
		return w.err
	}
	w.seen[ps.TopicIDPartition] = struct{}{}
	w.blocks = append(w.blocks, BlockInfo{TopicIDPartition: ps.TopicIDPartition, Segments: len(ps.Segments),
		Offset: w.off, Length: size, CRC: crc})
	w.off += size
	return nil
}

// Blocks returns how many blocks were written so far.
func (w *Writer) Blocks() int { return len(w.blocks) }

// Finish writes the footer (the head and the block index) and the trailer,
// flushes the buffer and returns the file's size; making it durable is the
// caller's (the file's Sync). The writer cannot be used afterwards.
func (w *Writer) Finish() (int64, error) {
	if w.err != nil {
		return 0, w.err
	}
	footerOff := w.off
	w.crc.Reset()
	var footerLen int64
	put := func(b []byte) {
		if w.err != nil {
			return
		}
		_, _ = w.crc.Write(b)
		n, err := w.bw.Write(b)
		footerLen += int64(n)
		if err != nil {
			w.err = fmt.Errorf("write snapshot footer: %w", err)
		}
	}
	b := append(w.scratch[:0], w.head.LogID[:]...)
	b = binary.LittleEndian.AppendUint32(b, uint32(w.head.Partitions))
	for _, c := range w.head.Committed {
		b = binary.LittleEndian.AppendUint64(b, uint64(c))
	}
	b = binary.LittleEndian.AppendUint32(b, uint32(len(w.blocks)))
	put(b)
	for _, blk := range w.blocks {
		b = binary.LittleEndian.AppendUint64(b[:0], uint64(blk.Offset))
		b = binary.LittleEndian.AppendUint64(b, uint64(blk.Length))
		b = binary.LittleEndian.AppendUint32(b, blk.CRC)
		b = binary.LittleEndian.AppendUint32(b, uint32(blk.Segments))
		b = appendTP(b, blk.TopicIDPartition)
		put(b)
	}
	b = binary.LittleEndian.AppendUint64(b[:0], uint64(footerOff))
	b = binary.LittleEndian.AppendUint64(b, uint64(footerLen))
	b = binary.LittleEndian.AppendUint32(b, w.crc.Sum32())
	b = append(b, Magic...)
	w.scratch = b
	if w.err == nil {
		if _, err := w.bw.Write(b); err != nil {
			w.err = fmt.Errorf("write snapshot trailer: %w", err)
		}
	}
	if w.err == nil {
		if err := w.bw.Flush(); err != nil {
			w.err = fmt.Errorf("write snapshot: %w", err)
		}
	}
	if w.err != nil {
		return 0, w.err
	}
	w.err = fmt.Errorf("%w: snapshot writer used after Finish", rlmm.ErrInvalidArgument)
	return footerOff + footerLen + TrailerSize, nil
}

// writeBlock encodes ps's block into bw, one segment at a time through
// *scratch, and returns its length and CRC-32C (crc is reset first).
func writeBlock(bw *bufio.Writer, crc hash.Hash32, scratch *[]byte, ps *memory.PartitionState) (int64, uint32, error) {
	crc.Reset()
	var size int64
	put := func(b []byte) error {
		_, _ = crc.Write(b)
		n, err := bw.Write(b)
		size += int64(n)
		return err
	}
	*scratch = appendBlockHead((*scratch)[:0], ps)
	if err := put(*scratch); err != nil {
		return 0, 0, err
	}
	for j := range ps.Segments {
		*scratch = appendSegment((*scratch)[:0], &ps.Segments[j])
		if err := put(*scratch); err != nil {
			return 0, 0, err
		}
	}
	*scratch = appendBlockTail((*scratch)[:0], ps)
	if err := put(*scratch); err != nil {
		return 0, 0, err
	}
	return size, crc.Sum32(), nil
}

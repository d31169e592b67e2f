package topicbased

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
	"os"
	"path/filepath"

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
const snapshotVersion uint16 = 1

// snapshotHeaderSize is magic(8) + version(2) + crc32c(4) + payload length(8).
const snapshotHeaderSize = 8 + 2 + 4 + 8

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// snapshot is the decoded content of a snapshot file.
//
// Layout (all integers little-endian or varints):
//
//	header:  "RLMMSNAP" | uint16 version | uint32 CRC-32C of the payload | uint64 payload length
//	payload: uvarint partition count
//	         partition count × varint committed offset (-1 = nothing of it is held)
//	         uvarint number of user partitions, each:
//	           uuid(16) topic id | uvarint len + topic | varint partition
//	           uvarint segments, each a segment (see appendSegment)
//	           uvarint highest offsets, each varint epoch | varint offset
//	           byte 0 (no delete state) or 1 then byte state | varint ts | varint broker
//
// The committed offset of a metadata partition is the offset of the last
// event of it that the dump reflects; restart resumes at committed + 1.
type snapshot struct {
	partitions int32
	committed  []int64
	states     []memory.PartitionState
}

// encodeSnapshot returns the whole file content of s.
func encodeSnapshot(s *snapshot) []byte {
	// A rough size hint saves most regrowth for large caches.
	hint := snapshotHeaderSize + 16 + 10*len(s.committed)
	for i := range s.states {
		hint += 64 + 96*len(s.states[i].Segments)
	}
	b := make([]byte, snapshotHeaderSize, hint)
	b = binary.AppendUvarint(b, uint64(s.partitions))
	for _, c := range s.committed {
		b = binary.AppendVarint(b, c)
	}
	b = binary.AppendUvarint(b, uint64(len(s.states)))
	for i := range s.states {
		ps := &s.states[i]
		b = appendTopicIDPartition(b, ps.TopicIDPartition)
		b = binary.AppendUvarint(b, uint64(len(ps.Segments)))
		for j := range ps.Segments {
			b = appendSegment(b, &ps.Segments[j])
		}
		b = binary.AppendUvarint(b, uint64(len(ps.HighestOffsets)))
		for _, h := range ps.HighestOffsets {
			b = binary.AppendVarint(b, int64(h.Epoch))
			b = binary.AppendVarint(b, h.Offset)
		}
		if ps.Delete == nil {
			b = append(b, 0)
		} else {
			b = append(b, 1, byte(ps.Delete.State))
			b = binary.AppendVarint(b, ps.Delete.EventTimestampMs)
			b = binary.AppendVarint(b, int64(ps.Delete.BrokerID))
		}
	}
	copy(b[0:8], snapshotMagic)
	binary.LittleEndian.PutUint16(b[8:10], snapshotVersion)
	payload := b[snapshotHeaderSize:]
	binary.LittleEndian.PutUint32(b[10:14], crc32.Checksum(payload, crcTable))
	binary.LittleEndian.PutUint64(b[14:22], uint64(len(payload)))
	return b
}

func appendTopicIDPartition(b []byte, tp rlmm.TopicIDPartition) []byte {
	b = append(b, tp.TopicID[:]...)
	b = binary.AppendUvarint(b, uint64(len(tp.Topic)))
	b = append(b, tp.Topic...)
	return binary.AppendVarint(b, int64(tp.Partition))
}

// appendSegment writes one segment. Its partition is implied by the
// enclosing user partition, so only the segment's own id is written.
//
//	uuid(16) | varint start | varint end | varint maxTs | varint broker | varint eventTs
//	uvarint epochs, each varint epoch | varint start offset
//	varint size | byte state | byte flags (1 = txn index empty, 2 = custom metadata present)
//	[uvarint len + custom metadata bytes]
func appendSegment(b []byte, m *rlmm.SegmentMetadata) []byte {
	b = append(b, m.ID.ID[:]...)
	b = binary.AppendVarint(b, m.StartOffset)
	b = binary.AppendVarint(b, m.EndOffset)
	b = binary.AppendVarint(b, m.MaxTimestampMs)
	b = binary.AppendVarint(b, int64(m.BrokerID))
	b = binary.AppendVarint(b, m.EventTimestampMs)
	b = binary.AppendUvarint(b, uint64(len(m.LeaderEpochs)))
	for _, e := range m.LeaderEpochs {
		b = binary.AppendVarint(b, int64(e.Epoch))
		b = binary.AppendVarint(b, e.StartOffset)
	}
	b = binary.AppendVarint(b, int64(m.SizeInBytes))
	var flags byte
	if m.TxnIndexEmpty {
		flags |= 1
	}
	if m.CustomMetadata != nil {
		flags |= 2
	}
	b = append(b, byte(m.State), flags)
	if m.CustomMetadata != nil {
		b = binary.AppendUvarint(b, uint64(len(m.CustomMetadata)))
		b = append(b, m.CustomMetadata...)
	}
	return b
}

// minSegmentBytes is the least a segment takes in the payload: 16 + 6
// varints + one epoch (2) + size, state, flags (3) bytes.
const minSegmentBytes = 27

// snapshotReader decodes the payload; every read checks the bounds first, so
// hostile bytes produce an error, never a panic or an unbounded allocation.
//
// The states it decodes alias the payload (custom metadata) and the
// reader's carving buffers (segments, epochs): memory.Import copies what it
// keeps, so the loader hands the buffers back with recycle once a chunk is
// imported, and decoding the next chunk allocates nothing per segment.
type snapshotReader struct {
	b   []byte
	pos int
	err error
	// slab and segs are carved into the decoded states' LeaderEpochs and
	// Segments; recycle rewinds them for reuse.
	slab []rlmm.EpochStart
	segs []rlmm.SegmentMetadata
}

// recycle makes the reader carve the next states from slab and segs again
// (the buffers of states that are no longer used).
func (r *snapshotReader) recycle(slab []rlmm.EpochStart, segs []rlmm.SegmentMetadata) {
	r.slab, r.segs = slab[:0], segs[:0]
}

func (r *snapshotReader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: snapshot payload byte %d: %s", rlmm.ErrCorrupt, r.pos, fmt.Sprintf(format, args...))
	}
}

func (r *snapshotReader) uvarint(what string) uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b[r.pos:])
	if n <= 0 {
		r.fail("bad %s varint", what)
		return 0
	}
	r.pos += n
	return v
}

func (r *snapshotReader) varint(what string) int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b[r.pos:])
	if n <= 0 {
		r.fail("bad %s varint", what)
		return 0
	}
	r.pos += n
	return v
}

func (r *snapshotReader) int32v(what string) int32 {
	v := r.varint(what)
	if v < math.MinInt32 || v > math.MaxInt32 {
		r.fail("%s %d out of int32 range", what, v)
		return 0
	}
	return int32(v)
}

// count reads a collection length and checks that at least min bytes per
// element remain, before anything is allocated for it.
func (r *snapshotReader) count(what string, minBytes int) int {
	v := r.uvarint(what)
	if r.err != nil {
		return 0
	}
	if v > uint64(len(r.b)-r.pos)/uint64(minBytes) {
		r.fail("%s count %d exceeds the remaining %d bytes", what, v, len(r.b)-r.pos)
		return 0
	}
	return int(v)
}

func (r *snapshotReader) bytes(what string, n int) []byte {
	if r.err != nil {
		return nil
	}
	if n > len(r.b)-r.pos {
		r.fail("%s of %d bytes is truncated", what, n)
		return nil
	}
	v := r.b[r.pos : r.pos+n : r.pos+n]
	r.pos += n
	return v
}

func (r *snapshotReader) byte1(what string) byte {
	v := r.bytes(what, 1)
	if v == nil {
		return 0
	}
	return v[0]
}

func (r *snapshotReader) uuid(what string) rlmm.Uuid {
	var u rlmm.Uuid
	copy(u[:], r.bytes(what, 16))
	return u
}

// decodeSnapshot checks the header and checksum and decodes the payload.
// Every failure wraps rlmm.ErrCorrupt and says what was wrong.
func decodeSnapshot(file []byte) (*snapshot, error) {
	r, s, n, err := openSnapshot(file)
	if err != nil {
		return nil, err
	}
	s.states = make([]memory.PartitionState, n)
	for i := range s.states {
		if err := r.partitionState(&s.states[i]); err != nil {
			return nil, err
		}
	}
	if err := r.end(); err != nil {
		return nil, err
	}
	return s, nil
}

// openSnapshot checks the header and checksum and decodes the partition
// count and committed offsets; the n user partition states follow, read one
// by one with partitionState, then end.
func openSnapshot(file []byte) (r *snapshotReader, s *snapshot, n int, err error) {
	if len(file) < snapshotHeaderSize {
		return nil, nil, 0, fmt.Errorf("%w: snapshot is %d bytes, shorter than its %d-byte header", rlmm.ErrCorrupt, len(file), snapshotHeaderSize)
	}
	if string(file[0:8]) != snapshotMagic {
		return nil, nil, 0, fmt.Errorf("%w: not an rlmm snapshot (bad magic %q)", rlmm.ErrCorrupt, file[0:8])
	}
	if v := binary.LittleEndian.Uint16(file[8:10]); v != snapshotVersion {
		return nil, nil, 0, fmt.Errorf("%w: snapshot version %d, this build reads only version %d", rlmm.ErrCorrupt, v, snapshotVersion)
	}
	payload := file[snapshotHeaderSize:]
	if n := binary.LittleEndian.Uint64(file[14:22]); n != uint64(len(payload)) {
		return nil, nil, 0, fmt.Errorf("%w: snapshot header says %d payload bytes, the file has %d", rlmm.ErrCorrupt, n, len(payload))
	}
	if want, got := binary.LittleEndian.Uint32(file[10:14]), crc32.Checksum(payload, crcTable); want != got {
		return nil, nil, 0, fmt.Errorf("%w: snapshot checksum mismatch (header %08x, payload %08x)", rlmm.ErrCorrupt, want, got)
	}
	r = &snapshotReader{b: payload}
	s = &snapshot{}
	parts := r.uvarint("partition count")
	if r.err == nil && (parts == 0 || parts > math.MaxInt32 || parts > uint64(len(payload))) {
		r.fail("partition count %d is invalid", parts)
	}
	if r.err != nil {
		return nil, nil, 0, r.err
	}
	s.partitions = int32(parts)
	s.committed = make([]int64, parts)
	for i := range s.committed {
		s.committed[i] = r.varint("committed offset")
		if r.err == nil && s.committed[i] < -1 {
			r.fail("committed offset %d of metadata partition %d is below -1", s.committed[i], i)
		}
	}
	// 16 uuid + 1 topic length + 1 partition + 1 + 1 + 1 counts and flag.
	n = r.count("user partition", 21)
	if r.err != nil {
		return nil, nil, 0, r.err
	}
	return r, s, n, nil
}

// end checks that the whole payload was read.
func (r *snapshotReader) end() error {
	if r.err == nil && r.pos != len(r.b) {
		r.fail("%d trailing bytes", len(r.b)-r.pos)
	}
	return r.err
}

// partitionState decodes the next user partition state into ps.
func (r *snapshotReader) partitionState(ps *memory.PartitionState) error {
	ps.TopicIDPartition.TopicID = r.uuid("topic id")
	tlen := r.count("topic name", 1)
	ps.TopicIDPartition.Topic = string(r.bytes("topic name", tlen))
	ps.TopicIDPartition.Partition = r.int32v("partition")
	nSegs := r.count("segment", minSegmentBytes)
	if nSegs > 0 {
		ps.Segments = r.segments(nSegs)
	}
	for j := 0; j < nSegs && r.err == nil; j++ {
		readSegment(r, &ps.Segments[j], ps.TopicIDPartition)
	}
	nHigh := r.count("highest offset", 2)
	if nHigh > 0 {
		ps.HighestOffsets = make([]memory.EpochOffset, nHigh)
	}
	for j := 0; j < nHigh && r.err == nil; j++ {
		ps.HighestOffsets[j] = memory.EpochOffset{Epoch: r.int32v("epoch"), Offset: r.varint("highest offset")}
	}
	switch flag := r.byte1("delete flag"); {
	case r.err != nil:
	case flag == 1:
		d := &rlmm.PartitionDelete{TopicIDPartition: ps.TopicIDPartition}
		d.State = rlmm.PartitionDeleteState(int8(r.byte1("delete state")))
		d.EventTimestampMs = r.varint("delete timestamp")
		d.BrokerID = r.int32v("delete broker id")
		if r.err == nil {
			if err := d.Validate(); err != nil {
				r.fail("partition %s: %v", ps.TopicIDPartition, err)
			}
		}
		ps.Delete = d
	case flag != 0:
		r.fail("delete flag %d is neither 0 nor 1", flag)
	}
	return r.err
}

// epochs returns a slice of n epochs carved from a shared slab: one
// allocation per few thousand segments instead of one per segment.
func (r *snapshotReader) epochs(n int) []rlmm.EpochStart {
	if cap(r.slab)-len(r.slab) < n {
		r.slab = make([]rlmm.EpochStart, 0, max(4096, n))
	}
	start := len(r.slab)
	r.slab = r.slab[:start+n]
	return r.slab[start : start+n : start+n]
}

// segments returns a slice of n segments carved from the reader's buffer,
// which grows (by a new one: slices carved before stay valid) when it is
// full. The segments may hold a previous chunk's values: readSegment sets
// every field.
func (r *snapshotReader) segments(n int) []rlmm.SegmentMetadata {
	if cap(r.segs)-len(r.segs) < n {
		// Room for a loader's chunk, but no more than the rest of the
		// payload can hold (a small snapshot gets a small buffer).
		room := min(snapshotChunkSegments+n, (len(r.b)-r.pos)/minSegmentBytes+1)
		r.segs = make([]rlmm.SegmentMetadata, 0, max(len(r.segs)+n, room))
	}
	start := len(r.segs)
	r.segs = r.segs[:start+n]
	return r.segs[start : start+n : start+n]
}

// readSegment decodes the next segment into m, setting every field (m may
// be a recycled one). Its custom metadata aliases the payload.
func readSegment(r *snapshotReader, m *rlmm.SegmentMetadata, tp rlmm.TopicIDPartition) {
	m.ID = rlmm.SegmentID{TopicIDPartition: tp, ID: r.uuid("segment id")}
	m.StartOffset = r.varint("start offset")
	m.EndOffset = r.varint("end offset")
	m.MaxTimestampMs = r.varint("max timestamp")
	m.BrokerID = r.int32v("broker id")
	m.EventTimestampMs = r.varint("event timestamp")
	nEpochs := r.count("leader epoch", 2)
	m.LeaderEpochs = nil
	if nEpochs > 0 {
		m.LeaderEpochs = r.epochs(nEpochs)
	}
	for k := 0; k < nEpochs && r.err == nil; k++ {
		m.LeaderEpochs[k] = rlmm.EpochStart{Epoch: r.int32v("epoch"), StartOffset: r.varint("epoch start offset")}
	}
	m.SizeInBytes = r.int32v("segment size")
	m.State = rlmm.SegmentState(int8(r.byte1("segment state")))
	flags := r.byte1("segment flags")
	if r.err == nil && flags&^3 != 0 {
		r.fail("segment flags %#x has unknown bits", flags)
	}
	m.TxnIndexEmpty = flags&1 != 0
	m.CustomMetadata = nil
	if flags&2 != 0 {
		n := r.count("custom metadata", 1)
		m.CustomMetadata = r.bytes("custom metadata", n)
	}
	if r.err == nil {
		if err := m.Validate(); err != nil {
			r.fail("segment %s: %v", m.ID, err)
		}
	}
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

package filelog

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"

	"github.com/rlmm-go/rlmm"
)

// On-disk names and constants.
const (
	manifestName  = "MANIFEST"
	lockName      = "LOCK"
	formatName    = "rlmm-filelog"
	formatVersion = 1

	segmentSuffix = ".seg"
	journalPrefix = "journal-"
	journalSuffix = ".wal"
	tmpSuffix     = ".tmp"

	// frameHeaderSize is the length (uint32) and the CRC32C (uint32) that
	// precede every payload.
	frameHeaderSize = 8
	// journalRecordPrefix is the partition (uint32) and offset (uint64) at
	// the start of a journal record's payload.
	journalRecordPrefix = 12

	journalMagic = "RLMMJRN1"
)

// MaxRecordBytes is the largest value Publish accepts: Kafka's default
// max.message.bytes is about the same, and the bound keeps the torn-write
// window of the journal (see the package doc) small.
const MaxRecordBytes = 1 << 20

// maxBatchBytes bounds the journal bytes one group commit writes between two
// fsyncs. It is a variable so tests can shrink it. Recovery relies on it: a
// bad journal frame with more than maxTornBytes() after it cannot be a torn
// write.
var maxBatchBytes = 4 << 20

// maxTornBytes is the most bytes a crash can leave unsynced at the end of the
// journal: one batch plus one oversized record.
func maxTornBytes() int64 {
	return int64(maxBatchBytes) + MaxRecordBytes + frameHeaderSize + journalRecordPrefix
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// frameCRC is the CRC32C of a frame: the salt (a segment record's offset, or
// a journal's sequence number), the payload length and the payload. The salt
// makes a record copied to the wrong place fail its check.
func frameCRC(salt uint64, payload []byte) uint32 {
	// The 12 bytes of salt and length go through the table by hand, which
	// is what crc32.Update does, because a slice handed to crc32.Update
	// escapes: one allocation per record otherwise.
	c := ^uint32(0)
	for i := range 8 {
		c = castagnoli[byte(c)^byte(salt>>(8*i))] ^ (c >> 8)
	}
	n := uint32(len(payload))
	for i := range 4 {
		c = castagnoli[byte(c)^byte(n>>(8*i))] ^ (c >> 8)
	}
	return crc32.Update(^c, castagnoli, payload)
}

// appendFrame appends a frame of payload to dst.
func appendFrame(dst []byte, salt uint64, payload []byte) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(payload)))
	dst = binary.LittleEndian.AppendUint32(dst, frameCRC(salt, payload))
	return append(dst, payload...)
}

// frameError describes why the frame at a byte offset is bad. It wraps
// rlmm.ErrCorrupt. Truncated is true when the frame runs past the end of the
// data (what an interrupted write leaves), false for a checksum or length
// that is wrong.
type frameError struct {
	Pos       int64
	Truncated bool
	Reason    string
}

func (e *frameError) Error() string {
	return fmt.Sprintf("%s at byte %d: %s", rlmm.ErrCorrupt, e.Pos, e.Reason)
}

func (e *frameError) Unwrap() error { return rlmm.ErrCorrupt }

// readFrame decodes the frame at data[pos:] with the given salt and returns
// its payload (a sub-slice of data) and the position after it.
func readFrame(data []byte, pos int64, salt uint64) (payload []byte, next int64, err error) {
	rest := int64(len(data)) - pos
	if rest < frameHeaderSize {
		return nil, pos, &frameError{Pos: pos, Truncated: true, Reason: fmt.Sprintf("%d bytes left, a record header needs %d", rest, frameHeaderSize)}
	}
	next, err = frameEnd(data, pos)
	if err != nil {
		return nil, pos, err
	}
	want := binary.LittleEndian.Uint32(data[pos+4:])
	payload = data[pos+frameHeaderSize : next]
	if got := frameCRC(salt, payload); got != want {
		return nil, pos, &frameError{Pos: pos, Reason: fmt.Sprintf("checksum %08x, stored %08x", got, want)}
	}
	return payload, next, nil
}

// frameEnd checks the frame at data[pos:] as readFrame does except for its
// checksum (the header, the length against the limit and against what is
// left) and returns the position after it.
func frameEnd(data []byte, pos int64) (next int64, err error) {
	rest := int64(len(data)) - pos
	if rest < frameHeaderSize {
		return pos, &frameError{Pos: pos, Truncated: true, Reason: fmt.Sprintf("%d bytes left, a record header needs %d", rest, frameHeaderSize)}
	}
	n := int64(binary.LittleEndian.Uint32(data[pos:]))
	if n > MaxRecordBytes+journalRecordPrefix+int64(8*maxPartitions) {
		return pos, &frameError{Pos: pos, Reason: fmt.Sprintf("record length %d exceeds the limit", n)}
	}
	if n > rest-frameHeaderSize {
		return pos, &frameError{Pos: pos, Truncated: true, Reason: fmt.Sprintf("record length %d but only %d bytes left", n, rest-frameHeaderSize)}
	}
	return pos + frameHeaderSize + n, nil
}

// indexFrames is scanSegment without the checksums, for the index of a
// segment that is read after Open (Log.read checks the checksum of every
// record it returns, so checking it while indexing too checked every
// record of a replay twice): it follows the frames' lengths, appends each
// record's byte position to pos, and stops at the first frame whose
// header or length is bad, returning the records indexed, the position
// after the last of them and the *frameError.
func indexFrames(data []byte, pos []uint32) ([]uint32, int64, int64, error) {
	var at, count int64
	for at < int64(len(data)) {
		next, err := frameEnd(data, at)
		if err != nil {
			return pos, count, at, err
		}
		pos = append(pos, uint32(at))
		count++
		at = next
	}
	return pos, count, at, nil
}

// scanSegment walks the records of a segment whose first offset is base. It
// calls fn (if not nil) with each record's offset, byte position and value,
// and stops at the first bad frame, returning the number of good records,
// the byte position after the last good one and the error (a *frameError,
// wrapping rlmm.ErrCorrupt) if a bad frame was found.
func scanSegment(data []byte, base int64, fn func(offset, pos int64, value []byte)) (count int64, end int64, err error) {
	var pos int64
	for pos < int64(len(data)) {
		off := base + count
		payload, next, err := readFrame(data, pos, uint64(off))
		if err != nil {
			return count, pos, err
		}
		if fn != nil {
			fn(off, pos, payload)
		}
		count++
		pos = next
	}
	return count, pos, nil
}

// journalRecord is one decoded journal record.
type journalRecord struct {
	partition int32
	offset    int64
	value     []byte
	pos       int64
}

// appendJournalRecord appends the journal frame of (partition, offset, value).
func appendJournalRecord(dst []byte, seq uint64, partition int32, offset int64, value []byte) []byte {
	n := journalRecordPrefix + len(value)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(n))
	crcAt := len(dst)
	dst = binary.LittleEndian.AppendUint32(dst, 0)
	start := len(dst)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(partition))
	dst = binary.LittleEndian.AppendUint64(dst, uint64(offset))
	dst = append(dst, value...)
	binary.LittleEndian.PutUint32(dst[crcAt:], frameCRC(seq, dst[start:]))
	return dst
}

// journalHeader is the first frame of a journal file: the checkpoint it
// starts from. Every record of partition p below Checkpoint[p] was fsynced to
// p's segments before this journal was made durable. At that moment p's
// last segment started at offset SegmentBase[p] and held SegmentBytes[p]
// bytes, so Open can scan that segment from there instead of from its
// start (nil slices mean zeros).
type journalHeader struct {
	Seq          uint64
	Checkpoint   []int64
	SegmentBase  []int64
	SegmentBytes []int64
}

// journalHeaderEntry is the bytes per partition in a journal header.
const journalHeaderEntry = 24

func appendJournalHeader(dst []byte, h journalHeader) []byte {
	at := func(s []int64, i int) uint64 {
		if i < len(s) {
			return uint64(s[i])
		}
		return 0
	}
	payload := make([]byte, 0, len(journalMagic)+12+journalHeaderEntry*len(h.Checkpoint))
	payload = append(payload, journalMagic...)
	payload = binary.LittleEndian.AppendUint64(payload, h.Seq)
	payload = binary.LittleEndian.AppendUint32(payload, uint32(len(h.Checkpoint)))
	for i := range h.Checkpoint {
		payload = binary.LittleEndian.AppendUint64(payload, at(h.Checkpoint, i))
		payload = binary.LittleEndian.AppendUint64(payload, at(h.SegmentBase, i))
		payload = binary.LittleEndian.AppendUint64(payload, at(h.SegmentBytes, i))
	}
	return appendFrame(dst, h.Seq, payload)
}

// readJournal decodes a journal file: its header, then records until the
// first bad frame. It returns the records, the byte position after the last
// good frame and the error of the bad frame, if any (a *frameError).
// A bad header is an error that is not a *frameError.
func readJournal(data []byte, seq uint64, partitions int32) (journalHeader, []journalRecord, int64, error) {
	var h journalHeader
	payload, pos, err := readFrame(data, 0, seq)
	if err != nil {
		return h, nil, 0, fmt.Errorf("journal header: %w", err)
	}
	if len(payload) < len(journalMagic)+12 || string(payload[:len(journalMagic)]) != journalMagic {
		return h, nil, 0, fmt.Errorf("journal header: bad magic: %w", rlmm.ErrCorrupt)
	}
	p := payload[len(journalMagic):]
	h.Seq = binary.LittleEndian.Uint64(p)
	n := binary.LittleEndian.Uint32(p[8:])
	p = p[12:]
	if h.Seq != seq {
		return h, nil, 0, fmt.Errorf("journal header: sequence %d, file name says %d: %w", h.Seq, seq, rlmm.ErrCorrupt)
	}
	if int64(n) != int64(partitions) || len(p) != journalHeaderEntry*int(n) {
		return h, nil, 0, fmt.Errorf("journal header: %d partitions (%d bytes), manifest says %d: %w", n, len(p), partitions, rlmm.ErrCorrupt)
	}
	h.Checkpoint = make([]int64, n)
	h.SegmentBase = make([]int64, n)
	h.SegmentBytes = make([]int64, n)
	for i := range h.Checkpoint {
		e := p[journalHeaderEntry*i:]
		c := int64(binary.LittleEndian.Uint64(e))
		base := int64(binary.LittleEndian.Uint64(e[8:]))
		size := int64(binary.LittleEndian.Uint64(e[16:]))
		if c < 0 || base < 0 || base > c || size < 0 {
			return h, nil, 0, fmt.Errorf("journal header: partition %d checkpoint offset %d, segment %d, %d bytes: impossible: %w", i, c, base, size, rlmm.ErrCorrupt)
		}
		h.Checkpoint[i], h.SegmentBase[i], h.SegmentBytes[i] = c, base, size
	}
	var recs []journalRecord
	for pos < int64(len(data)) {
		payload, next, err := readFrame(data, pos, seq)
		if err == nil && len(payload) < journalRecordPrefix {
			err = &frameError{Pos: pos, Reason: fmt.Sprintf("journal record of %d bytes is shorter than its %d-byte prefix", len(payload), journalRecordPrefix)}
		}
		if err != nil {
			return h, recs, pos, err
		}
		r := journalRecord{
			partition: int32(binary.LittleEndian.Uint32(payload)),
			offset:    int64(binary.LittleEndian.Uint64(payload[4:])),
			value:     payload[journalRecordPrefix:],
			pos:       pos,
		}
		if r.partition < 0 || r.partition >= partitions || r.offset < 0 {
			return h, recs, pos, &frameError{Pos: pos, Reason: fmt.Sprintf("journal record names partition %d offset %d, outside the log", r.partition, r.offset)}
		}
		recs = append(recs, r)
		pos = next
	}
	return h, recs, pos, nil
}

// maxPartitions bounds the partition count a manifest may declare, so a
// damaged manifest cannot make Open allocate without bound.
const maxPartitions = 1 << 16

// manifest is the MANIFEST file: what the directory is.
type manifest struct {
	Format     string `json:"format"`
	Version    int    `json:"version"`
	Partitions int32  `json:"partitions"`
	// ID is the log's identity (eventlog.Log.ID), random at creation.
	// Absent in a manifest written before logs had one: the log's id is
	// then rlmm.ZeroUuid, and the format version is unchanged because an
	// older build ignores the field.
	ID *rlmm.Uuid `json:"id,omitempty"`
}

func encodeManifest(m manifest) []byte {
	b, _ := json.MarshalIndent(m, "", "  ")
	return append(b, '\n')
}

func decodeManifest(path string, data []byte) (manifest, error) {
	var m manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return m, fmt.Errorf("filelog: manifest %s: %v: %w", path, err, rlmm.ErrCorrupt)
	}
	switch {
	case m.Format != formatName:
		return m, fmt.Errorf("filelog: manifest %s: format %q, want %q: %w", path, m.Format, formatName, rlmm.ErrCorrupt)
	case m.Version != formatVersion:
		return m, fmt.Errorf("filelog: manifest %s: format version %d, this build reads version %d: %w", path, m.Version, formatVersion, rlmm.ErrCorrupt)
	case m.Partitions < 1 || m.Partitions > maxPartitions:
		return m, fmt.Errorf("filelog: manifest %s: partition count %d outside [1, %d]: %w", path, m.Partitions, maxPartitions, rlmm.ErrCorrupt)
	}
	return m, nil
}

// isFrameError reports whether err is a bad frame, and returns it.
func isFrameError(err error) (*frameError, bool) {
	var fe *frameError
	ok := errors.As(err, &fe)
	return fe, ok
}

package rebuild

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/rlmm-go/rlmm"
)

// The parts of Kafka's record batch (magic 2) and message (magic 0 and 1)
// headers that ReadLogSummary reads. Both start with an 8-byte offset and a
// 4-byte length of what follows, and hold the magic byte at byte 16.
const (
	logOverhead = 12 // offset, length
	magicAt     = 16
	// Magic 2: partitionLeaderEpoch at 12, lastOffsetDelta at 23,
	// maxTimestamp at 35; the header is 61 bytes.
	v2EpochAt       = 12
	v2LastDeltaAt   = 23
	v2MaxTimeAt     = 35
	v2HeaderBytes   = 61
	v2MinLength     = v2HeaderBytes - logOverhead
	v1TimestampAt   = 18 // after crc (12), magic (16), attributes (17)
	v1MinLength     = 4 + 1 + 1 + 8 + 4 + 4
	v0MinLength     = 4 + 1 + 1 + 4 + 4
	readHeaderBytes = v2HeaderBytes
)

// LogSummary is what the record batch headers of a segment's log file say.
type LogSummary struct {
	// FirstOffset is the first batch's base offset (for a magic 0 or 1
	// message: its offset, the last inner offset when compressed).
	FirstOffset int64
	// LastOffset is the last batch's last offset (base offset plus last
	// offset delta; a message's offset for magic 0 and 1).
	LastOffset int64
	// MaxTimestampMs is the largest batch max timestamp (magic 2) or message
	// timestamp (magic 1); -1 when no batch has one (magic 0 only).
	MaxTimestampMs int64
	// Batches counts the batches (messages for magic 0 and 1).
	Batches int
	// Epochs are the leader epochs of the magic 2 batches, each with the
	// base offset of its first batch, in file order (batches with no epoch,
	// -1, are left out).
	Epochs []rlmm.EpochStart
	// OldFormat is set when a batch of magic 0 or 1 was found.
	OldFormat bool
}

// ReadLogSummary walks the record batches of a Kafka log segment file of
// size bytes, reading only each batch's header and skipping its records by
// its length. name names the file in errors. A truncated or damaged file is
// an error wrapping rlmm.ErrCorrupt that names the file and the byte of the
// batch; a read error is returned wrapped with the same position.
func ReadLogSummary(r io.ReaderAt, size int64, name string) (LogSummary, error) {
	s := LogSummary{FirstOffset: -1, LastOffset: -1, MaxTimestampMs: -1}
	if size <= 0 {
		return s, fmt.Errorf("%w: %s: empty log file: no record batch", rlmm.ErrCorrupt, name)
	}
	var hdr [readHeaderBytes]byte
	for pos := int64(0); pos < size; {
		left := size - pos
		if left < logOverhead {
			return s, fmt.Errorf("%w: %s: byte %d: truncated batch header (%d bytes left of the %d of an offset and a length)",
				rlmm.ErrCorrupt, name, pos, left, logOverhead)
		}
		n := int64(len(hdr))
		if left < n {
			n = left
		}
		if _, err := r.ReadAt(hdr[:n], pos); err != nil && !(errors.Is(err, io.EOF) && n == left) {
			return s, fmt.Errorf("%s: byte %d: reading a batch header: %w", name, pos, err)
		}
		base := int64(binary.BigEndian.Uint64(hdr[0:8]))
		length := int64(int32(binary.BigEndian.Uint32(hdr[8:12])))
		if length < v0MinLength {
			return s, fmt.Errorf("%w: %s: byte %d: batch length %d is below the smallest batch (%d)", rlmm.ErrCorrupt, name, pos, length, v0MinLength)
		}
		if length > left-logOverhead {
			return s, fmt.Errorf("%w: %s: byte %d: truncated batch: its length says %d bytes, %d are left", rlmm.ErrCorrupt, name, pos, length, left-logOverhead)
		}
		if base < 0 {
			return s, fmt.Errorf("%w: %s: byte %d: negative base offset %d", rlmm.ErrCorrupt, name, pos, base)
		}
		var first, last, ts int64
		epoch := int32(-1)
		switch magic := hdr[magicAt]; magic {
		case 2:
			if length < v2MinLength {
				return s, fmt.Errorf("%w: %s: byte %d: batch length %d is below a magic 2 header (%d)", rlmm.ErrCorrupt, name, pos, length, v2MinLength)
			}
			delta := int64(int32(binary.BigEndian.Uint32(hdr[v2LastDeltaAt:])))
			if delta < 0 || base > 1<<63-1-delta {
				return s, fmt.Errorf("%w: %s: byte %d: last offset delta %d of base offset %d", rlmm.ErrCorrupt, name, pos, delta, base)
			}
			first, last = base, base+delta
			ts = int64(binary.BigEndian.Uint64(hdr[v2MaxTimeAt:]))
			epoch = int32(binary.BigEndian.Uint32(hdr[v2EpochAt:]))
		case 1:
			if length < v1MinLength {
				return s, fmt.Errorf("%w: %s: byte %d: message length %d is below a magic 1 header (%d)", rlmm.ErrCorrupt, name, pos, length, v1MinLength)
			}
			first, last = base, base
			ts = int64(binary.BigEndian.Uint64(hdr[v1TimestampAt:]))
			s.OldFormat = true
		case 0:
			first, last, ts = base, base, -1
			s.OldFormat = true
		default:
			return s, fmt.Errorf("%w: %s: byte %d: unknown magic %d", rlmm.ErrCorrupt, name, pos, magic)
		}
		if s.Batches > 0 && first <= s.LastOffset {
			return s, fmt.Errorf("%w: %s: byte %d: batch at offset %d after one that ended at offset %d", rlmm.ErrCorrupt, name, pos, first, s.LastOffset)
		}
		if s.Batches == 0 {
			s.FirstOffset = first
		}
		s.LastOffset = last
		s.MaxTimestampMs = max(s.MaxTimestampMs, ts)
		if epoch >= 0 && (len(s.Epochs) == 0 || s.Epochs[len(s.Epochs)-1].Epoch != epoch) {
			s.Epochs = append(s.Epochs, rlmm.EpochStart{Epoch: epoch, StartOffset: first})
		}
		s.Batches++
		pos += logOverhead + length
	}
	return s, nil
}

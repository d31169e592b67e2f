package rebuild

import (
	"encoding/binary"

	"github.com/rlmm-go/rlmm/rebuild/rebuildtest"
)

// v2Batch is a magic 2 record batch: its 61-byte header (the fields
// ReadLogSummary reads set, the others plausible) and payload bytes
// standing for the records.
func v2Batch(base int64, lastDelta, epoch int32, maxTs int64, payload int) []byte {
	b := make([]byte, v2HeaderBytes+payload)
	binary.BigEndian.PutUint64(b[0:], uint64(base))
	binary.BigEndian.PutUint32(b[8:], uint32(v2MinLength+payload))
	binary.BigEndian.PutUint32(b[v2EpochAt:], uint32(epoch))
	b[magicAt] = 2
	binary.BigEndian.PutUint32(b[v2LastDeltaAt:], uint32(lastDelta))
	binary.BigEndian.PutUint64(b[27:], uint64(maxTs-5)) // base timestamp
	binary.BigEndian.PutUint64(b[v2MaxTimeAt:], uint64(maxTs))
	binary.BigEndian.PutUint64(b[43:], ^uint64(0)) // producer id -1
	binary.BigEndian.PutUint32(b[57:], uint32(lastDelta+1))
	for i := v2HeaderBytes; i < len(b); i++ {
		b[i] = byte(i)
	}
	return b
}

// v1Message is a magic 1 message with a timestamp.
func v1Message(offset, ts int64, payload int) []byte {
	b := make([]byte, logOverhead+v1MinLength+payload)
	binary.BigEndian.PutUint64(b[0:], uint64(offset))
	binary.BigEndian.PutUint32(b[8:], uint32(v1MinLength+payload))
	b[magicAt] = 1
	binary.BigEndian.PutUint64(b[v1TimestampAt:], uint64(ts))
	return b
}

// segmentLog and checkpoint are rebuildtest's.
var (
	segmentLog = rebuildtest.SegmentLog
	checkpoint = rebuildtest.Checkpoint
)

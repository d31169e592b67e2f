// Package rebuildtest makes the remote storage the rebuild tests read:
// LocalTieredStorage's files of a scrubtest fixture with real content (a
// log of record batches covering each segment's offsets, a leader-epoch
// checkpoint of the lineage), as a Kafka 4.3.1 broker writes them.
//
// It is a test-support package: imported by tests only.
package rebuildtest

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/scrub/scrubtest"
)

// BatchHeaderBytes is the size of a magic 2 record batch header.
const BatchHeaderBytes = 61

// Batch is a magic 2 record batch: its 61-byte header (base offset,
// length, leader epoch, magic, last offset delta, timestamps, producer id
// -1, record count) and payload bytes standing for the records.
func Batch(base int64, lastDelta, epoch int32, maxTs int64, payload int) []byte {
	b := make([]byte, BatchHeaderBytes+payload)
	binary.BigEndian.PutUint64(b[0:], uint64(base))
	binary.BigEndian.PutUint32(b[8:], uint32(BatchHeaderBytes-12+payload))
	binary.BigEndian.PutUint32(b[12:], uint32(epoch))
	b[16] = 2
	binary.BigEndian.PutUint32(b[23:], uint32(lastDelta))
	binary.BigEndian.PutUint64(b[27:], uint64(maxTs-5))
	binary.BigEndian.PutUint64(b[35:], uint64(maxTs))
	binary.BigEndian.PutUint64(b[43:], ^uint64(0))
	binary.BigEndian.PutUint32(b[57:], uint32(lastDelta+1))
	for i := BatchHeaderBytes; i < len(b); i++ {
		b[i] = byte(i)
	}
	return b
}

// SegmentLog is a log file holding offsets start..end in batches of at
// most per records, each epoch of epochs from its start offset, each
// batch's max timestamp tsBase plus its last offset (some 10 s later, so
// the largest is not the last); the largest is returned.
func SegmentLog(start, end int64, epochs []rlmm.EpochStart, per int64, tsBase int64) ([]byte, int64) {
	var buf bytes.Buffer
	var maxTs int64 = -1
	for off := start; off <= end; {
		k := 0
		for k+1 < len(epochs) && epochs[k+1].StartOffset <= off {
			k++
		}
		last := min(off+per-1, end)
		if k+1 < len(epochs) {
			last = min(last, epochs[k+1].StartOffset-1)
		}
		ts := tsBase + last
		if (last/per)%3 == 1 {
			ts += 10_000
		}
		maxTs = max(maxTs, ts)
		buf.Write(Batch(off, int32(last-off), epochs[k].Epoch, ts, int(last-off+1)*7))
		off = last + 1
	}
	return buf.Bytes(), maxTs
}

// Checkpoint is the text of Kafka's leader-epoch checkpoint of entries.
func Checkpoint(entries []rlmm.EpochStart) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "0\n%d\n", len(entries))
	for _, e := range entries {
		fmt.Fprintf(&b, "%d %d\n", e.Epoch, e.StartOffset)
	}
	return []byte(b.String())
}

// BatchRecords is how many records SegmentLog puts in a batch in WriteLocal.
const BatchRecords = 16

// WriteLocal writes every object of f's segments (a local-layout fixture,
// each partition's segments added in offset order) under root
// (LocalTieredStorage's kafka-tiered-storage directory): the log of record
// batches and the leader-epoch checkpoint of the partition's lineage up to
// the segment, the other objects with filler. The j-th segment of a
// partition starts epoch 2j and, for odd j, epoch 2j+1 from its 41st
// offset; each segment's metadata (and its objects' sizes) is updated to
// what the files hold: size, largest timestamp, leader epochs.
func WriteLocal(f *scrubtest.Fixture, root string) error {
	lineages := map[rlmm.TopicIDPartition][]rlmm.EpochStart{}
	for _, s := range f.Segments {
		m := &s.Meta
		j := int32(0)
		if l := lineages[s.TP]; len(l) > 0 {
			j = l[len(l)-1].Epoch/2 + 1
		}
		m.LeaderEpochs = []rlmm.EpochStart{{Epoch: 2 * j, StartOffset: m.StartOffset}}
		if j%2 == 1 && m.EndOffset > m.StartOffset+40 {
			m.LeaderEpochs = append(m.LeaderEpochs, rlmm.EpochStart{Epoch: 2*j + 1, StartOffset: m.StartOffset + 40})
		}
		lineage := append(lineages[s.TP], m.LeaderEpochs...)
		lineages[s.TP] = lineage
		logBytes, maxTs := SegmentLog(m.StartOffset, m.EndOffset, m.LeaderEpochs, BatchRecords, 1_700_000_000_000)
		m.SizeInBytes, m.MaxTimestampMs = int32(len(logBytes)), maxTs
		for k, o := range s.Objects {
			content := scrubtest.Content(o.Size)
			switch {
			case strings.HasSuffix(o.Key, ".log"):
				content = logBytes
			case strings.HasSuffix(o.Key, ".leader_epoch_checkpoint"):
				content = Checkpoint(lineage)
			}
			s.Objects[k].Size = int64(len(content))
			if err := Write(root, o.Key, content); err != nil {
				return err
			}
		}
	}
	return nil
}

// Write writes the object key under root.
func Write(root, key string, b []byte) error {
	path := filepath.Join(root, filepath.FromSlash(key))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// AivenManifest is the JSON Aiven's plugin writes as a segment's
// .rsm-manifest (SegmentManifestV1 with its remoteLogSegmentMetadata), for
// metadata m and a log of originalSize bytes.
func AivenManifest(m *rlmm.SegmentMetadata, originalSize int64) []byte {
	epochs := map[string]int64{}
	for _, e := range m.LeaderEpochs {
		epochs[fmt.Sprint(e.Epoch)] = e.StartOffset
	}
	var txn any
	if !m.TxnIndexEmpty {
		txn = map[string]int{"position": 60, "size": 12}
	}
	idx := func(pos int) map[string]int { return map[string]int{"position": pos, "size": 10} }
	doc := map[string]any{
		"version": "1",
		"chunkIndex": map[string]any{"type": "fixed", "originalChunkSize": 4 << 20, "originalFileSize": originalSize,
			"transformedChunkSize": 4 << 20, "finalTransformedChunkSize": originalSize},
		"segmentIndexes": map[string]any{"offset": idx(0), "timestamp": idx(10), "producerSnapshot": idx(20),
			"leaderEpoch": idx(30), "transaction": txn},
		"compression": false,
		"remoteLogSegmentMetadata": map[string]any{
			"remoteLogSegmentId": map[string]any{
				"topicIdPartition": map[string]any{"topicId": m.ID.TopicIDPartition.TopicID.String(),
					"topicPartition": map[string]any{"topic": m.ID.TopicIDPartition.Topic, "partition": m.ID.TopicIDPartition.Partition}},
				"id": m.ID.ID.String()},
			"startOffset": m.StartOffset, "endOffset": m.EndOffset, "maxTimestampMs": m.MaxTimestampMs,
			"brokerId": m.BrokerID, "eventTimestampMs": m.EventTimestampMs, "segmentLeaderEpochs": epochs,
		},
	}
	b, _ := json.Marshal(doc) // maps of strings and numbers always marshal
	return b
}

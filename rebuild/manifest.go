package rebuild

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	"github.com/rlmm-go/rlmm"
)

// AivenManifest is what rebuild takes from an Aiven .rsm-manifest.
type AivenManifest struct {
	// TP and SegmentID are the manifest's remoteLogSegmentId.
	TP        rlmm.TopicIDPartition
	SegmentID rlmm.Uuid
	// StartOffset, EndOffset, MaxTimestampMs, BrokerID, EventTimestampMs
	// and LeaderEpochs (sorted by epoch) are its segment metadata.
	StartOffset, EndOffset int64
	MaxTimestampMs         int64
	BrokerID               int32
	EventTimestampMs       int64
	LeaderEpochs           []rlmm.EpochStart
	// OriginalFileSize is the chunk index's size of the segment's log
	// before compression and encryption: the segment's size.
	OriginalFileSize int64
	// TxnIndexEmpty: the manifest's segment indexes have no transaction
	// index (or an empty one).
	TxnIndexEmpty bool
}

// aivenManifestJSON is the part of SegmentManifestV1's JSON read here
// (Aiven's Jackson mix-ins name the fields).
type aivenManifestJSON struct {
	Version    *string `json:"version"`
	ChunkIndex *struct {
		OriginalFileSize *int64 `json:"originalFileSize"`
	} `json:"chunkIndex"`
	SegmentIndexes *struct {
		Transaction *struct {
			Size *int64 `json:"size"`
		} `json:"transaction"`
	} `json:"segmentIndexes"`
	Metadata *struct {
		ID *struct {
			TopicIDPartition *struct {
				TopicID        *string `json:"topicId"`
				TopicPartition *struct {
					Topic     *string `json:"topic"`
					Partition *int32  `json:"partition"`
				} `json:"topicPartition"`
			} `json:"topicIdPartition"`
			ID *string `json:"id"`
		} `json:"remoteLogSegmentId"`
		StartOffset      *int64           `json:"startOffset"`
		EndOffset        *int64           `json:"endOffset"`
		MaxTimestampMs   *int64           `json:"maxTimestampMs"`
		BrokerID         *int32           `json:"brokerId"`
		EventTimestampMs *int64           `json:"eventTimestampMs"`
		LeaderEpochs     map[string]int64 `json:"segmentLeaderEpochs"`
	} `json:"remoteLogSegmentMetadata"`
}

// ParseAivenManifest decodes the JSON of an Aiven segment manifest
// (SegmentManifestV1) and returns its segment metadata. A manifest without
// remoteLogSegmentMetadata (written by a plugin version that did not record
// it) cannot be rebuilt from. Errors wrap rlmm.ErrCorrupt and name the file.
func ParseAivenManifest(b []byte, name string) (AivenManifest, error) {
	var m AivenManifest
	bad := func(format string, args ...any) (AivenManifest, error) {
		return AivenManifest{}, fmt.Errorf("%w: %s: %s", rlmm.ErrCorrupt, name, fmt.Sprintf(format, args...))
	}
	var j aivenManifestJSON
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&j); err != nil {
		if se, ok := err.(*json.SyntaxError); ok {
			return bad("not a manifest: JSON syntax error at byte %d: %v", se.Offset, err)
		}
		return bad("not a manifest: %v (at byte %d)", err, dec.InputOffset())
	}
	if dec.More() {
		return bad("bytes after the manifest's JSON object (at byte %d)", dec.InputOffset())
	}
	if j.Version != nil && *j.Version != "1" {
		return bad("manifest version %q, rebuild reads version 1", *j.Version)
	}
	if j.ChunkIndex == nil || j.ChunkIndex.OriginalFileSize == nil || *j.ChunkIndex.OriginalFileSize < 0 {
		return bad("no chunkIndex.originalFileSize (the segment's size)")
	}
	m.OriginalFileSize = *j.ChunkIndex.OriginalFileSize
	m.TxnIndexEmpty = j.SegmentIndexes == nil || j.SegmentIndexes.Transaction == nil ||
		j.SegmentIndexes.Transaction.Size == nil || *j.SegmentIndexes.Transaction.Size == 0
	md := j.Metadata
	if md == nil {
		return bad("no remoteLogSegmentMetadata: the plugin that wrote this manifest did not record the segment's metadata")
	}
	if md.ID == nil || md.ID.ID == nil || md.ID.TopicIDPartition == nil || md.ID.TopicIDPartition.TopicID == nil ||
		md.ID.TopicIDPartition.TopicPartition == nil || md.ID.TopicIDPartition.TopicPartition.Topic == nil ||
		md.ID.TopicIDPartition.TopicPartition.Partition == nil {
		return bad("remoteLogSegmentMetadata.remoteLogSegmentId lacks the topic id, topic, partition or segment id")
	}
	var err error
	if m.TP.TopicID, err = rlmm.ParseUuid(*md.ID.TopicIDPartition.TopicID); err != nil {
		return bad("topic id: %v", err)
	}
	if m.SegmentID, err = rlmm.ParseUuid(*md.ID.ID); err != nil {
		return bad("segment id: %v", err)
	}
	m.TP.Topic = *md.ID.TopicIDPartition.TopicPartition.Topic
	m.TP.Partition = *md.ID.TopicIDPartition.TopicPartition.Partition
	if m.TP.Partition < 0 {
		return bad("partition %d", m.TP.Partition)
	}
	if md.StartOffset == nil || md.EndOffset == nil || md.MaxTimestampMs == nil {
		return bad("remoteLogSegmentMetadata lacks startOffset, endOffset or maxTimestampMs")
	}
	m.StartOffset, m.EndOffset, m.MaxTimestampMs = *md.StartOffset, *md.EndOffset, *md.MaxTimestampMs
	if m.StartOffset < 0 || m.EndOffset < m.StartOffset {
		return bad("offsets %d..%d", m.StartOffset, m.EndOffset)
	}
	if md.BrokerID != nil {
		m.BrokerID = *md.BrokerID
	}
	if md.EventTimestampMs != nil {
		m.EventTimestampMs = *md.EventTimestampMs
	}
	if len(md.LeaderEpochs) == 0 {
		return bad("remoteLogSegmentMetadata has no segmentLeaderEpochs")
	}
	for k, off := range md.LeaderEpochs {
		e, err := strconv.ParseInt(k, 10, 32)
		if err != nil || e < 0 {
			return bad("leader epoch %q is not a non-negative int32", k)
		}
		if off < m.StartOffset || off > m.EndOffset {
			return bad("leader epoch %d starts at offset %d, outside the segment's %d..%d", e, off, m.StartOffset, m.EndOffset)
		}
		m.LeaderEpochs = append(m.LeaderEpochs, rlmm.EpochStart{Epoch: int32(e), StartOffset: off})
	}
	slices.SortFunc(m.LeaderEpochs, func(a, b rlmm.EpochStart) int { return int(a.Epoch) - int(b.Epoch) })
	for i := 1; i < len(m.LeaderEpochs); i++ {
		if m.LeaderEpochs[i].Epoch == m.LeaderEpochs[i-1].Epoch {
			return bad("leader epoch %d given twice", m.LeaderEpochs[i].Epoch)
		}
		if m.LeaderEpochs[i].StartOffset < m.LeaderEpochs[i-1].StartOffset {
			return bad("leader epoch %d starts at offset %d, before epoch %d (offset %d)", m.LeaderEpochs[i].Epoch,
				m.LeaderEpochs[i].StartOffset, m.LeaderEpochs[i-1].Epoch, m.LeaderEpochs[i-1].StartOffset)
		}
	}
	return m, nil
}

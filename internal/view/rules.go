package view

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/rlmm-go/rlmm"
)

// Kind names one class of anomaly. The values are stable: scripts match them.
type Kind string

// The kinds of anomaly. Warnings (Anomaly.Warning) are reported but do not
// make `rlmm verify` fail.
const (
	// StuckCopy: a segment in COPY_SEGMENT_STARTED older than the threshold.
	// Its copy most likely died with its broker: an orphan candidate whose
	// remote data should be cleaned up.
	StuckCopy Kind = "stuck_copy"
	// StuckDelete: a segment in DELETE_SEGMENT_STARTED older than the
	// threshold: its deletion never finished, the remote data may remain.
	StuckDelete Kind = "stuck_delete"
	// RejectedEvent: an event the state machine rejects (an invalid
	// transition, an update of an unknown segment, an invalid argument).
	RejectedEvent Kind = "rejected_event"
	// UndecodableRecord: a record whose bytes are not a metadata event.
	UndecodableRecord Kind = "undecodable_record"
	// MisroutedEvent: an event in a metadata partition other than the one
	// Kafka's partitioner assigns its user partition to; brokers consuming
	// the right partition never see it.
	MisroutedEvent Kind = "misrouted_event"
	// Overlap: two COPY_SEGMENT_FINISHED segments cover the same offset in
	// one leader epoch. A warning when a segment of another broker than the
	// one before it re-covers that one's tail and goes past it: a new leader
	// copies its own local segment that holds the next offset whole, and a
	// follower's segments need not start where the old leader's did (Kafka's
	// RemoteLogManager does this, with any RLMM; a lookup takes the segment
	// with the greatest start offset at or below the offset).
	Overlap Kind = "overlapping_segments"
	// Gap: offsets missing between two COPY_SEGMENT_FINISHED segments of one
	// leader epoch: a fetch of those offsets from remote storage fails.
	Gap Kind = "offset_gap"
	// SanityWarning: a segment metadata that Kafka accepts but that fails
	// rlmm's stricter checks (rlmm.SegmentMetadata.Sanity). Warning.
	SanityWarning Kind = "sanity_warning"
	// PartitionDeleteOrder: a partition delete state that does not follow
	// the previous one (MARKED, STARTED, FINISHED). Kafka applies it anyway.
	// Warning.
	PartitionDeleteOrder Kind = "partition_delete_order"
	// SnapshotRecord: a snapshot record (api key 3) inside the topic, where
	// Kafka never writes one; it is ignored. Warning.
	SnapshotRecord Kind = "snapshot_record"
	// TombstoneRecord: a record with a null value (a tombstone: a compacted
	// metadata topic, as KIP-1266 proposes, holds them to delete a key)
	// whose key is missing or not a KIP-1266 key, so it deletes nothing
	// rlmm knows. Not an event; skipped (Kafka 4.3's own manager's consumer
	// dies on one). Tombstones with a KIP-1266 key are counted
	// (Counts.Tombstones), not reported, unless TombstonedLiveSegment.
	// Warning.
	TombstoneRecord Kind = "tombstone_record"
	// RecordKeyMismatch: a record whose key is not a KIP-1266 key
	// (topicId:topicName:partition:endOffset:brokerLeaderEpoch[:UPDATE]),
	// or names another user partition, end offset or broker leader epoch
	// than the record, or the wrong suffix. Keys are ignored for state.
	// Warning.
	RecordKeyMismatch Kind = "record_key_mismatch"
	// SharedRecordKey: records of two or more segments under one record
	// key whose last record is not a live segment's own: compaction keeps
	// only a key's last record, so it would drop that live segment's
	// history (its add, or its latest state under the :UPDATE key).
	// KIP-1266's keys carry no segment id: two uploads of one end offset
	// under one broker leader epoch share a key.
	SharedRecordKey Kind = "shared_record_key"
	// TombstonedLiveSegment: the last record of a record key is a
	// tombstone while a segment with records under that key is still live:
	// compaction would delete them and drop its history.
	TombstonedLiveSegment Kind = "tombstoned_live_segment"
	// TornTail: bytes after the last good record of an embedded log file,
	// the remains of a write a crash interrupted (never acknowledged unless
	// the journal restored it). A broker opening the log drops them.
	// Warning.
	TornTail Kind = "torn_tail"
	// HistoryLost: the records of a metadata partition before its log start
	// offset are gone (retention or DeleteRecords on the topic). Segments
	// added before it are unknown to the view. Warning.
	HistoryLost Kind = "history_lost"
	// UnknownSegment: an update of a segment the view does not know, in a
	// metadata partition whose history is partly gone (HistoryLost): its
	// COPY_SEGMENT_STARTED was most likely among the deleted records, so it
	// is not reported as a rejected event. Warning.
	UnknownSegment Kind = "unknown_segment"
	// Redeleted: an update to DELETE_SEGMENT_STARTED or _FINISHED of a
	// segment whose deletion had already finished earlier in the log. The
	// state machine rejects it and nothing changes: the segment is gone, as
	// the update asked. A broker that held the partition's leadership and
	// had not yet seen the new leader's deletion sends it (its sidecar frozen
	// while the leadership moved, say); Kafka's own manager publishes every
	// update without a check. Warning.
	Redeleted Kind = "redeleted_segment"
)

// RecordRef locates a record in the metadata log.
type RecordRef struct {
	Partition int32 `json:"metadataPartition"`
	Offset    int64 `json:"offset"`
}

// Anomaly is one finding, with the segment or record it concerns.
type Anomaly struct {
	Kind    Kind `json:"kind"`
	Warning bool `json:"warning,omitempty"`
	// TopicIDPartition is the user partition concerned, when known.
	TopicIDPartition string `json:"topicIdPartition,omitempty"`
	// SegmentIDs are the remote log segment ids concerned (Kafka's Uuid
	// text form): for a stuck copy, the id whose remote data to clean up.
	SegmentIDs []string `json:"segmentIds,omitempty"`
	// Epoch is the leader epoch of an overlap or gap.
	Epoch *int32 `json:"leaderEpoch,omitempty"`
	// FirstOffset and LastOffset bound the offsets of an overlap or gap.
	FirstOffset *int64 `json:"firstOffset,omitempty"`
	LastOffset  *int64 `json:"lastOffset,omitempty"`
	// AgeMs is the age of a stuck segment's state at the reference time.
	AgeMs *int64 `json:"ageMs,omitempty"`
	// Record is the record of a stream anomaly.
	Record *RecordRef `json:"record,omitempty"`
	// Detail says what is wrong in words.
	Detail string `json:"detail"`
}

// String prints the anomaly on one line for people.
func (a Anomaly) String() string {
	s := string(a.Kind)
	if a.Warning {
		s = "warning: " + s
	}
	if a.Record != nil {
		s += fmt.Sprintf(" [metadata partition %d, offset %d]", a.Record.Partition, a.Record.Offset)
	}
	if a.TopicIDPartition != "" {
		s += " " + a.TopicIDPartition
	}
	return s + ": " + a.Detail
}

func ptr[T any](v T) *T { return &v }

// CheckSegments applies the state rules to the segments of one user partition
// (any order; DELETE_SEGMENT_FINISHED ones are ignored): segments in
// COPY_SEGMENT_STARTED or DELETE_SEGMENT_STARTED whose state is older than
// stuckAfter at refMs (age strictly greater), COPY_SEGMENT_FINISHED segments
// overlapping in one leader epoch, and gaps in an epoch's coverage by
// finished segments. Epoch ranges that are empty (a metadata failing Sanity)
// are skipped. The result is ordered: stuck segments by start offset, then
// overlaps and gaps by epoch and offset.
func CheckSegments(tp rlmm.TopicIDPartition, segs []rlmm.SegmentMetadata, refMs int64, stuckAfter time.Duration) []Anomaly {
	var out []Anomaly
	name := tp.String()
	sorted := slices.Clone(segs)
	slices.SortFunc(sorted, func(a, b rlmm.SegmentMetadata) int {
		return cmp.Or(cmp.Compare(a.StartOffset, b.StartOffset), cmp.Compare(a.EndOffset, b.EndOffset),
			slices.Compare(a.ID.ID[:], b.ID.ID[:]))
	})
	limit := stuckAfter.Milliseconds()
	for _, m := range sorted {
		if m.State != rlmm.CopySegmentStarted && m.State != rlmm.DeleteSegmentStarted {
			continue
		}
		age := refMs - m.EventTimestampMs
		if age <= limit {
			continue
		}
		a := Anomaly{TopicIDPartition: name, SegmentIDs: []string{m.ID.ID.String()}, AgeMs: ptr(age),
			FirstOffset: ptr(m.StartOffset), LastOffset: ptr(m.EndOffset)}
		if m.State == rlmm.CopySegmentStarted {
			a.Kind = StuckCopy
			a.Detail = fmt.Sprintf("segment %s [%d, %d] in %s for %s (broker %d): orphan candidate, clean up its remote data",
				m.ID.ID, m.StartOffset, m.EndOffset, m.State, (time.Duration(age) * time.Millisecond).Round(time.Second), m.BrokerID)
		} else {
			a.Kind = StuckDelete
			a.Detail = fmt.Sprintf("segment %s [%d, %d] in %s for %s (broker %d): deletion never finished, remote data may remain",
				m.ID.ID, m.StartOffset, m.EndOffset, m.State, (time.Duration(age) * time.Millisecond).Round(time.Second), m.BrokerID)
		}
		out = append(out, a)
	}
	return append(out, checkCoverage(name, sorted)...)
}

// epochSpan is the part of one finished segment inside one leader epoch.
type epochSpan struct {
	start, end int64
	segEnd     int64 // the whole segment's end offset, past this epoch too
	at         int64 // its last event's time (COPY_SEGMENT_FINISHED's)
	id         rlmm.Uuid
	broker     int32
}

// recopies says how n's segment, another broker's, came to copy o's
// offsets of this epoch again ("" when both are one broker's: a broker
// never copies its own offsets twice). Two brokers' copies of one epoch's
// offsets hold the same committed records (the RemoteLogManager copies
// only below the high watermark), so a fetch may be answered from either
// and retention deletes both: a warning, naming the way it happened, as
// seen on a 3-broker cluster under moving leadership, partitions and a
// frozen broker (test/fault's TestFaultsAlone):
//   - a new leader copies its own segment holding the next offset to copy
//     whole, wherever its replica rolled it, re-covering the tail of the
//     old leader's segment and going past it;
//   - its whole segment ends where the old leader's copy of part of it
//     ends, the old one finishing while the new one was under way, or
//     finished before the new leader read it;
//   - an old leader that has not yet learnt it lost the leadership (frozen,
//     partitioned) copies from the offset it found when it became leader
//     (Kafka's copy task keeps it), after the new leader copied the same
//     offsets.
//
// Whole segments are compared, not the epoch's spans: a segment that goes
// past o only in a later epoch re-covers o's offsets of this one exactly.
func (n epochSpan) recopies(o epochSpan) string {
	if n.broker == o.broker {
		return ""
	}
	if how := n.copiedAfter(o); how != "" {
		return how
	}
	if how := o.copiedAfter(n); how != "" {
		return how
	}
	return fmt.Sprintf("brokers %d and %d both copied these offsets (two leaders' copies of the same records)", n.broker, o.broker)
}

// copiedAfter names the way n's copy came after o's, "" when none fits.
func (n epochSpan) copiedAfter(o epochSpan) string {
	switch {
	case n.segEnd > o.segEnd && (n.start >= o.start || n.at > o.at):
		return fmt.Sprintf("broker %d re-copied the tail of broker %d's segment and went on "+
			"(a new leader copies its own segment holding the next offset whole)", n.broker, o.broker)
	case n.segEnd == o.segEnd && n.start <= o.start && n.at > o.at:
		return fmt.Sprintf("broker %d copied its own segment holding broker %d's whole and finished after it "+
			"(a new leader's copy while the old leader's copy of the same offsets finished, or before its end was read)", n.broker, o.broker)
	case n.at > o.at:
		return fmt.Sprintf("broker %d copied offsets broker %d had copied, finishing after it "+
			"(a leader that had not yet learnt it lost the leadership, copying from the offset it found when it became leader)", n.broker, o.broker)
	}
	return ""
}

// checkCoverage finds overlaps and gaps among the finished segments, per
// leader epoch. segs must be sorted by start offset.
func checkCoverage(name string, segs []rlmm.SegmentMetadata) []Anomaly {
	spans := map[int32][]epochSpan{}
	for i := range segs {
		m := &segs[i]
		if m.State != rlmm.CopySegmentFinished {
			continue
		}
		for _, e := range m.LeaderEpochs {
			s, end, ok := m.EpochRange(e.Epoch)
			if !ok || end < s {
				continue
			}
			spans[e.Epoch] = append(spans[e.Epoch], epochSpan{s, end, m.EndOffset, m.EventTimestampMs, m.ID.ID, m.BrokerID})
		}
	}
	epochs := make([]int32, 0, len(spans))
	for e := range spans {
		epochs = append(epochs, e)
	}
	slices.Sort(epochs)
	var out []Anomaly
	for _, epoch := range epochs {
		list := spans[epoch]
		slices.SortFunc(list, func(a, b epochSpan) int {
			return cmp.Or(cmp.Compare(a.start, b.start), cmp.Compare(a.end, b.end), slices.Compare(a.id[:], b.id[:]))
		})
		top := list[0] // the span reaching furthest so far
		for _, sp := range list[1:] {
			switch {
			case sp.start <= top.end:
				last := min(sp.end, top.end)
				a := Anomaly{Kind: Overlap, TopicIDPartition: name,
					SegmentIDs: []string{top.id.String(), sp.id.String()}, Epoch: ptr(epoch),
					FirstOffset: ptr(sp.start), LastOffset: ptr(last),
					Detail: fmt.Sprintf("finished segments %s and %s both cover offsets [%d, %d] in leader epoch %d",
						top.id, sp.id, sp.start, last, epoch)}
				how := sp.recopies(top)
				if how != "" {
					a.Warning = true
					a.Detail += ": " + how
				}
				out = append(out, a)
			case top.end < math.MaxInt64 && sp.start > top.end+1:
				out = append(out, Anomaly{Kind: Gap, TopicIDPartition: name,
					SegmentIDs: []string{top.id.String(), sp.id.String()}, Epoch: ptr(epoch),
					FirstOffset: ptr(top.end + 1), LastOffset: ptr(sp.start - 1),
					Detail: fmt.Sprintf("no finished segment covers offsets [%d, %d] of leader epoch %d (between segments %s and %s)",
						top.end+1, sp.start-1, epoch, top.id, sp.id)})
			}
			if sp.end > top.end {
				top = sp
			}
		}
	}
	return out
}

// HasFailures reports whether any anomaly is not a warning.
func HasFailures(as []Anomaly) bool {
	return slices.ContainsFunc(as, func(a Anomaly) bool { return !a.Warning })
}

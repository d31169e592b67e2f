package view

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/eventlog"
	"github.com/rlmm-go/rlmm/internal/apply"
	"github.com/rlmm-go/rlmm/memory"
	"github.com/rlmm-go/rlmm/wire"
)

// Counts are the totals of what a Builder has read.
type Counts struct {
	Records          int64 `json:"records"`
	Bytes            int64 `json:"bytes"`
	Segments         int64 `json:"segmentEvents"`
	Updates          int64 `json:"updateEvents"`
	PartitionDeletes int64 `json:"partitionDeleteEvents"`
	Snapshots        int64 `json:"snapshotRecords"`
	Undecodable      int64 `json:"undecodable"`
	Rejected         int64 `json:"rejected"`
	// Tombstones counts records with a null value (skipped).
	Tombstones int64 `json:"tombstones"`
	// Misrouted counts events found in a metadata partition other than
	// the one Kafka's partitioner puts them in (reported, not applied).
	Misrouted int64 `json:"misrouted"`
	// UnknownSegments counts updates of segments the view does not know in
	// metadata partitions whose history is partly gone (not rejected).
	UnknownSegments int64 `json:"unknownSegmentEvents"`
	// RedeletedSegments counts deletion updates of segments whose deletion
	// had already finished earlier in the log (not rejected).
	RedeletedSegments int64 `json:"redeletedSegmentEvents"`
}

// HistoryStart says where the records still held of one metadata partition
// begin, when some are gone.
type HistoryStart struct {
	MetadataPartition int32 `json:"metadataPartition"`
	// LogStartOffset is the first offset still held; the records before it
	// are gone.
	LogStartOffset int64 `json:"logStartOffset"`
	// HighWaterMark is the offset after the last record read.
	HighWaterMark int64 `json:"highWaterMark"`
}

// Meaning says in words what a lost history means for the segments shown.
func (h HistoryStart) Meaning() string {
	s := fmt.Sprintf("history before offset %d of metadata partition %d is gone", h.LogStartOffset, h.MetadataPartition)
	if h.LogStartOffset >= h.HighWaterMark {
		s += " (every record of it was deleted)"
	}
	return s + ": segments added before it are unknown; their later events are reported as unknown segments (warnings), not as rejected events"
}

// partitionInfo is what the Builder keeps per user partition beside the cache.
type partitionInfo struct {
	metadataPartition int32
	deleteState       rlmm.PartitionDeleteState
	hasDelete         bool
}

// Builder applies metadata records, in log order per metadata partition, to
// an in-memory view, collecting the anomalies of the record stream. It is not
// safe for concurrent use.
type Builder struct {
	cache              *memory.Manager
	metadataPartitions int32
	partitions         map[rlmm.TopicIDPartition]*partitionInfo
	anomalies          []Anomaly
	newestEventMs      int64
	counts             Counts
	// logStarts are the log start offsets of the metadata partitions read
	// (SetHistory), nil when all start at 0; history lists the ones above 0.
	logStarts []int64
	history   []HistoryStart
	// keys follows the records' KIP-1266 keys, by key (keys.go).
	keys map[string]*keyUse
	// deleted holds the segments whose DELETE_SEGMENT_FINISHED was applied
	// (the state machine forgets them), to tell a late second deletion
	// (Redeleted) from an update of a segment never added.
	deleted map[rlmm.SegmentID]struct{}
}

// SetHistory tells the builder where each metadata partition's records
// begin (starts) and end (hwms), as ReadLog found them; call it before the
// first Apply. A partition whose start is above 0 gets a HistoryLost warning,
// and updates of unknown segments in it count as UnknownSegment warnings
// instead of rejected events.
func (b *Builder) SetHistory(starts, hwms []int64) {
	b.logStarts = slices.Clone(starts)
	for p, start := range starts {
		if start <= 0 {
			continue
		}
		h := HistoryStart{MetadataPartition: int32(p), LogStartOffset: start, HighWaterMark: start}
		if p < len(hwms) {
			h.HighWaterMark = hwms[p]
		}
		b.history = append(b.history, h)
		b.anomalies = append(b.anomalies, Anomaly{Kind: HistoryLost, Warning: true,
			Record: &RecordRef{Partition: int32(p), Offset: start}, Detail: h.Meaning()})
	}
}

// History returns where the history of each metadata partition whose early
// records are gone starts, in partition order (empty when none is).
func (b *Builder) History() []HistoryStart { return slices.Clone(b.history) }

// historyLost reports whether metadata partition p's records start after 0.
func (b *Builder) historyLost(p int32) bool {
	return int(p) < len(b.logStarts) && b.logStarts[p] > 0
}

// NewBuilder returns an empty view of a log with metadataPartitions
// partitions (the partition count is used to check the partitioner; 0
// skips that check).
func NewBuilder(metadataPartitions int32) *Builder {
	return &Builder{
		cache:              memory.New(),
		metadataPartitions: metadataPartitions,
		partitions:         map[rlmm.TopicIDPartition]*partitionInfo{},
		deleted:            map[rlmm.SegmentID]struct{}{},
		newestEventMs:      -1,
	}
}

// Apply decodes one record and applies it through the one event path the
// brokers' managers take (internal/apply.Record), so the view holds the
// state a broker would: an event in the wrong metadata partition is
// reported and not applied (no broker reads it). It returns the decoded
// event, or the decode error (the record is then counted as undecodable
// and reported, unless it is misrouted); an event the state machine
// rejects is returned without error and reported; a tombstone returns the
// zero Event.
func (b *Builder) Apply(rec eventlog.Record) (wire.Event, error) {
	b.counts.Records++
	b.counts.Bytes += int64(len(rec.Value))
	ref := &RecordRef{Partition: rec.Partition, Offset: rec.Offset}
	var ev wire.Event
	res := apply.LogRecord(b.cache, b.metadataPartitions, &rec, nil, &ev)
	switch res.Reason {
	case apply.ReasonTombstone:
		b.counts.Tombstones++
		b.observeTombstone(&rec, ref)
		return ev, nil
	case apply.ReasonUndecodable:
		b.counts.Undecodable++
		b.anomalies = append(b.anomalies, Anomaly{Kind: UndecodableRecord, Record: ref,
			Detail: fmt.Sprintf("%d bytes: %v", len(rec.Value), res.Err)})
		return ev, res.Err
	case apply.ReasonUnexpected:
		b.counts.Snapshots++
		b.anomalies = append(b.anomalies, Anomaly{Kind: SnapshotRecord, Warning: true, Record: ref,
			Detail: "a snapshot record (api key 3) inside the metadata topic, where Kafka never writes one: ignored"})
		return ev, nil
	case apply.ReasonMisrouted:
		want := wire.MetadataPartitionOfKey(res.Key, b.metadataPartitions)
		b.anomalies = append(b.anomalies, Anomaly{Kind: MisroutedEvent, Record: ref, TopicIDPartition: misroutedName(rec.Value, res.Key),
			Detail: fmt.Sprintf("event belongs in metadata partition %d of %d, found in %d: brokers never read it, and it is not applied here either",
				want, b.metadataPartitions, rec.Partition)})
		b.counts.Misrouted++
		// Not applied, but shown (inspect --events) as what it is.
		return wire.DecodeEvent(rec.Value)
	}
	tp, _ := ev.TopicIDPartition()
	info := b.partitions[tp]
	if info == nil {
		info = &partitionInfo{metadataPartition: rec.Partition}
		b.partitions[tp] = info
	}
	b.observeKey(&rec, ref, &ev, tp)
	applyErr := res.Err
	switch ev.Key {
	case wire.KeySegment:
		b.counts.Segments++
		b.seen(ev.Segment.EventTimestampMs)
		if serr := ev.Segment.Sanity(); serr != nil {
			b.anomalies = append(b.anomalies, Anomaly{Kind: SanityWarning, Warning: true, Record: ref,
				TopicIDPartition: tp.String(), SegmentIDs: []string{ev.Segment.ID.ID.String()}, Detail: serr.Error()})
		}
	case wire.KeyUpdate:
		b.counts.Updates++
		b.seen(ev.Update.EventTimestampMs)
		if applyErr == nil && ev.Update.State == rlmm.DeleteSegmentFinished {
			b.deleted[ev.Update.ID] = struct{}{}
		}
	case wire.KeyPartitionDelete:
		b.counts.PartitionDeletes++
		d := ev.PartitionDelete
		b.seen(d.EventTimestampMs)
		if !b.deleteInOrder(info, d.State) {
			from := "(none)"
			if info.hasDelete {
				from = info.deleteState.String()
			}
			b.anomalies = append(b.anomalies, Anomaly{Kind: PartitionDeleteOrder, Warning: true, Record: ref,
				TopicIDPartition: tp.String(), Detail: fmt.Sprintf("partition delete state %s after %s", d.State, from)})
		}
		if applyErr == nil {
			info.deleteState, info.hasDelete = d.State, true
		}
	}
	if applyErr != nil && errors.Is(applyErr, rlmm.ErrUnknownSegment) && b.historyLost(rec.Partition) {
		b.counts.UnknownSegments++
		a := Anomaly{Kind: UnknownSegment, Warning: true, Record: ref, TopicIDPartition: tp.String(),
			Detail: fmt.Sprintf("%v; the history of metadata partition %d before offset %d is gone, where it was most likely added",
				applyErr, rec.Partition, b.logStarts[rec.Partition])}
		if id, ok := segmentOf(&ev); ok {
			a.SegmentIDs = []string{id.String()}
		}
		b.anomalies = append(b.anomalies, a)
		applyErr = nil
	}
	if applyErr != nil && b.redeletes(&ev, applyErr) {
		b.counts.RedeletedSegments++
		b.anomalies = append(b.anomalies, Anomaly{Kind: Redeleted, Warning: true, Record: ref, TopicIDPartition: tp.String(),
			SegmentIDs: []string{ev.Update.ID.ID.String()},
			Detail: fmt.Sprintf("%v; the segment's deletion had finished earlier in the log: a late second deletion "+
				"(a broker that held the partition's leadership deleting it again from a cache that lagged the log)", applyErr)})
		applyErr = nil
	}
	if applyErr != nil {
		b.counts.Rejected++
		a := Anomaly{Kind: RejectedEvent, Record: ref, TopicIDPartition: tp.String(), Detail: applyErr.Error()}
		if id, ok := segmentOf(&ev); ok {
			a.SegmentIDs = []string{id.String()}
		}
		b.anomalies = append(b.anomalies, a)
	}
	return ev, nil
}

// redeletes reports whether ev, rejected with applyErr, is a deletion
// update (DELETE_SEGMENT_STARTED or _FINISHED) of a segment whose
// DELETE_SEGMENT_FINISHED this view applied before: the segment was known,
// and is gone by the same path, so the event changes nothing. Kafka's own
// manager publishes such an update unchecked and its consumer logs it at
// WARN; rlmm's managers check first, against a cache that may lag the log.
func (b *Builder) redeletes(ev *wire.Event, applyErr error) bool {
	if ev.Key != wire.KeyUpdate || !errors.Is(applyErr, rlmm.ErrUnknownSegment) {
		return false
	}
	if s := ev.Update.State; s != rlmm.DeleteSegmentStarted && s != rlmm.DeleteSegmentFinished {
		return false
	}
	_, ok := b.deleted[ev.Update.ID]
	return ok
}

// misroutedName names the user partition of a misrouted record: decoded
// when it decodes (with its topic name), else from its routing key.
func misroutedName(value []byte, k wire.PartitionKey) string {
	if ev, err := wire.DecodeEvent(value); err == nil {
		if tp, ok := ev.TopicIDPartition(); ok {
			return tp.String()
		}
	}
	return rlmm.TopicIDPartition{TopicID: k.TopicID, Partition: k.Partition}.String()
}

func segmentOf(ev *wire.Event) (rlmm.Uuid, bool) {
	switch ev.Key {
	case wire.KeySegment:
		return ev.Segment.ID.ID, true
	case wire.KeyUpdate:
		return ev.Update.ID.ID, true
	}
	return rlmm.Uuid{}, false
}

// deleteInOrder applies Kafka's partition-delete transition rule, which
// Kafka itself never enforces when it applies events.
func (b *Builder) deleteInOrder(info *partitionInfo, to rlmm.PartitionDeleteState) bool {
	if !info.hasDelete {
		return to == rlmm.DeletePartitionMarked
	}
	return rlmm.CanTransitionPartitionDelete(info.deleteState, to)
}

func (b *Builder) seen(ms int64) { b.newestEventMs = max(b.newestEventMs, ms) }

// NewestEventMs returns the largest event timestamp read, or -1 if none.
func (b *Builder) NewestEventMs() int64 { return b.newestEventMs }

// Counts returns the totals read so far.
func (b *Builder) Counts() Counts { return b.counts }

// StreamAnomalies returns the anomalies found in the record stream, in the
// order read.
func (b *Builder) StreamAnomalies() []Anomaly { return slices.Clone(b.anomalies) }

// Anomalies returns the stream anomalies, then the record keys whose
// compaction would drop a live segment's history (SharedRecordKey,
// TombstonedLiveSegment), then the state anomalies of every user partition
// (CheckSegments with refMs and stuckAfter), partitions in the order of
// Partitions.
func (b *Builder) Anomalies(refMs int64, stuckAfter time.Duration) []Anomaly {
	out := append(b.StreamAnomalies(), b.keyAnomalies()...)
	for _, tp := range b.Partitions() {
		out = append(out, CheckSegments(tp, b.Segments(tp), refMs, stuckAfter)...)
	}
	return out
}

// Partitions returns every user partition named by an event, ordered by
// topic name, topic id, then partition.
func (b *Builder) Partitions() []rlmm.TopicIDPartition {
	out := make([]rlmm.TopicIDPartition, 0, len(b.partitions))
	for tp := range b.partitions {
		out = append(out, tp)
	}
	slices.SortFunc(out, compareTP)
	return out
}

func compareTP(a, b rlmm.TopicIDPartition) int {
	return cmp.Or(cmp.Compare(a.Topic, b.Topic), slices.Compare(a.TopicID[:], b.TopicID[:]), cmp.Compare(a.Partition, b.Partition))
}

// Segments returns tp's segments not yet DELETE_SEGMENT_FINISHED, ordered by
// start offset, end offset and id.
func (b *Builder) Segments(tp rlmm.TopicIDPartition) []rlmm.SegmentMetadata {
	segs, err := b.cache.ListSegments(tp)
	if err != nil {
		// The in-memory manager serves every partition; no error is expected.
		return nil
	}
	return segs
}

// EpochSummary is a leader epoch of a partition and the highest offset
// copied to remote storage in it.
type EpochSummary struct {
	Epoch         int32 `json:"leaderEpoch"`
	HighestOffset int64 `json:"highestOffset"`
}

// PartitionSummary is the view of one user partition.
type PartitionSummary struct {
	TopicIDPartition  rlmm.TopicIDPartition `json:"-"`
	TopicID           string                `json:"topicId"`
	Topic             string                `json:"topic"`
	Partition         int32                 `json:"partition"`
	MetadataPartition int32                 `json:"metadataPartition"`
	// SegmentsByState counts the segments by state name; DELETE_SEGMENT_FINISHED
	// segments are gone from the view and not counted.
	SegmentsByState map[string]int `json:"segmentsByState"`
	// RemoteBytes sums the sizes of the listed segments.
	RemoteBytes int64 `json:"remoteBytes"`
	// StartOffset and EndOffset bound the finished segments (-1 when none).
	StartOffset int64          `json:"startOffset"`
	EndOffset   int64          `json:"endOffset"`
	Epochs      []EpochSummary `json:"leaderEpochs"`
	// DeleteState is the partition delete state, empty when none.
	DeleteState string `json:"partitionDeleteState,omitempty"`
}

// Summary returns the view of tp.
func (b *Builder) Summary(tp rlmm.TopicIDPartition) PartitionSummary {
	s := PartitionSummary{TopicIDPartition: tp, TopicID: tp.TopicID.String(), Topic: tp.Topic, Partition: tp.Partition,
		SegmentsByState: map[string]int{}, StartOffset: -1, EndOffset: -1}
	if info := b.partitions[tp]; info != nil {
		s.MetadataPartition = info.metadataPartition
		if info.hasDelete {
			s.DeleteState = info.deleteState.String()
		}
	}
	epochs := map[int32]bool{}
	for _, m := range b.Segments(tp) {
		s.SegmentsByState[m.State.String()]++
		s.RemoteBytes += int64(m.SizeInBytes)
		for _, e := range m.LeaderEpochs {
			epochs[e.Epoch] = true
		}
		if m.State != rlmm.CopySegmentFinished {
			continue
		}
		if s.StartOffset < 0 || m.StartOffset < s.StartOffset {
			s.StartOffset = m.StartOffset
		}
		s.EndOffset = max(s.EndOffset, m.EndOffset)
	}
	for e := range epochs {
		if off, ok, err := b.cache.HighestOffsetForEpoch(tp, e); err == nil && ok {
			s.Epochs = append(s.Epochs, EpochSummary{Epoch: e, HighestOffset: off})
		}
	}
	slices.SortFunc(s.Epochs, func(x, y EpochSummary) int { return cmp.Compare(x.Epoch, y.Epoch) })
	return s
}

// Plan is what ReadLog reads: per metadata partition, from its log start
// offset up to its high-water mark, both sampled before the first record.
type Plan struct {
	Starts         []int64
	HighWaterMarks []int64
	// Total is the number of records to read.
	Total int64
}

// ReadLog reads every partition of log from its log start offset up to its
// high-water mark, both sampled at the start, calling fn for each record in
// order per partition, and returns the number of records read. started, if
// not nil, is called once with the plan before the first record. A partition
// with no record left (start equal to the high-water mark) is not waited
// for. It stops at the first error of fn or of the log, or when ctx ends;
// the error then names the metadata partitions not read to their end.
func ReadLog(ctx context.Context, log eventlog.Log, started func(Plan), fn func(eventlog.Record) error) (int64, error) {
	n := log.Partitions()
	parts := make([]int32, n)
	for i := range parts {
		parts[i] = int32(i)
	}
	hwms, err := log.HighWaterMarks(ctx, parts)
	if err != nil {
		return 0, fmt.Errorf("reading the high-water marks of %d metadata partitions: %w", n, err)
	}
	starts, err := log.StartOffsets(ctx, parts)
	if err != nil {
		return 0, fmt.Errorf("reading the log start offsets of %d metadata partitions: %w", n, err)
	}
	plan := Plan{Starts: starts, HighWaterMarks: hwms}
	for p, h := range hwms {
		// A start sampled after the high-water mark can be above it when
		// records were deleted in between: nothing to read then.
		plan.Starts[p] = min(starts[p], h)
		plan.Total += h - plan.Starts[p]
	}
	if started != nil {
		started(plan)
	}
	if plan.Total == 0 {
		return 0, nil
	}
	sub, err := log.Subscribe(ctx)
	if err != nil {
		return 0, fmt.Errorf("subscribing to the metadata log: %w", err)
	}
	defer sub.Close()
	remaining := map[int32]int64{}
	next := map[int32]int64{}
	for p, h := range hwms {
		if from := plan.Starts[p]; h > from {
			if err := sub.Add(int32(p), from); err != nil {
				return 0, fmt.Errorf("consuming metadata partition %d: %w", p, err)
			}
			remaining[int32(p)] = h
			next[int32(p)] = from
		}
	}
	var read int64
	for len(remaining) > 0 {
		recs, err := sub.Poll(ctx)
		if err != nil {
			if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
				return read, fmt.Errorf("read %d of %d records; %d metadata partitions unfinished (%s): %w",
					read, plan.Total, len(remaining), unfinished(remaining, next), err)
			}
			return read, fmt.Errorf("reading the metadata log after %d of %d records: %w", read, plan.Total, err)
		}
		for _, r := range recs {
			h, ok := remaining[r.Partition]
			if !ok || r.Offset >= h {
				continue
			}
			read++
			next[r.Partition] = r.Offset + 1
			if err := fn(r); err != nil {
				return read, err
			}
			if r.Offset >= h-1 {
				delete(remaining, r.Partition)
				if err := sub.Remove(r.Partition); err != nil {
					return read, fmt.Errorf("releasing metadata partition %d: %w", r.Partition, err)
				}
			}
		}
	}
	return read, nil
}

// unfinished names the metadata partitions not read to their end, with where
// each stopped: "3 at offset 5 of 9, 7 at offset 0 of 2" (the first 20).
func unfinished(remaining, next map[int32]int64) string {
	ps := slices.Sorted(maps.Keys(remaining))
	var parts []string
	for i, p := range ps {
		if i == 20 {
			parts = append(parts, fmt.Sprintf("and %d more", len(ps)-i))
			break
		}
		parts = append(parts, fmt.Sprintf("%d at offset %d of %d", p, next[p], remaining[p]))
	}
	return strings.Join(parts, ", ")
}

package console

import (
	"slices"
	"strconv"
	"time"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/internal/view"
	"github.com/rlmm-go/rlmm/scrub"
)

// MaxSegments bounds the segments one partition's answer lists (the first
// by start offset); the answer says when it is cut. A browser draws a few
// thousand rectangles well, not millions.
const MaxSegments = 20_000

// Input is what one reading of the metadata log produced.
type Input struct {
	// Source names the log ("embedded log DIR", "Kafka topic T at B").
	Source string
	// Builder is the view read; the snapshot keeps it and only reads it.
	Builder *view.Builder
	// Extra are anomalies found outside the record stream (the embedded
	// log's torn tails); they come first.
	Extra []view.Anomaly
	// ReadAt is when the reading finished.
	ReadAt time.Time
	// ReferenceMs is the time stuck segments' ages are measured against.
	ReferenceMs int64
	// StuckAfter is the age above which a started copy or deletion is stuck.
	StuckAfter time.Duration
	// Scrub is the scrub of the remote storage against this view, nil when
	// the console was given no storage.
	Scrub *Scrub
}

// Scrub is the outcome of holding the view against the remote storage.
type Scrub struct {
	// Store names the storage listed.
	Store string `json:"store"`
	// Report is nil when the scrub failed (Error says why).
	Report *scrub.Report `json:"report"`
	Error  string        `json:"error,omitempty"`
}

// Snapshot is one reading of the log, laid out for the API. It is
// immutable once made and safe for concurrent use.
type Snapshot struct {
	in         Input
	counts     view.Counts
	topics     []view.Size
	partitions []view.Size
	anomalies  []view.Anomaly
	failures   int
	// byName indexes the user partitions by their API key
	// (topicId/partition), byTP their anomalies and scrub findings.
	byName      map[string]rlmm.TopicIDPartition
	anomaliesOf map[string][]view.Anomaly
	scrubOf     map[string]*scrub.PartitionReport
}

// partitionKey is how the API names a user partition in its path.
func partitionKey(topicID string, partition int32) string {
	return topicID + "/" + strconv.FormatInt(int64(partition), 10)
}

// NewSnapshot lays out in for the API: the size rows, the anomalies with
// verify's rules, and indexes by partition. It reads in.Builder, which
// must not change afterwards.
func NewSnapshot(in Input) *Snapshot {
	b := in.Builder
	s := &Snapshot{in: in, counts: b.Counts(), byName: map[string]rlmm.TopicIDPartition{},
		anomaliesOf: map[string][]view.Anomaly{}, scrubOf: map[string]*scrub.PartitionReport{}}
	for _, row := range view.Sizes(b, true, 0, nil) {
		if row.Partition < 0 {
			s.topics = append(s.topics, row)
		} else {
			s.partitions = append(s.partitions, row)
		}
	}
	for _, tp := range b.Partitions() {
		s.byName[partitionKey(tp.TopicID.String(), tp.Partition)] = tp
	}
	s.anomalies = append(slices.Clone(in.Extra), b.Anomalies(in.ReferenceMs, in.StuckAfter)...)
	for _, a := range s.anomalies {
		if !a.Warning {
			s.failures++
		}
		if a.TopicIDPartition != "" {
			s.anomaliesOf[a.TopicIDPartition] = append(s.anomaliesOf[a.TopicIDPartition], a)
		}
	}
	if in.Scrub != nil && in.Scrub.Report != nil {
		for i := range in.Scrub.Report.Partitions {
			p := &in.Scrub.Report.Partitions[i]
			s.scrubOf[p.TopicIDPartition] = p
		}
	}
	return s
}

// EpochSpan is the part of a segment in one leader epoch.
type EpochSpan struct {
	Epoch       int32 `json:"leaderEpoch"`
	StartOffset int64 `json:"startOffset"`
	EndOffset   int64 `json:"endOffset"`
}

// Segment is one remote segment as the timeline draws it.
type Segment struct {
	ID          string      `json:"segmentId"`
	State       string      `json:"state"`
	StartOffset int64       `json:"startOffset"`
	EndOffset   int64       `json:"endOffset"`
	Epochs      []EpochSpan `json:"leaderEpochs"`
	SizeInBytes int32       `json:"sizeInBytes"`
	BrokerID    int32       `json:"brokerId"`
	// MaxTimestampMs is the largest record timestamp in the segment;
	// EventTimestampMs the time of its latest state.
	MaxTimestampMs   int64 `json:"maxTimestampMs"`
	EventTimestampMs int64 `json:"eventTimestampMs"`
	// Lane is the row the timeline draws it in: segments whose offsets
	// intersect get different lanes, lowest first.
	Lane int `json:"lane"`
	// Stuck is set for a segment of a stuck_copy or stuck_delete anomaly.
	Stuck bool `json:"stuck,omitempty"`
}

// toSegment converts one segment of the view.
func toSegment(m *rlmm.SegmentMetadata) Segment {
	s := Segment{ID: m.ID.ID.String(), State: m.State.String(), StartOffset: m.StartOffset, EndOffset: m.EndOffset,
		Epochs: make([]EpochSpan, 0, len(m.LeaderEpochs)), SizeInBytes: m.SizeInBytes, BrokerID: m.BrokerID,
		MaxTimestampMs: m.MaxTimestampMs, EventTimestampMs: m.EventTimestampMs}
	for k, e := range m.LeaderEpochs {
		end := min(rlmm.EpochEnd(m.LeaderEpochs, k, m.EndOffset), m.EndOffset)
		start := max(e.StartOffset, m.StartOffset)
		if end < start {
			// An epoch with no offset in the segment (a metadata
			// failing Sanity): nothing to draw.
			continue
		}
		s.Epochs = append(s.Epochs, EpochSpan{Epoch: e.Epoch, StartOffset: start, EndOffset: end})
	}
	return s
}

// assignLanes gives each segment (sorted by start offset) the lowest lane
// whose last segment ends before it starts, and returns the lane count.
func assignLanes(segs []Segment) int {
	var laneEnd []int64
	for i := range segs {
		lane := slices.IndexFunc(laneEnd, func(end int64) bool { return end < segs[i].StartOffset })
		if lane < 0 {
			lane = len(laneEnd)
			laneEnd = append(laneEnd, 0)
		}
		laneEnd[lane] = segs[i].EndOffset
		segs[i].Lane = lane
	}
	return len(laneEnd)
}

// Partition is the API's answer for one user partition.
type Partition struct {
	TopicIDPartition string                `json:"topicIdPartition"`
	Summary          view.PartitionSummary `json:"summary"`
	// FirstOffset and LastOffset bound the segments listed (-1 when none):
	// the timeline's axis.
	FirstOffset int64 `json:"firstOffset"`
	LastOffset  int64 `json:"lastOffset"`
	Lanes       int   `json:"lanes"`
	// SegmentCount counts every segment; Segments lists at most
	// MaxSegments of them (Truncated then).
	SegmentCount int                    `json:"segmentCount"`
	Truncated    bool                   `json:"truncated,omitempty"`
	Segments     []Segment              `json:"segments"`
	Anomalies    []view.Anomaly         `json:"anomalies"`
	Scrub        *scrub.PartitionReport `json:"scrub"`
}

// Partition returns the answer for the partition of topicID and partition,
// or false when the view has no such partition.
func (s *Snapshot) Partition(topicID string, partition int32) (Partition, bool) {
	tp, ok := s.byName[partitionKey(topicID, partition)]
	if !ok {
		return Partition{}, false
	}
	name := tp.String()
	metas := s.in.Builder.Segments(tp)
	p := Partition{TopicIDPartition: name, Summary: s.in.Builder.Summary(tp), FirstOffset: -1, LastOffset: -1,
		SegmentCount: len(metas), Anomalies: s.anomaliesOf[name], Scrub: s.scrubOf[name]}
	if p.Anomalies == nil {
		p.Anomalies = []view.Anomaly{}
	}
	if len(metas) > MaxSegments {
		metas, p.Truncated = metas[:MaxSegments], true
	}
	stuck := map[string]bool{}
	for _, a := range p.Anomalies {
		if a.Kind == view.StuckCopy || a.Kind == view.StuckDelete {
			for _, id := range a.SegmentIDs {
				stuck[id] = true
			}
		}
	}
	// The view lists the segments by start offset, as assignLanes needs.
	p.Segments = make([]Segment, 0, len(metas))
	for i := range metas {
		seg := toSegment(&metas[i])
		seg.Stuck = stuck[seg.ID]
		p.Segments = append(p.Segments, seg)
	}
	p.Lanes = assignLanes(p.Segments)
	for i, seg := range p.Segments {
		if i == 0 || seg.StartOffset < p.FirstOffset {
			p.FirstOffset = seg.StartOffset
		}
		p.LastOffset = max(p.LastOffset, seg.EndOffset)
	}
	return p, true
}

// Source names the log the snapshot was read from.
func (s *Snapshot) Source() string { return s.in.Source }

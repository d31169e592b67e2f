package rebuild

import (
	"context"
	"fmt"
	"strconv"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/eventlog"
	"github.com/rlmm-go/rlmm/internal/view"
	"github.com/rlmm-go/rlmm/wire"
)

// Known is what the metadata log already says: every segment it names, in
// any state, and the user partitions with a partition delete event.
type Known struct {
	segs    map[rlmm.Uuid]knownSegment
	deleted map[partKey]rlmm.PartitionDeleteState
	// Records counts the records observed; Undecodable those wire could not
	// decode (a segment they name is not known: the plan warns); Tombstones
	// the records without a value.
	Records, Undecodable, Tombstones int64
	// FirstUndecodable is where the first undecodable record is.
	FirstUndecodable string
}

type knownSegment struct {
	state rlmm.SegmentState
	// addBroker is the broker id of the COPY_SEGMENT_STARTED event (of the
	// first event seen when the add is gone).
	addBroker int32
}

type partKey struct {
	topicID   rlmm.Uuid
	partition int32
}

// NewKnown returns an empty Known (a metadata log without records).
func NewKnown() *Known {
	return &Known{segs: map[rlmm.Uuid]knownSegment{}, deleted: map[partKey]rlmm.PartitionDeleteState{}}
}

// Observe adds what one record of the metadata log says.
func (k *Known) Observe(rec eventlog.Record) {
	k.Records++
	if rec.Tombstone {
		k.Tombstones++
		return
	}
	ev, err := wire.DecodeEvent(rec.Value)
	if err != nil {
		if k.Undecodable == 0 {
			k.FirstUndecodable = fmt.Sprintf("metadata partition %d offset %d: %v", rec.Partition, rec.Offset, err)
		}
		k.Undecodable++
		return
	}
	k.ObserveEvent(&ev)
}

// ObserveEvent adds what one decoded event says.
func (k *Known) ObserveEvent(ev *wire.Event) {
	switch ev.Key {
	case wire.KeySegment, wire.KeySnapshot:
		s, ok := k.segs[ev.Segment.ID.ID]
		if !ok {
			s.addBroker = ev.Segment.BrokerID
		}
		s.state = max(s.state, ev.Segment.State)
		k.segs[ev.Segment.ID.ID] = s
	case wire.KeyUpdate:
		s, ok := k.segs[ev.Update.ID.ID]
		if !ok {
			s.addBroker = ev.Update.BrokerID
		}
		s.state = max(s.state, ev.Update.State)
		k.segs[ev.Update.ID.ID] = s
	case wire.KeyPartitionDelete:
		d := ev.PartitionDelete
		pk := partKey{d.TopicIDPartition.TopicID, d.TopicIDPartition.Partition}
		k.deleted[pk] = max(k.deleted[pk], d.State)
	}
}

// Segments returns how many segments are known.
func (k *Known) Segments() int { return len(k.segs) }

// ReadKnown reads the whole metadata log (up to its high-water marks when
// it starts, as internal/view reads it) into a Known.
func ReadKnown(ctx context.Context, log eventlog.Log) (*Known, error) {
	k := NewKnown()
	_, err := view.ReadLog(ctx, log, nil, func(rec eventlog.Record) error {
		k.Observe(rec)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return k, nil
}

// PlanOptions are the choices of the events a plan writes.
type PlanOptions struct {
	// BrokerID is the broker id of every event. rlmm rebuild uses -1: no
	// broker has it, so the events tell a rebuild's work from a broker's,
	// and a negative id is what lets a later run finish an interrupted
	// rebuild (a segment left COPY_SEGMENT_STARTED by that id).
	BrokerID int32
	// EventTimestampMs is the event time of every event.
	EventTimestampMs int64
	// MetadataPartitions is the metadata log's partition count.
	MetadataPartitions int32
}

// Step is one segment of a plan: the events to publish for it.
type Step struct {
	TopicIDPartition  string               `json:"topicIdPartition"`
	Topic             string               `json:"topic"`
	Partition         int32                `json:"partition"`
	SegmentID         string               `json:"segmentId"`
	StartOffset       int64                `json:"startOffset"`
	EndOffset         int64                `json:"endOffset"`
	MaxTimestampMs    int64                `json:"maxTimestampMs"`
	SizeInBytes       int32                `json:"sizeInBytes"`
	LeaderEpochs      []EpochJSON          `json:"leaderEpochs"`
	TxnIndexEmpty     bool                 `json:"txnIndexEmpty"`
	CustomMetadata    []byte               `json:"customMetadata,omitempty"`
	MetadataPartition int32                `json:"metadataPartition"`
	Events            []string             `json:"events"`
	Resume            bool                 `json:"resume,omitempty"`
	Keys              []string             `json:"keys"`
	Warnings          []string             `json:"warnings,omitempty"`
	Meta              rlmm.SegmentMetadata `json:"-"`
	encoded           [][]byte
}

// EpochJSON is a leader epoch and its first offset in the segment.
type EpochJSON struct {
	Epoch       int32 `json:"epoch"`
	StartOffset int64 `json:"startOffset"`
}

// Skip is a segment found in storage that the plan leaves alone.
type Skip struct {
	TopicIDPartition string `json:"topicIdPartition"`
	SegmentID        string `json:"segmentId"`
	StartOffset      int64  `json:"startOffset"`
	// Reason is "known" (the metadata log names it; State says in which
	// state) or "partition_deleted" (its partition has a delete event).
	Reason string `json:"reason"`
	State  string `json:"state"`
}

// Skip reasons.
const (
	SkipKnown            = "known"
	SkipPartitionDeleted = "partition_deleted"
)

// Plan is what a rebuild would publish.
type Plan struct {
	MetadataPartitions int32  `json:"metadataPartitions"`
	BrokerID           int32  `json:"brokerId"`
	EventTimestampMs   int64  `json:"eventTimestampMs"`
	Steps              []Step `json:"steps"`
	Skipped            []Skip `json:"skipped"`
	// Problems are Found's (segments that cannot be rebuilt) and those whose
	// events could not be encoded.
	Problems []Problem `json:"problems"`
	// Warnings are about the metadata log (undecodable records).
	Warnings []string `json:"warnings,omitempty"`
	Summary  Summary  `json:"summary"`
}

// Summary counts a plan.
type Summary struct {
	SegmentsFound int `json:"segmentsFound"`
	Planned       int `json:"planned"`
	Events        int `json:"events"`
	Known         int `json:"known"`
	Deleted       int `json:"partitionDeleted"`
	Problems      int `json:"problems"`
}

// MakePlan plans the events for every segment of f the metadata log (k)
// does not name: COPY_SEGMENT_STARTED then COPY_SEGMENT_FINISHED; only the
// FINISHED for a segment an earlier rebuild left COPY_SEGMENT_STARTED (its
// add event by o.BrokerID, a negative id).
func MakePlan(f *Found, k *Known, o PlanOptions) *Plan {
	p := &Plan{MetadataPartitions: o.MetadataPartitions, BrokerID: o.BrokerID, EventTimestampMs: o.EventTimestampMs,
		Steps: []Step{}, Skipped: []Skip{}, Problems: append([]Problem{}, f.Problems...)}
	if k.Undecodable > 0 {
		p.Warnings = append(p.Warnings, fmt.Sprintf("%d records of the metadata log could not be decoded (the first at %s): a segment only they name looks unknown",
			k.Undecodable, k.FirstUndecodable))
	}
	for i := range f.Segments {
		s := &f.Segments[i]
		m := s.Meta
		tp := m.ID.TopicIDPartition
		skip := Skip{TopicIDPartition: tp.String(), SegmentID: m.ID.ID.String(), StartOffset: m.StartOffset}
		if st, ok := k.deleted[partKey{tp.TopicID, tp.Partition}]; ok {
			skip.Reason, skip.State = SkipPartitionDeleted, st.String()
			p.Skipped = append(p.Skipped, skip)
			p.Summary.Deleted++
			continue
		}
		resume := false
		if ks, ok := k.segs[m.ID.ID]; ok {
			if !(ks.state == rlmm.CopySegmentStarted && o.BrokerID < 0 && ks.addBroker == o.BrokerID) {
				skip.Reason, skip.State = SkipKnown, ks.state.String()
				p.Skipped = append(p.Skipped, skip)
				p.Summary.Known++
				continue
			}
			resume = true
		}
		m.BrokerID, m.EventTimestampMs = o.BrokerID, o.EventTimestampMs
		st := Step{TopicIDPartition: tp.String(), Topic: tp.Topic, Partition: tp.Partition, SegmentID: m.ID.ID.String(),
			StartOffset: m.StartOffset, EndOffset: m.EndOffset, MaxTimestampMs: m.MaxTimestampMs, SizeInBytes: m.SizeInBytes,
			TxnIndexEmpty: m.TxnIndexEmpty, CustomMetadata: m.CustomMetadata, Resume: resume,
			MetadataPartition: wire.MetadataPartition(tp, o.MetadataPartitions), Keys: s.Keys, Warnings: s.Warnings, Meta: m}
		for _, e := range m.LeaderEpochs {
			st.LeaderEpochs = append(st.LeaderEpochs, EpochJSON{Epoch: e.Epoch, StartOffset: e.StartOffset})
		}
		var evs []wire.Event
		if !resume {
			add := m.Clone()
			add.State, add.CustomMetadata = rlmm.CopySegmentStarted, nil
			evs = append(evs, wire.SegmentEvent(add))
		}
		evs = append(evs, wire.UpdateEvent(rlmm.SegmentUpdate{ID: m.ID, EventTimestampMs: o.EventTimestampMs,
			CustomMetadata: m.CustomMetadata, State: rlmm.CopySegmentFinished, BrokerID: o.BrokerID}))
		if encErr := st.SetEvents(evs); encErr != nil {
			p.Problems = append(p.Problems, Problem{TopicIDPartition: tp.String(), SegmentID: m.ID.ID.String(),
				StartOffset: m.StartOffset, Keys: s.Keys, Detail: "cannot write its events: " + encErr.Error()})
			continue
		}
		p.Steps = append(p.Steps, st)
		p.Summary.Events += len(st.encoded)
	}
	p.Summary.SegmentsFound = len(f.Segments)
	p.Summary.Planned = len(p.Steps)
	p.Summary.Problems = len(p.Problems)
	return p
}

// SetEvents encodes evs, in Kafka's bytes, as the events Apply publishes
// for the step, in order, and names them in Events. rlmm repair builds its
// steps (DELETE_SEGMENT_STARTED, DELETE_SEGMENT_FINISHED) with it, so both
// publish through Apply.
func (st *Step) SetEvents(evs []wire.Event) error {
	st.encoded, st.Events = nil, nil
	for i := range evs {
		b, err := wire.AppendEvent(nil, &evs[i])
		if err != nil {
			st.encoded, st.Events = nil, nil
			return err
		}
		st.encoded = append(st.encoded, b)
		st.Events = append(st.Events, stateOf(&evs[i]).String())
	}
	return nil
}

func stateOf(ev *wire.Event) rlmm.SegmentState {
	if ev.Key == wire.KeyUpdate {
		return ev.Update.State
	}
	return ev.Segment.State
}

// Published is one event Apply published.
type Published struct {
	Step              *Step
	Event             string
	MetadataPartition int32
	Offset            int64
}

// Apply publishes the plan's events in order (per segment STARTED, then
// FINISHED), calling published after each one is durable. It stops at the
// first error, which names the segment and the event; the events published
// before stay (a later plan sees them: it plans only what is still
// missing). The log must have the plan's partition count.
func Apply(ctx context.Context, log eventlog.Log, p *Plan, published func(Published)) (int, error) {
	if n := log.Partitions(); n != p.MetadataPartitions {
		return 0, fmt.Errorf("%w: the plan is for a metadata log of %d partitions, this one has %d",
			rlmm.ErrInvalidArgument, p.MetadataPartitions, n)
	}
	done := 0
	for i := range p.Steps {
		st := &p.Steps[i]
		for j, b := range st.encoded {
			off, err := log.Publish(ctx, st.MetadataPartition, b)
			if err != nil {
				return done, fmt.Errorf("publishing %s of segment %s (%s, offsets %d..%d) to metadata partition %d: %w",
					st.Events[j], st.SegmentID, st.TopicIDPartition, st.StartOffset, st.EndOffset, st.MetadataPartition, err)
			}
			done++
			if published != nil {
				published(Published{Step: st, Event: st.Events[j], MetadataPartition: st.MetadataPartition, Offset: off})
			}
		}
	}
	return done, nil
}

// FormatEpochs formats leader epochs as Kafka prints them: {0=0, 1=20}.
func FormatEpochs(es []EpochJSON) string {
	b := []byte{'{'}
	for i, e := range es {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = strconv.AppendInt(b, int64(e.Epoch), 10)
		b = append(b, '=')
		b = strconv.AppendInt(b, e.StartOffset, 10)
	}
	return string(append(b, '}'))
}

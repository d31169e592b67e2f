package repair

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/rebuild"
	"github.com/rlmm-go/rlmm/scrub"
	"github.com/rlmm-go/rlmm/scrub/store"
	"github.com/rlmm-go/rlmm/wire"
)

// DefaultQuarantine is the key prefix orphans are moved under by default.
const DefaultQuarantine = "rlmm-quarantine/"

// stampLayout is the run time in a quarantine key: sortable, no ':' (not
// allowed in some file systems' names).
const stampLayout = "20060102T150405Z"

// Options are the thresholds and choices of a plan.
type Options struct {
	// Now is the run time: ages are measured from it and it names the
	// quarantine directory of this run.
	Now time.Time
	// OrphanAge is how old an orphan must be to be quarantined (a copy in
	// flight looks like an orphan until its COPY_SEGMENT_STARTED is read).
	// Non-positive: no orphan is quarantined.
	OrphanAge time.Duration
	// Grace is how long an object stays in quarantine before it is deleted.
	Grace time.Duration
	// StuckAfter is how long a segment must have been COPY_SEGMENT_STARTED
	// to be closed. Non-positive: none is closed.
	StuckAfter time.Duration
	// Quarantine is the key prefix of the quarantine (ends with '/').
	Quarantine string
	// BrokerID is the broker id of the events published (negative: no
	// broker's), MetadataPartitions the metadata log's partition count.
	BrokerID           int32
	MetadataPartitions int32
}

// Input is what a plan is made from.
type Input struct {
	Report *scrub.Report
	// Started are the COPY_SEGMENT_STARTED segments scrub saw no object of
	// (scrub.Comparer.WithoutObjects, with their metadata).
	Started []rlmm.SegmentMetadata
	// Deleting are the DELETE_SEGMENT_STARTED segments scrub saw no object
	// of: a deletion that removed every object and did not record it.
	Deleting []rlmm.SegmentMetadata
	// Quarantined are the objects listed under Options.Quarantine.
	Quarantined []store.Object
}

// Move is an orphan to quarantine.
type Move struct {
	TopicIDPartition string `json:"topicIdPartition"`
	SegmentID        string `json:"segmentId,omitempty"`
	Key              string `json:"key"`
	To               string `json:"to"`
	Size             int64  `json:"size"`
	AgeMs            int64  `json:"ageMs"`
}

// Purge is an object in quarantine: deleted when its grace is over, else
// held.
type Purge struct {
	Key  string `json:"key"`
	Size int64  `json:"size"`
	// QuarantinedAt is the run time its key names (zero when it names
	// none: never deleted).
	QuarantinedAt time.Time `json:"quarantinedAt"`
	// Note says why a held object is held.
	Note string `json:"note,omitempty"`
}

// Close is a stuck segment to close with DELETE events: a copy
// (COPY_SEGMENT_STARTED: DELETE_SEGMENT_STARTED and DELETE_SEGMENT_FINISHED)
// or a deletion (DELETE_SEGMENT_STARTED: DELETE_SEGMENT_FINISHED) whose
// objects are all gone.
type Close struct {
	TopicIDPartition  string   `json:"topicIdPartition"`
	SegmentID         string   `json:"segmentId"`
	State             string   `json:"state"`
	StartOffset       int64    `json:"startOffset"`
	EndOffset         int64    `json:"endOffset"`
	StartedAgeMs      int64    `json:"startedAgeMs"`
	MetadataPartition int32    `json:"metadataPartition"`
	Events            []string `json:"events"`
}

// Waiting is a segment without objects not old enough to be closed (it
// may be a copy or a deletion in flight).
type Waiting struct {
	TopicIDPartition string `json:"topicIdPartition"`
	SegmentID        string `json:"segmentId"`
	State            string `json:"state"`
	StartedAgeMs     int64  `json:"startedAgeMs"`
}

// Lost is a segment whose log object is missing: its records are gone.
type Lost struct {
	TopicIDPartition string   `json:"topicIdPartition"`
	SegmentID        string   `json:"segmentId"`
	State            string   `json:"state"`
	StartOffset      int64    `json:"startOffset"`
	EndOffset        int64    `json:"endOffset"`
	MissingKeys      []string `json:"missingKeys"`
}

// Summary counts a plan.
type Summary struct {
	Quarantine      int   `json:"quarantine"`
	QuarantineBytes int64 `json:"quarantineBytes"`
	Purge           int   `json:"purge"`
	PurgeBytes      int64 `json:"purgeBytes"`
	Held            int   `json:"held"`
	Close           int   `json:"close"`
	Events          int   `json:"events"`
	Waiting         int   `json:"waiting"`
	Lost            int   `json:"lost"`
	// Protected counts the orphans scrub protected, left alone; Young the
	// unprotected ones younger than OrphanAge, left for a later run.
	Protected int `json:"protectedOrphans"`
	Young     int `json:"youngOrphans"`
	// Mismatches are scrub's, reported and left alone.
	Mismatches int `json:"mismatches"`
}

// Actions returns how many actions the plan holds.
func (s Summary) Actions() int { return s.Quarantine + s.Purge + s.Close }

// Plan is what a repair does, and what it leaves for a person.
type Plan struct {
	Quarantine []Move    `json:"quarantine"`
	Purge      []Purge   `json:"purge"`
	Held       []Purge   `json:"held"`
	Close      []Close   `json:"close"`
	Waiting    []Waiting `json:"waiting"`
	Lost       []Lost    `json:"lost"`
	Summary    Summary   `json:"summary"`
	// events are the close steps, in Close's order, for rebuild.Apply.
	events *rebuild.Plan
}

// QuarantineKey returns where an object of key goes in the quarantine of
// a run at now.
func QuarantineKey(quarantine string, now time.Time, key string) string {
	return quarantine + now.UTC().Format(stampLayout) + "/" + key
}

// QuarantinedAt reads the run time of a key under quarantine; false when
// the key does not name one.
func QuarantinedAt(quarantine, key string) (time.Time, bool) {
	rest, ok := strings.CutPrefix(key, quarantine)
	if !ok {
		return time.Time{}, false
	}
	stamp, _, ok := strings.Cut(rest, "/")
	if !ok {
		return time.Time{}, false
	}
	t, err := time.Parse(stampLayout, stamp)
	if err != nil {
		return time.Time{}, false
	}
	return t, true
}

// MakePlan plans the repair of in (see the package doc for the rules).
func MakePlan(in Input, o Options) (*Plan, error) {
	if o.Quarantine == "" || !strings.HasSuffix(o.Quarantine, "/") {
		return nil, fmt.Errorf("%w: quarantine prefix %q must be non-empty and end with '/'", rlmm.ErrInvalidArgument, o.Quarantine)
	}
	p := &Plan{Quarantine: []Move{}, Purge: []Purge{}, Held: []Purge{}, Close: []Close{}, Waiting: []Waiting{}, Lost: []Lost{},
		events: &rebuild.Plan{MetadataPartitions: o.MetadataPartitions, BrokerID: o.BrokerID, EventTimestampMs: o.Now.UnixMilli()}}
	if rep := in.Report; rep != nil {
		movable := map[string]bool{}
		for _, orphan := range scrub.Plan(rep, o.OrphanAge) {
			movable[orphan.Key] = true
		}
		deleting := map[string]bool{}
		for i := range in.Deleting {
			deleting[in.Deleting[i].ID.ID.String()] = true
		}
		for _, pr := range rep.Partitions {
			p.Summary.Mismatches += len(pr.Mismatches)
			for _, m := range pr.Missing {
				if deleting[m.SegmentID] {
					continue // its deletion was started: closed or waiting below
				}
				p.Lost = append(p.Lost, Lost{TopicIDPartition: pr.TopicIDPartition, SegmentID: m.SegmentID, State: m.State,
					StartOffset: m.StartOffset, EndOffset: m.EndOffset, MissingKeys: m.Keys})
			}
			for _, orphan := range pr.Orphans {
				switch {
				case orphan.Protected:
					p.Summary.Protected++
				case !movable[orphan.Key]:
					p.Summary.Young++
				case strings.HasPrefix(orphan.Key, o.Quarantine):
					// Never listed by a comparer excluding the quarantine;
					// a moved object is not moved again.
				default:
					p.Quarantine = append(p.Quarantine, Move{TopicIDPartition: pr.TopicIDPartition, SegmentID: orphan.SegmentID,
						Key: orphan.Key, To: QuarantineKey(o.Quarantine, o.Now, orphan.Key), Size: orphan.Size, AgeMs: orphan.AgeMs})
					p.Summary.QuarantineBytes += orphan.Size
				}
			}
		}
	}
	for _, obj := range in.Quarantined {
		at, ok := QuarantinedAt(o.Quarantine, obj.Key)
		pg := Purge{Key: obj.Key, Size: obj.Size, QuarantinedAt: at}
		switch {
		case !ok:
			pg.Note = "its key names no run time: not rlmm repair's, never deleted"
			p.Held = append(p.Held, pg)
		case o.Now.Sub(at) < o.Grace:
			pg.Note = "deleted after " + at.Add(o.Grace).UTC().Format(time.RFC3339)
			p.Held = append(p.Held, pg)
		default:
			p.Purge = append(p.Purge, pg)
			p.Summary.PurgeBytes += obj.Size
		}
	}
	for _, m := range in.Started {
		if m.State == rlmm.CopySegmentStarted {
			if err := p.close(m, o, m.State); err != nil {
				return nil, err
			}
		}
	}
	for _, m := range in.Deleting {
		if m.State == rlmm.DeleteSegmentStarted {
			if err := p.close(m, o, m.State); err != nil {
				return nil, err
			}
		}
	}
	slices.SortFunc(p.Quarantine, func(a, b Move) int { return strings.Compare(a.Key, b.Key) })
	slices.SortFunc(p.Purge, func(a, b Purge) int { return strings.Compare(a.Key, b.Key) })
	slices.SortFunc(p.Held, func(a, b Purge) int { return strings.Compare(a.Key, b.Key) })
	slices.SortFunc(p.Lost, func(a, b Lost) int {
		return cmp.Or(strings.Compare(a.TopicIDPartition, b.TopicIDPartition), cmp.Compare(a.StartOffset, b.StartOffset))
	})
	p.Summary.Quarantine, p.Summary.Purge, p.Summary.Held = len(p.Quarantine), len(p.Purge), len(p.Held)
	p.Summary.Close, p.Summary.Waiting, p.Summary.Lost = len(p.Close), len(p.Waiting), len(p.Lost)
	p.events.Summary.Events = p.Summary.Events
	return p, nil
}

// close plans the events that end segment m, stuck in from with no object:
// DELETE_SEGMENT_STARTED (for a copy) and DELETE_SEGMENT_FINISHED. A
// segment younger than StuckAfter waits, but a deletion o.BrokerID (a
// negative id: a repair's) started, which an interrupted repair left.
func (p *Plan) close(m rlmm.SegmentMetadata, o Options, from rlmm.SegmentState) error {
	tp := m.ID.TopicIDPartition
	age := o.Now.UnixMilli() - m.EventTimestampMs
	resume := from == rlmm.DeleteSegmentStarted && o.BrokerID < 0 && m.BrokerID == o.BrokerID
	if !resume && (o.StuckAfter <= 0 || age < o.StuckAfter.Milliseconds()) {
		p.Waiting = append(p.Waiting, Waiting{TopicIDPartition: tp.String(), SegmentID: m.ID.ID.String(), State: from.String(), StartedAgeMs: age})
		return nil
	}
	st := rebuild.Step{TopicIDPartition: tp.String(), Topic: tp.Topic, Partition: tp.Partition, SegmentID: m.ID.ID.String(),
		StartOffset: m.StartOffset, EndOffset: m.EndOffset, MetadataPartition: wire.MetadataPartition(tp, o.MetadataPartitions), Meta: m}
	var evs []wire.Event
	for _, s := range []rlmm.SegmentState{rlmm.DeleteSegmentStarted, rlmm.DeleteSegmentFinished} {
		if s > from {
			evs = append(evs, wire.UpdateEvent(rlmm.SegmentUpdate{ID: m.ID, EventTimestampMs: o.Now.UnixMilli(), State: s, BrokerID: o.BrokerID}))
		}
	}
	if err := st.SetEvents(evs); err != nil {
		return fmt.Errorf("segment %s of %s: encoding its DELETE events: %w", m.ID.ID, tp, err)
	}
	p.events.Steps = append(p.events.Steps, st)
	p.Close = append(p.Close, Close{TopicIDPartition: tp.String(), SegmentID: m.ID.ID.String(), State: from.String(), StartOffset: m.StartOffset,
		EndOffset: m.EndOffset, StartedAgeMs: age, MetadataPartition: st.MetadataPartition, Events: st.Events})
	p.Summary.Events += len(st.Events)
	return nil
}

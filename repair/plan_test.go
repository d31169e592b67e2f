package repair

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/scrub"
	"github.com/rlmm-go/rlmm/scrub/store"
)

func TestQuarantineKeyRoundTrip(t *testing.T) {
	now := time.Date(2026, 12, 1, 22, 6, 2, 500, time.UTC)
	k := QuarantineKey(DefaultQuarantine, now, "a-0-x/0-y.log")
	if k != "rlmm-quarantine/20261201T220602Z/a-0-x/0-y.log" {
		t.Fatalf("QuarantineKey = %s", k)
	}
	for _, c := range []struct {
		key  string
		want time.Time
		ok   bool
	}{
		{k, now.Truncate(time.Second), true},
		{"rlmm-quarantine/20261201T220602Z", time.Time{}, false}, // no object under the run
		{"rlmm-quarantine/by-hand/x", time.Time{}, false},
		{"elsewhere/20261201T220602Z/x", time.Time{}, false},
	} {
		got, ok := QuarantinedAt(DefaultQuarantine, c.key)
		if ok != c.ok || !got.Equal(c.want) {
			t.Errorf("QuarantinedAt(%q) = %v, %v; want %v, %v", c.key, got, ok, c.want, c.ok)
		}
	}
}

// TestMakePlanRules holds each rule of the plan against the cases on both
// sides of its threshold.
func TestMakePlanRules(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	tp := rlmm.TopicIDPartition{TopicID: rlmm.Uuid{1}, Topic: "t", Partition: 0}
	day := 24 * time.Hour
	orphan := func(key, reason string, protected bool, age time.Duration) scrub.Orphan {
		return scrub.Orphan{Key: key, Size: 10, AgeMs: age.Milliseconds(), Reason: reason, Protected: protected}
	}
	started := func(id byte, age time.Duration, state rlmm.SegmentState) rlmm.SegmentMetadata {
		return rlmm.SegmentMetadata{ID: rlmm.SegmentID{TopicIDPartition: tp, ID: rlmm.Uuid{id}}, StartOffset: int64(id) * 100,
			EndOffset: int64(id)*100 + 99, EventTimestampMs: now.Add(-age).UnixMilli(), State: state, BrokerID: 1}
	}
	byRepair := func(m rlmm.SegmentMetadata) rlmm.SegmentMetadata { m.BrokerID = -1; return m }
	inQuarantine := func(at time.Time, key string) store.Object {
		return store.Object{Key: QuarantineKey(DefaultQuarantine, at, key), Size: 5}
	}
	o := Options{Now: now, OrphanAge: day, Grace: 7 * day, StuckAfter: day, Quarantine: DefaultQuarantine, BrokerID: -1, MetadataPartitions: 50}
	cases := []struct {
		name string
		in   Input
		// want: quarantined keys, purged keys, held keys, closed ids, waiting ids, lost ids
		quarantine, purge, held []string
		closed, waiting, lost   []string
		protected, young        int
	}{
		{name: "an unprotected orphan old enough is quarantined, a younger one waits",
			in:         Input{Report: report(tp, nil, orphan("old", scrub.ReasonNotInMetadata, false, day), orphan("new", scrub.ReasonNotInMetadata, false, day-time.Second))},
			quarantine: []string{"old"}, young: 1},
		{name: "protected orphans are never moved, however old",
			in: Input{Report: report(tp, nil, orphan("copy", scrub.ReasonCopyStarted, true, 99*day), orphan("misplaced", scrub.ReasonMisplaced, true, 99*day),
				orphan("dup", scrub.ReasonDuplicate, true, 99*day), orphan("foreign", scrub.ReasonUnrecognized, true, 99*day))},
			protected: 4},
		{name: "an orphan already under the quarantine is not moved again",
			in:    Input{Report: report(tp, nil, orphan(DefaultQuarantine+"20260101T000000Z/x", scrub.ReasonNotInMetadata, false, 99*day))},
			young: 0},
		{name: "quarantine: deleted once the grace is over, held before, never when the key names no run time",
			in: Input{Quarantined: []store.Object{inQuarantine(now.Add(-7*day), "a"), inQuarantine(now.Add(-7*day+time.Second), "b"),
				{Key: DefaultQuarantine + "notes/c", Size: 1}}},
			purge: []string{QuarantineKey(DefaultQuarantine, now.Add(-7*day), "a")},
			held:  []string{QuarantineKey(DefaultQuarantine, now.Add(-7*day+time.Second), "b"), DefaultQuarantine + "notes/c"}},
		{name: "a copy started long enough ago with no object is closed, a recent one waits",
			in:     Input{Started: []rlmm.SegmentMetadata{started(1, day, rlmm.CopySegmentStarted), started(2, day-time.Second, rlmm.CopySegmentStarted)}},
			closed: []string{rlmm.Uuid{1}.String()}, waiting: []string{rlmm.Uuid{2}.String()}},
		{name: "only COPY_SEGMENT_STARTED segments are closed",
			in: Input{Started: []rlmm.SegmentMetadata{started(3, 99*day, rlmm.CopySegmentFinished), started(4, 99*day, rlmm.DeleteSegmentStarted)}}},
		{name: "a deletion that left no object is finished once stuck, at once when a repair started it, else it waits; never lost",
			in: Input{Deleting: []rlmm.SegmentMetadata{started(6, day, rlmm.DeleteSegmentStarted), byRepair(started(7, time.Second, rlmm.DeleteSegmentStarted)),
				started(8, time.Second, rlmm.DeleteSegmentStarted)},
				Report: report(tp, []scrub.Missing{{SegmentID: rlmm.Uuid{6}.String(), State: "DELETE_SEGMENT_STARTED", StartOffset: 600, EndOffset: 699},
					{SegmentID: rlmm.Uuid{8}.String(), State: "DELETE_SEGMENT_STARTED", StartOffset: 800, EndOffset: 899}})},
			closed: []string{rlmm.Uuid{6}.String(), rlmm.Uuid{7}.String()}, waiting: []string{rlmm.Uuid{8}.String()}},
		{name: "a segment whose log is missing is reported lost with its offsets, nothing else",
			in: Input{Report: report(tp, []scrub.Missing{{SegmentID: rlmm.Uuid{5}.String(), State: "COPY_SEGMENT_FINISHED", StartOffset: 500, EndOffset: 599,
				Keys: []string{"k.log"}}})},
			lost: []string{rlmm.Uuid{5}.String()}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := MakePlan(c.in, o)
			if err != nil {
				t.Fatal(err)
			}
			check := func(what string, got, want []string) {
				t.Helper()
				if !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
					t.Errorf("%s = %v, want %v", what, got, want)
				}
			}
			check("quarantine", keys(p.Quarantine, func(m Move) string { return m.Key }), c.quarantine)
			check("purge", keys(p.Purge, func(m Purge) string { return m.Key }), c.purge)
			check("held", keys(p.Held, func(m Purge) string { return m.Key }), c.held)
			check("close", keys(p.Close, func(m Close) string { return m.SegmentID }), c.closed)
			check("waiting", keys(p.Waiting, func(m Waiting) string { return m.SegmentID }), c.waiting)
			check("lost", keys(p.Lost, func(m Lost) string { return m.SegmentID }), c.lost)
			if p.Summary.Protected != c.protected || p.Summary.Young != c.young {
				t.Errorf("summary %+v: want %d protected, %d young", p.Summary, c.protected, c.young)
			}
			for _, m := range p.Quarantine {
				if m.To != QuarantineKey(DefaultQuarantine, now, m.Key) {
					t.Errorf("%s goes to %s", m.Key, m.To)
				}
			}
			for _, l := range p.Lost {
				if l.StartOffset != 500 || l.EndOffset != 599 || l.TopicIDPartition != tp.String() {
					t.Errorf("lost %+v: want %s offsets 500..599", l, tp)
				}
			}
			events := 0
			for _, cl := range p.Close {
				want := []string{"DELETE_SEGMENT_STARTED", "DELETE_SEGMENT_FINISHED"}
				if cl.State == "DELETE_SEGMENT_STARTED" {
					want = want[1:]
				}
				events += len(want)
				if !slices.Equal(cl.Events, want) || cl.StartOffset%100 != 0 || cl.EndOffset != cl.StartOffset+99 {
					t.Errorf("close %+v: want %v", cl, want)
				}
			}
			if p.Summary.Events != events || len(p.events.Steps) != len(c.closed) {
				t.Errorf("%d events in %d steps, want %d in %d", p.Summary.Events, len(p.events.Steps), events, len(c.closed))
			}
		})
	}
}

func TestMakePlanRefusesABadQuarantine(t *testing.T) {
	for _, q := range []string{"", "no-slash"} {
		if _, err := MakePlan(Input{}, Options{Quarantine: q}); !errors.Is(err, rlmm.ErrInvalidArgument) {
			t.Errorf("quarantine %q: err %v, want ErrInvalidArgument", q, err)
		}
	}
}

package scrub_test

import (
	"slices"
	"testing"
	"time"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/scrub"
	"github.com/rlmm-go/rlmm/scrub/layout"
	"github.com/rlmm-go/rlmm/scrub/scrubtest"
	"github.com/rlmm-go/rlmm/scrub/store"
)

func TestPlan(t *testing.T) {
	rep := &scrub.Report{Partitions: []scrub.PartitionReport{{Orphans: []scrub.Orphan{
		{Key: "old", AgeMs: 48 * 3600_000, Reason: scrub.ReasonNotInMetadata},
		{Key: "edge", AgeMs: 24 * 3600_000, Reason: scrub.ReasonNotInMetadata},
		{Key: "young", AgeMs: 3600_000, Reason: scrub.ReasonNotInMetadata},
		{Key: "started", AgeMs: 48 * 3600_000, Reason: scrub.ReasonCopyStarted, Protected: true},
		{Key: "misplaced", AgeMs: 48 * 3600_000, Reason: scrub.ReasonMisplaced, Protected: true},
		{Key: "foreign", AgeMs: 48 * 3600_000, Reason: scrub.ReasonUnrecognized, Protected: true},
	}}}}
	cases := []struct {
		olderThan time.Duration
		want      []string
	}{
		{24 * time.Hour, []string{"old", "edge"}},
		{25 * time.Hour, []string{"old"}},
		{time.Minute, []string{"old", "edge", "young"}},
		{0, nil},
		{-time.Hour, nil},
	}
	for _, c := range cases {
		var got []string
		for _, o := range scrub.Plan(rep, c.olderThan) {
			got = append(got, o.Key)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("scrub.Plan(%s) = %v, want %v", c.olderThan, got, c.want)
		}
	}
}

// A segment whose custom metadata names other keys is found there, and its
// objects at the computed keys are misplaced (protected) orphans.
func TestCustomKeyPrecedence(t *testing.T) {
	l := mustLayout(t, layout.AivenName, "new/")
	f := scrubtest.New(scrubtest.Options{Layout: l, Topics: 1, PartitionsPerTopic: 1, SegmentsPerPartition: 3, CustomMetadata: true})
	computed := slices.Clone(f.Segments[1].Objects)
	f.MoveToPrefix(f.Segments[1], "old/")
	f.MoveToPrefix(f.Segments[2], "old/") // the same prefix is listed once
	x := indexOf(f)
	if p := x.Prefixes(); !slices.Equal(p, []string{"new/", "old/"}) {
		t.Fatalf("Prefixes = %v", p)
	}
	now := time.Now()
	objs := listing(f, now)
	rep := compareAll(x, objs, now)
	if rep.Summary.Findings() != 0 {
		t.Fatalf("objects at the custom keys: %+v", rep.Partitions)
	}
	for _, o := range computed {
		objs = append(objs, store.Object{Key: o.Key, Size: o.Size, Modified: now})
	}
	rep = compareAll(indexOf(f), objs, now)
	if rep.Summary.Orphans != len(computed) || rep.Summary.ProtectedOrphans != len(computed) || rep.Summary.Missing != 0 {
		t.Fatalf("copies at the computed keys: summary %+v", rep.Summary)
	}
	for _, o := range rep.Partitions[0].Orphans {
		if o.Reason != scrub.ReasonMisplaced {
			t.Errorf("orphan %s: reason %s, want %s", o.Key, o.Reason, scrub.ReasonMisplaced)
		}
	}
}

// Each object is classified by the state of the segment it names, the
// same whatever the order of the listing.
func TestCompareStatesAnyOrder(t *testing.T) {
	l := mustLayout(t, layout.LocalName, "")
	f := scrubtest.New(scrubtest.Options{Layout: l, Topics: 1, PartitionsPerTopic: 2, SegmentsPerPartition: 3})
	tp := f.Partitions[0]
	delStarted := f.Add(tp, 300, rlmm.DeleteSegmentStarted)
	started := f.Add(tp, 400, rlmm.CopySegmentStarted)
	finished := f.Add(tp, 500, rlmm.DeleteSegmentFinished)
	now := time.Now()
	objs := append(listing(f, now), store.Object{Key: finished.Objects[0].Key, Size: 5, Modified: now})
	objs = append(objs, store.Object{Key: objs[0].Key, Size: objs[0].Size, Modified: now}) // a second copy
	for _, order := range []string{"listed", "reversed"} {
		if order == "reversed" {
			slices.Reverse(objs)
		}
		rep := compareAll(indexOf(f), objs, now)
		reasons := map[string]int{}
		for _, p := range rep.Partitions {
			for _, o := range p.Orphans {
				reasons[o.Reason]++
			}
		}
		want := map[string]int{scrub.ReasonCopyStarted: len(started.Objects), scrub.ReasonNotInMetadata: 1, scrub.ReasonDuplicate: 1}
		if len(reasons) != len(want) || reasons[scrub.ReasonCopyStarted] != want[scrub.ReasonCopyStarted] ||
			reasons[scrub.ReasonNotInMetadata] != 1 || reasons[scrub.ReasonDuplicate] != 1 || rep.Summary.Missing != 0 || rep.Summary.Mismatches != 0 {
			t.Errorf("%s: orphans by reason %v, summary %+v; want %v", order, reasons, rep.Summary, want)
		}
		if rep.Summary.LiveSegments != len(f.Segments)-1 {
			t.Errorf("%s: %d live segments, want %d (all but the deleted)", order, rep.Summary.LiveSegments, len(f.Segments)-1)
		}
	}
	// Without its objects a DELETE_SEGMENT_STARTED segment is missing.
	var without []store.Object
	for _, o := range listing(f, now) {
		if !slices.ContainsFunc(delStarted.Objects, func(d scrubtest.Object) bool { return d.Key == o.Key }) {
			without = append(without, o)
		}
	}
	rep := compareAll(indexOf(f), without, now)
	if rep.Summary.Missing != 1 || rep.Partitions[0].Missing[0].State != "DELETE_SEGMENT_STARTED" || len(rep.Partitions[0].Missing[0].Keys) != 5 {
		t.Fatalf("DELETE_SEGMENT_STARTED without objects: %+v", rep.Partitions)
	}
}

// Observe allocates nothing for an object a live segment owns.
func TestObserveAllocatesNothing(t *testing.T) {
	l := mustLayout(t, layout.AivenName, "p/")
	f := scrubtest.New(scrubtest.Options{Layout: l, Topics: 1, PartitionsPerTopic: 4, SegmentsPerPartition: 50})
	x := indexOf(f)
	objs := listing(f, time.Now())
	c := scrub.NewComparer(x, time.Now())
	i := 0 // AllocsPerRun(100) observes 101 of the 600 objects, each once
	if n := testing.AllocsPerRun(100, func() {
		c.Observe(&objs[i])
		i++
	}); n != 0 {
		t.Fatalf("Observe allocates %.0f times per object", n)
	}
}

// The quarantine prefix is counted apart and never a finding; a
// COPY_SEGMENT_STARTED segment is "without objects" only when none of its
// objects is listed, at its key or misplaced.
func TestExcludeAndWithoutObjects(t *testing.T) {
	l := mustLayout(t, layout.LocalName, "")
	f := scrubtest.New(scrubtest.Options{Layout: l, Topics: 1, PartitionsPerTopic: 1, SegmentsPerPartition: 2})
	tp := f.Partitions[0]
	none := f.Add(tp, 1000, rlmm.CopySegmentStarted)
	some := f.Add(tp, 1100, rlmm.CopySegmentStarted)
	misplaced := f.Add(tp, 1200, rlmm.CopySegmentStarted)
	now := time.Now()
	var objs []store.Object
	for _, o := range listing(f, now) {
		if !slices.ContainsFunc(none.Objects, func(n scrubtest.Object) bool { return n.Key == o.Key }) &&
			!slices.ContainsFunc(misplaced.Objects, func(n scrubtest.Object) bool { return n.Key == o.Key }) &&
			(!slices.ContainsFunc(some.Objects, func(n scrubtest.Object) bool { return n.Key == o.Key }) || o.Key == some.Objects[0].Key) {
			objs = append(objs, o)
		}
	}
	// misplaced's log under another start offset: the id is the segment's,
	// the key is not its own.
	moved := misplaced.Meta
	moved.StartOffset = 7
	objs = append(objs, store.Object{Key: l.Key(tp, &moved, layout.LocalLog), Size: 5, Modified: now},
		store.Object{Key: "rlmm-quarantine/20260101T000000Z/x.log", Size: 9, Modified: now},
		store.Object{Key: "rlmm-quarantine/20260101T000000Z/y.log", Size: 1, Modified: now})
	c := scrub.NewComparer(indexOf(f), now)
	c.Exclude("rlmm-quarantine/")
	c.ObservePage(objs)
	rep := c.Report()
	if rep.Summary.Excluded != 2 || rep.Summary.ExcludedBytes != 10 || rep.Summary.Objects != int64(len(objs)-2) {
		t.Errorf("summary %+v: want 2 excluded (10 bytes), %d objects", rep.Summary, len(objs)-2)
	}
	for _, pr := range rep.Partitions {
		for _, o := range pr.Orphans {
			if !o.Protected {
				t.Errorf("unprotected orphan %s (%s): the quarantine is excluded, the rest are copies' objects", o.Key, o.Reason)
			}
		}
	}
	got := c.WithoutObjects(rlmm.CopySegmentStarted)
	if len(got) != 1 || got[0].ID != none.Meta.ID.ID || got[0].TopicIDPartition != tp {
		t.Errorf("WithoutObjects = %v, want only %s of %s", got, none.Meta.ID.ID, tp)
	}
}

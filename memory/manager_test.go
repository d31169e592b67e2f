package memory

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/rlmm-go/rlmm"
	"pgregory.net/rapid"
)

// unchanged runs op and fails if it changed the manager's exported state.
func unchanged(t *testing.T, m *Manager, op func() error) error {
	t.Helper()
	before := m.Export(nil)
	err := op()
	if d := equalStates(m.Export(nil), before); d != nil {
		t.Errorf("a rejected call changed the state: %v", d)
	}
	return err
}

func TestAddSegmentRules(t *testing.T) {
	bad := func(f func(*rlmm.SegmentMetadata)) rlmm.SegmentMetadata {
		md := segMD(tpFoo, 9, 10, 20)
		f(&md)
		return md
	}
	cases := []struct {
		name  string
		prior rlmm.SegmentState // state segment 9 is in first; -1 = absent
		add   rlmm.SegmentMetadata
		want  error
		// wantFrom is the TransitionError's From for ErrInvalidTransition.
		wantFrom rlmm.SegmentState
	}{
		{name: "new segment", prior: -1, add: segMD(tpFoo, 9, 10, 20)},
		{name: "negative start", prior: -1, add: bad(func(m *rlmm.SegmentMetadata) { m.StartOffset = -1 }), want: rlmm.ErrInvalidArgument},
		{name: "end before start", prior: -1, add: bad(func(m *rlmm.SegmentMetadata) { m.EndOffset = 9 }), want: rlmm.ErrInvalidArgument},
		{name: "no epochs", prior: -1, add: bad(func(m *rlmm.SegmentMetadata) { m.LeaderEpochs = nil }), want: rlmm.ErrInvalidArgument},
		{name: "epochs unsorted", prior: -1, add: bad(func(m *rlmm.SegmentMetadata) { m.LeaderEpochs = []rlmm.EpochStart{ep(2, 10), ep(1, 15)} }), want: rlmm.ErrInvalidArgument},
		{name: "epochs duplicated", prior: -1, add: bad(func(m *rlmm.SegmentMetadata) { m.LeaderEpochs = []rlmm.EpochStart{ep(1, 10), ep(1, 15)} }), want: rlmm.ErrInvalidArgument},
		{name: "undefined state", prior: -1, add: bad(func(m *rlmm.SegmentMetadata) { m.State = 7 }), want: rlmm.ErrInvalidArgument},
		{name: "added FINISHED", prior: -1, add: bad(func(m *rlmm.SegmentMetadata) { m.State = rlmm.CopySegmentFinished }), want: rlmm.ErrInvalidArgument},
		{name: "added DELETE_STARTED", prior: -1, add: bad(func(m *rlmm.SegmentMetadata) { m.State = rlmm.DeleteSegmentStarted }), want: rlmm.ErrInvalidArgument},
		{name: "added DELETE_FINISHED", prior: -1, add: bad(func(m *rlmm.SegmentMetadata) { m.State = rlmm.DeleteSegmentFinished }), want: rlmm.ErrInvalidArgument},
		// Epoch starts outside the segment pass Kafka's constructor: accepted.
		{name: "insane but Kafka-valid epochs", prior: -1, add: bad(func(m *rlmm.SegmentMetadata) { m.LeaderEpochs = []rlmm.EpochStart{ep(1, 50), ep(2, 3)} })},
		// A retried add while STARTED succeeds and keeps the first metadata.
		{name: "re-add while STARTED", prior: rlmm.CopySegmentStarted, add: bad(func(m *rlmm.SegmentMetadata) { m.EndOffset = 99 })},
		{name: "re-add when FINISHED", prior: rlmm.CopySegmentFinished, add: segMD(tpFoo, 9, 10, 20), want: rlmm.ErrInvalidTransition, wantFrom: rlmm.CopySegmentFinished},
		{name: "re-add when DELETE_STARTED", prior: rlmm.DeleteSegmentStarted, add: segMD(tpFoo, 9, 10, 20), want: rlmm.ErrInvalidTransition, wantFrom: rlmm.DeleteSegmentStarted},
		// DELETE_FINISHED forgets the segment: the id can start again.
		{name: "re-add after DELETE_FINISHED", prior: rlmm.DeleteSegmentFinished, add: segMD(tpFoo, 9, 10, 20)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := New()
			mustOK(t, m.AddSegment(ctx, segMD(tpFoo, 1, 0, 5))) // a neighbour that must not move
			if c.prior >= 0 {
				mustOK(t, m.AddSegment(ctx, segMD(tpFoo, 9, 10, 20)))
				moveTo(t, m, tpFoo, 9, c.prior)
			}
			check := m.CheckAddSegment(c.add)
			var err error
			if c.want != nil || c.prior == rlmm.CopySegmentStarted {
				err = unchanged(t, m, func() error { return m.AddSegment(ctx, c.add) })
			} else {
				err = m.AddSegment(ctx, c.add)
			}
			if !sameError(err, check) {
				t.Errorf("CheckAddSegment = %v, AddSegment = %v", check, err)
			}
			if c.want == nil {
				mustOK(t, err)
				list, _ := m.ListSegments(tpFoo)
				if c.prior != rlmm.CopySegmentStarted && !slices.ContainsFunc(list, func(md rlmm.SegmentMetadata) bool { return md.Equal(&c.add) }) {
					t.Errorf("added segment not listed as given: %v", list)
				}
				return
			}
			if !errors.Is(err, c.want) {
				t.Fatalf("err = %v, want %v", err, c.want)
			}
			if c.want == rlmm.ErrInvalidTransition {
				var te *rlmm.TransitionError
				if !errors.As(err, &te) || te.Segment != c.add.ID || te.From != c.wantFrom || te.To != rlmm.CopySegmentStarted || !te.Exists {
					t.Errorf("transition error = %#v", err)
				}
			}
		})
	}
}

func TestUpdateSegmentTransitions(t *testing.T) {
	// Every (current state, requested state) pair, with the expected result
	// written out (Kafka's table, §4.1); updates to STARTED fail Validate.
	type res int
	const (
		ok res = iota
		invalidArg
		invalidTransition
		unknown
	)
	states := []rlmm.SegmentState{rlmm.CopySegmentStarted, rlmm.CopySegmentFinished, rlmm.DeleteSegmentStarted, rlmm.DeleteSegmentFinished}
	want := map[rlmm.SegmentState][4]res{
		// to:                     STARTED     FINISHED           DEL_STARTED        DEL_FINISHED
		rlmm.CopySegmentStarted:   {invalidArg, ok, ok, invalidTransition},
		rlmm.CopySegmentFinished:  {invalidArg, ok, ok, invalidTransition},
		rlmm.DeleteSegmentStarted: {invalidArg, invalidTransition, ok, ok},
		// A DELETE_FINISHED segment is forgotten: any update is for an unknown segment.
		rlmm.DeleteSegmentFinished: {invalidArg, unknown, unknown, unknown},
	}
	sentinel := map[res]error{invalidArg: rlmm.ErrInvalidArgument, invalidTransition: rlmm.ErrInvalidTransition, unknown: rlmm.ErrUnknownSegment}
	for _, from := range states {
		for k, to := range states {
			t.Run(from.String()+"->"+to.String(), func(t *testing.T) {
				m := New()
				mustOK(t, m.AddSegment(ctx, segMD(tpFoo, 1, 0, 100)))
				mustOK(t, m.AddSegment(ctx, segMD(tpFoo, 9, 0, 100)))
				moveTo(t, m, tpFoo, 9, from)
				u := upd(tpFoo, 9, to)
				u.CustomMetadata = []byte{1, 2}
				check := m.CheckUpdateSegment(u)
				expect := want[from][k]
				var err error
				if expect == ok {
					err = m.UpdateSegment(ctx, u)
				} else {
					err = unchanged(t, m, func() error { return m.UpdateSegment(ctx, u) })
				}
				if !sameError(err, check) {
					t.Errorf("CheckUpdateSegment = %v, UpdateSegment = %v", check, err)
				}
				if expect != ok {
					if !errors.Is(err, sentinel[expect]) {
						t.Fatalf("err = %v, want %v", err, sentinel[expect])
					}
					var te *rlmm.TransitionError
					if expect == invalidTransition && (!errors.As(err, &te) || te.From != from || te.To != to || te.Segment != u.ID) {
						t.Errorf("transition error = %#v", err)
					}
					return
				}
				mustOK(t, err)
				list, _ := m.ListSegments(tpFoo)
				if to == rlmm.DeleteSegmentFinished {
					if slices.Contains(segNos(list), 9) {
						t.Errorf("DELETE_SEGMENT_FINISHED segment still listed")
					}
					return
				}
				i := slices.Index(segNos(list), 9)
				if i < 0 || list[i].State != to || list[i].BrokerID != u.BrokerID || list[i].EventTimestampMs != u.EventTimestampMs || !slices.Equal(list[i].CustomMetadata, u.CustomMetadata) {
					t.Errorf("after update: %v", list)
				}
			})
		}
	}
	t.Run("undefined state", func(t *testing.T) {
		m := New()
		mustOK(t, m.AddSegment(ctx, segMD(tpFoo, 1, 0, 100)))
		if err := m.UpdateSegment(ctx, upd(tpFoo, 1, 9)); !errors.Is(err, rlmm.ErrInvalidArgument) {
			t.Errorf("err = %v, want ErrInvalidArgument", err)
		}
	})
	t.Run("unknown partition", func(t *testing.T) {
		m := New()
		if err := m.UpdateSegment(ctx, upd(tpBar1, 1, rlmm.CopySegmentFinished)); !errors.Is(err, rlmm.ErrUnknownSegment) {
			t.Errorf("err = %v, want ErrUnknownSegment", err)
		}
	})
}

func TestUpdateTakesFieldsFromUpdate(t *testing.T) {
	// Kafka's createWithUpdates: broker, timestamp, custom metadata (replaced,
	// also by absent or empty) and state come from the update.
	for _, c := range []struct {
		name   string
		start  []byte
		update []byte
	}{{"present to absent", []byte{1}, nil}, {"absent to empty", nil, []byte{}}, {"empty to present", []byte{}, []byte{7, 8}}, {"absent stays absent", nil, nil}} {
		t.Run(c.name, func(t *testing.T) {
			m := New()
			md := segMD(tpFoo, 1, 0, 100, ep(0, 0), ep(3, 50))
			md.CustomMetadata = c.start
			mustOK(t, m.AddSegment(ctx, md))
			u := rlmm.SegmentUpdate{ID: md.ID, EventTimestampMs: 77, CustomMetadata: c.update, State: rlmm.CopySegmentFinished, BrokerID: 5}
			mustOK(t, m.UpdateSegment(ctx, u))
			want, err := md.WithUpdate(u)
			mustOK(t, err)
			got, found, err := m.SegmentForOffset(tpFoo, 3, 60)
			mustOK(t, err)
			if !found || !got.Equal(&want) {
				t.Errorf("got %v, want %v", got, want)
			}
		})
	}
}

func TestPartitionDeleteRules(t *testing.T) {
	pd := func(tp rlmm.TopicIDPartition, s rlmm.PartitionDeleteState) rlmm.PartitionDelete {
		return rlmm.PartitionDelete{TopicIDPartition: tp, State: s, EventTimestampMs: 9, BrokerID: 4}
	}
	cases := []struct {
		name      string
		seq       []rlmm.PartitionDeleteState
		wantErr   error
		wantState bool // the partition still has state
		wantFound bool // the finished segment is still found
	}{
		{"marked keeps segments", []rlmm.PartitionDeleteState{rlmm.DeletePartitionMarked}, nil, true, true},
		{"started keeps segments", []rlmm.PartitionDeleteState{rlmm.DeletePartitionMarked, rlmm.DeletePartitionStarted}, nil, true, true},
		// Kafka applies every partition-delete event without a transition check.
		{"started without marked", []rlmm.PartitionDeleteState{rlmm.DeletePartitionStarted}, nil, true, true},
		{"backwards is accepted", []rlmm.PartitionDeleteState{rlmm.DeletePartitionStarted, rlmm.DeletePartitionMarked}, nil, true, true},
		{"finished drops everything", []rlmm.PartitionDeleteState{rlmm.DeletePartitionMarked, rlmm.DeletePartitionStarted, rlmm.DeletePartitionFinished}, nil, false, false},
		{"finished alone drops everything", []rlmm.PartitionDeleteState{rlmm.DeletePartitionFinished}, nil, false, false},
		{"undefined state", []rlmm.PartitionDeleteState{5}, rlmm.ErrInvalidArgument, true, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := New()
			addFinished(t, m, segMD(tpFoo, 1, 0, 100))
			addFinished(t, m, segMD(tpBar1, 2, 0, 100))
			var err error
			for _, s := range c.seq {
				d := pd(tpFoo, s)
				check := m.CheckPartitionDelete(d)
				if err = m.PutPartitionDelete(ctx, d); !sameError(err, check) {
					t.Errorf("CheckPartitionDelete = %v, PutPartitionDelete = %v", check, err)
				}
			}
			if (c.wantErr == nil) != (err == nil) || (c.wantErr != nil && !errors.Is(err, c.wantErr)) {
				t.Fatalf("err = %v, want %v", err, c.wantErr)
			}
			v, has := m.View(tpFoo)
			if has != c.wantState {
				t.Errorf("partition has state = %t, want %t", has, c.wantState)
			}
			if c.wantErr == nil && has {
				if want := pd(tpFoo, c.seq[len(c.seq)-1]); v.Delete == nil || *v.Delete != want {
					t.Errorf("delete state = %v, want %v", v.Delete, want)
				}
			}
			if found := lookupNo(t, m, tpFoo, 0, 50) == 1; found != c.wantFound {
				t.Errorf("segment found = %t, want %t", found, c.wantFound)
			}
			if !has {
				if h := highest(t, m, tpFoo, 0); h != -1 {
					t.Errorf("highest offset survived DELETE_PARTITION_FINISHED: %d", h)
				}
			}
			if lookupNo(t, m, tpBar1, 0, 50) != 2 {
				t.Errorf("another partition was touched")
			}
		})
	}
	t.Run("re-add after finished", func(t *testing.T) {
		m := New()
		addFinished(t, m, segMD(tpFoo, 1, 0, 100))
		mustOK(t, m.PutPartitionDelete(ctx, pd(tpFoo, rlmm.DeletePartitionFinished)))
		mustOK(t, m.AddSegment(ctx, segMD(tpFoo, 1, 0, 100)))
		if list, _ := m.ListSegments(tpFoo); len(list) != 1 || list[0].State != rlmm.CopySegmentStarted {
			t.Errorf("list = %v", list)
		}
	})
	t.Run("delete state alone is state", func(t *testing.T) {
		m := New()
		mustOK(t, m.PutPartitionDelete(ctx, pd(tpBar1, rlmm.DeletePartitionMarked)))
		if got := m.Partitions(); !slices.Equal(got, []rlmm.TopicIDPartition{tpBar1}) {
			t.Errorf("Partitions() = %v", got)
		}
	})
}

func TestLookupImprovements(t *testing.T) {
	type probe struct {
		offset int64
		want   int
	}
	cases := []struct {
		name    string
		segs    []rlmm.SegmentMetadata // finished in this order
		deletes []int                  // then delete-started in this order
		probes  []probe
		list    []int
		highest int64
	}{
		{
			// Kafka §5.3 A/B: Kafka's lookup(90) is empty; A covers it.
			name: "A/B nested newer", segs: []rlmm.SegmentMetadata{segMD(tpFoo, 1, 0, 100), segMD(tpFoo, 2, 50, 80)},
			probes: []probe{{40, 1}, {50, 2}, {60, 2}, {80, 2}, {81, 1}, {90, 1}, {100, 1}, {101, -1}},
			list:   []int{1, 2}, highest: 100,
		},
		{
			// Kafka §5.3 C/D: Kafka drops C from list(epoch) and lookup(260) is empty.
			name: "C/D same start, shorter newer", segs: []rlmm.SegmentMetadata{segMD(tpFoo, 3, 200, 300), segMD(tpFoo, 4, 200, 250)},
			probes: []probe{{200, 4}, {220, 4}, {250, 4}, {251, 3}, {260, 3}, {300, 3}, {301, -1}},
			list:   []int{4, 3}, highest: 300,
		},
		{
			name: "deleting the newer uncovers the older", segs: []rlmm.SegmentMetadata{segMD(tpFoo, 1, 0, 100), segMD(tpFoo, 2, 50, 80)},
			deletes: []int{2}, probes: []probe{{60, 1}, {90, 1}, {0, 1}}, list: []int{1, 2}, highest: 100,
		},
		{
			name: "an older segment hidden inside a newer one reappears", segs: []rlmm.SegmentMetadata{segMD(tpFoo, 1, 5, 10), segMD(tpFoo, 2, 0, 20)},
			deletes: []int{2}, probes: []probe{{4, -1}, {5, 1}, {10, 1}, {11, -1}}, list: []int{2, 1}, highest: 20,
		},
		{
			name: "three layers, middle deleted", segs: []rlmm.SegmentMetadata{segMD(tpFoo, 1, 0, 100), segMD(tpFoo, 2, 20, 80), segMD(tpFoo, 3, 40, 60)},
			deletes: []int{2}, probes: []probe{{10, 1}, {30, 1}, {50, 3}, {70, 1}, {100, 1}}, list: []int{1, 2, 3}, highest: 100,
		},
		{
			name: "three layers, top then bottom deleted", segs: []rlmm.SegmentMetadata{segMD(tpFoo, 1, 0, 100), segMD(tpFoo, 2, 20, 80), segMD(tpFoo, 3, 40, 60)},
			deletes: []int{3, 1}, probes: []probe{{10, -1}, {30, 2}, {50, 2}, {90, -1}}, list: []int{1, 2, 3}, highest: 100,
		},
		{
			name: "staircase of overlapping uploads", segs: []rlmm.SegmentMetadata{segMD(tpFoo, 1, 0, 50), segMD(tpFoo, 2, 40, 90), segMD(tpFoo, 3, 30, 60)},
			deletes: []int{3}, probes: []probe{{35, 1}, {45, 2}, {55, 2}, {95, -1}}, list: []int{1, 3, 2}, highest: 90,
		},
		{
			name: "deleted segments keep the highest offset", segs: []rlmm.SegmentMetadata{segMD(tpFoo, 1, 0, 100), segMD(tpFoo, 2, 101, 200)},
			deletes: []int{2, 1}, probes: []probe{{50, -1}, {150, -1}}, list: []int{1, 2}, highest: 200,
		},
		{
			// Epoch starts past the segment's end: Kafka's epoch range rule,
			// an empty range covers nothing but still counts for the highest offset.
			name: "empty epoch range", segs: []rlmm.SegmentMetadata{segMD(tpFoo, 1, 10, 20, ep(0, 15), ep(1, 12))},
			probes: []probe{{12, -1}, {15, -1}}, list: []int{1}, highest: 11,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := New()
			for _, md := range c.segs {
				addFinished(t, m, md)
			}
			for _, n := range c.deletes {
				mustOK(t, m.UpdateSegment(ctx, upd(tpFoo, n, rlmm.DeleteSegmentStarted)))
			}
			for _, p := range c.probes {
				if got := lookupNo(t, m, tpFoo, 0, p.offset); got != p.want {
					t.Errorf("lookup(0, %d) = s%d, want s%d", p.offset, got, p.want)
				}
			}
			list, err := m.ListSegmentsForEpoch(tpFoo, 0)
			mustOK(t, err)
			if got := segNos(list); !slices.Equal(got, c.list) {
				t.Errorf("list(0) = %v, want %v", got, c.list)
			}
			if got := highest(t, m, tpFoo, 0); got != c.highest {
				t.Errorf("highest(0) = %d, want %d", got, c.highest)
			}
		})
	}
}

func TestRefinishMakesNewest(t *testing.T) {
	// FINISHED -> FINISHED is an idempotent success that, as in Kafka (whose
	// finish handler runs again), makes the segment the newest upload.
	m := New()
	addFinished(t, m, segMD(tpFoo, 1, 0, 100))
	addFinished(t, m, segMD(tpFoo, 2, 50, 150))
	if got := lookupNo(t, m, tpFoo, 0, 60); got != 2 {
		t.Fatalf("lookup(60) = s%d, want s2", got)
	}
	mustOK(t, m.UpdateSegment(ctx, upd(tpFoo, 1, rlmm.CopySegmentFinished)))
	if got := lookupNo(t, m, tpFoo, 0, 60); got != 1 {
		t.Errorf("after re-finishing s1, lookup(60) = s%d, want s1", got)
	}
	if got := lookupNo(t, m, tpFoo, 0, 120); got != 2 {
		t.Errorf("lookup(120) = s%d, want s2", got)
	}
}

func TestListOrderTies(t *testing.T) {
	m := New()
	// Same start: by end; same start and end: by id bytes.
	for _, md := range []rlmm.SegmentMetadata{segMD(tpFoo, 7, 10, 30), segMD(tpFoo, 3, 10, 20), segMD(tpFoo, 5, 10, 20), segMD(tpFoo, 4, 0, 40)} {
		mustOK(t, m.AddSegment(ctx, md))
	}
	moveTo(t, m, tpFoo, 5, rlmm.DeleteSegmentStarted)
	want := []int{4, 3, 5, 7}
	all, _ := m.ListSegments(tpFoo)
	e0, _ := m.ListSegmentsForEpoch(tpFoo, 0)
	for name, got := range map[string][]rlmm.SegmentMetadata{"ListSegments": all, "ListSegmentsForEpoch": e0} {
		if !slices.Equal(segNos(got), want) {
			t.Errorf("%s = %v, want %v", name, segNos(got), want)
		}
	}
}

func TestPartitionsAreDistinctByName(t *testing.T) {
	m := New()
	addFinished(t, m, segMD(tpFoo, 1, 0, 100))
	addFinished(t, m, segMD(tpFooRenamed, 2, 0, 100))
	addFinished(t, m, segMD(tpBar1, 3, 0, 100))
	want := []rlmm.TopicIDPartition{tpFooRenamed, tpBar1, tpFoo} // by topic, partition, id
	if got := m.Partitions(); !slices.Equal(got, want) {
		t.Errorf("Partitions() = %v, want %v", got, want)
	}
	for tp, n := range map[rlmm.TopicIDPartition]int{tpFoo: 1, tpFooRenamed: 2, tpBar1: 3} {
		if got := lookupNo(t, m, tp, 0, 10); got != n {
			t.Errorf("lookup in %s = s%d, want s%d", tp, got, n)
		}
	}
	m.DropPartition(tpFoo)
	if got := m.Partitions(); !slices.Equal(got, want[:2]) {
		t.Errorf("after DropPartition: %v", got)
	}
	if got := lookupNo(t, m, tpFoo, 0, 10); got != -1 {
		t.Errorf("dropped partition still answers s%d", got)
	}
}

func TestNextSegmentWithTxnIndex(t *testing.T) {
	seg := func(n int, start, end int64, txnEmpty bool) rlmm.SegmentMetadata {
		md := segMD(tpFoo, n, start, end)
		md.TxnIndexEmpty = txnEmpty
		return md
	}
	cases := []struct {
		name   string
		segs   []rlmm.SegmentMetadata
		offset int64
		want   int
	}{
		{"the segment itself has an index", []rlmm.SegmentMetadata{seg(1, 0, 99, false)}, 10, 1},
		{"skips empty indexes", []rlmm.SegmentMetadata{seg(1, 0, 99, true), seg(2, 100, 199, true), seg(3, 200, 299, false)}, 10, 3},
		{"stops at a gap", []rlmm.SegmentMetadata{seg(1, 0, 99, true), seg(3, 200, 299, false)}, 10, -1},
		{"none has an index", []rlmm.SegmentMetadata{seg(1, 0, 99, true), seg(2, 100, 199, true)}, 10, -1},
		{"nothing at the offset", []rlmm.SegmentMetadata{seg(1, 0, 99, false)}, 150, -1},
		// Epoch start past the segment end: epoch 0's range in s1 reaches 149,
		// so Kafka's walk (end offset + 1 = 51) would find s1 forever; ours
		// continues after the epoch's range, at 150.
		{"walk always ends", []rlmm.SegmentMetadata{func() rlmm.SegmentMetadata {
			md := seg(1, 0, 50, true)
			md.LeaderEpochs = []rlmm.EpochStart{ep(0, 0), ep(1, 150)}
			return md
		}(), seg(2, 150, 199, false)}, 10, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := New()
			for _, md := range c.segs {
				addFinished(t, m, md)
			}
			md, ok, err := m.NextSegmentWithTxnIndex(tpFoo, 0, c.offset)
			mustOK(t, err)
			got := -1
			if ok {
				got = segNo(md)
			}
			if got != c.want {
				t.Errorf("NextSegmentWithTxnIndex(0, %d) = s%d, want s%d", c.offset, got, c.want)
			}
		})
	}
}

func TestReturnedValuesAreCopies(t *testing.T) {
	m := New()
	md := segMD(tpFoo, 1, 0, 100, ep(0, 0), ep(1, 50))
	md.CustomMetadata = []byte{1, 2, 3}
	mustOK(t, m.AddSegment(ctx, md))
	// The caller's value is copied in.
	md.LeaderEpochs[1].StartOffset = 99
	md.CustomMetadata[0] = 9
	mustOK(t, m.UpdateSegment(ctx, rlmm.SegmentUpdate{ID: md.ID, State: rlmm.CopySegmentFinished, CustomMetadata: []byte{4, 5}}))
	want, _, _ := m.SegmentForOffset(tpFoo, 1, 60)
	want = want.Clone()
	if want.LeaderEpochs[1].StartOffset != 50 {
		t.Fatalf("the manager kept the caller's slice: %v", want)
	}
	scribble := func(mds ...rlmm.SegmentMetadata) {
		for _, x := range mds {
			x.LeaderEpochs[0].Epoch = 42
			_ = append(x.LeaderEpochs, ep(77, 77)) // must not reach a neighbour
			if len(x.CustomMetadata) > 0 {
				x.CustomMetadata[0] = 42
			}
		}
	}
	got, _, _ := m.SegmentForOffset(tpFoo, 1, 60)
	scribble(got)
	var into rlmm.SegmentMetadata
	_, _ = m.SegmentForOffsetInto(tpFoo, 1, 60, &into)
	scribble(into)
	all, _ := m.ListSegments(tpFoo)
	scribble(all...)
	e1, _ := m.ListSegmentsForEpoch(tpFoo, 1)
	scribble(e1...)
	nx, _, _ := m.NextSegmentWithTxnIndex(tpFoo, 1, 60)
	scribble(nx)
	for _, st := range m.Export(nil) {
		scribble(st.Segments...)
	}
	again, _, _ := m.SegmentForOffset(tpFoo, 1, 60)
	if !again.Equal(&want) {
		t.Errorf("the cache changed through a returned value:\n got %v\nwant %v", again, want)
	}
}

func TestCustomMetadataAbsentVersusEmpty(t *testing.T) {
	m := New()
	a := segMD(tpFoo, 1, 0, 10)
	b := segMD(tpFoo, 2, 11, 20)
	b.CustomMetadata = []byte{}
	mustOK(t, m.AddSegment(ctx, a))
	mustOK(t, m.AddSegment(ctx, b))
	list, _ := m.ListSegments(tpFoo)
	if list[0].CustomMetadata != nil || list[1].CustomMetadata == nil || len(list[1].CustomMetadata) != 0 {
		t.Errorf("absent/empty custom metadata not kept apart: %#v / %#v", list[0].CustomMetadata, list[1].CustomMetadata)
	}
	mustOK(t, m.UpdateSegment(ctx, rlmm.SegmentUpdate{ID: a.ID, State: rlmm.CopySegmentFinished, CustomMetadata: []byte{}}))
	mustOK(t, m.UpdateSegment(ctx, rlmm.SegmentUpdate{ID: b.ID, State: rlmm.CopySegmentFinished}))
	var into rlmm.SegmentMetadata
	for _, c := range []struct {
		offset    int64
		wantEmpty bool
	}{{5, true}, {15, false}, {5, true}} {
		if ok, err := m.SegmentForOffsetInto(tpFoo, 0, c.offset, &into); !ok || err != nil {
			t.Fatalf("lookup(%d): %t %v", c.offset, ok, err)
		}
		if (into.CustomMetadata != nil) != c.wantEmpty || len(into.CustomMetadata) != 0 {
			t.Errorf("lookup(%d): custom metadata %#v, want present-but-empty %t", c.offset, into.CustomMetadata, c.wantEmpty)
		}
	}
}

func TestSegmentForOffsetIntoDoesNotAllocate(t *testing.T) {
	m := New()
	for n := 0; n < 100; n++ {
		addFinished(t, m, segMD(tpFoo, n, int64(n)*100, int64(n)*100+99))
	}
	var dst rlmm.SegmentMetadata
	off := int64(0)
	allocs := testing.AllocsPerRun(1000, func() {
		off = (off + 37) % 10_000
		if ok, err := m.SegmentForOffsetInto(tpFoo, 0, off, &dst); !ok || err != nil {
			t.Fatalf("miss at %d", off)
		}
	})
	if allocs != 0 {
		t.Errorf("SegmentForOffsetInto allocates %.1f times per call", allocs)
	}
}

func TestClose(t *testing.T) {
	m := New()
	addFinished(t, m, segMD(tpFoo, 1, 0, 100))
	if !m.IsReady(tpBar1) {
		t.Errorf("IsReady before Close = false")
	}
	mustOK(t, m.Close())
	mustOK(t, m.Close())
	calls := map[string]error{
		"AddSegment":            m.AddSegment(ctx, segMD(tpFoo, 2, 0, 1)),
		"UpdateSegment":         m.UpdateSegment(ctx, upd(tpFoo, 1, rlmm.DeleteSegmentStarted)),
		"PutPartitionDelete":    m.PutPartitionDelete(ctx, rlmm.PartitionDelete{TopicIDPartition: tpFoo}),
		"CheckAddSegment":       m.CheckAddSegment(segMD(tpFoo, 2, 0, 1)),
		"CheckUpdateSegment":    m.CheckUpdateSegment(upd(tpFoo, 1, rlmm.DeleteSegmentStarted)),
		"CheckPartitionDelete":  m.CheckPartitionDelete(rlmm.PartitionDelete{TopicIDPartition: tpFoo}),
		"OnPartitionLeadership": m.OnPartitionLeadershipChanges(ctx, nil, nil),
		"OnStopPartitions":      m.OnStopPartitions(ctx, nil),
		"Import":                m.Import(nil),
		"SegmentForOffset":      third(m.SegmentForOffset(tpFoo, 0, 5)),
		"HighestOffsetForEpoch": third(m.HighestOffsetForEpoch(tpFoo, 0)),
		"ListSegments":          second(m.ListSegments(tpFoo)),
		"ListSegmentsForEpoch":  second(m.ListSegmentsForEpoch(tpFoo, 0)),
		"RemoteLogSize":         second(m.RemoteLogSize(tpFoo, 0)),
		"NextSegmentWithTxnIdx": third(m.NextSegmentWithTxnIndex(tpFoo, 0, 5)),
		"SegmentForOffsetInto":  second(m.SegmentForOffsetInto(tpFoo, 0, 5, &rlmm.SegmentMetadata{})),
	}
	for name, err := range calls {
		if !errors.Is(err, rlmm.ErrClosed) {
			t.Errorf("%s after Close: err = %v, want ErrClosed", name, err)
		}
	}
	if m.IsReady(tpFoo) || m.Export(nil) != nil || len(m.Partitions()) != 0 {
		t.Errorf("state visible after Close")
	}
	if _, ok := m.View(tpFoo); ok {
		t.Errorf("View after Close found state")
	}
}

// second returns the error of a two-result call.
func second[A any](_ A, err error) error { return err }

// third returns the error of a three-result call.
func third[A, B any](_ A, _ B, err error) error { return err }

func TestExportImport(t *testing.T) {
	m := New()
	addFinished(t, m, segMD(tpFoo, 1, 0, 100))
	addFinished(t, m, segMD(tpFoo, 2, 50, 80))
	mustOK(t, m.AddSegment(ctx, segMD(tpFoo, 3, 101, 200, ep(0, 101), ep(2, 150))))
	addFinished(t, m, segMD(tpBar1, 4, 0, 10))
	mustOK(t, m.UpdateSegment(ctx, upd(tpBar1, 4, rlmm.DeleteSegmentStarted)))
	mustOK(t, m.UpdateSegment(ctx, upd(tpBar1, 4, rlmm.DeleteSegmentFinished)))
	mustOK(t, m.PutPartitionDelete(ctx, rlmm.PartitionDelete{TopicIDPartition: tpBar1, State: rlmm.DeletePartitionMarked}))

	states := m.Export(nil)
	if len(states) != 2 || states[0].TopicIDPartition != tpBar1 || states[1].TopicIDPartition != tpFoo {
		t.Fatalf("Export partitions: %v", states)
	}
	if got := states[0]; len(got.Segments) != 0 || !slices.Equal(got.HighestOffsets, []EpochOffset{{0, 10}}) || got.Delete == nil {
		t.Errorf("tpBar1 export = %+v", got)
	}
	mustOK(t, m.UpdateSegment(ctx, upd(tpFoo, 1, rlmm.CopySegmentFinished))) // s1 changes last
	states = m.Export(nil)
	if got := segNos(states[1].Segments); !slices.Equal(got, []int{2, 3, 1}) {
		t.Errorf("tpFoo segments in last-change order = %v, want [2 3 1]", got)
	}

	t.Run("keep filter", func(t *testing.T) {
		only := m.Export(func(tp rlmm.TopicIDPartition) bool { return tp == tpFoo })
		if len(only) != 1 || only[0].TopicIDPartition != tpFoo {
			t.Errorf("Export(keep tpFoo) = %v", only)
		}
	})
	t.Run("round trip", func(t *testing.T) {
		fresh := New()
		mustOK(t, fresh.Import(states))
		if err := equalStates(fresh.Export(nil), states); err != nil {
			t.Fatal(err)
		}
		if got := lookupNo(t, fresh, tpFoo, 0, 60); got != 1 {
			t.Errorf("imported lookup(60) = s%d, want s1 (newest finished)", got)
		}
		if got := highest(t, fresh, tpBar1, 0); got != 10 {
			t.Errorf("imported highest = %d, want 10", got)
		}
	})
	t.Run("replaces only what it is given", func(t *testing.T) {
		other := New()
		addFinished(t, other, segMD(tpFoo, 9, 0, 5))
		addFinished(t, other, segMD(tpFooRenamed, 8, 0, 5))
		mustOK(t, other.Import(states[1:])) // tpFoo only
		if got := lookupNo(t, other, tpFoo, 0, 3); got != 1 {
			t.Errorf("tpFoo not replaced: lookup(3) = s%d", got)
		}
		if got := lookupNo(t, other, tpFooRenamed, 0, 3); got != 8 {
			t.Errorf("tpFooRenamed touched: lookup(3) = s%d", got)
		}
		mustOK(t, other.Import([]PartitionState{{TopicIDPartition: tpFoo}}))
		if _, ok := other.View(tpFoo); ok {
			t.Errorf("importing an empty state left the partition")
		}
	})
	t.Run("invalid states change nothing", func(t *testing.T) {
		good := states[1]
		mod := func(f func(*PartitionState)) []PartitionState {
			st := good
			st.Segments = slices.Clone(good.Segments)
			f(&st)
			return []PartitionState{states[0], st}
		}
		for name, in := range map[string][]PartitionState{
			"invalid segment":   mod(func(s *PartitionState) { s.Segments[0].EndOffset = -5 }),
			"foreign segment":   mod(func(s *PartitionState) { s.Segments[0].ID.TopicIDPartition = tpBar1 }),
			"deleted segment":   mod(func(s *PartitionState) { s.Segments[0].State = rlmm.DeleteSegmentFinished }),
			"duplicate segment": mod(func(s *PartitionState) { s.Segments[1].ID = s.Segments[0].ID }),
			"unsorted highest":  mod(func(s *PartitionState) { s.HighestOffsets = []EpochOffset{{2, 5}, {1, 5}} }),
			"foreign delete":    mod(func(s *PartitionState) { s.Delete = &rlmm.PartitionDelete{TopicIDPartition: tpBar1} }),
			"finished delete": mod(func(s *PartitionState) {
				s.Delete = &rlmm.PartitionDelete{TopicIDPartition: tpFoo, State: rlmm.DeletePartitionFinished}
			}),
			"undefined delete": mod(func(s *PartitionState) { s.Delete = &rlmm.PartitionDelete{TopicIDPartition: tpFoo, State: 7} }),
			"partition twice":  {good, good},
		} {
			other := New()
			addFinished(t, other, segMD(tpBar1, 7, 0, 5))
			if err := unchanged(t, other, func() error { return other.Import(in) }); !errors.Is(err, rlmm.ErrInvalidArgument) {
				t.Errorf("%s: err = %v, want ErrInvalidArgument", name, err)
			}
		}
	})
}

func TestView(t *testing.T) {
	m := New()
	if _, ok := m.View(tpFoo); ok {
		t.Errorf("View of an unknown partition found state")
	}
	addFinished(t, m, segMD(tpFoo, 1, 10, 100, ep(0, 10), ep(2, 50)))
	mustOK(t, m.AddSegment(ctx, segMD(tpFoo, 2, 101, 200, ep(3, 101))))
	addFinished(t, m, segMD(tpFoo, 3, 201, 300, ep(3, 201)))
	mustOK(t, m.UpdateSegment(ctx, upd(tpFoo, 3, rlmm.DeleteSegmentStarted)))
	addFinished(t, m, segMD(tpFoo, 4, 5, 9, ep(1, 5)))
	moveTo(t, m, tpFoo, 4, rlmm.DeleteSegmentFinished)
	d := rlmm.PartitionDelete{TopicIDPartition: tpFoo, State: rlmm.DeletePartitionStarted, EventTimestampMs: 3}
	mustOK(t, m.PutPartitionDelete(ctx, d))
	v, ok := m.View(tpFoo)
	want := PartitionView{
		TopicIDPartition: tpFoo,
		SegmentsByState:  [4]int{1, 1, 1, 0},
		RemoteBytes:      91 + 100 + 100,
		StartOffset:      10, EndOffset: 300,
		// Epoch 1 only had a deleted segment, but it finished: its offset stays.
		Epochs: []EpochOffset{{0, 49}, {1, 9}, {2, 100}, {3, 300}},
		Delete: &d,
	}
	if !ok || !equalViews(v, want) {
		t.Errorf("View = %+v\nwant   %+v", v, want)
	}
	mustOK(t, m.UpdateSegment(ctx, upd(tpFoo, 2, rlmm.DeleteSegmentStarted)))
	mustOK(t, m.UpdateSegment(ctx, upd(tpFoo, 2, rlmm.DeleteSegmentFinished)))
	m2 := New()
	mustOK(t, m2.AddSegment(ctx, segMD(tpBar1, 1, 0, 10, ep(4, 0))))
	if v, _ := m2.View(tpBar1); !slices.Equal(v.Epochs, []EpochOffset{{4, -1}}) {
		t.Errorf("an epoch with nothing finished: %v", v.Epochs)
	}
}

func TestSegFitsOneCacheLine(t *testing.T) {
	// The lookup path reads one seg per hit: keep it one 64-byte line.
	if size := unsafe.Sizeof(seg{}); size != 64 {
		t.Errorf("seg is %d bytes, want 64", size)
	}
}

func TestDirectory(t *testing.T) {
	// Many partitions, including names that share a topic id and partition
	// number (equal hashes), through inserts, lookups and removals.
	var d directory
	var tps []rlmm.TopicIDPartition
	for i := 0; i < 3000; i++ {
		tp := rlmm.TopicIDPartition{TopicID: rlmm.UuidFromBits(int64(i/7), int64(i%5)), Topic: "t" + string(rune('a'+i%3)), Partition: int32(i % 11)}
		if slices.Contains(tps, tp) {
			continue
		}
		tps = append(tps, tp)
		d.set(tp, newPartition(tp))
	}
	check := func(present func(int) bool) {
		t.Helper()
		n := 0
		d.each(func(*partition) { n++ })
		want := 0
		for i, tp := range tps {
			p := d.get(&tp)
			if present(i) {
				want++
				if p == nil || p.tp != tp {
					t.Fatalf("get(%s) = %v", tp, p)
				}
			} else if p != nil {
				t.Fatalf("get(%s) found a removed partition", tp)
			}
		}
		if n != want {
			t.Fatalf("each visited %d partitions, want %d", n, want)
		}
	}
	check(func(int) bool { return true })
	for i, tp := range tps {
		if i%2 == 0 {
			d.set(tp, nil)
		}
	}
	check(func(i int) bool { return i%2 == 1 })
	renamed := tps[1]
	renamed.Topic = "other"
	if d.get(&renamed) != nil {
		t.Errorf("a name never set was found")
	}
}

func TestEnvelopeSearch(t *testing.T) {
	// The summary-indexed search against a linear scan, through appends,
	// head drops (the O(1) path), inserts, replacements and compaction.
	rapid.Check(t, func(t *rapid.T) {
		var v envelope
		var ref []piece
		var next int64 // the last start appended
		check := func() {
			if len(v.pieces) != len(ref) {
				t.Fatalf("%d pieces, reference %d", len(v.pieces), len(ref))
			}
			for x := int64(-1); x <= next+1; x++ {
				want := len(ref)
				for k, pc := range ref {
					if pc.start >= x {
						want = k
						break
					}
				}
				if got := v.search(x); got != want {
					t.Fatalf("search(%d) = %d, want %d (pieces %v, summary %v, off %d)", x, got, want, v.pieces, v.summary, v.off)
				}
			}
		}
		for step := rapid.IntRange(1, 80).Draw(t, "steps"); step > 0; step-- {
			switch op := rapid.IntRange(0, 3).Draw(t, "op"); {
			case op == 0 || len(ref) == 0: // append after the last start
				next += rapid.Int64Range(1, 3).Draw(t, "gap")
				pc := piece{start: next, seg: int32(step)}
				v.replace(len(ref), len(ref), []piece{pc})
				ref = append(ref, pc)
			case op == 1: // drop the first piece
				v.replace(0, 1, nil)
				ref = ref[1:]
			case op == 2: // replace a middle range by one piece at its first start
				i := rapid.IntRange(0, len(ref)-1).Draw(t, "i")
				j := rapid.IntRange(i+1, len(ref)).Draw(t, "j")
				pc := piece{start: ref[i].start, seg: int32(step)}
				v.replace(i, j, []piece{pc})
				ref = slices.Replace(ref, i, j, pc)
			default: // merge equal neighbours of a range (the model: all of it, which may merge more)
				i := rapid.IntRange(0, len(ref)).Draw(t, "ci")
				j := rapid.IntRange(i, len(ref)).Draw(t, "cj")
				v.compact(i, j)
				lo, hi := max(i-1, 0), min(j+1, len(ref))
				ref = slices.Concat(ref[:lo], slices.CompactFunc(slices.Clone(ref[lo:hi]), func(a, b piece) bool { return a.seg == b.seg }), ref[hi:])
			}
			check()
		}
	})
}

func TestEnvelopeSearchAnySpacing(t *testing.T) {
	// The interpolated guesses of search against a scan, for sorted starts
	// of any spacing (even, uneven, clustered, at the int64 edges), queried
	// at, next to and between the starts.
	rapid.Check(t, func(t *rapid.T) {
		starts := rapid.SliceOfNDistinct(rapid.Int64(), 1, 200, rapid.ID[int64]).Draw(t, "starts")
		if rapid.Bool().Draw(t, "dense") {
			// Mostly even spacing, the case the guess is made for.
			base := rapid.Int64Range(-1000, 1<<40).Draw(t, "base")
			for k := range starts {
				starts[k] = base + int64(k)*100 + rapid.Int64Range(0, 99).Draw(t, "jitter")
			}
		}
		slices.Sort(starts)
		var v envelope
		pieces := make([]piece, len(starts))
		for k, st := range starts {
			pieces[k] = piece{start: st, seg: int32(k)}
		}
		v.replace(0, 0, pieces)
		xs := rapid.SliceOfN(rapid.Int64(), 0, 50).Draw(t, "xs")
		for _, st := range starts {
			xs = append(xs, st-1, st, st+1)
		}
		for _, x := range xs {
			want, _ := slices.BinarySearchFunc(starts, x, func(s, x int64) int {
				if s < x {
					return -1
				}
				return 1
			})
			if got := v.search(x); got != want {
				t.Fatalf("search(%d) = %d, want %d (starts %v)", x, got, want, starts)
			}
		}
	})
}

func TestExtremeOffsets(t *testing.T) {
	// Kafka accepts any epoch start offsets; arithmetic at the int64 edges
	// must neither panic nor loop.
	const maxOff = int64(^uint64(0) >> 1)
	const minOff = -maxOff - 1
	m := New()
	whole := segMD(tpFoo, 1, 0, maxOff)
	whole.TxnIndexEmpty = true
	addFinished(t, m, whole)
	// Epoch 5 "ends" at minOff-1, which wraps to maxOff; epoch 6 covers [minOff, 20].
	wrapped := segMD(tpFoo, 2, 10, 20, ep(5, 10), ep(6, minOff))
	addFinished(t, m, wrapped)
	for _, c := range []struct {
		epoch  int32
		offset int64
		want   int
	}{{0, maxOff, 1}, {0, 0, 1}, {0, minOff, -1}, {5, 10, 2}, {5, maxOff, 2}, {6, minOff, 2}, {6, 0, 2}, {6, 21, -1}} {
		if got := lookupNo(t, m, tpFoo, c.epoch, c.offset); got != c.want {
			t.Errorf("lookup(%d, %d) = s%d, want s%d", c.epoch, c.offset, got, c.want)
		}
	}
	if _, ok, err := m.NextSegmentWithTxnIndex(tpFoo, 0, 5); ok || err != nil {
		t.Errorf("NextSegmentWithTxnIndex past the last offset: %t, %v", ok, err)
	}
	if h := highest(t, m, tpFoo, 0); h != maxOff {
		t.Errorf("highest(0) = %d", h)
	}
	mustOK(t, m.UpdateSegment(ctx, upd(tpFoo, 1, rlmm.DeleteSegmentStarted)))
	mustOK(t, m.UpdateSegment(ctx, upd(tpFoo, 2, rlmm.DeleteSegmentStarted)))
	if got := lookupNo(t, m, tpFoo, 0, maxOff); got != -1 {
		t.Errorf("lookup after delete = s%d", got)
	}
}

// TestImportLargeParallel imports enough segments for the parallel build,
// with custom metadata and multi-epoch segments (carved from slabs):
// the cache matches the input even after the caller overwrites it, a later
// update of one segment's custom metadata leaves its neighbours' alone, and
// with two invalid states the error names the first one in order and
// nothing is published.
func TestImportLargeParallel(t *testing.T) {
	const parts, perPart = 8, 300 // 2,400 segments: above parallelImportSegments
	build := func() []PartitionState {
		var states []PartitionState
		for p := range parts {
			tp := rlmm.TopicIDPartition{TopicID: rlmm.UuidFromBits(9, int64(p)), Topic: "big", Partition: int32(p)}
			st := PartitionState{TopicIDPartition: tp}
			for k := range perPart {
				start := int64(k) * 10
				md := segMD(tp, k, start, start+9)
				if k%3 == 0 {
					md.LeaderEpochs = []rlmm.EpochStart{ep(0, start), ep(1, start+5)}
				}
				if k%2 == 0 {
					md.CustomMetadata = []byte{byte(p), byte(k), byte(k >> 8)}
				}
				md.State = rlmm.CopySegmentFinished
				st.Segments = append(st.Segments, md)
			}
			states = append(states, st)
		}
		return states
	}
	in, want := build(), build()
	m := New()
	mustOK(t, m.Import(in))
	for i := range in { // the caller reuses its buffers
		for k := range in[i].Segments {
			md := &in[i].Segments[k]
			for j := range md.CustomMetadata {
				md.CustomMetadata[j] = 0xff
			}
			for j := range md.LeaderEpochs {
				md.LeaderEpochs[j].Epoch = 99
			}
		}
	}
	ref := New()
	mustOK(t, ref.Import(want))
	if err := equalStates(m.Export(nil), ref.Export(nil)); err != nil {
		t.Fatalf("after the input was overwritten: %v", err)
	}

	tp0 := want[0].TopicIDPartition
	u := upd(tp0, 2, rlmm.DeleteSegmentStarted)
	u.CustomMetadata = []byte("a longer custom metadata than the slab's three bytes")
	mustOK(t, m.UpdateSegment(ctx, u))
	list, err := m.ListSegments(tp0)
	mustOK(t, err)
	for _, md := range list {
		k := segNo(md)
		wantCustom := want[0].Segments[k].CustomMetadata
		if k == 2 {
			wantCustom = u.CustomMetadata
		}
		if !slices.Equal(md.CustomMetadata, wantCustom) || (md.CustomMetadata == nil) != (wantCustom == nil) {
			t.Errorf("segment %d's custom metadata = %v after segment 2's update, want %v", k, md.CustomMetadata, wantCustom)
		}
	}

	bad := build()
	bad[5].Segments[7].EndOffset = -1
	bad[6].Segments[1].ID = bad[6].Segments[0].ID
	other := New()
	err = unchanged(t, other, func() error { return other.Import(bad) })
	if !errors.Is(err, rlmm.ErrInvalidArgument) || !strings.Contains(err.Error(), bad[5].TopicIDPartition.String()) {
		t.Errorf("err = %v, want ErrInvalidArgument naming %s (the first invalid state)", err, bad[5].TopicIDPartition)
	}
}

// Epoch lists and custom metadata live in arenas that keep replaced and
// freed extents as garbage until it outweighs what is live: after many
// custom metadata changes and retention deleting most segments, every
// segment left still reads back exactly, and the arenas hold at most about
// twice what is live.
func TestExtraArenasCompact(t *testing.T) {
	const n = 3000
	m := New()
	want := map[int]rlmm.SegmentMetadata{}
	custom := func(k, round int) []byte { return fmt.Appendf(nil, "object-%d-round-%d", k, round) }
	for k := range n {
		start := int64(k) * 10
		md := segMD(tpFoo, k, start, start+9, ep(int32(k), start), ep(int32(k)+1, start+5))
		md.CustomMetadata = custom(k, 0)
		mustOK(t, m.AddSegment(ctx, md))
		u := upd(tpFoo, k, rlmm.CopySegmentFinished)
		u.CustomMetadata = custom(k, 1)
		mustOK(t, m.UpdateSegment(ctx, u))
		got, err := md.WithUpdate(u)
		mustOK(t, err)
		want[k] = got
	}
	// Retention deletes all but every tenth segment; each delete started
	// carries new custom metadata (garbage again), then it is finished.
	for k := range n {
		if k%10 == 0 {
			continue
		}
		u := upd(tpFoo, k, rlmm.DeleteSegmentStarted)
		u.CustomMetadata = custom(k, 2)
		mustOK(t, m.UpdateSegment(ctx, u))
		mustOK(t, m.UpdateSegment(ctx, upd(tpFoo, k, rlmm.DeleteSegmentFinished)))
		delete(want, k)
	}
	segs, err := m.ListSegments(tpFoo)
	mustOK(t, err)
	if len(segs) != len(want) {
		t.Fatalf("%d segments listed, want %d", len(segs), len(want))
	}
	liveEpochs, liveCustom := 0, 0
	for _, s := range segs {
		k := int(s.ID.ID.LeastSignificantBits())
		w := want[k]
		if !s.Equal(&w) {
			t.Fatalf("segment %d reads back as %s, want %s", k, s.String(), w.String())
		}
		liveEpochs += len(s.LeaderEpochs)
		liveCustom += len(s.CustomMetadata)
	}
	p := m.lookup(tpFoo)
	defer p.mu.RUnlock()
	if got := len(p.arenas.epochs); got > 2*liveEpochs+256 {
		t.Errorf("epoch arena holds %d entries for %d live", got, liveEpochs)
	}
	if got := len(p.arenas.custom); got > 2*liveCustom+4096 {
		t.Errorf("custom arena holds %d bytes for %d live", got, liveCustom)
	}
}

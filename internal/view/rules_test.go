package view

import (
	"strings"
	"testing"
	"time"

	"github.com/rlmm-go/rlmm"
)

func TestCheckSegments(t *testing.T) {
	const hour = int64(time.Hour / time.Millisecond)
	const ref = 10 * hour
	type want struct {
		kind        Kind
		ids         []int64
		first, last int64
	}
	e := func(epoch int32, start int64) rlmm.EpochStart {
		return rlmm.EpochStart{Epoch: epoch, StartOffset: start}
	}
	fin, started, delStarted := rlmm.CopySegmentFinished, rlmm.CopySegmentStarted, rlmm.DeleteSegmentStarted
	tests := []struct {
		name string
		segs []rlmm.SegmentMetadata
		want []want
	}{
		{name: "empty partition", segs: nil},
		{name: "contiguous finished segments", segs: []rlmm.SegmentMetadata{
			seg(1, 0, 99, fin, 0), seg(2, 100, 199, fin, 0), seg(3, 200, 299, fin, 0)}},
		{name: "copy started long ago is stuck", segs: []rlmm.SegmentMetadata{
			seg(1, 0, 99, fin, 0), seg(2, 100, 199, started, ref-2*hour)},
			want: []want{{StuckCopy, []int64{2}, 100, 199}}},
		{name: "copy started exactly at the threshold is not stuck", segs: []rlmm.SegmentMetadata{
			seg(2, 100, 199, started, ref-hour)}},
		{name: "recent copy in progress is not stuck", segs: []rlmm.SegmentMetadata{
			seg(1, 0, 99, fin, 0), seg(2, 100, 199, started, ref-1000)}},
		{name: "delete started long ago never finished", segs: []rlmm.SegmentMetadata{
			seg(1, 0, 99, delStarted, ref-3*hour), seg(2, 100, 199, fin, 0)},
			want: []want{{StuckDelete, []int64{1}, 0, 99}}},
		{name: "old finished segments are fine", segs: []rlmm.SegmentMetadata{seg(1, 0, 99, fin, 0)}},
		{name: "stuck copies are listed by start offset", segs: []rlmm.SegmentMetadata{
			seg(5, 300, 399, started, 0), seg(4, 200, 299, started, 0)},
			want: []want{{StuckCopy, []int64{4}, 200, 299}, {StuckCopy, []int64{5}, 300, 399}}},
		{name: "partial overlap in one epoch", segs: []rlmm.SegmentMetadata{
			seg(1, 0, 99, fin, 0), seg(2, 50, 149, fin, 0)},
			want: []want{{Overlap, []int64{1, 2}, 50, 99}}},
		{name: "the same range copied twice", segs: []rlmm.SegmentMetadata{
			seg(1, 0, 99, fin, 0), seg(2, 0, 99, fin, 0)},
			want: []want{{Overlap, []int64{1, 2}, 0, 99}}},
		{name: "a contained segment overlaps and leaves no gap after it", segs: []rlmm.SegmentMetadata{
			seg(1, 0, 199, fin, 0), seg(2, 50, 99, fin, 0), seg(3, 200, 299, fin, 0)},
			want: []want{{Overlap, []int64{1, 2}, 50, 99}}},
		{name: "gap between finished segments", segs: []rlmm.SegmentMetadata{
			seg(1, 0, 99, fin, 0), seg(2, 150, 199, fin, 0)},
			want: []want{{Gap, []int64{1, 2}, 100, 149}}},
		{name: "a copy in progress does not fill a gap", segs: []rlmm.SegmentMetadata{
			seg(1, 0, 99, fin, 0), seg(2, 100, 199, started, ref), seg(3, 200, 299, fin, 0)},
			want: []want{{Gap, []int64{1, 3}, 100, 199}}},
		{name: "segments being deleted at the start leave no gap", segs: []rlmm.SegmentMetadata{
			seg(1, 0, 99, delStarted, ref), seg(2, 100, 199, fin, 0)}},
		{name: "multi-epoch segments cover each epoch contiguously", segs: []rlmm.SegmentMetadata{
			seg(1, 0, 199, fin, 0, e(0, 0), e(1, 100)), seg(2, 200, 299, fin, 0, e(1, 200), e(3, 250)),
			seg(3, 300, 399, fin, 0, e(3, 300))}},
		{name: "offsets missing between different epochs are not a gap", segs: []rlmm.SegmentMetadata{
			seg(1, 0, 99, fin, 0, e(0, 0)), seg(2, 150, 199, fin, 0, e(1, 150))}},
		{name: "overlap inside a later epoch of multi-epoch segments", segs: []rlmm.SegmentMetadata{
			seg(1, 0, 199, fin, 0, e(0, 0), e(1, 100)), seg(2, 150, 299, fin, 0, e(1, 150))},
			want: []want{{Overlap, []int64{1, 2}, 150, 199}}},
		{name: "an empty epoch range (fails Sanity) is skipped", segs: []rlmm.SegmentMetadata{
			seg(1, 0, 99, fin, 0, e(0, 0), e(1, 0)), seg(2, 100, 199, fin, 0, e(1, 100))}},
		{name: "deleted segments are ignored", segs: []rlmm.SegmentMetadata{
			seg(1, 0, 99, fin, 0), seg(2, 0, 99, rlmm.DeleteSegmentFinished, 0), seg(3, 100, 199, fin, 0)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := CheckSegments(testTP, tc.segs, ref, time.Hour)
			if len(got) != len(tc.want) {
				t.Fatalf("got %d anomalies %v, want %d", len(got), got, len(tc.want))
			}
			for i, w := range tc.want {
				a := got[i]
				if a.Kind != w.kind || a.Warning || a.TopicIDPartition != testTP.String() {
					t.Fatalf("anomaly %d = %+v, want kind %s for %s", i, a, w.kind, testTP)
				}
				if len(a.SegmentIDs) != len(w.ids) {
					t.Fatalf("anomaly %d segment ids %v, want %v", i, a.SegmentIDs, w.ids)
				}
				for j, n := range w.ids {
					if id := segID(n).ID.String(); a.SegmentIDs[j] != id || !strings.Contains(a.Detail, id) {
						t.Fatalf("anomaly %d segment ids %v / detail %q, want segment %d (%s)", i, a.SegmentIDs, a.Detail, n, id)
					}
				}
				if a.FirstOffset == nil || a.LastOffset == nil || *a.FirstOffset != w.first || *a.LastOffset != w.last {
					t.Fatalf("anomaly %d offsets %v..%v, want %d..%d", i, a.FirstOffset, a.LastOffset, w.first, w.last)
				}
				if (w.kind == StuckCopy || w.kind == StuckDelete) && (a.AgeMs == nil || *a.AgeMs <= hour) {
					t.Fatalf("stuck anomaly %d has age %v, want more than an hour", i, a.AgeMs)
				}
				if (w.kind == Overlap || w.kind == Gap) && a.Epoch == nil {
					t.Fatalf("anomaly %d names no epoch", i)
				}
			}
		})
	}
}

// TestCheckSegmentsNewLeaderOverlap: two brokers' copies of the same
// offsets (a new leader's whole segment over the old leader's tail, an old
// leader's copy finishing late or made after it lost the leadership) are
// warnings; one broker's overlapping segments stay a failure.
func TestCheckSegmentsNewLeaderOverlap(t *testing.T) {
	fin := rlmm.CopySegmentFinished
	by := func(m rlmm.SegmentMetadata, broker int32) rlmm.SegmentMetadata {
		m.BrokerID = broker
		return m
	}
	tests := []struct {
		name    string
		segs    []rlmm.SegmentMetadata
		warning bool
	}{
		{"a new leader re-copies the old leader's tail", []rlmm.SegmentMetadata{
			by(seg(1, 0, 249, fin, 0), 2), by(seg(2, 250, 2249, fin, 0), 2), by(seg(3, 2000, 2999, fin, 0), 1)}, true},
		{"one broker's segments overlap", []rlmm.SegmentMetadata{
			by(seg(1, 0, 2249, fin, 0), 2), by(seg(2, 2000, 2999, fin, 0), 2)}, false},
		// Seen on a 3-broker cluster (TestFaultsAlone): the old leader copied
		// [0, 2369] of epoch 0, the new one its segment [0, 4812] whole,
		// epochs 0 and 1; in epoch 0 the two spans are the same.
		{"a new leader re-copies the old leader's whole segment from the same start, then goes on in its epoch", []rlmm.SegmentMetadata{
			by(seg(1, 0, 2369, fin, 0), 2),
			by(seg(2, 0, 4812, fin, 0, rlmm.EpochStart{Epoch: 0, StartOffset: 0}, rlmm.EpochStart{Epoch: 1, StartOffset: 2370}), 3)}, true},
		{"one broker's segments cover the same offsets of an epoch", []rlmm.SegmentMetadata{
			by(seg(1, 0, 2369, fin, 0), 3),
			by(seg(2, 0, 4812, fin, 0, rlmm.EpochStart{Epoch: 0, StartOffset: 0}, rlmm.EpochStart{Epoch: 1, StartOffset: 2370}), 3)}, false},
		{"a new leader's segment, rolled earlier, covers the old leader's whole segment and goes on", []rlmm.SegmentMetadata{
			by(seg(1, 2000, 2499, fin, 100), 1), by(seg(2, 1500, 2999, fin, 200), 3)}, true},
		{"another broker's segment inside a newer one that finished before it", []rlmm.SegmentMetadata{
			by(seg(1, 2000, 2499, fin, 200), 1), by(seg(2, 1500, 2999, fin, 100), 3)}, true},
		// Seen on the 3-broker cluster: the old leader (2) copied [5143,
		// 7365] of epoch 2 while the new one (3) copied its segment [3415,
		// 7365] whole, finishing after it; and the same segment copied by
		// both, the new leader's finishing after.
		{"a new leader's whole segment ends where the old leader's copy, finished before, ends", []rlmm.SegmentMetadata{
			by(seg(1, 5143, 7365, fin, 17712), 2), by(seg(2, 3415, 7365, fin, 17890), 3)}, true},
		{"two brokers copied the same segment", []rlmm.SegmentMetadata{
			by(seg(1, 3412, 7366, fin, 17378), 2), by(seg(2, 3412, 7366, fin, 17962), 3)}, true},
		// Seen with broker 2 frozen 30 s: broker 3, the new leader, copied
		// [27787, 32953]; broker 2, continued, copied [29142, 32953] 21 s
		// later from the offset it had found as leader.
		{"an old leader, frozen, copies a tail the new leader had copied", []rlmm.SegmentMetadata{
			by(seg(1, 27787, 32953, fin, 630519), 3), by(seg(2, 29142, 32953, fin, 651461), 2)}, true},
		{"another broker's segment inside an older one", []rlmm.SegmentMetadata{
			by(seg(1, 0, 2999, fin, 0), 2), by(seg(2, 2000, 2499, fin, 0), 1)}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := CheckSegments(testTP, tc.segs, 0, time.Hour)
			if len(got) != 1 || got[0].Kind != Overlap || got[0].Warning != tc.warning {
				t.Fatalf("got %v, want one %s with warning %v", got, Overlap, tc.warning)
			}
			if HasFailures(got) == tc.warning {
				t.Fatalf("HasFailures(%v) = %v", got, !tc.warning)
			}
		})
	}
}

func TestHasFailures(t *testing.T) {
	tests := []struct {
		name string
		as   []Anomaly
		want bool
	}{
		{"none", nil, false},
		{"only warnings", []Anomaly{{Kind: SanityWarning, Warning: true}, {Kind: SnapshotRecord, Warning: true}}, false},
		{"a failure among warnings", []Anomaly{{Kind: SanityWarning, Warning: true}, {Kind: Gap}}, true},
	}
	for _, tc := range tests {
		if got := HasFailures(tc.as); got != tc.want {
			t.Errorf("%s: HasFailures = %v, want %v", tc.name, got, tc.want)
		}
	}
}

package view

import (
	"testing"
	"time"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/eventlog"
	"github.com/rlmm-go/rlmm/wire"
)

// TestBuilderRedeletedSegment: a deletion update of a segment whose deletion
// finished earlier in the log (a leader that had not seen the new leader's
// deletion, as the fault tests' frozen sidecar showed) is a warning, not a
// rejected event; every other update of an unknown segment stays rejected.
func TestBuilderRedeletedSegment(t *testing.T) {
	add := func(n int64) wire.Event { return wire.SegmentEvent(seg(n, 0, 9, rlmm.CopySegmentStarted, 1)) }
	deleted := []wire.Event{add(1), update(1, rlmm.CopySegmentFinished, 2),
		update(1, rlmm.DeleteSegmentStarted, 3), update(1, rlmm.DeleteSegmentFinished, 4)}
	tests := []struct {
		name   string
		events []wire.Event
		want   []Kind
		counts Counts
	}{
		{"DELETE_SEGMENT_STARTED after the deletion finished", append(deleted, update(1, rlmm.DeleteSegmentStarted, 5)),
			[]Kind{Redeleted}, Counts{RedeletedSegments: 1}},
		{"DELETE_SEGMENT_FINISHED after the deletion finished", append(deleted, update(1, rlmm.DeleteSegmentFinished, 5)),
			[]Kind{Redeleted}, Counts{RedeletedSegments: 1}},
		{"COPY_SEGMENT_FINISHED after the deletion finished", append(deleted, update(1, rlmm.CopySegmentFinished, 5)),
			[]Kind{RejectedEvent}, Counts{Rejected: 1}},
		{"DELETE_SEGMENT_STARTED of a segment never added", []wire.Event{update(2, rlmm.DeleteSegmentStarted, 5)},
			[]Kind{RejectedEvent}, Counts{Rejected: 1}},
		{"DELETE_SEGMENT_STARTED of another segment than the deleted one", append(deleted, update(2, rlmm.DeleteSegmentStarted, 5)),
			[]Kind{RejectedEvent}, Counts{Rejected: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := NewBuilder(metadataPartitions)
			home := wire.MetadataPartition(testTP, metadataPartitions)
			for i, ev := range tt.events {
				if _, err := b.Apply(eventlog.Record{Partition: home, Offset: int64(i), Value: encode(t, ev)}); err != nil {
					t.Fatalf("Apply %d: %v", i, err)
				}
			}
			as := b.Anomalies(0, time.Hour)
			mustEqualKinds(t, as, tt.want...)
			if got := b.Counts(); got.Rejected != tt.counts.Rejected || got.RedeletedSegments != tt.counts.RedeletedSegments {
				t.Errorf("counts %+v, want %d rejected and %d redeleted", got, tt.counts.Rejected, tt.counts.RedeletedSegments)
			}
			if want := tt.want[0] == RejectedEvent; HasFailures(as) != want {
				t.Errorf("HasFailures = %v, want %v (%v)", !want, want, as)
			}
			if last := as[0]; last.Record.Offset != int64(len(tt.events)-1) || len(last.SegmentIDs) != 1 {
				t.Errorf("anomaly %+v, want the last record with its segment id", last)
			}
		})
	}
}

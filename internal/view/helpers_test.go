package view

import (
	"testing"

	"github.com/rlmm-go/rlmm"
)

// testTP is the user partition the rule tests use.
var testTP = rlmm.TopicIDPartition{TopicID: rlmm.UuidFromBits(7, 9), Topic: "orders", Partition: 3}

// segID returns a deterministic segment id numbered n.
func segID(n int64) rlmm.SegmentID {
	return rlmm.SegmentID{TopicIDPartition: testTP, ID: rlmm.UuidFromBits(100, n)}
}

// seg builds a segment n of testTP covering [start, end] in state st, with
// the given leader epochs (epoch, start offset pairs; default epoch 0 from start).
func seg(n, start, end int64, st rlmm.SegmentState, tsMs int64, epochs ...rlmm.EpochStart) rlmm.SegmentMetadata {
	if len(epochs) == 0 {
		epochs = []rlmm.EpochStart{{Epoch: 0, StartOffset: start}}
	}
	return rlmm.SegmentMetadata{ID: segID(n), StartOffset: start, EndOffset: end, MaxTimestampMs: tsMs,
		BrokerID: 1, EventTimestampMs: tsMs, LeaderEpochs: epochs, SizeInBytes: 100, State: st}
}

// kinds returns the kinds of as, in order.
func kinds(as []Anomaly) []Kind {
	out := make([]Kind, len(as))
	for i, a := range as {
		out[i] = a.Kind
	}
	return out
}

// mustEqualKinds fails t when the kinds of as are not want.
func mustEqualKinds(t *testing.T, as []Anomaly, want ...Kind) {
	t.Helper()
	got := kinds(as)
	if len(got) != len(want) {
		t.Fatalf("got anomalies %v, want kinds %v", as, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("got anomalies %v, want kinds %v", as, want)
		}
	}
}

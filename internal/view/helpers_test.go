package view

import (
	"testing"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/wire"
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

// metadataPartitions is the partition count of the logs the builder tests use.
const metadataPartitions = 4

// encode returns the record bytes of ev, failing t if it cannot be encoded.
func encode(t *testing.T, ev wire.Event) []byte {
	t.Helper()
	b, err := wire.AppendEvent(nil, &ev)
	if err != nil {
		t.Fatalf("encoding %v: %v", ev, err)
	}
	return b
}

// update returns the update event of segment n of testTP to st.
func update(n int64, st rlmm.SegmentState, tsMs int64) wire.Event {
	return wire.UpdateEvent(rlmm.SegmentUpdate{ID: segID(n), EventTimestampMs: tsMs, State: st, BrokerID: 1})
}

// partitionDelete returns the partition delete event of testTP in st.
func partitionDelete(st rlmm.PartitionDeleteState) wire.Event {
	return wire.PartitionDeleteEvent(rlmm.PartitionDelete{TopicIDPartition: testTP, State: st, EventTimestampMs: 5, BrokerID: 1})
}

package server

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/rlmm-go/rlmm/rpc/rlmmpb"
)

// TestLookupAnswerHitDoesNotAllocate: once a connection's reply has grown
// to a segment's epochs, answering a hit (the lookup filled in place, the
// reply refilled) allocates nothing, and the reply is the segment as
// segmentToProto makes it.
func TestLookupAnswerHitDoesNotAllocate(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	tp := newTP()
	f.assign(t, tp)
	f.addFinishedRun(t, tp, 3)
	a := &lookupAnswerer{v: f.srv.svc}
	q := &rlmmpb.SegmentForOffsetRequest{TopicIdPartition: tpToProto(tp), LeaderEpoch: 1, Offset: 170}
	answer := func() {
		found, err := a.find(q)
		if err != nil || !found {
			t.Fatalf("no hit: %v", err)
		}
		a.ans.hit(&a.md)
	}
	answer()
	if want := segmentToProto(&a.md); !proto.Equal(&a.ans.found, &rlmmpb.SegmentReply{Found: true, Segment: want}) {
		t.Fatalf("answer %v, want %v", &a.ans.found, want)
	}
	if allocs := testing.AllocsPerRun(100, answer); allocs != 0 {
		t.Fatalf("a hit allocates %.1f times, want 0", allocs)
	}
	a.ans.miss()
	if a.ans.found.Found || a.ans.found.Segment != nil {
		t.Fatalf("a miss answers %v", &a.ans.found)
	}
}

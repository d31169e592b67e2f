package brokertest

import (
	"fmt"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
)

// TestLeadershipMoves moves a replicated partition's leadership between two
// brokers twice (the leader stopped, then a preferred-leader election after
// it came back) and checks that each new leader goes on copying from the
// offset after the last finished segment: the remote segments cover every
// offset once, each phase's segments are copied by that phase's leader, and
// everything reads back from offset 0.
func TestLeadershipMoves(t *testing.T) {
	ctx := testCtx(t)
	c := startCluster(t, 2)
	cl := c.client()
	// Node 2 (broker only) is the preferred leader; node 1 also runs the
	// cluster's one controller, so it stays up.
	tp := createTopic(ctx, t, cl, "moves", []int32{2, 1})
	waitLeader := func(want int32, wantISR int) {
		t.Helper()
		waitFor(ctx, t, fmt.Sprintf("broker %d to lead with %d in sync", want, wantISR), func() (bool, string, error) {
			ld, isr, err := leader(ctx, cl, tp.Topic)
			return ld == want && len(isr) == wantISR, fmt.Sprintf("leader %d ISR %v", ld, isr), err
		})
	}
	waitLeader(2, 2)

	// phase produces from..to-1 under leader and waits until it is tiered.
	// Records produced in this phase are copied by this phase's leader (the
	// previous leader may still copy its last segment of the phase before).
	phase := func(name string, from, to int64, prev int, leader int32) tiered {
		t.Helper()
		produce(ctx, t, cl, tp.Topic, from, to)
		ti := c.waitTiered(ctx, t, cl, tp, 0, prev+2)
		mine := 0
		for _, s := range ti.finished[prev:] {
			if s.meta.StartOffset < from {
				continue
			}
			mine++
			if s.meta.BrokerID != leader {
				t.Errorf("%s: segment %d..%d was copied by broker %d, the leader is %d", name, s.meta.StartOffset, s.meta.EndOffset, s.meta.BrokerID, leader)
			}
		}
		if mine == 0 {
			t.Errorf("%s: no segment of offsets from %d was copied: %s", name, from, describe(ti.finished[prev:]))
		}
		for i := max(prev, 1); i < len(ti.finished); i++ {
			if a, b := ti.finished[i-1], ti.finished[i]; b.meta.StartOffset <= a.meta.EndOffset {
				t.Logf("%s: broker %d re-copied offsets %d..%d after broker %d (its own segment %d..%d holds the next offset %d)",
					name, b.meta.BrokerID, b.meta.StartOffset, a.meta.EndOffset, a.meta.BrokerID, b.meta.StartOffset, b.meta.EndOffset, a.meta.EndOffset+1)
			}
		}
		t.Logf("%s: %s", name, describe(ti.finished[prev:]))
		return ti
	}
	p1 := phase("broker 2 leads", 0, 3000, 0, 2)

	c.stopNode(2)
	waitLeader(1, 1)
	p2 := phase("broker 2 stopped, broker 1 leads", 3000, 6000, len(p1.finished), 1)
	if !slices.Equal(segmentIDs(p2.finished[:len(p1.finished)]), segmentIDs(p1.finished)) {
		t.Errorf("the first leader's segments changed after the move: %s, then %s", describe(p1.finished), describe(p2.finished))
	}

	c.startNode(2)
	waitLeader(1, 2)
	res, err := kadm.NewClient(cl).ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{tp.Topic: {0: {}}})
	must(t, err)
	for _, ps := range res {
		for _, r := range ps {
			if r.Err != nil {
				t.Fatalf("electing the preferred leader: %v %s", r.Err, r.ErrMessage)
			}
		}
	}
	waitLeader(2, 2)
	phase("preferred leader elected, broker 2 leads again", 6000, 9000, len(p2.finished), 2)

	c.consume(ctx, t, tp.Topic, 0, 9000)
	c.verifyAndInspect(ctx, t, tp)
}

func segmentIDs(segs []*segment) []string {
	out := make([]string, len(segs))
	for i, s := range segs {
		out[i] = s.meta.ID.ID.String()
	}
	return out
}

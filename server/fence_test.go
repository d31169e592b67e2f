package server

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/rpc/rlmmpb"
	"github.com/rlmm-go/rlmm/wire"
)

// TestLeaderFenceRefusesCopyAndDeletionStarts: with a fence that says
// another broker leads the partition, a broker's add (COPY_SEGMENT_STARTED)
// and its update to DELETE_SEGMENT_STARTED are answered NOT_LEADER
// (retriable), may_be_recorded false, and the metadata partition does not
// grow; a copy's finish is not fenced; once the fence admits the broker,
// the deletion's start is published.
func TestLeaderFenceRefusesCopyAndDeletionStarts(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	tp := newTP()
	f.assign(t, tp)
	ctx := testCtx(t)
	finished := segment(tp, 0)
	f.addAndFinish(t, finished)
	copying := segment(tp, 100)
	if _, err := f.client.AddSegment(ctx, &rlmmpb.AddSegmentRequest{Segment: segmentToProto(&copying)}); err != nil {
		t.Fatalf("AddSegment before the fence: %v", err)
	}

	var leads atomic.Bool
	var mu sync.Mutex // the fence runs on the server's goroutines
	var asked []rlmm.TopicIDPartition
	f.srv.SetLeaderFence(func(_ context.Context, got rlmm.TopicIDPartition) error {
		mu.Lock()
		asked = append(asked, got)
		mu.Unlock()
		if leads.Load() {
			return nil
		}
		return fmt.Errorf("%w: the cluster names broker 2 as leader of %s, not this broker 7", rlmm.ErrNotLeader, got)
	})
	t.Cleanup(func() { f.srv.SetLeaderFence(nil) })

	mp := wire.MetadataPartition(tp, metadataPartitions)
	hwm := func() int64 {
		t.Helper()
		h, err := f.log.HighWaterMarks(ctx, []int32{mp})
		if err != nil {
			t.Fatal(err)
		}
		return h[0]
	}
	mutate := brokerConnFor(t, f.serveFramed(t, nil), rlmmpb.Purpose_PURPOSE_MUTATE)
	deleteStart := &rlmmpb.BrokerRequest{TimeoutMs: 10_000, Call: &rlmmpb.BrokerRequest_UpdateSegment{UpdateSegment: &rlmmpb.UpdateSegmentRequest{
		Update: &rlmmpb.SegmentUpdate{TopicIdPartition: tpToProto(tp), SegmentId: uuidToProto(finished.ID.ID), EventTimestampMs: 5000,
			State: rlmmpb.SegmentState_DELETE_SEGMENT_STARTED, BrokerId: 7}}}}
	another := segment(tp, 200)
	refused := []struct {
		name string
		req  *rlmmpb.BrokerRequest
	}{
		{"add", &rlmmpb.BrokerRequest{TimeoutMs: 10_000, Call: &rlmmpb.BrokerRequest_AddSegment{AddSegment: &rlmmpb.AddSegmentRequest{Segment: segmentToProto(&another)}}}},
		{"deletion start", deleteStart},
	}
	for _, tt := range refused {
		before := hwm()
		rs := mutate.call(tt.req)
		wantKind(rlmmpb.ErrorKind_NOT_LEADER)(t, rs)
		if e := rs[0].GetError(); e.GetMayBeRecorded() {
			t.Errorf("%s: the refusal says the event may be recorded: %v", tt.name, e)
		}
		if after := hwm(); after != before {
			t.Errorf("%s: metadata partition %d grew from %d to %d records: the fenced mutation was published", tt.name, mp, before, after)
		}
	}

	// A copy's finish is not fenced.
	fin := finish(copying)
	rs := mutate.call(&rlmmpb.BrokerRequest{TimeoutMs: 10_000, Call: &rlmmpb.BrokerRequest_UpdateSegment{UpdateSegment: fin}})
	if len(rs) != 1 || rs[0].GetDone() == nil {
		t.Fatalf("COPY_SEGMENT_FINISHED under a refusing fence: %v, want done", rs)
	}
	mu.Lock()
	seen := append([]rlmm.TopicIDPartition(nil), asked...)
	mu.Unlock()
	if len(seen) != len(refused) {
		t.Errorf("the fence was asked %d times, want %d (the add and the deletion start only)", len(seen), len(refused))
	}
	for _, got := range seen {
		if got != tp {
			t.Errorf("the fence was asked about %s, want %s", got, tp)
		}
	}

	leads.Store(true)
	before := hwm()
	if rs := mutate.call(deleteStart); len(rs) != 1 || rs[0].GetDone() == nil {
		t.Fatalf("deletion start once this broker leads: %v, want done", rs)
	}
	if after := hwm(); after != before+1 {
		t.Errorf("metadata partition %d went from %d to %d records, want one more", mp, before, after)
	}
}

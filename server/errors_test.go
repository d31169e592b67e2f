package server

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/rpc/rlmmpb"
)

// TestBrokerErr: every sentinel, wrapped as topicbased wraps it, gets its
// kind and message. may_be_recorded is topicbased.MayBeRecorded's
// answer, which these hand-made errors (none marked by a manager) do not
// have: TestMutationTimeoutMayBeRecorded and TestErrorsOverTheSocket take
// it from a real manager.
func TestBrokerErr(t *testing.T) {
	wrap := func(s error) error { return fmt.Errorf("topicbased: something of p-0: %w", s) }
	tests := []struct {
		name     string
		err      error
		mutation bool
		kind     rlmmpb.ErrorKind
		recorded bool
	}{
		{"invalid argument", wrap(rlmm.ErrInvalidArgument), true, rlmmpb.ErrorKind_INVALID_ARGUMENT, false},
		{"transition", &rlmm.TransitionError{To: rlmm.CopySegmentFinished}, true, rlmmpb.ErrorKind_INVALID_TRANSITION, false},
		{"unknown segment", wrap(rlmm.ErrUnknownSegment), true, rlmmpb.ErrorKind_UNKNOWN_SEGMENT, false},
		{"not ready", wrap(rlmm.ErrNotReady), false, rlmmpb.ErrorKind_NOT_READY, false},
		{"not leader", notPublished{wrap(rlmm.ErrNotLeader)}, true, rlmmpb.ErrorKind_NOT_LEADER, false},
		{"not ready, snapshot state corrupt", fmt.Errorf("%w: replayed: %w", rlmm.ErrNotReady, rlmm.ErrCorrupt), false, rlmmpb.ErrorKind_NOT_READY, false},
		{"not assigned before publishing", fmt.Errorf("%w: nothing was published", rlmm.ErrNotAssigned), true, rlmmpb.ErrorKind_NOT_ASSIGNED, false},
		{"not assigned after publishing, unmarked", fmt.Errorf("%w: unassigned after publishing offset 3; the event is in the log", rlmm.ErrNotAssigned), true, rlmmpb.ErrorKind_NOT_ASSIGNED, false},
		{"closed", wrap(rlmm.ErrClosed), true, rlmmpb.ErrorKind_CLOSED, false},
		{"closed, a read", wrap(rlmm.ErrClosed), false, rlmmpb.ErrorKind_CLOSED, false},
		{"corrupt", wrap(rlmm.ErrCorrupt), false, rlmmpb.ErrorKind_CORRUPT, false},
		{"timeout", fmt.Errorf("%w: waiting: %w", rlmm.ErrTimeout, context.DeadlineExceeded), true, rlmmpb.ErrorKind_TIMEOUT, false},
		{"cancelled", fmt.Errorf("%w: waiting: %w", rlmm.ErrTimeout, context.Canceled), true, rlmmpb.ErrorKind_TIMEOUT, false},
		{"not published timeout", notPublished{fmt.Errorf("%w: starting", rlmm.ErrTimeout)}, true, rlmmpb.ErrorKind_TIMEOUT, false},
		{"other", errors.New("disk on fire"), true, rlmmpb.ErrorKind_INTERNAL, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := brokerErr(tc.err, tc.mutation).Error
			if e.Kind != tc.kind || e.MayBeRecorded != tc.recorded {
				t.Fatalf("got %s recorded=%v, want %s recorded=%v", e.Kind, e.MayBeRecorded, tc.kind, tc.recorded)
			}
			if e.Message != tc.err.Error() {
				t.Fatalf("message %q, want rlmm's %q", e.Message, tc.err.Error())
			}
		})
	}
}

// TestErrorsOverTheSocket: each error a client can provoke arrives as one
// BrokerError of its kind.
func TestErrorsOverTheSocket(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	ctx := testCtx(t)
	tp := newTP()
	f.assign(t, tp)
	md := segment(tp, 0)
	f.addAndFinish(t, md)
	del := segment(tp, 100)
	f.addAndFinish(t, del)
	toDeleteStarted := finish(del)
	toDeleteStarted.Update.State = rlmmpb.SegmentState_DELETE_SEGMENT_STARTED
	if _, err := f.client.UpdateSegment(ctx, toDeleteStarted); err != nil {
		t.Fatal(err)
	}

	finished := md
	finished.State = rlmm.CopySegmentFinished
	unknown := finish(segment(tp, 500))
	backwards := finish(del)
	other := segment(f.tpElsewhere(tp), 0)
	tests := []struct {
		name string
		call func() error
		kind rlmmpb.ErrorKind
	}{
		{"add not STARTED", func() error {
			_, err := f.client.AddSegment(ctx, &rlmmpb.AddSegmentRequest{Segment: segmentToProto(&finished)})
			return err
		}, rlmmpb.ErrorKind_INVALID_ARGUMENT},
		{"add without segment", func() error {
			_, err := f.client.AddSegment(ctx, &rlmmpb.AddSegmentRequest{})
			return err
		}, rlmmpb.ErrorKind_INVALID_ARGUMENT},
		{"read without partition", func() error {
			_, err := f.client.SegmentForOffset(ctx, &rlmmpb.SegmentForOffsetRequest{})
			return err
		}, rlmmpb.ErrorKind_INVALID_ARGUMENT},
		{"forbidden transition", func() error {
			_, err := f.client.UpdateSegment(ctx, backwards)
			return err
		}, rlmmpb.ErrorKind_INVALID_TRANSITION},
		{"unknown segment", func() error {
			_, err := f.client.UpdateSegment(ctx, unknown)
			return err
		}, rlmmpb.ErrorKind_UNKNOWN_SEGMENT},
		{"not assigned", func() error {
			_, err := f.client.AddSegment(ctx, &rlmmpb.AddSegmentRequest{Segment: segmentToProto(&other)})
			return err
		}, rlmmpb.ErrorKind_NOT_ASSIGNED},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			info := errorInfo(t, tc.call())
			if info.Kind != tc.kind || info.MayBeRecorded {
				t.Fatalf("got %s recorded=%v (%s), want %s recorded=false", info.Kind, info.MayBeRecorded, info.Message, tc.kind)
			}
		})
	}

	t.Run("closed", func(t *testing.T) {
		if err := f.mgr.Close(); err != nil {
			t.Fatal(err)
		}
		next := segment(tp, 900)
		_, err := f.client.AddSegment(ctx, &rlmmpb.AddSegmentRequest{Segment: segmentToProto(&next)})
		info := errorInfo(t, err)
		// Refused by the closed manager before publishing: nothing recorded.
		if info.Kind != rlmmpb.ErrorKind_CLOSED || info.MayBeRecorded {
			t.Fatalf("got %s recorded=%v, want CLOSED recorded=false", info.Kind, info.MayBeRecorded)
		}
		_, err = f.client.ListSegments(ctx, &rlmmpb.ListSegmentsRequest{TopicIdPartition: tpToProto(tp)})
		info = errorInfo(t, err)
		if info.Kind != rlmmpb.ErrorKind_CLOSED || info.MayBeRecorded {
			t.Fatalf("list: got %s recorded=%v, want CLOSED recorded=false", info.Kind, info.MayBeRecorded)
		}
	})
}

// TestMutationTimeoutMayBeRecorded: a mutation whose event is published but
// not applied within ConsumeWait fails TIMEOUT, may_be_recorded.
func TestMutationTimeoutMayBeRecorded(t *testing.T) {
	f := newFixture(t, fixtureOpts{consumeWait: 300 * time.Millisecond})
	tp := newTP()
	f.assign(t, tp)
	f.gate.hold()
	md := segment(tp, 0)
	_, err := f.client.AddSegment(testCtx(t), &rlmmpb.AddSegmentRequest{Segment: segmentToProto(&md)})
	f.gate.release()
	info := errorInfo(t, err)
	if info.Kind != rlmmpb.ErrorKind_TIMEOUT || !info.MayBeRecorded {
		t.Fatalf("got %s recorded=%v (%s), want TIMEOUT recorded=true", info.Kind, info.MayBeRecorded, info.Message)
	}
	// It was recorded: the pump applies it once the gate opens.
	ctx := testCtx(t)
	for {
		segs, err := f.mgr.ListSegments(tp)
		if err != nil {
			t.Fatal(err)
		}
		if len(segs) == 1 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("the timed-out segment never appeared")
		case <-time.After(time.Millisecond):
		}
	}
}

// TestStarting: before the manager is up, reads answer NOT_READY,
// ServerInfo works, and a mutation waits within its deadline, then fails
// with nothing published; a leadership change is recorded, and the
// manager hosts its partition once it comes.
func TestStarting(t *testing.T) {
	f := newFixture(t, fixtureOpts{noManager: true})
	ctx := testCtx(t)
	tp := newTP()
	_, err := f.client.SegmentForOffset(ctx, &rlmmpb.SegmentForOffsetRequest{TopicIdPartition: tpToProto(tp)})
	if info := errorInfo(t, err); info.Kind != rlmmpb.ErrorKind_NOT_READY {
		t.Fatalf("read while starting: %s, want NOT_READY", info.Kind)
	}
	if _, err := f.client.ServerInfo(ctx); err != nil {
		t.Fatalf("ServerInfo while starting: %v", err)
	}
	// The request's own bound (50 ms) answers: TIMEOUT, nothing published.
	md := segment(tp, 0)
	_, err = f.client.Call(ctx, rlmmpb.Purpose_PURPOSE_MUTATE, &rlmmpb.BrokerRequest{TimeoutMs: 50,
		Call: &rlmmpb.BrokerRequest_AddSegment{AddSegment: &rlmmpb.AddSegmentRequest{Segment: segmentToProto(&md)}}})
	if info := errorInfo(t, err); info.Kind != rlmmpb.ErrorKind_TIMEOUT || info.MayBeRecorded {
		t.Fatalf("mutation while starting: %s recorded=%v, want TIMEOUT recorded=false", info.Kind, info.MayBeRecorded)
	}
	if _, err := f.client.OnPartitionLeadershipChanges(ctx, &rlmmpb.LeadershipChangesRequest{Leaders: []*rlmmpb.TopicIdPartition{tpToProto(tp)}}); err != nil {
		t.Fatalf("leadership change while starting: %v", err)
	}
	f.startManager(t)
	f.waitReady(t, tp)
}

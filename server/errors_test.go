package server

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/rpc/rlmmpb"
)

// TestToStatus: every sentinel, wrapped as topicbased wraps it, gets its
// code, kind, message and may_be_recorded.
func TestToStatus(t *testing.T) {
	wrap := func(s error) error { return fmt.Errorf("topicbased: something of p-0: %w", s) }
	tests := []struct {
		name     string
		err      error
		mutation bool
		code     codes.Code
		kind     rlmmpb.ErrorKind
		recorded bool
	}{
		{"invalid argument", wrap(rlmm.ErrInvalidArgument), true, codes.InvalidArgument, rlmmpb.ErrorKind_INVALID_ARGUMENT, false},
		{"transition", &rlmm.TransitionError{To: rlmm.CopySegmentFinished}, true, codes.FailedPrecondition, rlmmpb.ErrorKind_INVALID_TRANSITION, false},
		{"unknown segment", wrap(rlmm.ErrUnknownSegment), true, codes.NotFound, rlmmpb.ErrorKind_UNKNOWN_SEGMENT, false},
		{"not ready", wrap(rlmm.ErrNotReady), false, codes.Unavailable, rlmmpb.ErrorKind_NOT_READY, false},
		{"not ready, snapshot state corrupt", fmt.Errorf("%w: replayed: %w", rlmm.ErrNotReady, rlmm.ErrCorrupt), false, codes.Unavailable, rlmmpb.ErrorKind_NOT_READY, false},
		{"not assigned before publishing", fmt.Errorf("%w: nothing was published", rlmm.ErrNotAssigned), true, codes.FailedPrecondition, rlmmpb.ErrorKind_NOT_ASSIGNED, false},
		{"not assigned after publishing", fmt.Errorf("%w: unassigned after publishing offset 3; the event is in the log", rlmm.ErrNotAssigned), true, codes.FailedPrecondition, rlmmpb.ErrorKind_NOT_ASSIGNED, true},
		{"closed", wrap(rlmm.ErrClosed), true, codes.Unavailable, rlmmpb.ErrorKind_CLOSED, true},
		{"closed, a read", wrap(rlmm.ErrClosed), false, codes.Unavailable, rlmmpb.ErrorKind_CLOSED, false},
		{"corrupt", wrap(rlmm.ErrCorrupt), false, codes.DataLoss, rlmmpb.ErrorKind_CORRUPT, false},
		{"timeout", fmt.Errorf("%w: waiting: %w", rlmm.ErrTimeout, context.DeadlineExceeded), true, codes.DeadlineExceeded, rlmmpb.ErrorKind_TIMEOUT, true},
		{"cancelled", fmt.Errorf("%w: waiting: %w", rlmm.ErrTimeout, context.Canceled), true, codes.Canceled, rlmmpb.ErrorKind_TIMEOUT, true},
		{"not published timeout", notPublished{fmt.Errorf("%w: starting", rlmm.ErrTimeout)}, true, codes.DeadlineExceeded, rlmmpb.ErrorKind_TIMEOUT, false},
		{"other", errors.New("disk on fire"), true, codes.Internal, rlmmpb.ErrorKind_INTERNAL, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st, info := errorInfo(t, toStatus(tc.err, tc.mutation))
			if st.Code() != tc.code || info.Kind != tc.kind || info.MayBeRecorded != tc.recorded {
				t.Fatalf("got %s %s recorded=%v, want %s %s recorded=%v", st.Code(), info.Kind, info.MayBeRecorded, tc.code, tc.kind, tc.recorded)
			}
			if st.Message() != tc.err.Error() {
				t.Fatalf("message %q, want rlmm's %q", st.Message(), tc.err.Error())
			}
		})
	}
	if toStatus(nil, true) != nil {
		t.Fatal("toStatus(nil) is not nil")
	}
}

// TestErrorsOverTheSocket: each error a client can provoke arrives with its
// code and ErrorInfo.
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
		code codes.Code
		kind rlmmpb.ErrorKind
	}{
		{"add not STARTED", func() error {
			_, err := f.client.AddSegment(ctx, &rlmmpb.AddSegmentRequest{Segment: segmentToProto(&finished)})
			return err
		}, codes.InvalidArgument, rlmmpb.ErrorKind_INVALID_ARGUMENT},
		{"add without segment", func() error {
			_, err := f.client.AddSegment(ctx, &rlmmpb.AddSegmentRequest{})
			return err
		}, codes.InvalidArgument, rlmmpb.ErrorKind_INVALID_ARGUMENT},
		{"read without partition", func() error {
			_, err := f.client.SegmentForOffset(ctx, &rlmmpb.SegmentForOffsetRequest{})
			return err
		}, codes.InvalidArgument, rlmmpb.ErrorKind_INVALID_ARGUMENT},
		{"forbidden transition", func() error {
			_, err := f.client.UpdateSegment(ctx, backwards)
			return err
		}, codes.FailedPrecondition, rlmmpb.ErrorKind_INVALID_TRANSITION},
		{"unknown segment", func() error {
			_, err := f.client.UpdateSegment(ctx, unknown)
			return err
		}, codes.NotFound, rlmmpb.ErrorKind_UNKNOWN_SEGMENT},
		{"not assigned", func() error {
			_, err := f.client.AddSegment(ctx, &rlmmpb.AddSegmentRequest{Segment: segmentToProto(&other)})
			return err
		}, codes.FailedPrecondition, rlmmpb.ErrorKind_NOT_ASSIGNED},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st, info := errorInfo(t, tc.call())
			if st.Code() != tc.code || info.Kind != tc.kind || info.MayBeRecorded {
				t.Fatalf("got %s %s recorded=%v (%s), want %s %s recorded=false", st.Code(), info.Kind, info.MayBeRecorded, st.Message(), tc.code, tc.kind)
			}
		})
	}

	t.Run("closed", func(t *testing.T) {
		if err := f.mgr.Close(); err != nil {
			t.Fatal(err)
		}
		next := segment(tp, 900)
		_, err := f.client.AddSegment(ctx, &rlmmpb.AddSegmentRequest{Segment: segmentToProto(&next)})
		st, info := errorInfo(t, err)
		if st.Code() != codes.Unavailable || info.Kind != rlmmpb.ErrorKind_CLOSED || !info.MayBeRecorded {
			t.Fatalf("got %s %s recorded=%v, want UNAVAILABLE CLOSED recorded=true", st.Code(), info.Kind, info.MayBeRecorded)
		}
		_, err = f.client.ListSegments(ctx, &rlmmpb.ListSegmentsRequest{TopicIdPartition: tpToProto(tp)})
		if err == nil {
			// The stream's error comes with its first Recv.
			stream, _ := f.client.ListSegments(ctx, &rlmmpb.ListSegmentsRequest{TopicIdPartition: tpToProto(tp)})
			_, err = stream.Recv()
		}
		st, info = errorInfo(t, err)
		if st.Code() != codes.Unavailable || info.Kind != rlmmpb.ErrorKind_CLOSED || info.MayBeRecorded {
			t.Fatalf("list: got %s %s recorded=%v, want UNAVAILABLE CLOSED recorded=false", st.Code(), info.Kind, info.MayBeRecorded)
		}
	})
}

// TestMutationTimeoutMayBeRecorded: a mutation whose event is published but
// not applied within ConsumeWait fails DEADLINE_EXCEEDED, may_be_recorded.
func TestMutationTimeoutMayBeRecorded(t *testing.T) {
	f := newFixture(t, fixtureOpts{consumeWait: 300 * time.Millisecond})
	tp := newTP()
	f.assign(t, tp)
	f.gate.hold()
	md := segment(tp, 0)
	_, err := f.client.AddSegment(testCtx(t), &rlmmpb.AddSegmentRequest{Segment: segmentToProto(&md)})
	f.gate.release()
	st, info := errorInfo(t, err)
	if st.Code() != codes.DeadlineExceeded || info.Kind != rlmmpb.ErrorKind_TIMEOUT || !info.MayBeRecorded {
		t.Fatalf("got %s %s recorded=%v (%s), want DEADLINE_EXCEEDED TIMEOUT recorded=true", st.Code(), info.Kind, info.MayBeRecorded, st.Message())
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

// TestStarting: before the manager is up, reads answer NOT_READY, IsReady
// false, ServerInfo works, and a mutation waits within its deadline, then
// fails with nothing published (or goes on once the manager comes).
func TestStarting(t *testing.T) {
	f := newFixture(t, fixtureOpts{noManager: true})
	ctx := testCtx(t)
	tp := newTP()
	_, err := f.client.SegmentForOffset(ctx, &rlmmpb.SegmentForOffsetRequest{TopicIdPartition: tpToProto(tp)})
	st, info := errorInfo(t, err)
	if st.Code() != codes.Unavailable || info.Kind != rlmmpb.ErrorKind_NOT_READY {
		t.Fatalf("read while starting: %s %s, want UNAVAILABLE NOT_READY", st.Code(), info.Kind)
	}
	r, err := f.client.IsReady(ctx, &rlmmpb.IsReadyRequest{TopicIdPartition: tpToProto(tp)})
	if err != nil || r.Ready {
		t.Fatalf("IsReady while starting: %v %v", r, err)
	}
	if _, err := f.client.ServerInfo(ctx, &rlmmpb.ServerInfoRequest{}); err != nil {
		t.Fatalf("ServerInfo while starting: %v", err)
	}
	// The handler itself, so the server's deadline error is seen (over the
	// socket the client's own deadline answers first).
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	md := segment(tp, 0)
	_, err = f.srv.svc.AddSegment(short, &rlmmpb.AddSegmentRequest{Segment: segmentToProto(&md)})
	st, info = errorInfo(t, err)
	if st.Code() != codes.DeadlineExceeded || info.Kind != rlmmpb.ErrorKind_TIMEOUT || info.MayBeRecorded {
		t.Fatalf("mutation while starting: %s %s recorded=%v, want DEADLINE_EXCEEDED TIMEOUT recorded=false", st.Code(), info.Kind, info.MayBeRecorded)
	}
	// A leadership change waits for the manager and then goes through.
	done := make(chan error, 1)
	go func() {
		_, err := f.client.OnPartitionLeadershipChanges(ctx, &rlmmpb.LeadershipChangesRequest{Leaders: []*rlmmpb.TopicIdPartition{tpToProto(tp)}})
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	f.startManager(t)
	if err := <-done; err != nil {
		t.Fatalf("leadership change across the start: %v", err)
	}
	f.assign(t, tp) // ready
}

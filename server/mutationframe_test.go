package server

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/rlmm-go/rlmm/rpc/lookupframe"
	"github.com/rlmm-go/rlmm/rpc/rlmmpb"
)

// framedMutationTimeout is the timeout_ms the tests' framed mutations carry.
const framedMutationTimeout = 10_000

// addFrame, updateFrame and deleteFrame wrap a unary request as a framed one.
func addFrame(id uint64, r *rlmmpb.AddSegmentRequest) *rlmmpb.MutationFrameRequest {
	return &rlmmpb.MutationFrameRequest{Id: id, TimeoutMs: framedMutationTimeout,
		Mutation: &rlmmpb.MutationFrameRequest_AddSegment{AddSegment: r}}
}

func updateFrame(id uint64, r *rlmmpb.UpdateSegmentRequest) *rlmmpb.MutationFrameRequest {
	return &rlmmpb.MutationFrameRequest{Id: id, TimeoutMs: framedMutationTimeout,
		Mutation: &rlmmpb.MutationFrameRequest_UpdateSegment{UpdateSegment: r}}
}

func deleteFrame(id uint64, r *rlmmpb.PutPartitionDeleteRequest) *rlmmpb.MutationFrameRequest {
	return &rlmmpb.MutationFrameRequest{Id: id, TimeoutMs: framedMutationTimeout,
		Mutation: &rlmmpb.MutationFrameRequest_PutPartitionDelete{PutPartitionDelete: r}}
}

// unaryMutation runs req's mutation as the unary call and returns its
// failure as the CallStatus a framed reply carries (nil: applied).
func unaryMutation(ctx context.Context, c rlmmpb.RemoteLogMetadataClient, req *rlmmpb.MutationFrameRequest) *rlmmpb.CallStatus {
	var err error
	switch m := req.GetMutation().(type) {
	case *rlmmpb.MutationFrameRequest_AddSegment:
		_, err = c.AddSegment(ctx, m.AddSegment)
	case *rlmmpb.MutationFrameRequest_UpdateSegment:
		_, err = c.UpdateSegment(ctx, m.UpdateSegment)
	case *rlmmpb.MutationFrameRequest_PutPartitionDelete:
		_, err = c.PutPartitionDelete(ctx, m.PutPartitionDelete)
	}
	if err == nil {
		return nil
	}
	p := status.Convert(err).Proto()
	return &rlmmpb.CallStatus{Code: p.GetCode(), Message: p.GetMessage(), Details: p.GetDetails()}
}

// TestFramedMutationsAsUnary: a mutation on a framed mutation connection
// is the unary call's: applied and visible to the server's reads when its
// reply comes, and failing with the unary call's status, byte for byte,
// when the unary call fails (the same code, ErrorInfo and message, but for
// the partition and segment it names). Each case runs framed on one of two
// twin partitions and unary on the other, so both see the same state.
func TestFramedMutationsAsUnary(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	framedTP, unaryTP := newTP(), newTP()
	f.assign(t, framedTP, unaryTP)
	c, err := dialFramedAs(t, f.serveFramed(t, nil), lookupframe.Mutations, nil)
	if err != nil {
		t.Fatalf("mutation hello refused: %v", err)
	}
	framedSeg, unarySeg := segment(framedTP, 0), segment(unaryTP, 0)
	framedGhost, unaryGhost := segment(framedTP, 500), segment(unaryTP, 500)
	tests := []struct {
		name   string
		framed func(id uint64) *rlmmpb.MutationFrameRequest
		unary  *rlmmpb.MutationFrameRequest
		ok     bool
	}{
		{"add", func(id uint64) *rlmmpb.MutationFrameRequest {
			return addFrame(id, &rlmmpb.AddSegmentRequest{Segment: segmentToProto(&framedSeg)})
		}, addFrame(0, &rlmmpb.AddSegmentRequest{Segment: segmentToProto(&unarySeg)}), true},
		{"finish", func(id uint64) *rlmmpb.MutationFrameRequest { return updateFrame(id, finish(framedSeg)) },
			updateFrame(0, finish(unarySeg)), true},
		{"finish a segment never added", func(id uint64) *rlmmpb.MutationFrameRequest { return updateFrame(id, finish(framedGhost)) },
			updateFrame(0, finish(unaryGhost)), false},
		{"no segment", func(id uint64) *rlmmpb.MutationFrameRequest { return addFrame(id, &rlmmpb.AddSegmentRequest{}) },
			addFrame(0, &rlmmpb.AddSegmentRequest{}), false},
		{"no partition delete", func(id uint64) *rlmmpb.MutationFrameRequest {
			return deleteFrame(id, &rlmmpb.PutPartitionDeleteRequest{})
		}, deleteFrame(0, &rlmmpb.PutPartitionDeleteRequest{}), false},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			id := uint64(100 + i)
			got := c.mutate(tc.framed(id)).GetError()
			want := unaryMutation(testCtx(t), f.client, tc.unary)
			if tc.ok != (got == nil) || tc.ok != (want == nil) {
				t.Fatalf("framed failed with %v, unary with %v; want both ok=%v", got, want, tc.ok)
			}
			if got == nil {
				return
			}
			// The messages name each its own partition and segment; the
			// rest must be the same.
			want.Message = strings.NewReplacer(unarySeg.ID.ID.String(), framedSeg.ID.ID.String(),
				unaryGhost.ID.ID.String(), framedGhost.ID.ID.String(), unaryTP.String(), framedTP.String()).Replace(want.Message)
			if !proto.Equal(got, want) {
				t.Fatalf("framed failed with %v\nunary with %v", got, want)
			}
		})
	}
	// Applied when the reply came: the server's own read finds it at once.
	r, err := f.client.SegmentForOffset(testCtx(t), &rlmmpb.SegmentForOffsetRequest{TopicIdPartition: tpToProto(framedTP), Offset: 10})
	if err != nil || !r.GetFound() || r.GetSegment().GetState() != rlmmpb.SegmentState_COPY_SEGMENT_FINISHED {
		t.Fatalf("after the framed add and finish: %v, %v; want the finished segment", r, err)
	}
}

// TestFramedMutationRefusals: requests the framed format itself refuses get
// INVALID_ARGUMENT naming what was wrong, with the request's id as far as
// its bytes give it, and the connection goes on.
func TestFramedMutationRefusals(t *testing.T) {
	_, tp, c := mutationConn(t)
	md := segment(tp, 0)
	add := &rlmmpb.AddSegmentRequest{Segment: segmentToProto(&md)}
	noTimeout := addFrame(1, add)
	noTimeout.TimeoutMs = 0
	tooLong := addFrame(2, add)
	tooLong.TimeoutMs = uint64(2 * time.Hour / time.Millisecond)
	tests := []struct {
		name   string
		raw    []byte
		wantID uint64
		want   string
	}{
		{"no timeout", mustMarshal(t, noTimeout), 1, "timeout_ms must be between 1 and 3600000, got 0"},
		{"timeout past an hour", mustMarshal(t, tooLong), 2, "got 7200000"},
		{"no mutation", mustMarshal(t, &rlmmpb.MutationFrameRequest{Id: 3, TimeoutMs: 1000}), 3, "without a mutation"},
		{"undecodable, id first", []byte{0x08, 0x04, 0x1a, 0xff}, 4, "does not decode"},
		{"not protobuf at all", []byte("not protobuf at all"), 0, "does not decode"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c.write(tc.raw)
			r, err := c.readMutation()
			if err != nil {
				t.Fatal(err)
			}
			if r.Id != tc.wantID || r.GetError().GetCode() != int32(3) || !strings.Contains(r.GetError().GetMessage(), tc.want) {
				t.Fatalf("reply %v, want id %d and INVALID_ARGUMENT saying %q", r, tc.wantID, tc.want)
			}
		})
	}
	// The connection goes on: the segment is added after the refusals.
	if r := c.mutate(addFrame(9, add)); r.GetError() != nil {
		t.Fatalf("after the refusals: %v", r.GetError())
	}
}

// TestStopEndsAFramedMutation: a framed mutation waiting for its event when
// the server stops is ended, not waited for (its connection closes), and
// no goroutine is left behind (TestMain's goleak).
func TestStopEndsAFramedMutation(t *testing.T) {
	f, tp, c := mutationConn(t)
	f.gate.hold()
	defer f.gate.release()
	md := segment(tp, 0)
	// An hour's bound: a Stop that waited for the mutation would hang the
	// test past its own timeout.
	req := addFrame(1, &rlmmpb.AddSegmentRequest{Segment: segmentToProto(&md)})
	req.TimeoutMs = uint64(time.Hour / time.Millisecond)
	b := mustMarshal(t, req)
	c.write(b)
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		time.Sleep(50 * time.Millisecond) // the mutation is waiting on the gate by then, or answered after Stop
		f.srv.Stop(testCtx(t))
	}()
	r, err := c.readMutation()
	<-stopped
	if err == nil && r.GetError() == nil {
		t.Fatalf("the mutation held by the gate succeeded across Stop: %v", r)
	}
}

// mustMarshal encodes m.
func mustMarshal(t *testing.T, m proto.Message) []byte {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

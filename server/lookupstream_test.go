package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/rpc/rlmmpb"
)

// unaryOutcome is what the unary SegmentForOffset answers, in the stream's
// reply form (reply or CallStatus), so the two paths compare with
// proto.Equal.
func unaryOutcome(ctx context.Context, c rlmmpb.RemoteLogMetadataClient, q *rlmmpb.SegmentForOffsetRequest) *rlmmpb.SegmentForOffsetStreamReply {
	if q == nil {
		q = &rlmmpb.SegmentForOffsetRequest{} // what an absent request reads as
	}
	r, err := c.SegmentForOffset(ctx, q)
	if err != nil {
		return &rlmmpb.SegmentForOffsetStreamReply{Result: &rlmmpb.SegmentForOffsetStreamReply_Error{Error: callStatus(err)}}
	}
	return &rlmmpb.SegmentForOffsetStreamReply{Result: &rlmmpb.SegmentForOffsetStreamReply_Reply{Reply: r}}
}

// streamLookup sends one request on the stream and returns its reply,
// checking the id, with the id cleared for comparison.
func streamLookup(t *testing.T, s rlmmpb.RemoteLogMetadata_SegmentForOffsetStreamClient, id uint64, q *rlmmpb.SegmentForOffsetRequest) *rlmmpb.SegmentForOffsetStreamReply {
	t.Helper()
	if err := s.Send(&rlmmpb.SegmentForOffsetStreamRequest{Id: id, Request: q}); err != nil {
		t.Fatalf("Send: %v", err)
	}
	r, err := s.Recv()
	if err != nil {
		t.Fatalf("Recv: %v", err)
	}
	if r.Id != id {
		t.Fatalf("reply id %d, want %d", r.Id, id)
	}
	r.Id = 0
	return r
}

// errorKind is the ErrorInfo kind of a stream reply's error, or -1 for a
// reply.
func errorKind(t *testing.T, r *rlmmpb.SegmentForOffsetStreamReply) rlmmpb.ErrorKind {
	t.Helper()
	e := r.GetError()
	if e == nil {
		return -1
	}
	for _, d := range e.Details {
		var info rlmmpb.ErrorInfo
		if d.MessageIs(&info) {
			if err := d.UnmarshalTo(&info); err != nil {
				t.Fatal(err)
			}
			return info.Kind
		}
	}
	t.Fatalf("error reply without ErrorInfo: %v", e)
	return 0
}

// TestLookupStreamAnswersAsUnary: every request answered on the stream
// equals the unary call's answer on the same state (hits, misses, bad
// arguments, a partition not held, a server still starting).
func TestLookupStreamAnswersAsUnary(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	starting := newFixture(t, fixtureOpts{noManager: true})
	tp := newTP()
	f.assign(t, tp)
	for i := range 5 {
		f.addAndFinish(t, segment(tp, int64(i)*100))
	}
	// A second partition whose segments differ in what the stream's reused
	// reply must not carry over from one answer to the next: custom
	// metadata (which the finishing update sets), none, empty; one epoch.
	other := newTP()
	f.assign(t, other)
	for i, custom := range [][]byte{{9, 8, 7, 6}, nil, {}} {
		md := segment(other, int64(i)*100)
		if custom == nil {
			md.LeaderEpochs = md.LeaderEpochs[:1]
		}
		if _, err := f.client.AddSegment(testCtx(t), &rlmmpb.AddSegmentRequest{Segment: segmentToProto(&md)}); err != nil {
			t.Fatal(err)
		}
		u := finish(md)
		u.Update.CustomMetadata = custom
		if _, err := f.client.UpdateSegment(testCtx(t), u); err != nil {
			t.Fatal(err)
		}
	}
	ptp := tpToProto(tp)
	potp := tpToProto(other)
	elsewhere := tpToProto(f.tpElsewhere(tp))
	badUUID := proto.Clone(ptp).(*rlmmpb.TopicIdPartition)
	badUUID.TopicId = nil
	tests := []struct {
		name string
		fx   *fixture
		q    *rlmmpb.SegmentForOffsetRequest
		want rlmmpb.ErrorKind // -1: a reply
		hit  bool
	}{
		{"hit epoch 0", f, &rlmmpb.SegmentForOffsetRequest{TopicIdPartition: ptp, LeaderEpoch: 0, Offset: 20}, -1, true},
		{"hit epoch 1", f, &rlmmpb.SegmentForOffsetRequest{TopicIdPartition: ptp, LeaderEpoch: 1, Offset: 360}, -1, true},
		{"last offset", f, &rlmmpb.SegmentForOffsetRequest{TopicIdPartition: ptp, LeaderEpoch: 1, Offset: 499}, -1, true},
		{"custom metadata", f, &rlmmpb.SegmentForOffsetRequest{TopicIdPartition: potp, LeaderEpoch: 1, Offset: 60}, -1, true},
		{"one epoch, no custom metadata", f, &rlmmpb.SegmentForOffsetRequest{TopicIdPartition: potp, LeaderEpoch: 0, Offset: 110}, -1, true},
		{"empty custom metadata", f, &rlmmpb.SegmentForOffsetRequest{TopicIdPartition: potp, LeaderEpoch: 1, Offset: 260}, -1, true},
		{"custom metadata again", f, &rlmmpb.SegmentForOffsetRequest{TopicIdPartition: potp, LeaderEpoch: 0, Offset: 10}, -1, true},
		{"two epochs again", f, &rlmmpb.SegmentForOffsetRequest{TopicIdPartition: ptp, LeaderEpoch: 1, Offset: 160}, -1, true},
		{"past the end", f, &rlmmpb.SegmentForOffsetRequest{TopicIdPartition: ptp, LeaderEpoch: 1, Offset: 500}, -1, false},
		{"unknown epoch", f, &rlmmpb.SegmentForOffsetRequest{TopicIdPartition: ptp, LeaderEpoch: 9, Offset: 20}, -1, false},
		{"negative offset", f, &rlmmpb.SegmentForOffsetRequest{TopicIdPartition: ptp, LeaderEpoch: 0, Offset: -1}, -1, false},
		{"partition not held", f, &rlmmpb.SegmentForOffsetRequest{TopicIdPartition: elsewhere, Offset: 20}, rlmmpb.ErrorKind_NOT_ASSIGNED, false},
		{"no partition", f, &rlmmpb.SegmentForOffsetRequest{Offset: 20}, rlmmpb.ErrorKind_INVALID_ARGUMENT, false},
		{"no topic id", f, &rlmmpb.SegmentForOffsetRequest{TopicIdPartition: badUUID}, rlmmpb.ErrorKind_INVALID_ARGUMENT, false},
		{"no request at all", f, nil, rlmmpb.ErrorKind_INVALID_ARGUMENT, false},
		{"hit after errors", f, &rlmmpb.SegmentForOffsetRequest{TopicIdPartition: potp, LeaderEpoch: 0, Offset: 150}, -1, true},
		{"server starting", starting, &rlmmpb.SegmentForOffsetRequest{TopicIdPartition: ptp, Offset: 20}, rlmmpb.ErrorKind_NOT_READY, false},
	}
	streams := map[*fixture]rlmmpb.RemoteLogMetadata_SegmentForOffsetStreamClient{}
	for _, fx := range []*fixture{f, starting} {
		s, err := fx.client.SegmentForOffsetStream(testCtx(t))
		if err != nil {
			t.Fatal(err)
		}
		streams[fx] = s
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testCtx(t)
			want := unaryOutcome(ctx, tc.fx.client, tc.q)
			got := streamLookup(t, streams[tc.fx], uint64(1000+i), tc.q)
			if !proto.Equal(got, want) {
				t.Fatalf("stream answered %v\nunary answered %v", got, want)
			}
			if k := errorKind(t, got); k != tc.want {
				t.Fatalf("error kind %v, want %v (reply %v)", k, tc.want, got)
			}
			if got.GetReply().GetFound() != tc.hit {
				t.Fatalf("found=%v, want %v", got.GetReply().GetFound(), tc.hit)
			}
		})
	}
	for _, s := range streams {
		endLookupStream(t, s)
	}
}

// TestLookupStreamConcurrentIDs: many requests pipelined on one stream
// from several goroutines each get the reply of their own id.
func TestLookupStreamConcurrentIDs(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	tp := newTP()
	f.assign(t, tp)
	const segments = 8
	f.addFinishedRun(t, tp, segments)
	ptp := tpToProto(tp)
	s, err := f.client.SegmentForOffsetStream(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	const senders, each = 4, 250
	// offsetOf is the offset request id asks for: a hit in epoch 0 below 800
	// where the offset's last two digits are below 50 (segment's epoch 1
	// starts at +50), a miss elsewhere.
	offsetOf := func(id uint64) int64 { return int64(id*37) % (segments*100 + 200) }
	var sendMu sync.Mutex // a client stream's Send is not safe from several goroutines
	errs := make(chan error, senders+1)
	var wg sync.WaitGroup
	for g := range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				id := uint64(g*each + i)
				sendMu.Lock()
				err := s.Send(&rlmmpb.SegmentForOffsetStreamRequest{Id: id, Request: &rlmmpb.SegmentForOffsetRequest{
					TopicIdPartition: ptp, LeaderEpoch: 0, Offset: offsetOf(id)}})
				sendMu.Unlock()
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	seen := map[uint64]bool{}
	for len(seen) < senders*each {
		r, err := s.Recv()
		if err != nil {
			t.Fatalf("Recv after %d replies: %v", len(seen), err)
		}
		if seen[r.Id] || r.Id >= senders*each {
			t.Fatalf("reply id %d unexpected (seen before: %v)", r.Id, seen[r.Id])
		}
		seen[r.Id] = true
		off := offsetOf(r.Id)
		rep := r.GetReply()
		if rep == nil {
			t.Fatalf("id %d: error %v", r.Id, r.GetError())
		}
		if wantHit := off < segments*100 && off%100 < 50; rep.Found != wantHit {
			t.Fatalf("id %d (offset %d): found=%v, want %v", r.Id, off, rep.Found, wantHit)
		}
		if rep.Found && (rep.Segment.StartOffset > off || rep.Segment.EndOffset < off) {
			t.Fatalf("id %d: offset %d answered with segment [%d, %d]", r.Id, off, rep.Segment.StartOffset, rep.Segment.EndOffset)
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("Send: %v", err)
	}
	endLookupStream(t, s)
}

// TestLookupStreamToken: over TCP the stream needs the token, as every
// unary call does.
func TestLookupStreamToken(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	tp := newTP()
	f.assign(t, tp)
	f.addAndFinish(t, segment(tp, 0))
	addr := serveTCP(t, f, Endpoint{Token: []byte("s3cret-token")})
	c := tcpClient(t, addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	q := &rlmmpb.SegmentForOffsetStreamRequest{Id: 7, Request: &rlmmpb.SegmentForOffsetRequest{TopicIdPartition: tpToProto(tp), Offset: 5}}
	for _, tc := range []struct {
		name string
		ctx  context.Context
		code codes.Code
	}{
		{"no token", testCtx(t), codes.Unauthenticated},
		{"wrong token", withToken(testCtx(t), "guess"), codes.Unauthenticated},
		{"right token", withToken(testCtx(t), "s3cret-token"), codes.OK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(tc.ctx)
			defer cancel()
			s, err := c.SegmentForOffsetStream(ctx)
			if err == nil {
				err = s.Send(q) // io.EOF when the server already refused: Recv says why
			}
			var r *rlmmpb.SegmentForOffsetStreamReply
			if err == nil || errors.Is(err, io.EOF) {
				r, err = s.Recv()
			}
			if status.Code(err) != tc.code {
				t.Fatalf("got %v, want %s", err, tc.code)
			}
			if tc.code == codes.OK && (r.Id != 7 || !r.GetReply().GetFound()) {
				t.Fatalf("with the token: %v, want a hit for id 7", r)
			}
		})
	}
}

// TestStopEndsLookupStreams: Stop ends a stream in flight (with
// UNAVAILABLE, CLOSED) instead of waiting for the client to close it, and
// leaves no goroutine behind (TestMain's goleak).
func TestStopEndsLookupStreams(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	tp := newTP()
	f.assign(t, tp)
	f.addAndFinish(t, segment(tp, 0))
	s, err := f.client.SegmentForOffsetStream(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if r := streamLookup(t, s, 1, &rlmmpb.SegmentForOffsetRequest{TopicIdPartition: tpToProto(tp), Offset: 5}); !r.GetReply().GetFound() {
		t.Fatalf("lookup before Stop: %v", r)
	}
	f.srv.Stop(testCtx(t))
	_, err = s.Recv()
	st := status.Convert(err)
	if st.Code() != codes.Unavailable || !strings.Contains(st.Message(), "stopping") {
		t.Fatalf("after Stop: %v, want UNAVAILABLE saying the server stops", err)
	}
	if _, info := errorInfo(t, err); info.Kind != rlmmpb.ErrorKind_CLOSED {
		t.Fatalf("after Stop: kind %v, want CLOSED", info.Kind)
	}
}

// rawClientCodec sends a rawMessage's bytes as they are (a client that
// sends what the server cannot decode) and decodes replies as proto.
type rawClientCodec struct{ serverCodec }

func (c rawClientCodec) Marshal(v any) (mem.BufferSlice, error) {
	if r, ok := v.(*rawMessage); ok {
		return mem.BufferSlice{mem.SliceBuffer(*r)}, nil
	}
	return c.serverCodec.Marshal(v)
}

// TestLookupStreamAnswersAnUndecodableRequestAlone: a request whose bytes do
// not decode (a topic name that is not UTF-8; bytes that are not protobuf at
// all) gets INVALID_ARGUMENT with its id (0 when even the id cannot be read),
// no panic, and the same stream answers the requests before and after it.
func TestLookupStreamAnswersAnUndecodableRequestAlone(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	tp := newTP()
	f.assign(t, tp)
	f.addAndFinish(t, segment(tp, 0))
	ctx := testCtx(t)
	s, err := f.conn.NewStream(ctx, &rlmmpb.RemoteLogMetadata_ServiceDesc.Streams[0],
		rlmmpb.RemoteLogMetadata_SegmentForOffsetStream_FullMethodName, grpc.ForceCodecV2(rawClientCodec{newServerCodec()}))
	if err != nil {
		t.Fatal(err)
	}
	valid := func(id uint64) rawMessage {
		b, err := proto.Marshal(&rlmmpb.SegmentForOffsetStreamRequest{Id: id, Request: &rlmmpb.SegmentForOffsetRequest{TopicIdPartition: tpToProto(tp), Offset: 5}})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	// id 7, then a request whose TopicIdPartition holds a topic name of invalid UTF-8.
	badName := protowire.AppendTag(nil, 1, protowire.VarintType)
	badName = protowire.AppendVarint(badName, 7)
	bad := &rlmmpb.TopicIdPartition{Topic: "x"}
	inner, err := proto.Marshal(bad)
	if err != nil {
		t.Fatal(err)
	}
	inner = bytes.Replace(inner, []byte("x"), []byte{0xff}, 1)
	req := protowire.AppendTag(nil, 1, protowire.BytesType)
	req = protowire.AppendBytes(req, inner)
	badName = protowire.AppendTag(badName, 2, protowire.BytesType)
	badName = protowire.AppendBytes(badName, req)
	garbage := rawMessage{0x08, 0xff, 0xff, 0xff} // field 1, a varint that never ends
	overrun := rawMessage{0x0a, 0xff, 0xff}       // field 1 as length-delimited, its length past the end
	sends := []struct {
		msg    rawMessage
		id     uint64
		wantOK bool
	}{{valid(1), 1, true}, {badName, 7, false}, {garbage, 0, false}, {overrun, 0, false}, {valid(2), 2, true}}
	for _, m := range sends {
		msg := m.msg
		if err := s.SendMsg(&msg); err != nil {
			t.Fatalf("send %d: %v", m.id, err)
		}
		var r rlmmpb.SegmentForOffsetStreamReply
		if err := s.RecvMsg(&r); err != nil {
			t.Fatalf("reply to %d: the stream ended: %v", m.id, err)
		}
		if r.Id != m.id {
			t.Fatalf("reply id %d, want %d", r.Id, m.id)
		}
		if m.wantOK {
			if !r.GetReply().GetFound() {
				t.Fatalf("request %d: %v, want the segment", m.id, &r)
			}
			continue
		}
		if k := errorKind(t, &r); k != rlmmpb.ErrorKind_INVALID_ARGUMENT || codes.Code(r.GetError().Code) != codes.InvalidArgument ||
			!strings.Contains(r.GetError().Message, "does not decode") {
			t.Fatalf("request %d: %v, want INVALID_ARGUMENT naming the decode failure", m.id, &r)
		}
	}
	if err := s.CloseSend(); err != nil {
		t.Fatal(err)
	}
	var r rlmmpb.SegmentForOffsetStreamReply
	if err := s.RecvMsg(&r); !errors.Is(err, io.EOF) {
		t.Fatalf("after CloseSend: %v, want io.EOF", err)
	}
}

// TestLookupAnswerFailedIsToStatus: the stream's error answer carries, for
// every class of error, the status a unary read fails with (toStatus, not a
// mutation), field for field and detail byte for byte, also when one
// answer's message is refilled for the next.
func TestLookupAnswerFailedIsToStatus(t *testing.T) {
	tests := []struct {
		name string
		err  error
	}{
		{"canceled", fmt.Errorf("waiting: %w", context.Canceled)},
		{"deadline", fmt.Errorf("waiting: %w", context.DeadlineExceeded)},
		{"timeout", fmt.Errorf("lookup: %w", rlmm.ErrTimeout)},
		{"closed", fmt.Errorf("lookup: %w", rlmm.ErrClosed)},
		{"not ready", errStarting()},
		{"not assigned", fmt.Errorf("partition p-0: %w", rlmm.ErrNotAssigned)},
		{"invalid transition", fmt.Errorf("x: %w", rlmm.ErrInvalidTransition)},
		{"unknown segment", fmt.Errorf("x: %w", rlmm.ErrUnknownSegment)},
		{"invalid argument", badRequest("topic_id_partition is missing")},
		{"corrupt", fmt.Errorf("x: %w", rlmm.ErrCorrupt)},
		{"internal", errors.New("something else")},
		{"not published", notPublished{fmt.Errorf("x: %w", rlmm.ErrNotReady)}},
	}
	var a lookupAnswer
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := a.failed(uint64(i), tc.err)
			want := &rlmmpb.SegmentForOffsetStreamReply{Id: uint64(i),
				Result: &rlmmpb.SegmentForOffsetStreamReply_Error{Error: callStatus(toStatus(tc.err, false))}}
			if !proto.Equal(got, want) {
				t.Fatalf("answer %v\nwant %v", got, want)
			}
			gb, err := proto.MarshalOptions{Deterministic: true}.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			wb, err := proto.MarshalOptions{Deterministic: true}.Marshal(want)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(gb, wb) {
				t.Fatalf("answer encodes as %x, toStatus's as %x", gb, wb)
			}
		})
	}
}

// TestLookupAnswerHitDoesNotAllocate: once a stream's reply has grown to a
// segment's epochs, answering a hit (the lookup filled in place, the reply
// refilled) allocates nothing.
func TestLookupAnswerHitDoesNotAllocate(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	tp := newTP()
	f.assign(t, tp)
	f.addFinishedRun(t, tp, 3)
	ls := &lookupAnswerer{v: f.srv.svc}
	req := &rlmmpb.SegmentForOffsetStreamRequest{Id: 1, Request: &rlmmpb.SegmentForOffsetRequest{
		TopicIdPartition: tpToProto(tp), LeaderEpoch: 1, Offset: 170}}
	if r := ls.answer(req); !r.GetReply().GetFound() {
		t.Fatalf("no hit: %v", r)
	}
	allocs := testing.AllocsPerRun(100, func() { ls.answer(req) })
	if allocs != 0 {
		t.Fatalf("a hit allocates %.1f times, want 0", allocs)
	}
}

package server

import (
	"errors"
	"fmt"
	"io"
	"sync"

	"google.golang.org/grpc/status"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/rpc/rlmmpb"
	"github.com/rlmm-go/rlmm/topicbased"
)

// SegmentForOffsetStream is SegmentForOffset on one long-lived stream, the
// plugin's hot read: each request gets one reply with its id, in order, as
// the unary call would answer it (the same findSegment, the same status
// carried in CallStatus). A lookup never waits, so the stream answers on
// the goroutine that receives.
//
// The receiving goroutine also sends; the handler's own goroutine only
// waits for it to end or for Stop, and then returns, which ends the stream
// (GracefulStop would wait for an open stream forever). grpc-go cancels the
// stream's context when the handler returns, which ends a Recv in flight;
// the receiver never sends after that (sendMu, stopped), and Stop waits for
// it (Server.lookups).
func (v *service) SegmentForOffsetStream(stream rlmmpb.RemoteLogMetadata_SegmentForOffsetStreamServer) error {
	ls := &lookupStream{v: v, stream: stream}
	ended := make(chan error, 1)
	v.s.lookups.Add(1)
	go func() {
		defer v.s.lookups.Done()
		ended <- ls.serve()
	}()
	select {
	case err := <-ended:
		return err
	case <-v.s.stopping:
		ls.stop()
		return toStatus(fmt.Errorf("rlmm serve is stopping; the lookup stream ends: %w", rlmm.ErrClosed), false)
	}
}

// lookupStream is one open SegmentForOffsetStream.
type lookupStream struct {
	v      *service
	stream rlmmpb.RemoteLogMetadata_SegmentForOffsetStreamServer

	sendMu  sync.Mutex
	stopped bool // set by stop: the handler returned, nothing more is sent
}

// serve answers requests until the client closes its side (nil), the
// stream breaks (its error), or stop.
func (ls *lookupStream) serve() error {
	for {
		req, err := ls.stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err // the stream's own status: a request that did not decode, the client gone
		}
		reply := ls.v.lookupReply(req)
		ls.sendMu.Lock()
		if ls.stopped {
			ls.sendMu.Unlock()
			return nil
		}
		err = ls.stream.Send(reply)
		ls.sendMu.Unlock()
		if err != nil {
			return err
		}
	}
}

// stop makes serve send nothing more; a Send in flight finishes first.
func (ls *lookupStream) stop() {
	ls.sendMu.Lock()
	ls.stopped = true
	ls.sendMu.Unlock()
}

// lookupReply answers one request of the stream exactly as SegmentForOffset
// answers it (a request without its SegmentForOffsetRequest is one without
// a partition: INVALID_ARGUMENT).
func (v *service) lookupReply(req *rlmmpb.SegmentForOffsetStreamRequest) *rlmmpb.SegmentForOffsetStreamReply {
	q := req.GetRequest()
	r, err := v.findSegment(q.GetTopicIdPartition(), q.GetLeaderEpoch(), q.GetOffset(), (*topicbased.Manager).SegmentForOffset)
	if err != nil {
		return &rlmmpb.SegmentForOffsetStreamReply{Id: req.GetId(), Result: &rlmmpb.SegmentForOffsetStreamReply_Error{Error: callStatus(err)}}
	}
	return &rlmmpb.SegmentForOffsetStreamReply{Id: req.GetId(), Result: &rlmmpb.SegmentForOffsetStreamReply_Reply{Reply: r}}
}

// callStatus is a call's status error (toStatus) as a message: the fields
// of google.rpc.Status, the form a unary call's status travels in.
func callStatus(err error) *rlmmpb.CallStatus {
	p := status.Convert(err).Proto()
	return &rlmmpb.CallStatus{Code: p.GetCode(), Message: p.GetMessage(), Details: p.GetDetails()}
}

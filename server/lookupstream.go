package server

import (
	"errors"
	"fmt"
	"io"
	"sync"

	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/rpc/rlmmpb"
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
	ls := &lookupStream{v: v, stream: stream, lookups: lookupAnswerer{v: v}}
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

	// Only serve's goroutine touches it, one request at a time.
	lookups lookupAnswerer
}

// serve answers requests until the client closes its side (nil), the
// stream breaks (its error), or stop. Each request is decoded here, not by
// the codec (rawMessage): one that does not decode gets an INVALID_ARGUMENT
// reply of its own (undecodable) and the stream stays open.
func (ls *lookupStream) serve() error {
	for {
		var raw rawMessage
		err := ls.stream.RecvMsg(&raw)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err // the stream's own status: the client gone, a message too large
		}
		reply := ls.lookups.answerBytes(raw)
		ls.sendMu.Lock()
		if ls.stopped {
			ls.sendMu.Unlock()
			return nil
		}
		// Send encodes reply before it returns (grpc-go's codec, into
		// buffers of its own pool), so the next answer may refill it; the
		// server has no stats handler that would read it later.
		err = ls.stream.Send(reply)
		ls.sendMu.Unlock()
		if err != nil {
			return err
		}
	}
}

// undecodable answers a request that does not decode, alone: INVALID_ARGUMENT
// with the id read from its bytes as far as they go (0 when even that fails),
// and the stream goes on with the next request.
func undecodable(raw []byte, err error) *rlmmpb.SegmentForOffsetStreamReply {
	id := frameID(raw)
	st := toStatus(fmt.Errorf("%w: a lookup request of %d bytes that does not decode: %v", rlmm.ErrInvalidArgument, len(raw), err), false)
	return &rlmmpb.SegmentForOffsetStreamReply{Id: id, Result: &rlmmpb.SegmentForOffsetStreamReply_Error{Error: callStatus(st)}}
}

// frameID reads the id (field 1, a varint) of an encoded request that does
// not decode as a whole, as far as its bytes go (0 when they do not reach
// it), so the caller's error reply still names the request.
func frameID(raw []byte) uint64 {
	for b := raw; len(b) > 0; {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return 0
		}
		b = b[n:]
		if num == 1 && typ == protowire.VarintType {
			v, m := protowire.ConsumeVarint(b)
			if m < 0 {
				return 0
			}
			return v
		}
		m := protowire.ConsumeFieldValue(num, typ, b)
		if m < 0 {
			return 0
		}
		b = b[m:]
	}
	return 0
}

// stop makes serve send nothing more; a Send in flight finishes first.
func (ls *lookupStream) stop() {
	ls.sendMu.Lock()
	ls.stopped = true
	ls.sendMu.Unlock()
}

// callStatus is a call's status error (toStatus) as a message: the fields
// of google.rpc.Status, the form a unary call's status travels in.
func callStatus(err error) *rlmmpb.CallStatus {
	p := status.Convert(err).Proto()
	return &rlmmpb.CallStatus{Code: p.GetCode(), Message: p.GetMessage(), Details: p.GetDetails()}
}

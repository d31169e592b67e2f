package server

import (
	"bufio"
	"bytes"
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/rpc/brokerframe"
	"github.com/rlmm-go/rlmm/rpc/lookupframe"
	"github.com/rlmm-go/rlmm/rpc/rlmmpb"
)

// helloTimeout bounds how long a new framed connection may take to say
// hello before the server closes it.
const helloTimeout = 10 * time.Second

// ServeFramed starts serving the framed socket (rpc/lookupframe) on
// ep.Listener in the background: the lookup by (epoch, offset) and the
// mutations without gRPC, for the broker plugin's fetch and copy paths.
// Each connection first sends a hello, which must carry ep.Token when it is
// set (compared in constant time, as the gRPC endpoint checks its bearer
// token) and names the connection's kind; then every request frame gets
// one reply frame, answered on the connection's own goroutine by the same
// code as gRPC's: SegmentForOffsetStream's (lookupAnswerer) for lookups,
// the unary mutations' (service) for mutations. TLS is refused:
// the socket is a Unix socket beside the gRPC one (ListenUnix: mode 0600).
// ServerInfo names the socket (lookup_socket) from then on. Stop closes the
// listener and every connection and waits for their goroutines.
func (s *Server) ServeFramed(ep Endpoint) error {
	if ep.TLS != nil {
		return fmt.Errorf("%w: the framed socket takes a listener that already speaks TLS (tls.NewListener)", rlmm.ErrInvalidArgument)
	}
	ctx, cancel := context.WithCancel(context.Background())
	fs := &framedServer{s: s, l: ep.Listener, token: ep.Token, conns: map[net.Conn]struct{}{}, ctx: ctx, cancel: cancel}
	if err := s.admit(ep, func() {
		s.framed = append(s.framed, fs)
		if ep.Listener.Addr().Network() == "unix" {
			s.lookupSocket = ep.Listener.Addr().String() // the last Unix socket served
		}
	}); err != nil {
		return err
	}
	go func() {
		defer s.wg.Done()
		fs.accept()
	}()
	s.logger.Info("server: serving framed lookups", "address", ep.Listener.Addr().String(), "token", len(ep.Token) > 0)
	return nil
}

// framedServer is one framed listener and its open connections.
type framedServer struct {
	s     *Server
	l     net.Listener
	token []byte
	// ctx is the parent of every mutation's context: stop cancels it, so a
	// mutation waiting for its event ends with the server.
	ctx    context.Context
	cancel context.CancelFunc

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup // one per connection's goroutine
}

// accept accepts connections until the listener is closed (stop). An
// accept that fails for another reason (out of file descriptors) is tried
// again after a pause that doubles up to a second, as net/http does.
func (fs *framedServer) accept() {
	var pause time.Duration
	for {
		c, err := fs.l.Accept()
		if err != nil {
			select {
			case <-fs.s.stopping:
				return
			default:
			}
			if errors.Is(err, net.ErrClosed) {
				select {
				case fs.s.errs <- fmt.Errorf("server: framed lookups on %s: %w", fs.l.Addr(), err):
				default:
				}
				return
			}
			pause = min(max(2*pause, 5*time.Millisecond), time.Second)
			fs.s.logger.Warn("server: accepting a framed lookup connection failed; trying again", "error", err, "pause", pause)
			select {
			case <-fs.s.stopping:
				return
			case <-time.After(pause):
			}
			continue
		}
		pause = 0
		fs.mu.Lock()
		if fs.closed {
			fs.mu.Unlock()
			c.Close()
			return
		}
		fs.conns[c] = struct{}{}
		fs.wg.Add(1)
		fs.mu.Unlock()
		go fs.serveConn(c)
	}
}

// stop closes the listener and every connection (a lookup being answered
// finishes, its write fails; a mutation waiting is cancelled) and waits for
// the connections' goroutines.
func (fs *framedServer) stop() {
	fs.cancel()
	fs.l.Close()
	fs.mu.Lock()
	fs.closed = true
	for c := range fs.conns {
		c.Close()
	}
	fs.mu.Unlock()
	fs.wg.Wait()
}

// serveConn runs one connection: the hello, then a reply to every request
// until the client closes, a frame is too large (answered INVALID_ARGUMENT,
// then closed: the stream cannot be resynchronized) or stop. Its buffers
// are reused from one request to the next.
func (fs *framedServer) serveConn(c net.Conn) {
	defer fs.wg.Done()
	defer func() {
		fs.mu.Lock()
		delete(fs.conns, c)
		fs.mu.Unlock()
		c.Close()
	}()
	r := bufio.NewReaderSize(c, 4096)
	in := make([]byte, 0, 1024)
	out := make([]byte, 0, 4096)
	c.SetReadDeadline(time.Now().Add(helloTimeout)) // a Unix socket's deadline does not fail
	hello, err := lookupframe.ReadFrame(r, in, brokerframe.MaxHello)
	if err != nil {
		if !errors.Is(err, io.EOF) {
			fs.s.logger.Debug("server: no hello on a framed connection", "error", err)
		}
		return
	}
	c.SetReadDeadline(time.Time{}) // as above
	if bytes.HasPrefix(hello, []byte(brokerframe.Magic)) {
		fs.serveBroker(c, r, hello)
		return
	}
	kind, ok := fs.hello(c, hello)
	if !ok {
		return
	}
	max := lookupframe.MaxRequest
	var answer func(raw []byte) proto.Message
	var refuse func(err error) proto.Message
	if kind == lookupframe.Mutations {
		max = lookupframe.MaxMutation
		answer = fs.mutate
		refuse = func(err error) proto.Message {
			return &rlmmpb.MutationFrameReply{Error: callStatus(toStatus(err, true))}
		}
	} else {
		a := lookupAnswerer{v: fs.s.svc}
		answer = func(raw []byte) proto.Message { return a.answerBytes(raw) }
		refuse = func(err error) proto.Message {
			return &rlmmpb.SegmentForOffsetStreamReply{Result: &rlmmpb.SegmentForOffsetStreamReply_Error{Error: callStatus(toStatus(err, false))}}
		}
	}
	for {
		body, err := lookupframe.ReadFrame(r, in, max)
		if err != nil {
			if errors.Is(err, rlmm.ErrInvalidArgument) {
				fs.s.logger.Warn("server: closing a framed connection", "kind", kind, "error", err)
				if out, err := appendReply(out[:0], refuse(err)); err == nil {
					c.Write(out) // the connection is closed next either way
				}
			} else if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				fs.s.logger.Debug("server: a framed connection ended", "kind", kind, "error", err)
			}
			return
		}
		in = body[:0]
		out, err = appendReply(out[:0], answer(body))
		if err != nil {
			// A reply of this server's own making that does not encode
			// (a segment's custom metadata past 4 GiB): said, not hidden.
			fs.s.logger.Error("server: a framed reply does not encode; closing the connection", "kind", kind, "error", err)
			return
		}
		if _, err := c.Write(out); err != nil {
			return
		}
	}
}

// mutate answers one encoded MutationFrameRequest: the unary mutation's
// own code (service), bounded by the request's timeout_ms and by stop, its
// failure carried as the status the unary call would fail with.
func (fs *framedServer) mutate(raw []byte) proto.Message {
	var req rlmmpb.MutationFrameRequest
	if err := proto.Unmarshal(raw, &req); err != nil {
		return &rlmmpb.MutationFrameReply{Id: frameID(raw), Error: callStatus(toStatus(
			fmt.Errorf("%w: a mutation request of %d bytes that does not decode: %v", rlmm.ErrInvalidArgument, len(raw), err), true))}
	}
	reply := &rlmmpb.MutationFrameReply{Id: req.GetId()}
	if err := fs.mutateDecoded(&req); err != nil {
		reply.Error = callStatus(err)
	}
	return reply
}

// maxMutationTimeout bounds a framed mutation's timeout_ms: an hour, far
// past any the plugin sets (rlmm.serve.mutation.timeout.ms), so a wild
// value is refused rather than overflowing a duration.
const maxMutationTimeout = time.Hour

// mutateDecoded runs req's mutation and returns its failure as a gRPC
// status (nil: applied).
func (fs *framedServer) mutateDecoded(req *rlmmpb.MutationFrameRequest) error {
	ms := req.GetTimeoutMs()
	if ms == 0 || ms > uint64(maxMutationTimeout.Milliseconds()) {
		return toStatus(fmt.Errorf("%w: a framed mutation's timeout_ms must be between 1 and %d, got %d",
			rlmm.ErrInvalidArgument, maxMutationTimeout.Milliseconds(), ms), true)
	}
	ctx, cancel := context.WithTimeout(fs.ctx, time.Duration(ms)*time.Millisecond)
	defer cancel()
	var err error
	switch m := req.GetMutation().(type) {
	case *rlmmpb.MutationFrameRequest_AddSegment:
		_, err = fs.s.svc.AddSegment(ctx, m.AddSegment)
	case *rlmmpb.MutationFrameRequest_UpdateSegment:
		_, err = fs.s.svc.UpdateSegment(ctx, m.UpdateSegment)
	case *rlmmpb.MutationFrameRequest_PutPartitionDelete:
		_, err = fs.s.svc.PutPartitionDelete(ctx, m.PutPartitionDelete)
	default:
		err = toStatus(fmt.Errorf("%w: a framed mutation request without a mutation", rlmm.ErrInvalidArgument), true)
	}
	return err
}

// hello answers a lookup or mutation hello (rpc/lookupframe): accepted
// (with this process's pid) or refused with why, and then false. It
// returns the kind of connection the hello opened.
func (fs *framedServer) hello(c net.Conn, body []byte) (lookupframe.Kind, bool) {
	kind, token, err := lookupframe.ParseHello(body)
	if err == nil && len(fs.token) > 0 && subtle.ConstantTimeCompare(token, fs.token) != 1 {
		err = errors.New("a valid token is required")
	}
	if err != nil {
		fs.s.logger.Warn("server: refusing a framed connection", "error", err)
		c.Write(lookupframe.Append(nil, lookupframe.AppendRefuse(nil, kind, err.Error()))) // closed next
		return 0, false
	}
	_, err = c.Write(lookupframe.Append(nil, lookupframe.AppendAccept(nil, kind, int64(os.Getpid()))))
	return kind, err == nil
}

// appendReply appends reply as one frame to dst.
func appendReply(dst []byte, reply proto.Message) ([]byte, error) {
	dst, start := lookupframe.Begin(dst)
	dst, err := proto.MarshalOptions{}.MarshalAppend(dst, reply)
	if err != nil {
		return nil, err
	}
	return lookupframe.End(dst, start), nil
}

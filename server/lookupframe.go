package server

import (
	"bufio"
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
	"github.com/rlmm-go/rlmm/rpc/lookupframe"
	"github.com/rlmm-go/rlmm/rpc/rlmmpb"
)

// helloTimeout bounds how long a new framed connection may take to say
// hello before the server closes it.
const helloTimeout = 10 * time.Second

// ServeFramed starts serving the framed lookup socket (rpc/lookupframe) on
// ep.Listener in the background: the lookup by (epoch, offset) without
// gRPC, for the broker plugin's fetch path. Each connection first sends a
// hello, which must carry ep.Token when it is set (compared in constant
// time, as the gRPC endpoint checks its bearer token); then every request
// frame gets one reply frame, answered on the connection's own goroutine by
// the same code as SegmentForOffsetStream (lookupAnswerer). TLS is refused:
// the socket is a Unix socket beside the gRPC one (ListenUnix: mode 0600).
// ServerInfo names the socket (lookup_socket) from then on. Stop closes the
// listener and every connection and waits for their goroutines.
func (s *Server) ServeFramed(ep Endpoint) error {
	if ep.TLS != nil {
		return fmt.Errorf("%w: the framed lookup socket speaks no TLS; serve it on a Unix socket", rlmm.ErrInvalidArgument)
	}
	fs := &framedServer{s: s, l: ep.Listener, token: ep.Token, conns: map[net.Conn]struct{}{}}
	if err := s.admit(ep, func() {
		s.framed = append(s.framed, fs)
		s.lookupSocket = ep.Listener.Addr().String()
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

// framedServer is one framed lookup listener and its open connections.
type framedServer struct {
	s     *Server
	l     net.Listener
	token []byte

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
// finishes, its write fails) and waits for the connections' goroutines.
func (fs *framedServer) stop() {
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
	if !fs.hello(c, r, in) {
		return
	}
	a := lookupAnswerer{v: fs.s.svc}
	for {
		body, err := lookupframe.ReadFrame(r, in, lookupframe.MaxRequest)
		if err != nil {
			if errors.Is(err, rlmm.ErrInvalidArgument) {
				fs.s.logger.Warn("server: closing a framed lookup connection", "error", err)
				reply := &rlmmpb.SegmentForOffsetStreamReply{Result: &rlmmpb.SegmentForOffsetStreamReply_Error{Error: callStatus(toStatus(err, false))}}
				if out, err := appendReply(out[:0], reply); err == nil {
					c.Write(out) // the connection is closed next either way
				}
			} else if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				fs.s.logger.Debug("server: a framed lookup connection ended", "error", err)
			}
			return
		}
		in = body[:0]
		out, err = appendReply(out[:0], a.answerBytes(body))
		if err != nil {
			// A reply of this server's own making that does not encode
			// (a segment's custom metadata past 4 GiB): said, not hidden.
			fs.s.logger.Error("server: a framed lookup reply does not encode; closing the connection", "error", err)
			return
		}
		if _, err := c.Write(out); err != nil {
			return
		}
	}
}

// hello reads the client's hello within helloTimeout and answers it:
// accepted (with this process's pid) or refused with why, and then false.
func (fs *framedServer) hello(c net.Conn, r *bufio.Reader, buf []byte) bool {
	c.SetReadDeadline(time.Now().Add(helloTimeout)) // a Unix socket's deadline does not fail
	body, err := lookupframe.ReadFrame(r, buf, lookupframe.MaxRequest)
	if err != nil {
		if !errors.Is(err, io.EOF) {
			fs.s.logger.Debug("server: no hello on a framed lookup connection", "error", err)
		}
		return false
	}
	token, err := lookupframe.ParseHello(body)
	if err == nil && len(fs.token) > 0 && subtle.ConstantTimeCompare(token, fs.token) != 1 {
		err = errors.New("a valid token is required")
	}
	if err != nil {
		fs.s.logger.Warn("server: refusing a framed lookup connection", "error", err)
		c.Write(lookupframe.Append(nil, lookupframe.AppendRefuse(nil, err.Error()))) // closed next
		return false
	}
	c.SetReadDeadline(time.Time{}) // as above
	_, err = c.Write(lookupframe.Append(nil, lookupframe.AppendAccept(nil, int64(os.Getpid()))))
	return err == nil
}

// appendReply appends reply as one frame to dst.
func appendReply(dst []byte, reply *rlmmpb.SegmentForOffsetStreamReply) ([]byte, error) {
	dst, start := lookupframe.Begin(dst)
	dst, err := proto.MarshalOptions{}.MarshalAppend(dst, reply)
	if err != nil {
		return nil, err
	}
	return lookupframe.End(dst, start), nil
}

package server

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/rpc/brokerframe"
	"github.com/rlmm-go/rlmm/rpc/rlmmpb"
)

// helloTimeout bounds how long a new framed connection may take to say
// hello before the server closes it.
const helloTimeout = 10 * time.Second

// ServeFramed starts serving the broker's frames (rpc/brokerframe) on
// ep.Listener in the background: every call of the broker plugin, on
// connections each opened for one purpose. Each connection first sends a
// hello, which must carry ep.Token when it is set (compared in constant
// time, as the gRPC endpoint checks its bearer token); then every request
// frame gets its reply, answered on the connection's own goroutine by the
// same code as gRPC's (serveBroker). ep.TLS must be nil: a TLS endpoint is
// served on a listener that already speaks it (tls.NewListener). ServerInfo
// names the last Unix socket served (lookup_socket). Stop closes the
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

// serveConn runs one connection: its hello (read within helloTimeout and
// MaxHello), then serveBroker; a first frame that is not a broker hello is
// refused with why, and the connection closed.
func (fs *framedServer) serveConn(c net.Conn) {
	defer fs.wg.Done()
	defer func() {
		fs.mu.Lock()
		delete(fs.conns, c)
		fs.mu.Unlock()
		c.Close()
	}()
	r := bufio.NewReaderSize(c, 4096)
	c.SetReadDeadline(time.Now().Add(helloTimeout)) // a Unix socket's deadline does not fail
	hello, err := brokerframe.ReadFrame(r, nil, brokerframe.MaxHello)
	if err != nil {
		if !errors.Is(err, io.EOF) {
			fs.s.logger.Debug("server: no hello on a framed connection", "error", err)
		}
		return
	}
	c.SetReadDeadline(time.Time{}) // as above
	if !bytes.HasPrefix(hello, []byte(brokerframe.Magic)) {
		_, _, err := brokerframe.ParseHello(hello, byte(fs.s.cfg.apiVersion()))
		fs.s.logger.Warn("server: refusing a framed connection", "error", err)
		if out, aerr := brokerframe.AppendAnswer(nil, byte(fs.s.cfg.apiVersion()), &rlmmpb.BrokerAnswer{Refused: err.Error()}); aerr == nil {
			c.Write(brokerframe.Append(nil, out)) // closed next
		}
		return
	}
	fs.serveBroker(c, r, hello)
}

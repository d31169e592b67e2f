package server

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/rlmm-go/rlmm/rpc/brokerframe"
	"github.com/rlmm-go/rlmm/rpc/rlmmpb"
)

// helloTimeout bounds how long a new framed connection may take to say
// hello before the server closes it.
const helloTimeout = 10 * time.Second

// Serve starts serving the broker's frames (rpc/brokerframe) on
// ep.Listener in the background: every call of the broker plugin, on
// connections each opened for one purpose. With ep.TLS the listener speaks
// TLS (tls.NewListener; the handshake is bounded as the hello is). Each
// connection first sends a hello, which must carry ep.Token when it is set
// (compared in constant time); then every request frame gets its reply,
// answered on the connection's own goroutine (serveBroker). Its error, if
// it stops for another reason than Stop, is sent to Errors. Stop closes the
// listener and every connection and waits for their goroutines.
func (s *Server) Serve(ep Endpoint) error {
	l := ep.Listener
	if ep.TLS != nil {
		l = tls.NewListener(l, ep.TLS)
	}
	ctx, cancel := context.WithCancel(context.Background())
	fs := &framedServer{s: s, l: l, token: ep.Token, conns: map[net.Conn]struct{}{}, ctx: ctx, cancel: cancel}
	if err := s.admit(ep, func() { s.framed = append(s.framed, fs) }); err != nil {
		cancel()
		return err
	}
	go func() {
		defer s.wg.Done()
		fs.accept()
	}()
	s.logger.Info("server: serving", "address", l.Addr().String(), "network", l.Addr().Network(),
		"tls", ep.TLS != nil, "token", len(ep.Token) > 0)
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
				case fs.s.errs <- fmt.Errorf("server: serving %s: %w", fs.l.Addr(), err):
				default:
				}
				return
			}
			pause = min(max(2*pause, 5*time.Millisecond), time.Second)
			fs.s.logger.Warn("server: accepting a connection failed; trying again", "error", err, "pause", pause)
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
	// Bounds a TLS handshake too (it runs within the first read). A Unix
	// socket's deadline does not fail.
	c.SetReadDeadline(time.Now().Add(helloTimeout))
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

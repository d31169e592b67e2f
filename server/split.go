package server

import (
	"bufio"
	"bytes"
	"net"
	"sync"
	"time"
)

// http2Preface opens every gRPC (HTTP/2) connection; a framed connection
// opens with a 4-byte length, never these bytes.
const http2Preface = "PRI * HTTP/2.0"

// Split serves two protocols on one listener: it accepts l's connections
// and hands each to the first listener it returns when the client opens
// with HTTP/2's preface (gRPC), to the second otherwise (the framed
// socket, rpc/brokerframe). So the broker plugin and a gRPC client reach
// the same socket, each in its own protocol. A connection that sends
// nothing within helloTimeout is closed. Closing either listener closes l
// and ends both; the goroutines end with it.
func Split(l net.Listener) (grpcL, framedL net.Listener) {
	sp := &split{l: l, done: make(chan struct{})}
	g := &splitListener{sp: sp, conns: make(chan net.Conn)}
	f := &splitListener{sp: sp, conns: make(chan net.Conn)}
	sp.wg.Add(1)
	go sp.accept(g, f)
	return g, f
}

type split struct {
	l         net.Listener
	done      chan struct{}
	closeOnce sync.Once
	wg        sync.WaitGroup
}

func (sp *split) close() error {
	var err error
	sp.closeOnce.Do(func() {
		close(sp.done)
		err = sp.l.Close()
	})
	sp.wg.Wait()
	return err
}

func (sp *split) accept(g, f *splitListener) {
	defer sp.wg.Done()
	for {
		c, err := sp.l.Accept()
		if err != nil {
			select {
			case <-sp.done:
				return
			default:
			}
			if ne, ok := err.(interface{ Temporary() bool }); ok && ne.Temporary() {
				time.Sleep(5 * time.Millisecond)
				continue
			}
			return
		}
		sp.wg.Add(1)
		go func() {
			defer sp.wg.Done()
			sp.route(c, g, f)
		}()
	}
}

// route reads the connection's first bytes and hands it on.
func (sp *split) route(c net.Conn, g, f *splitListener) {
	r := bufio.NewReaderSize(c, 4096)
	c.SetReadDeadline(time.Now().Add(helloTimeout))
	head, err := r.Peek(len(http2Preface))
	if err != nil && len(head) < 4 {
		c.Close() // nothing a client of either protocol would send
		return
	}
	c.SetReadDeadline(time.Time{})
	to := f
	if bytes.Equal(head, []byte(http2Preface)) {
		to = g
	}
	select {
	case to.conns <- &peekedConn{Conn: c, r: r}:
	case <-sp.done:
		c.Close()
	}
}

// peekedConn is a connection whose first bytes were read into r.
type peekedConn struct {
	net.Conn
	r *bufio.Reader
}

func (p *peekedConn) Read(b []byte) (int, error) { return p.r.Read(b) }

// splitListener is one protocol's side of a Split.
type splitListener struct {
	sp    *split
	conns chan net.Conn
}

func (s *splitListener) Accept() (net.Conn, error) {
	select {
	case c := <-s.conns:
		return c, nil
	case <-s.sp.done:
		return nil, net.ErrClosed
	}
}

func (s *splitListener) Close() error   { return s.sp.close() }
func (s *splitListener) Addr() net.Addr { return s.sp.l.Addr() }

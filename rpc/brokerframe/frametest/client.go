package frametest

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/rlmm-go/rlmm/rpc/brokerframe"
	"github.com/rlmm-go/rlmm/rpc/rlmmpb"
)

// DefaultTimeout bounds a call whose context has no deadline when the
// Client's Timeout is zero.
const DefaultTimeout = 10 * time.Second

// DialFunc opens one connection to the framed endpoint.
type DialFunc func(context.Context) (net.Conn, error)

// Dialer dials network and addr: over TLS with tc when it is set.
func Dialer(network, addr string, tc *tls.Config) DialFunc {
	return func(ctx context.Context) (net.Conn, error) {
		if tc != nil {
			d := tls.Dialer{Config: tc}
			return d.DialContext(ctx, network, addr)
		}
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
}

// Client is a test's client of a framed endpoint, safe for concurrent use:
// one connection per purpose; a call holds its purpose's connection.
// Errors are returned, never failed on, so a call may run on any
// goroutine.
type Client struct {
	// Timeout bounds a call whose context has no deadline (DefaultTimeout
	// when zero). Set it before the first call.
	Timeout time.Duration

	dial  DialFunc
	token []byte

	mu    sync.Mutex
	conns map[rlmmpb.Purpose]*conn
}

type conn struct {
	mu sync.Mutex
	c  net.Conn // nil until dialled, and after a failure
	r  *bufio.Reader
	id uint64
}

// New is a Client that dials with dial and says token in its hellos; its
// connections are closed at tb's cleanup.
func New(tb testing.TB, dial DialFunc, token []byte) *Client {
	c := &Client{dial: dial, token: token, conns: map[rlmmpb.Purpose]*conn{}}
	tb.Cleanup(c.Close)
	return c
}

// Close closes the Client's connections; a later call opens them again.
func (fc *Client) Close() {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	for _, c := range fc.conns {
		c.mu.Lock()
		if c.c != nil {
			c.c.Close()
			c.c = nil
		}
		c.mu.Unlock()
	}
}

// hello dials and says the broker hello of purpose p: the server's
// answer, or why it refused.
func (fc *Client) hello(ctx context.Context, p rlmmpb.Purpose) (net.Conn, *bufio.Reader, error) {
	c, err := fc.dial(ctx)
	if err != nil {
		return nil, nil, err
	}
	if d, ok := ctx.Deadline(); ok {
		c.SetDeadline(d)
	}
	body, err := brokerframe.AppendHello(nil, brokerframe.Version, &rlmmpb.BrokerHello{Purpose: p, Token: fc.token})
	if err == nil {
		_, err = c.Write(brokerframe.Append(nil, body))
	}
	r := bufio.NewReader(c)
	var answer []byte
	if err == nil {
		answer, err = brokerframe.ReadFrame(r, nil, brokerframe.MaxReply)
	}
	if err == nil {
		_, err = brokerframe.ParseAnswer(answer, brokerframe.Version)
	}
	if err != nil {
		c.Close()
		return nil, nil, err
	}
	return c, r, nil
}

// Call sends req on p's connection (with the next id, and unless it has a
// timeout the time left of ctx, or of Timeout without a deadline) and
// returns its replies: one, or a list's several. A reply's BrokerError is
// returned as an *Error, with the replies.
func (fc *Client) Call(ctx context.Context, p rlmmpb.Purpose, req *rlmmpb.BrokerRequest) ([]*rlmmpb.BrokerReply, error) {
	fc.mu.Lock()
	c := fc.conns[p]
	if c == nil {
		c = &conn{}
		fc.conns[p] = c
	}
	fc.mu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.c == nil {
		nc, r, err := fc.hello(ctx, p)
		if err != nil {
			return nil, err
		}
		c.c, c.r = nc, r
	}
	deadline, ok := ctx.Deadline()
	if !ok {
		timeout := fc.Timeout
		if timeout == 0 {
			timeout = DefaultTimeout
		}
		deadline = time.Now().Add(timeout)
	}
	rs, err := c.roundTrip(deadline, req)
	if err != nil {
		c.c.Close()
		c.c = nil
		return nil, err
	}
	if e := rs[len(rs)-1].GetError(); e != nil {
		return rs, &Error{BrokerError: e}
	}
	return rs, nil
}

func (c *conn) roundTrip(deadline time.Time, req *rlmmpb.BrokerRequest) ([]*rlmmpb.BrokerReply, error) {
	c.id++
	req.Id = c.id
	if req.TimeoutMs == 0 {
		req.TimeoutMs = uint64(max(time.Until(deadline).Milliseconds(), 1))
	}
	c.c.SetDeadline(deadline)
	b, err := proto.Marshal(req)
	if err != nil {
		return nil, err
	}
	if _, err := c.c.Write(brokerframe.Append(nil, b)); err != nil {
		return nil, err
	}
	var out []*rlmmpb.BrokerReply
	for {
		body, err := brokerframe.ReadFrame(c.r, nil, brokerframe.MaxReply)
		if err != nil {
			return nil, err
		}
		r := &rlmmpb.BrokerReply{}
		if err := proto.Unmarshal(body, r); err != nil {
			return nil, err
		}
		if r.GetId() != req.Id {
			return nil, fmt.Errorf("reply id %d, want %d", r.GetId(), req.Id)
		}
		out = append(out, r)
		if !r.GetMore() {
			return out, nil
		}
	}
}

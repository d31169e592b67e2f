package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/rlmm-go/rlmm/rpc/brokerframe"
	"github.com/rlmm-go/rlmm/rpc/rlmmpb"
)

// frameClient is a test's client of rlmm serve's frames (rpc/brokerframe),
// as the broker plugin speaks them: one connection per purpose, opened on
// first use with the broker hello (and the token, when set) and again
// after one fails. Safe for concurrent use; errors are returned.
type frameClient struct {
	network, addr string
	tls           *tls.Config
	token         []byte

	mu    sync.Mutex
	conns map[rlmmpb.Purpose]*frameConn
}

type frameConn struct {
	mu sync.Mutex
	c  net.Conn
	r  *bufio.Reader
	id uint64
}

// brokerError is a failed call's BrokerError as a Go error.
type brokerError struct{ e *rlmmpb.BrokerError }

func (b *brokerError) Error() string { return fmt.Sprintf("%s: %s", b.e.GetKind(), b.e.GetMessage()) }

// errorKind is the kind of err's BrokerError, or ERROR_KIND_UNSPECIFIED.
func errorKind(err error) rlmmpb.ErrorKind {
	var be *brokerError
	if errors.As(err, &be) {
		return be.e.GetKind()
	}
	return rlmmpb.ErrorKind_ERROR_KIND_UNSPECIFIED
}

// rpcClient is a frameClient of the Unix socket, closed at cleanup.
func rpcClient(t *testing.T, socket string) *frameClient {
	return newFrameClient(t, "unix", socket, nil, nil)
}

func newFrameClient(t *testing.T, network, addr string, tc *tls.Config, token []byte) *frameClient {
	fc := &frameClient{network: network, addr: addr, tls: tc, token: token, conns: map[rlmmpb.Purpose]*frameConn{}}
	t.Cleanup(func() {
		fc.mu.Lock()
		defer fc.mu.Unlock()
		for _, c := range fc.conns {
			c.mu.Lock()
			if c.c != nil {
				c.c.Close()
			}
			c.mu.Unlock()
		}
	})
	return fc
}

func (fc *frameClient) dial(ctx context.Context, p rlmmpb.Purpose) (net.Conn, *bufio.Reader, error) {
	var c net.Conn
	var err error
	if fc.tls != nil {
		d := tls.Dialer{Config: fc.tls}
		c, err = d.DialContext(ctx, fc.network, fc.addr)
	} else {
		var d net.Dialer
		c, err = d.DialContext(ctx, fc.network, fc.addr)
	}
	if err != nil {
		return nil, nil, err
	}
	if d, ok := ctx.Deadline(); ok {
		c.SetDeadline(d)
	}
	hello, err := brokerframe.AppendHello(nil, brokerframe.Version, &rlmmpb.BrokerHello{Purpose: p, Token: fc.token})
	if err == nil {
		_, err = c.Write(brokerframe.Append(nil, hello))
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

// call sends req on p's connection, bounded by ctx (10 s without a
// deadline), and returns its replies; a BrokerError is a *brokerError.
func (fc *frameClient) call(ctx context.Context, p rlmmpb.Purpose, req *rlmmpb.BrokerRequest) ([]*rlmmpb.BrokerReply, error) {
	fc.mu.Lock()
	conn := fc.conns[p]
	if conn == nil {
		conn = &frameConn{}
		fc.conns[p] = conn
	}
	fc.mu.Unlock()
	conn.mu.Lock()
	defer conn.mu.Unlock()
	if conn.c == nil {
		c, r, err := fc.dial(ctx, p)
		if err != nil {
			return nil, err
		}
		conn.c, conn.r = c, r
	}
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(10 * time.Second)
	}
	conn.id++
	req.Id = conn.id
	req.TimeoutMs = uint64(max(time.Until(deadline).Milliseconds(), 1))
	rs, err := conn.roundTrip(deadline, req)
	if err != nil {
		conn.c.Close()
		conn.c = nil
		return nil, err
	}
	if e := rs[len(rs)-1].GetError(); e != nil {
		return rs, &brokerError{e}
	}
	return rs, nil
}

func (conn *frameConn) roundTrip(deadline time.Time, req *rlmmpb.BrokerRequest) ([]*rlmmpb.BrokerReply, error) {
	conn.c.SetDeadline(deadline)
	b, err := proto.Marshal(req)
	if err != nil {
		return nil, err
	}
	if _, err := conn.c.Write(brokerframe.Append(nil, b)); err != nil {
		return nil, err
	}
	var out []*rlmmpb.BrokerReply
	for {
		body, err := brokerframe.ReadFrame(conn.r, nil, brokerframe.MaxReply)
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

func (fc *frameClient) done(ctx context.Context, p rlmmpb.Purpose, req *rlmmpb.BrokerRequest) (*rlmmpb.MutationReply, error) {
	rs, err := fc.call(ctx, p, req)
	if err != nil {
		return nil, err
	}
	return rs[0].GetDone(), nil
}

func (fc *frameClient) AddSegment(ctx context.Context, q *rlmmpb.AddSegmentRequest) (*rlmmpb.MutationReply, error) {
	return fc.done(ctx, rlmmpb.Purpose_PURPOSE_MUTATE, &rlmmpb.BrokerRequest{Call: &rlmmpb.BrokerRequest_AddSegment{AddSegment: q}})
}

func (fc *frameClient) UpdateSegment(ctx context.Context, q *rlmmpb.UpdateSegmentRequest) (*rlmmpb.MutationReply, error) {
	return fc.done(ctx, rlmmpb.Purpose_PURPOSE_MUTATE, &rlmmpb.BrokerRequest{Call: &rlmmpb.BrokerRequest_UpdateSegment{UpdateSegment: q}})
}

func (fc *frameClient) OnPartitionLeadershipChanges(ctx context.Context, q *rlmmpb.LeadershipChangesRequest) (*rlmmpb.MutationReply, error) {
	return fc.done(ctx, rlmmpb.Purpose_PURPOSE_ASSIGN, &rlmmpb.BrokerRequest{Call: &rlmmpb.BrokerRequest_LeadershipChanges{LeadershipChanges: q}})
}

func (fc *frameClient) SegmentForOffset(ctx context.Context, q *rlmmpb.SegmentForOffsetRequest) (*rlmmpb.SegmentReply, error) {
	rs, err := fc.call(ctx, rlmmpb.Purpose_PURPOSE_LOOKUP, &rlmmpb.BrokerRequest{Call: &rlmmpb.BrokerRequest_SegmentForOffset{SegmentForOffset: q}})
	if err != nil {
		return nil, err
	}
	return rs[0].GetSegment(), nil
}

func (fc *frameClient) ServerInfo(ctx context.Context) (*rlmmpb.ServerInfoReply, error) {
	rs, err := fc.call(ctx, rlmmpb.Purpose_PURPOSE_READ, &rlmmpb.BrokerRequest{Call: &rlmmpb.BrokerRequest_ServerInfo{ServerInfo: &rlmmpb.ServerInfoRequest{}}})
	if err != nil {
		return nil, err
	}
	return rs[0].GetServerInfo(), nil
}

// isReady says whether reads of ptp are served: a lookup that is not
// refused NOT_READY.
func (fc *frameClient) isReady(ctx context.Context, ptp *rlmmpb.TopicIdPartition) (bool, error) {
	_, err := fc.SegmentForOffset(ctx, &rlmmpb.SegmentForOffsetRequest{TopicIdPartition: ptp})
	if errorKind(err) == rlmmpb.ErrorKind_NOT_READY {
		return false, nil
	}
	return err == nil, err
}

func (fc *frameClient) OnStopPartitions(ctx context.Context, q *rlmmpb.StopPartitionsRequest) (*rlmmpb.MutationReply, error) {
	return fc.done(ctx, rlmmpb.Purpose_PURPOSE_ASSIGN, &rlmmpb.BrokerRequest{Call: &rlmmpb.BrokerRequest_StopPartitions{StopPartitions: q}})
}

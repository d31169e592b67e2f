package main

import (
	"bufio"
	"context"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/rlmm-go/rlmm/rpc/brokerframe"
	"github.com/rlmm-go/rlmm/rpc/rlmmpb"
	"github.com/rlmm-go/rlmm/server"
)

// TestForwardHoldsAssignmentChanges: through the seam, a leadership change
// reaches the server after the hold and is acknowledged, a read is not
// held, and the hello's answer names this process.
func TestForwardHoldsAssignmentChanges(t *testing.T) {
	dir, err := os.MkdirTemp("", "assigndelay-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	real := filepath.Join(dir, "real.sock")
	sl, err := server.ListenUnix(ctx, real)
	if err != nil {
		t.Fatal(err)
	}
	srv := server.New(server.Config{BrokerID: 1})
	if err := srv.Serve(server.Endpoint{Listener: sl}); err != nil {
		t.Fatal(err)
	}
	defer srv.Stop(ctx)
	l, err := net.Listen("unix", filepath.Join(dir, "p.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	const hold = 300 * time.Millisecond
	go accept(slog.New(slog.DiscardHandler), l, real, hold)

	call := func(p rlmmpb.Purpose, req *rlmmpb.BrokerRequest) (*rlmmpb.BrokerReply, time.Duration) {
		t.Helper()
		c, err := net.Dial("unix", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		r := bufio.NewReader(c)
		hello, _ := brokerframe.AppendHello(nil, brokerframe.Version, &rlmmpb.BrokerHello{Purpose: p})
		c.Write(brokerframe.Append(nil, hello))
		answer, err := brokerframe.ReadFrame(r, nil, brokerframe.MaxReply)
		if err != nil {
			t.Fatal(err)
		}
		info, err := brokerframe.ParseAnswer(answer, brokerframe.Version)
		if err != nil || info.GetPid() != int64(os.Getpid()) || info.GetBrokerId() != 1 {
			t.Fatalf("hello answered %v %v, want broker 1's server naming pid %d", info, err, os.Getpid())
		}
		req.Id, req.TimeoutMs = 1, 10_000
		b, _ := proto.Marshal(req)
		start := time.Now()
		c.Write(brokerframe.Append(nil, b))
		body, err := brokerframe.ReadFrame(r, nil, brokerframe.MaxReply)
		if err != nil {
			t.Fatal(err)
		}
		var reply rlmmpb.BrokerReply
		if err := proto.Unmarshal(body, &reply); err != nil {
			t.Fatal(err)
		}
		return &reply, time.Since(start)
	}
	tp := &rlmmpb.TopicIdPartition{TopicId: &rlmmpb.Uuid{MostSignificantBits: 1, LeastSignificantBits: 2}, Topic: "t"}
	reply, took := call(rlmmpb.Purpose_PURPOSE_ASSIGN, &rlmmpb.BrokerRequest{Call: &rlmmpb.BrokerRequest_LeadershipChanges{
		LeadershipChanges: &rlmmpb.LeadershipChangesRequest{Leaders: []*rlmmpb.TopicIdPartition{tp}}}})
	if reply.GetDone() == nil || took < hold {
		t.Fatalf("leadership change: %v after %v, want it acknowledged after at least %v", reply, took, hold)
	}
	reply, took = call(rlmmpb.Purpose_PURPOSE_READ, &rlmmpb.BrokerRequest{Call: &rlmmpb.BrokerRequest_ServerInfo{ServerInfo: &rlmmpb.ServerInfoRequest{}}})
	if reply.GetServerInfo().GetPid() != int64(os.Getpid()) || took >= hold {
		t.Fatalf("ServerInfo: %v after %v, want this pid, not held", reply, took)
	}
}

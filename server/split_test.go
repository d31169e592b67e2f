package server

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/rlmm-go/rlmm/rpc/rlmmpb"
)

// TestSplit: one socket answers a gRPC client and a broker-frame client,
// each in its own protocol, and stops with the server.
func TestSplit(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	path := filepath.Join(shortDir(t), "both.sock")
	l, err := ListenUnix(testCtx(t), path)
	if err != nil {
		t.Fatal(err)
	}
	g, fr := Split(l)
	if err := f.srv.Serve(Endpoint{Listener: g}); err != nil {
		t.Fatal(err)
	}
	if err := f.srv.ServeFramed(Endpoint{Listener: fr}); err != nil {
		t.Fatal(err)
	}
	c := rlmmpb.NewRemoteLogMetadataClient(dialUnix(t, path))
	if info, err := c.ServerInfo(context.Background(), &rlmmpb.ServerInfoRequest{}); err != nil || info.GetBrokerId() != 7 {
		t.Fatalf("gRPC on the split socket: %v, %v", info, err)
	}
	bc := brokerConnFor(t, path, rlmmpb.Purpose_PURPOSE_READ)
	if r := bc.call(&rlmmpb.BrokerRequest{Call: &rlmmpb.BrokerRequest_ServerInfo{ServerInfo: &rlmmpb.ServerInfoRequest{}}}); r[0].GetServerInfo().GetBrokerId() != 7 {
		t.Fatalf("frames on the split socket: %v", r[0])
	}
}

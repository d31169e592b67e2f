package server

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/rlmm-go/rlmm/rpc/lookupframe"
	"github.com/rlmm-go/rlmm/rpc/rlmmpb"
)

// TestFramedAnswersAsUnary: every request answered on the framed socket
// equals the unary call's answer on the same state, including requests
// whose bytes do not decode, which get INVALID_ARGUMENT alone while the
// connection goes on.
func TestFramedAnswersAsUnary(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	starting := newFixture(t, fixtureOpts{noManager: true})
	tp := newTP()
	f.assign(t, tp)
	for i := range 3 {
		f.addAndFinish(t, segment(tp, int64(i)*100))
	}
	ptp := tpToProto(tp)
	elsewhere := tpToProto(f.tpElsewhere(tp))
	tests := []struct {
		name string
		fx   *fixture
		q    *rlmmpb.SegmentForOffsetRequest
		want rlmmpb.ErrorKind // -1: a reply
		hit  bool
	}{
		{"hit", f, &rlmmpb.SegmentForOffsetRequest{TopicIdPartition: ptp, LeaderEpoch: 0, Offset: 20}, -1, true},
		{"hit epoch 1", f, &rlmmpb.SegmentForOffsetRequest{TopicIdPartition: ptp, LeaderEpoch: 1, Offset: 260}, -1, true},
		{"past the end", f, &rlmmpb.SegmentForOffsetRequest{TopicIdPartition: ptp, LeaderEpoch: 1, Offset: 300}, -1, false},
		{"partition not held", f, &rlmmpb.SegmentForOffsetRequest{TopicIdPartition: elsewhere, Offset: 20}, rlmmpb.ErrorKind_NOT_ASSIGNED, false},
		{"no partition", f, &rlmmpb.SegmentForOffsetRequest{Offset: 20}, rlmmpb.ErrorKind_INVALID_ARGUMENT, false},
		{"no request at all", f, nil, rlmmpb.ErrorKind_INVALID_ARGUMENT, false},
		{"hit after errors", f, &rlmmpb.SegmentForOffsetRequest{TopicIdPartition: ptp, LeaderEpoch: 1, Offset: 160}, -1, true},
		{"server starting", starting, &rlmmpb.SegmentForOffsetRequest{TopicIdPartition: ptp, Offset: 20}, rlmmpb.ErrorKind_NOT_READY, false},
	}
	conns := map[*fixture]*framedClient{}
	for _, fx := range []*fixture{f, starting} {
		c, err := dialFramed(t, fx.serveFramed(t, nil), nil)
		if err != nil {
			t.Fatalf("hello refused: %v", err)
		}
		if c.pid != int64(os.Getpid()) {
			t.Fatalf("hello answered pid %d, want %d", c.pid, os.Getpid())
		}
		conns[fx] = c
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			want := unaryOutcome(testCtx(t), tc.fx.client, tc.q)
			got := conns[tc.fx].lookup(uint64(2000+i), tc.q)
			if !proto.Equal(got, want) {
				t.Fatalf("framed answered %v\nunary answered %v", got, want)
			}
			if k := errorKind(t, got); k != tc.want {
				t.Fatalf("error kind %v, want %v (reply %v)", k, tc.want, got)
			}
			if got.GetReply().GetFound() != tc.hit {
				t.Fatalf("found=%v, want %v", got.GetReply().GetFound(), tc.hit)
			}
		})
	}
	t.Run("undecodable", func(t *testing.T) {
		c := conns[f]
		for _, raw := range [][]byte{{0x08, 0x2a, 0xff}, []byte("not protobuf at all")} {
			c.write(raw)
			r, err := c.read()
			if err != nil {
				t.Fatal(err)
			}
			if k := errorKind(t, r); k != rlmmpb.ErrorKind_INVALID_ARGUMENT || !strings.Contains(r.GetError().GetMessage(), "does not decode") {
				t.Fatalf("undecodable %x: %v, want INVALID_ARGUMENT saying it does not decode", raw, r)
			}
		}
		if r := c.lookup(9, tests[0].q); !r.GetReply().GetFound() {
			t.Fatalf("after undecodable requests: %v, want the hit", r)
		}
	})
}

// TestFramedServerInfoNamesTheSocket: once the framed socket is served,
// ServerInfo states its path (the plugin learns it there).
func TestFramedServerInfoNamesTheSocket(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	info, err := f.client.ServerInfo(testCtx(t), &rlmmpb.ServerInfoRequest{})
	if err != nil || info.LookupSocket != "" {
		t.Fatalf("before ServeFramed: %v, %v; want no lookup socket", info, err)
	}
	path := f.serveFramed(t, nil)
	info, err = f.client.ServerInfo(testCtx(t), &rlmmpb.ServerInfoRequest{})
	if err != nil || info.LookupSocket != path {
		t.Fatalf("after ServeFramed: lookup_socket %q (%v), want %q", info.GetLookupSocket(), err, path)
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("the framed socket's mode: %v, %v; want 0600", st.Mode(), err)
	}
}

// TestFramedHello: the first frame must be a hello of this version, with
// the endpoint's token when it has one; anything else is refused, saying
// why, and the connection closed.
func TestFramedHello(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	open := f.serveFramed(t, nil)
	guarded := f.serveFramed(t, []byte("s3cret"))
	tests := []struct {
		name    string
		path    string
		body    []byte
		wantErr string // "" accepted
	}{
		{"no token needed", open, lookupframe.AppendHello(nil, lookupframe.Lookups, nil), ""},
		{"right token", guarded, lookupframe.AppendHello(nil, lookupframe.Lookups, []byte("s3cret")), ""},
		{"mutations, right token", guarded, lookupframe.AppendHello(nil, lookupframe.Mutations, []byte("s3cret")), ""},
		{"no token", guarded, lookupframe.AppendHello(nil, lookupframe.Lookups, nil), "a valid token is required"},
		{"mutations, no token", guarded, lookupframe.AppendHello(nil, lookupframe.Mutations, nil), "a valid token is required"},
		{"wrong token", guarded, lookupframe.AppendHello(nil, lookupframe.Lookups, []byte("guess")), "a valid token is required"},
		{"not a hello", open, []byte("\x08\x01"), "not a lookup or mutation hello"},
		{"other version", open, append([]byte(lookupframe.MagicLookups), lookupframe.Version+1), "version 2"},
		{"mutations, other version", open, append([]byte(lookupframe.MagicMutations), lookupframe.Version+1), "version 2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := rawHello(t, tc.path, tc.body)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("answer %v, want a refusal saying %q", err, tc.wantErr)
			}
			if _, err := c.read(); !errors.Is(err, io.EOF) {
				t.Fatalf("after the refusal: %v, want the connection closed (EOF)", err)
			}
		})
	}
}

// rawHello connects and sends body as the first frame.
func rawHello(t *testing.T, path string, body []byte) (*framedClient, error) {
	t.Helper()
	c, err := dialFramedNoHello(t, path)
	if err != nil {
		t.Fatal(err)
	}
	c.write(body)
	ans, err := lookupframe.ReadFrame(c.r, nil, lookupframe.MaxReply)
	if err != nil {
		t.Fatalf("reading the hello's answer: %v", err)
	}
	kind := lookupframe.Lookups
	if bytes.HasPrefix(body, []byte(lookupframe.MagicMutations)) {
		kind = lookupframe.Mutations // answered in the kind of its hello
	}
	c.pid, err = lookupframe.ParseAnswer(kind, ans)
	return c, err
}

// TestFramedTooLargeFrame: a request frame over the bound is not read: it
// gets an INVALID_ARGUMENT reply naming the sizes, and the connection is
// closed (it cannot be resynchronized).
func TestFramedTooLargeFrame(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	c, err := dialFramed(t, f.serveFramed(t, nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	head := binary.BigEndian.AppendUint32(nil, lookupframe.MaxRequest+1)
	if _, err := c.conn.Write(head); err != nil {
		t.Fatal(err)
	}
	r, err := c.read()
	if err != nil {
		t.Fatal(err)
	}
	if k := errorKind(t, r); k != rlmmpb.ErrorKind_INVALID_ARGUMENT || !strings.Contains(r.GetError().GetMessage(), "more than the") {
		t.Fatalf("too large a frame: %v, want INVALID_ARGUMENT naming the bound", r)
	}
	if _, err := c.read(); !errors.Is(err, io.EOF) {
		t.Fatalf("after a too-large frame: %v, want the connection closed", err)
	}
}

// TestStopClosesFramedConnections: Stop closes open framed connections (an
// idle one, one mid-frame, one before its hello) instead of waiting for
// their clients, and leaves no goroutine behind (TestMain's goleak).
func TestStopClosesFramedConnections(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	path := f.serveFramed(t, nil)
	idle, err := dialFramed(t, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r := idle.lookup(1, &rlmmpb.SegmentForOffsetRequest{Offset: 1}); r.GetError() == nil {
		t.Fatalf("a request without a partition: %v, want an error reply", r)
	}
	mid, err := dialFramed(t, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mid.conn.Write([]byte{0, 0, 0, 9, 1}); err != nil {
		t.Fatal(err)
	}
	silent, err := dialFramedNoHello(t, path)
	if err != nil {
		t.Fatal(err)
	}
	f.srv.Stop(testCtx(t))
	for name, c := range map[string]*framedClient{"idle": idle, "mid-frame": mid, "no hello": silent} {
		// A close with the client's bytes unread resets the connection.
		if _, err := c.read(); !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, syscall.ECONNRESET) {
			t.Fatalf("%s connection after Stop: %v, want it closed", name, err)
		}
	}
	if err := f.srv.ServeFramed(Endpoint{Listener: mustListen(t)}); err == nil {
		t.Fatal("ServeFramed after Stop succeeded")
	}
}

// mustListen is a fresh Unix listener (closed at cleanup).
func mustListen(t *testing.T) *net.UnixListener {
	t.Helper()
	l, err := ListenUnix(testCtx(t), shortDir(t)+"/x.sock")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

package server

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/rpc/brokerframe"
	"github.com/rlmm-go/rlmm/rpc/rlmmpb"
)

// brokerClient is a test's connection opened with the broker hello.
type brokerClient struct {
	t    testing.TB
	conn net.Conn
	r    *bufio.Reader
	info *rlmmpb.ServerInfoReply
	id   uint64
}

// dialBroker connects to the framed socket at path and says the broker
// hello of version v; the answer's error (a refusal) is returned, not
// failed on.
func dialBroker(t testing.TB, path string, v byte, h *rlmmpb.BrokerHello) (*brokerClient, error) {
	t.Helper()
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(testTimeout))
	bc := &brokerClient{t: t, conn: c, r: bufio.NewReader(c)}
	body, err := brokerframe.AppendHello(nil, v, h)
	if err != nil {
		t.Fatal(err)
	}
	bc.write(body)
	answer, err := brokerframe.ReadFrame(bc.r, nil, brokerframe.MaxReply)
	if err != nil {
		t.Fatalf("reading the hello's answer: %v", err)
	}
	bc.info, err = brokerframe.ParseAnswer(answer, v)
	return bc, err
}

// brokerConnFor is a connection of purpose p that must be accepted.
func brokerConnFor(t testing.TB, path string, p rlmmpb.Purpose) *brokerClient {
	t.Helper()
	bc, err := dialBroker(t, path, brokerframe.Version, &rlmmpb.BrokerHello{Purpose: p})
	if err != nil {
		t.Fatalf("%s hello refused: %v", p, err)
	}
	return bc
}

func (bc *brokerClient) write(body []byte) {
	bc.t.Helper()
	if _, err := bc.conn.Write(brokerframe.Append(nil, body)); err != nil {
		bc.t.Fatalf("writing a frame: %v", err)
	}
}

func (bc *brokerClient) readReply() *rlmmpb.BrokerReply {
	bc.t.Helper()
	body, err := brokerframe.ReadFrame(bc.r, nil, brokerframe.MaxReply)
	if err != nil {
		bc.t.Fatalf("reading a reply: %v", err)
	}
	r := &rlmmpb.BrokerReply{}
	if err := proto.Unmarshal(body, r); err != nil {
		bc.t.Fatalf("a reply that does not decode: %v", err)
	}
	return r
}

// call sends req (with the next id and a timeout) and returns its replies:
// one, or a list's several, checking every id.
func (bc *brokerClient) call(req *rlmmpb.BrokerRequest) []*rlmmpb.BrokerReply {
	bc.t.Helper()
	bc.id++
	req.Id = bc.id
	if req.TimeoutMs == 0 {
		req.TimeoutMs = 10_000
	}
	b, err := proto.Marshal(req)
	if err != nil {
		bc.t.Fatal(err)
	}
	bc.write(b)
	var out []*rlmmpb.BrokerReply
	for {
		r := bc.readReply()
		if r.Id != bc.id {
			bc.t.Fatalf("reply id %d, want %d", r.Id, bc.id)
		}
		out = append(out, r)
		if !r.More {
			return out
		}
	}
}

func lookupReq(q *rlmmpb.SegmentForOffsetRequest) *rlmmpb.BrokerRequest {
	return &rlmmpb.BrokerRequest{Call: &rlmmpb.BrokerRequest_SegmentForOffset{SegmentForOffset: q}}
}

// TestBrokerHello: a hello is accepted with the server's description, or
// refused naming why: another version (naming both), no or a wrong token,
// another broker's id, no purpose.
func TestBrokerHello(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	token := []byte("s3cret")
	path := f.serveFramed(t, token)
	tests := []struct {
		name    string
		v       byte
		hello   *rlmmpb.BrokerHello
		wantErr string
	}{
		{"accepted", brokerframe.Version, &rlmmpb.BrokerHello{Purpose: rlmmpb.Purpose_PURPOSE_READ, Token: token, BrokerId: proto.Int32(7)}, ""},
		{"no broker id", brokerframe.Version, &rlmmpb.BrokerHello{Purpose: rlmmpb.Purpose_PURPOSE_LOOKUP, Token: token}, ""},
		{"other version", brokerframe.Version + 1, &rlmmpb.BrokerHello{Purpose: rlmmpb.Purpose_PURPOSE_READ, Token: token},
			"client speaks version 2 of the broker frames; this server speaks version 1"},
		{"no token", brokerframe.Version, &rlmmpb.BrokerHello{Purpose: rlmmpb.Purpose_PURPOSE_READ}, "a valid token is required"},
		{"wrong token", brokerframe.Version, &rlmmpb.BrokerHello{Purpose: rlmmpb.Purpose_PURPOSE_READ, Token: []byte("x")}, "a valid token is required"},
		{"another broker", brokerframe.Version, &rlmmpb.BrokerHello{Purpose: rlmmpb.Purpose_PURPOSE_READ, Token: token, BrokerId: proto.Int32(8)},
			"broker 7's, not broker 8's"},
		{"no purpose", brokerframe.Version, &rlmmpb.BrokerHello{Token: token}, "purpose 0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			bc, err := dialBroker(t, path, tc.v, tc.hello)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if bc.info.GetBrokerId() != 7 || bc.info.GetApiVersion() != APIVersion || bc.info.GetPid() == 0 || bc.info.GetVersion() != "test" {
					t.Fatalf("accepted by %v, want broker 7's server of API version %d", bc.info, APIVersion)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("hello error %v, want one saying %q", err, tc.wantErr)
			}
		})
	}
}

// TestBrokerHelloOfAnotherVersion: a server built for another version
// refuses this client's hello naming both versions.
func TestBrokerHelloOfAnotherVersion(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	f.srv.cfg.testAPIVersion = 9
	_, err := dialBroker(t, f.serveFramed(t, nil), brokerframe.Version, &rlmmpb.BrokerHello{Purpose: rlmmpb.Purpose_PURPOSE_READ})
	if err == nil || !strings.Contains(err.Error(), "client speaks version 1 of the broker frames; this server speaks version 9") {
		t.Fatalf("hello error %v, want a refusal naming versions 1 and 9", err)
	}
}

// TestBrokerCalls: every call of Kafka's RLMM on its connection's purpose
// answers as the manager does, and a failure comes as one BrokerError
// with the rlmm error's kind.
func TestBrokerCalls(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	tp, unassigned := newTP(), newTP()
	path := f.serveFramed(t, nil)
	assign := brokerConnFor(t, path, rlmmpb.Purpose_PURPOSE_ASSIGN)
	r := assign.call(&rlmmpb.BrokerRequest{Call: &rlmmpb.BrokerRequest_LeadershipChanges{
		LeadershipChanges: &rlmmpb.LeadershipChangesRequest{Leaders: []*rlmmpb.TopicIdPartition{tpToProto(tp)}}}})
	if r[0].GetDone() == nil {
		t.Fatalf("leadership change: %v", r[0])
	}
	f.assign(t, tp) // waits for the readiness

	mutate := brokerConnFor(t, path, rlmmpb.Purpose_PURPOSE_MUTATE)
	segs := f.segmentsOver(t, mutate, tp, 3)

	lookup := brokerConnFor(t, path, rlmmpb.Purpose_PURPOSE_LOOKUP)
	read := brokerConnFor(t, path, rlmmpb.Purpose_PURPOSE_READ)
	tests := []struct {
		name  string
		conn  *brokerClient
		req   *rlmmpb.BrokerRequest
		check func(t *testing.T, rs []*rlmmpb.BrokerReply)
	}{
		{"lookup hit", lookup, lookupReq(&rlmmpb.SegmentForOffsetRequest{TopicIdPartition: tpToProto(tp), LeaderEpoch: 1, Offset: 160}),
			func(t *testing.T, rs []*rlmmpb.BrokerReply) {
				if !proto.Equal(rs[0].GetSegment().GetSegment(), segs[1]) {
					t.Fatalf("lookup found %v, want %v", rs[0].GetSegment(), segs[1])
				}
			}},
		{"lookup miss", lookup, lookupReq(&rlmmpb.SegmentForOffsetRequest{TopicIdPartition: tpToProto(tp), LeaderEpoch: 1, Offset: 10_000}),
			func(t *testing.T, rs []*rlmmpb.BrokerReply) {
				if rs[0].GetSegment() == nil || rs[0].GetSegment().GetFound() {
					t.Fatalf("lookup of a missing offset: %v", rs[0])
				}
			}},
		{"lookup not assigned", lookup, lookupReq(&rlmmpb.SegmentForOffsetRequest{TopicIdPartition: tpToProto(f.tpElsewhere(tp))}),
			wantKind(rlmmpb.ErrorKind_NOT_ASSIGNED)},
		{"lookup without partition", lookup, lookupReq(&rlmmpb.SegmentForOffsetRequest{}), wantKind(rlmmpb.ErrorKind_INVALID_ARGUMENT)},
		{"lookup on the read connection", read, lookupReq(&rlmmpb.SegmentForOffsetRequest{TopicIdPartition: tpToProto(tp)}),
			wantKind(rlmmpb.ErrorKind_INVALID_ARGUMENT)},
		{"highest offset", read, &rlmmpb.BrokerRequest{Call: &rlmmpb.BrokerRequest_HighestOffsetForEpoch{
			HighestOffsetForEpoch: &rlmmpb.HighestOffsetForEpochRequest{TopicIdPartition: tpToProto(tp), LeaderEpoch: 1}}},
			func(t *testing.T, rs []*rlmmpb.BrokerReply) {
				if h := rs[0].GetHighestOffset(); !h.GetFound() || h.GetOffset() != 299 {
					t.Fatalf("highest offset of epoch 1: %v, want 299", rs[0])
				}
			}},
		{"remote log size", read, &rlmmpb.BrokerRequest{Call: &rlmmpb.BrokerRequest_RemoteLogSize{
			RemoteLogSize: &rlmmpb.RemoteLogSizeRequest{TopicIdPartition: tpToProto(tp), LeaderEpoch: 1}}},
			func(t *testing.T, rs []*rlmmpb.BrokerReply) {
				if got := rs[0].GetRemoteLogSize().GetSizeInBytes(); got != 3*1024 {
					t.Fatalf("remote log size %d, want %d", got, 3*1024)
				}
			}},
		{"next with txn index", read, &rlmmpb.BrokerRequest{Call: &rlmmpb.BrokerRequest_NextSegmentWithTxnIndex{
			NextSegmentWithTxnIndex: &rlmmpb.NextSegmentWithTxnIndexRequest{TopicIdPartition: tpToProto(tp), LeaderEpoch: 1, Offset: 0}}},
			func(t *testing.T, rs []*rlmmpb.BrokerReply) {
				if rs[0].GetSegment() == nil {
					t.Fatalf("next segment with a txn index: %v", rs[0])
				}
			}},
		{"list", read, &rlmmpb.BrokerRequest{Call: &rlmmpb.BrokerRequest_ListSegments{
			ListSegments: &rlmmpb.ListSegmentsRequest{TopicIdPartition: tpToProto(tp)}}},
			func(t *testing.T, rs []*rlmmpb.BrokerReply) {
				var got []*rlmmpb.SegmentMetadata
				for _, r := range rs {
					got = append(got, r.GetSegments().GetSegments()...)
				}
				if len(got) != len(segs) {
					t.Fatalf("listed %d segments, want %d", len(got), len(segs))
				}
				for i := range got {
					if !proto.Equal(got[i], segs[i]) {
						t.Fatalf("segment %d listed as %v, want %v", i, got[i], segs[i])
					}
				}
			}},
		{"list of an unassigned partition", read, &rlmmpb.BrokerRequest{Call: &rlmmpb.BrokerRequest_ListSegments{
			ListSegments: &rlmmpb.ListSegmentsRequest{TopicIdPartition: tpToProto(f.tpElsewhere(unassigned))}}},
			wantKind(rlmmpb.ErrorKind_NOT_ASSIGNED)},
		{"server info", read, &rlmmpb.BrokerRequest{Call: &rlmmpb.BrokerRequest_ServerInfo{ServerInfo: &rlmmpb.ServerInfoRequest{}}},
			func(t *testing.T, rs []*rlmmpb.BrokerReply) {
				if rs[0].GetServerInfo().GetBrokerId() != 7 {
					t.Fatalf("server info: %v", rs[0])
				}
			}},
		{"mutation without timeout", mutate, &rlmmpb.BrokerRequest{TimeoutMs: uint64(2 * maxCallTimeout.Milliseconds()),
			Call: &rlmmpb.BrokerRequest_AddSegment{AddSegment: &rlmmpb.AddSegmentRequest{}}}, wantKind(rlmmpb.ErrorKind_INVALID_ARGUMENT)},
		{"finish of an unknown segment", mutate, &rlmmpb.BrokerRequest{Call: &rlmmpb.BrokerRequest_UpdateSegment{
			UpdateSegment: finish(segment(tp, 10_000))}}, wantKind(rlmmpb.ErrorKind_UNKNOWN_SEGMENT)},
		{"stop", assign, &rlmmpb.BrokerRequest{Call: &rlmmpb.BrokerRequest_StopPartitions{
			StopPartitions: &rlmmpb.StopPartitionsRequest{Partitions: []*rlmmpb.TopicIdPartition{tpToProto(unassigned)}}}},
			func(t *testing.T, rs []*rlmmpb.BrokerReply) {
				if rs[0].GetDone() == nil {
					t.Fatalf("stop: %v", rs[0])
				}
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.check(t, tc.conn.call(tc.req))
		})
	}
}

// segmentsOver adds and finishes n segments of tp over the mutation
// connection c, back to back from offset 0, and returns them as the server
// lists them.
func (f *fixture) segmentsOver(t *testing.T, c *brokerClient, tp rlmm.TopicIDPartition, n int) []*rlmmpb.SegmentMetadata {
	t.Helper()
	var out []*rlmmpb.SegmentMetadata
	for i := range n {
		md := segment(tp, int64(i)*100)
		for _, req := range []*rlmmpb.BrokerRequest{
			{Call: &rlmmpb.BrokerRequest_AddSegment{AddSegment: &rlmmpb.AddSegmentRequest{Segment: segmentToProto(&md)}}},
			{Call: &rlmmpb.BrokerRequest_UpdateSegment{UpdateSegment: finish(md)}},
		} {
			if r := c.call(req); r[0].GetDone() == nil {
				t.Fatalf("mutation of segment %d: %v", i, r[0])
			}
		}
		p := segmentToProto(&md)
		p.State = rlmmpb.SegmentState_COPY_SEGMENT_FINISHED
		p.EventTimestampMs++
		p.CustomMetadata = nil // the finish carries none
		out = append(out, p)
	}
	return out
}

// wantKind checks that the one reply is the error of kind k.
func wantKind(k rlmmpb.ErrorKind) func(t *testing.T, rs []*rlmmpb.BrokerReply) {
	return func(t *testing.T, rs []*rlmmpb.BrokerReply) {
		t.Helper()
		if len(rs) != 1 || rs[0].GetError().GetKind() != k || rs[0].GetError().GetMessage() == "" {
			t.Fatalf("replies %v, want one error of kind %s with its text", rs, k)
		}
	}
}

// TestBrokerRequestThatDoesNotDecode: a request that does not decode is
// answered INVALID_ARGUMENT with the id read from its bytes, and the
// connection goes on.
func TestBrokerRequestThatDoesNotDecode(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	c := brokerConnFor(t, f.serveFramed(t, nil), rlmmpb.Purpose_PURPOSE_READ)
	c.write([]byte{0x08, 0x05, 0xff}) // id 5, then a byte that is no field
	if r := c.readReply(); r.GetId() != 5 || r.GetError().GetKind() != rlmmpb.ErrorKind_INVALID_ARGUMENT {
		t.Fatalf("reply to an undecodable request: %v", r)
	}
	if r := c.call(&rlmmpb.BrokerRequest{Call: &rlmmpb.BrokerRequest_ServerInfo{ServerInfo: &rlmmpb.ServerInfoRequest{}}}); r[0].GetServerInfo() == nil {
		t.Fatalf("the connection after it: %v", r[0])
	}
}

// TestBrokerWatch: a watch connection gets the readiness at once and again
// after its partition becomes ready; closing the server ends it.
func TestBrokerWatch(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	path := f.serveFramed(t, nil)
	w := brokerConnFor(t, path, rlmmpb.Purpose_PURPOSE_WATCH)
	readPush := func() *rlmmpb.ReadinessUpdate {
		t.Helper()
		body, err := brokerframe.ReadFrame(w.r, nil, brokerframe.MaxReply)
		if err != nil {
			t.Fatalf("reading a readiness push: %v", err)
		}
		u := &rlmmpb.ReadinessUpdate{}
		if err := proto.Unmarshal(body, u); err != nil {
			t.Fatal(err)
		}
		return u
	}
	if u := readPush(); len(u.GetPartitions()) != 0 {
		t.Fatalf("first push %v, want no partition", u)
	}
	tp := newTP()
	f.assign(t, tp)
	for {
		u := readPush()
		if len(u.GetPartitions()) == 1 && u.GetPartitions()[0].GetReady() {
			break
		}
	}
	f.srv.Stop(testCtx(t))
	if _, err := brokerframe.ReadFrame(w.r, nil, brokerframe.MaxReply); err == nil {
		t.Fatal("the watch goes on after the server stopped")
	}
}

// TestBrokerTooLargeFrame: a request frame over the bound is not read: it
// gets an INVALID_ARGUMENT reply naming the sizes, and the connection is
// closed (it cannot be resynchronized).
func TestBrokerTooLargeFrame(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	c := brokerConnFor(t, f.serveFramed(t, nil), rlmmpb.Purpose_PURPOSE_READ)
	if _, err := c.conn.Write(binary.BigEndian.AppendUint32(nil, brokerframe.MaxRequest+1)); err != nil {
		t.Fatal(err)
	}
	if r := c.readReply(); r.GetError().GetKind() != rlmmpb.ErrorKind_INVALID_ARGUMENT || !strings.Contains(r.GetError().GetMessage(), "more than the") {
		t.Fatalf("too large a frame: %v, want INVALID_ARGUMENT naming the bound", r)
	}
	if _, err := brokerframe.ReadFrame(c.r, nil, brokerframe.MaxReply); !errors.Is(err, io.EOF) {
		t.Fatalf("after a too-large frame: %v, want the connection closed", err)
	}
}

// TestBrokerNotAHello: a first frame that is not a broker hello (an older
// plugin's lookup hello, anything else) is refused with why.
func TestBrokerNotAHello(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	c, err := net.Dial("unix", f.serveFramed(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(testTimeout))
	if _, err := c.Write(brokerframe.Append(nil, append([]byte("RLMMLOOKUP"), 1))); err != nil {
		t.Fatal(err)
	}
	body, err := brokerframe.ReadFrame(c, nil, brokerframe.MaxReply)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := brokerframe.ParseAnswer(body, brokerframe.Version); err == nil || !strings.Contains(err.Error(), "not a broker hello") {
		t.Fatalf("answer to a lookup hello: %v, want a refusal saying it is not a broker hello", err)
	}
}

// TestStopClosesBrokerConnections: Stop closes open framed connections (an
// idle one, one mid-frame, one before its hello, a watch, and a mutation
// held by the log) instead of waiting for their clients, and leaves no
// goroutine behind (TestMain's goleak).
func TestStopClosesBrokerConnections(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	tp := newTP()
	f.assign(t, tp)
	path := f.serveFramed(t, nil)
	idle := brokerConnFor(t, path, rlmmpb.Purpose_PURPOSE_READ)
	idle.call(&rlmmpb.BrokerRequest{Call: &rlmmpb.BrokerRequest_ServerInfo{ServerInfo: &rlmmpb.ServerInfoRequest{}}})
	mid := brokerConnFor(t, path, rlmmpb.Purpose_PURPOSE_LOOKUP)
	if _, err := mid.conn.Write([]byte{0, 0, 0, 9, 1}); err != nil {
		t.Fatal(err)
	}
	watch := brokerConnFor(t, path, rlmmpb.Purpose_PURPOSE_WATCH)
	silent, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	mutate := brokerConnFor(t, path, rlmmpb.Purpose_PURPOSE_MUTATE)
	f.gate.hold()
	defer f.gate.release()
	md := segment(tp, 0)
	// An hour's bound: a Stop that waited for the mutation would hang the test.
	b, err := proto.Marshal(&rlmmpb.BrokerRequest{Id: 1, TimeoutMs: uint64(time.Hour / time.Millisecond),
		Call: &rlmmpb.BrokerRequest_AddSegment{AddSegment: &rlmmpb.AddSegmentRequest{Segment: segmentToProto(&md)}}})
	if err != nil {
		t.Fatal(err)
	}
	mutate.write(b)
	time.Sleep(50 * time.Millisecond) // the mutation waits on the gate by then
	f.srv.Stop(testCtx(t))
	silentR := bufio.NewReader(silent)
	for name, r := range map[string]*bufio.Reader{"idle": idle.r, "mid-frame": mid.r, "watch": watch.r, "no hello": silentR} {
		for {
			// A close with the client's bytes unread resets the connection.
			_, err := brokerframe.ReadFrame(r, nil, brokerframe.MaxReply)
			if err == nil && name == "watch" {
				continue // a push before the close
			}
			if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, syscall.ECONNRESET) {
				t.Fatalf("%s connection after Stop: %v, want it closed", name, err)
			}
			break
		}
	}
	if body, err := brokerframe.ReadFrame(mutate.r, nil, brokerframe.MaxReply); err == nil {
		var r rlmmpb.BrokerReply
		if proto.Unmarshal(body, &r) == nil && r.GetError() == nil {
			t.Fatalf("the mutation held by the log succeeded across Stop: %v", &r)
		}
	}
	l, err := ListenUnix(testCtx(t), shortDir(t)+"/x.sock")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := f.srv.Serve(Endpoint{Listener: l}); err == nil {
		t.Fatal("Serve after Stop succeeded")
	}
}

// TestBrokerMutationPastItsDeadlineIsNotRun: a mutation read after its
// caller's deadline (deadline_unix_ms, as when it waited in the socket
// while the server was stopped) is refused TIMEOUT saying nothing was
// published, and nothing is; one read before its deadline is run.
func TestBrokerMutationPastItsDeadlineIsNotRun(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	tp := newTP()
	path := f.serveFramed(t, nil)
	assign := brokerConnFor(t, path, rlmmpb.Purpose_PURPOSE_ASSIGN)
	if r := assign.call(&rlmmpb.BrokerRequest{Call: &rlmmpb.BrokerRequest_LeadershipChanges{
		LeadershipChanges: &rlmmpb.LeadershipChangesRequest{Leaders: []*rlmmpb.TopicIdPartition{tpToProto(tp)}}}}); r[0].GetDone() == nil {
		t.Fatalf("leadership change: %v", r[0])
	}
	f.assign(t, tp)
	mutate := brokerConnFor(t, path, rlmmpb.Purpose_PURPOSE_MUTATE)
	add := func(md rlmm.SegmentMetadata, deadline time.Time) []*rlmmpb.BrokerReply {
		return mutate.call(&rlmmpb.BrokerRequest{DeadlineUnixMs: deadline.UnixMilli(),
			Call: &rlmmpb.BrokerRequest_AddSegment{AddSegment: &rlmmpb.AddSegmentRequest{Segment: segmentToProto(&md)}}})
	}
	late, inTime := segment(tp, 0), segment(tp, 100)
	rs := add(late, time.Now().Add(-time.Second))
	wantKind(rlmmpb.ErrorKind_TIMEOUT)(t, rs)
	if e := rs[0].GetError(); e.GetMayBeRecorded() || !strings.Contains(e.GetMessage(), "nothing published") {
		t.Fatalf("a mutation past its deadline: %v, want one that says nothing was published", e)
	}
	if r := add(inTime, time.Now().Add(time.Minute)); r[0].GetDone() == nil {
		t.Fatalf("a mutation before its deadline: %v", r[0])
	}
	read := brokerConnFor(t, path, rlmmpb.Purpose_PURPOSE_READ)
	var listed []*rlmmpb.SegmentMetadata
	for _, r := range read.call(&rlmmpb.BrokerRequest{Call: &rlmmpb.BrokerRequest_ListSegments{
		ListSegments: &rlmmpb.ListSegmentsRequest{TopicIdPartition: tpToProto(tp)}}}) {
		listed = append(listed, r.GetSegments().GetSegments()...)
	}
	if len(listed) != 1 || listed[0].GetStartOffset() != 100 {
		t.Fatalf("listed %v, want only the segment added before its deadline", listed)
	}
}

package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/eventlog"
	"github.com/rlmm-go/rlmm/eventlog/memlog"
	"github.com/rlmm-go/rlmm/rpc/brokerframe/frametest"
	"github.com/rlmm-go/rlmm/rpc/rlmmpb"
	"github.com/rlmm-go/rlmm/topicbased"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goroutine leak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// testTimeout bounds every wait of a test for something that must happen.
const testTimeout = 30 * time.Second

// metadataPartitions is the partition count of the tests' logs.
const metadataPartitions = 4

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// testLogger logs to the test output only when RLMM_TEST_LOG is set.
func testLogger(t testing.TB) *slog.Logger {
	if os.Getenv("RLMM_TEST_LOG") == "" {
		return nil
	}
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type tWriter struct{ t testing.TB }

func (w tWriter) Write(b []byte) (int, error) { w.t.Log(string(b)); return len(b), nil }

// shortDir is a temporary directory with a short path (t.TempDir's can
// exceed a Unix socket's 107 bytes with a long test name).
func shortDir(t testing.TB) string {
	t.Helper()
	d, err := os.MkdirTemp("", "rlmm-srv-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// fixture is a server on a Unix socket over a manager on a log, and a
// client connected to it.
type fixture struct {
	srv         *Server
	mgr         *topicbased.Manager
	log         eventlog.Log
	gate        *gatedLog
	reg         *prometheus.Registry
	socket      string
	snapDir     string
	consumeWait time.Duration
	client      *frametest.Client
}

// fixtureOpts vary the fixture.
type fixtureOpts struct {
	noManager bool         // serve without a manager (as while starting)
	log       eventlog.Log // default: a fresh memlog
	snapDir   string       // default: a fresh directory
	// consumeWait bounds the manager's mutations (default: topicbased's).
	consumeWait time.Duration
	hosted      *Hosted // default: in memory
}

// newFixture starts a server (and a manager unless noManager) and a client;
// everything is stopped at cleanup.
func newFixture(t testing.TB, o fixtureOpts) *fixture {
	t.Helper()
	f := &fixture{reg: prometheus.NewRegistry(), snapDir: o.snapDir}
	if f.snapDir == "" {
		f.snapDir = shortDir(t)
	}
	base := o.log
	if base == nil {
		ml := memlog.New(metadataPartitions)
		t.Cleanup(func() { ml.Close() })
		base = ml
	}
	f.gate = newGatedLog(base)
	f.log = f.gate
	f.srv = New(Config{Logger: testLogger(t), Version: "test", BrokerID: 7,
		MetadataPartitions: base.Partitions(), LogDescription: "memlog", Hosted: o.hosted})
	f.socket = filepath.Join(shortDir(t), "s.sock")
	l, err := ListenUnix(testCtx(t), f.socket)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.srv.Serve(Endpoint{Listener: l}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		f.srv.Stop(ctx)
	})
	f.consumeWait = o.consumeWait
	if !o.noManager {
		f.startManager(t)
	}
	f.client = unixClient(t, f.socket, nil)
	return f
}

// startManager starts a manager on the fixture's log and installs it.
func (f *fixture) startManager(t testing.TB) {
	t.Helper()
	m, err := topicbased.Start(testCtx(t), topicbased.Config{
		Log: f.log, SnapshotDir: f.snapDir, SnapshotInterval: -1, LagInterval: -1, ConsumeWait: f.consumeWait,
		Logger: testLogger(t), Metrics: NewMetrics(f.reg),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	f.mgr = m
	f.srv.SetManager(m)
}

// assign makes the server consume tp's metadata partition and waits until
// it is ready.
func (f *fixture) assign(t testing.TB, tps ...rlmm.TopicIDPartition) {
	t.Helper()
	ctx := testCtx(t)
	req := &rlmmpb.LeadershipChangesRequest{}
	for _, tp := range tps {
		req.Leaders = append(req.Leaders, tpToProto(tp))
	}
	if _, err := f.client.OnPartitionLeadershipChanges(ctx, req); err != nil {
		t.Fatal(err)
	}
	f.waitReady(t, tps...)
}

// waitReady waits until every tp is ready.
func (f *fixture) waitReady(t testing.TB, tps ...rlmm.TopicIDPartition) {
	t.Helper()
	ctx := testCtx(t)
	for _, tp := range tps {
		for {
			if m := f.srv.Manager(); m != nil && m.IsReady(tp) {
				break
			}
			select {
			case <-ctx.Done():
				t.Fatalf("%s never became ready", tp)
			case <-time.After(time.Millisecond):
			}
		}
	}
}

var tpSeq int32

// newTP returns a fresh user partition.
func newTP() rlmm.TopicIDPartition {
	tpSeq++
	return rlmm.TopicIDPartition{TopicID: rlmm.RandomUuid(), Topic: fmt.Sprintf("topic-%d", tpSeq), Partition: tpSeq % 3}
}

// segment returns a COPY_SEGMENT_STARTED segment of tp covering
// [start, start+99] in epoch 0 (and epoch 1 from start+50).
func segment(tp rlmm.TopicIDPartition, start int64) rlmm.SegmentMetadata {
	return rlmm.SegmentMetadata{
		ID:          rlmm.SegmentID{TopicIDPartition: tp, ID: rlmm.RandomUuid()},
		StartOffset: start, EndOffset: start + 99, MaxTimestampMs: 1000 + start, BrokerID: 7,
		EventTimestampMs: 2000 + start,
		LeaderEpochs:     []rlmm.EpochStart{{Epoch: 0, StartOffset: start}, {Epoch: 1, StartOffset: start + 50}},
		SizeInBytes:      1024, CustomMetadata: []byte{1, 2, 3}, State: rlmm.CopySegmentStarted,
	}
}

func finish(md rlmm.SegmentMetadata) *rlmmpb.UpdateSegmentRequest {
	return &rlmmpb.UpdateSegmentRequest{Update: &rlmmpb.SegmentUpdate{
		TopicIdPartition: tpToProto(md.ID.TopicIDPartition), SegmentId: uuidToProto(md.ID.ID),
		EventTimestampMs: md.EventTimestampMs + 1, State: rlmmpb.SegmentState_COPY_SEGMENT_FINISHED, BrokerId: 7,
	}}
}

// addAndFinish adds md and finishes it over the socket.
func (f *fixture) addAndFinish(t testing.TB, md rlmm.SegmentMetadata) {
	t.Helper()
	ctx := testCtx(t)
	if _, err := f.client.AddSegment(ctx, &rlmmpb.AddSegmentRequest{Segment: segmentToProto(&md)}); err != nil {
		t.Fatalf("AddSegment: %v", err)
	}
	if _, err := f.client.UpdateSegment(ctx, finish(md)); err != nil {
		t.Fatalf("UpdateSegment: %v", err)
	}
}

// addFinishedRun adds n finished segments to tp, back to back from offset 0
// (each 100 offsets, as segment makes them).
func (f *fixture) addFinishedRun(t testing.TB, tp rlmm.TopicIDPartition, n int) {
	t.Helper()
	for i := range n {
		f.addAndFinish(t, segment(tp, int64(i)*100))
	}
}

// errorInfo returns the BrokerError of a failed call.
func errorInfo(t testing.TB, err error) *rlmmpb.BrokerError {
	t.Helper()
	if err == nil {
		t.Fatal("the call succeeded; want an error")
	}
	fe, ok := errors.AsType[*frametest.Error](err)
	if !ok {
		t.Fatalf("%v is no BrokerError", err)
	}
	if fe.BrokerError.GetMessage() == "" {
		t.Fatalf("a BrokerError without its text: %v", fe.BrokerError)
	}
	return fe.BrokerError
}

// unixClient is a frame client of the socket at path, closed at cleanup.
func unixClient(t testing.TB, path string, token []byte) *frametest.Client {
	c := frametest.New(t, frametest.Dialer("unix", path, nil), token)
	c.Timeout = testTimeout
	return c
}

// gatedLog is a log whose subscriptions stop delivering records while the
// gate is closed, so a test can hold a metadata partition catching up or
// a mutation waiting for its event.
type gatedLog struct {
	eventlog.Log
	mu     sync.Mutex
	open   chan struct{} // closed while the gate is open
	closed bool
}

func newGatedLog(l eventlog.Log) *gatedLog {
	g := &gatedLog{Log: l, open: make(chan struct{})}
	close(g.open)
	return g
}

// hold closes the gate: Polls wait until release.
func (g *gatedLog) hold() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.closed {
		g.closed = true
		g.open = make(chan struct{})
	}
}

// release opens the gate.
func (g *gatedLog) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		g.closed = false
		close(g.open)
	}
}

func (g *gatedLog) gateCh() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.open
}

func (g *gatedLog) Subscribe(ctx context.Context) (eventlog.Subscription, error) {
	s, err := g.Log.Subscribe(ctx)
	if err != nil {
		return nil, err
	}
	return &gatedSub{Subscription: s, g: g}, nil
}

type gatedSub struct {
	eventlog.Subscription
	g *gatedLog
}

// Poll waits for the gate before and after polling, so records that
// arrive while the gate is closed are held back too. Records already
// polled are returned (with the context's error) if ctx ends meanwhile: the
// manager applies a batch whatever the error.
func (s *gatedSub) Poll(ctx context.Context) ([]eventlog.Record, error) {
	select {
	case <-s.g.gateCh():
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	recs, err := s.Subscription.Poll(ctx)
	select {
	case <-s.g.gateCh():
	case <-ctx.Done():
		return recs, ctx.Err()
	}
	return recs, err
}

// tpElsewhere returns a fresh user partition whose metadata partition is
// not tp's (so not assigned when only tp is).
func (f *fixture) tpElsewhere(tp rlmm.TopicIDPartition) rlmm.TopicIDPartition {
	for {
		o := newTP()
		if f.mgr.MetadataPartitionOf(o) != f.mgr.MetadataPartitionOf(tp) {
			return o
		}
	}
}

// serveFramed serves the fixture's server on one more socket (with token,
// if any) and returns its path.
func (f *fixture) serveFramed(t testing.TB, token []byte) string {
	t.Helper()
	path := filepath.Join(shortDir(t), "l.sock")
	l, err := ListenUnix(testCtx(t), path)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.srv.Serve(Endpoint{Listener: l, Token: token}); err != nil {
		t.Fatal(err)
	}
	return path
}

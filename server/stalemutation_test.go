package server

import (
	"net"
	"testing"
	"time"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/eventlog/memlog"
	"github.com/rlmm-go/rlmm/rpc/rlmmpb"
	"github.com/rlmm-go/rlmm/topicbased"
	"github.com/rlmm-go/rlmm/wire"
)

// TestMutationThatWaitedInTheSocketMeetsTheLog: while this server's
// manager hears nothing of the log (its delivery held, as in a frozen
// sidecar), another manager (the partition's new leader) deletes a segment.
// This server's broker had sent the deletion of the same segment before
// (its request read 5 s after it was sent, within its deadline). The server
// catches up with the log before checking it: the answer is UNKNOWN_SEGMENT
// with nothing published, not an event the state machine rejects later.
func TestMutationThatWaitedInTheSocketMeetsTheLog(t *testing.T) {
	base := memlog.New(metadataPartitions)
	t.Cleanup(func() { base.Close() })
	f := newFixture(t, fixtureOpts{log: base})
	leader, err := topicbased.Start(testCtx(t), topicbased.Config{Log: base, SnapshotDir: shortDir(t), SnapshotInterval: -1,
		LagInterval: -1, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { leader.Close() })
	tp := newTP()
	f.assign(t, tp)
	ctx := testCtx(t)
	if err := leader.OnPartitionLeadershipChanges(ctx, []rlmm.TopicIDPartition{tp}, nil); err != nil {
		t.Fatal(err)
	}
	md := segment(tp, 0)
	f.addAndFinish(t, md)
	if err := leader.Sync(ctx, tp); err != nil {
		t.Fatal(err)
	}

	f.gate.hold()
	released := false
	defer func() {
		if !released {
			f.gate.release()
		}
	}()
	for _, st := range []rlmm.SegmentState{rlmm.DeleteSegmentStarted, rlmm.DeleteSegmentFinished} {
		if err := leader.UpdateSegment(ctx, rlmm.SegmentUpdate{ID: md.ID, EventTimestampMs: 3000, State: st, BrokerID: 8}); err != nil {
			t.Fatalf("the new leader's %s: %v", st, err)
		}
	}
	mp := wire.MetadataPartition(tp, metadataPartitions)
	before, err := base.HighWaterMarks(ctx, []int32{mp})
	if err != nil {
		t.Fatal(err)
	}

	// Delivery resumes shortly after the request is read, as the pump of
	// a sidecar given SIGCONT catches up beside its request handler.
	go func() {
		time.Sleep(300 * time.Millisecond)
		f.gate.release()
	}()
	released = true
	const timeoutMs = 65_000
	sent := time.Now().Add(-5 * time.Second)
	mutate := brokerConnFor(t, f.serveFramed(t, nil), rlmmpb.Purpose_PURPOSE_MUTATE)
	rs := mutate.call(&rlmmpb.BrokerRequest{TimeoutMs: timeoutMs, DeadlineUnixMs: sent.UnixMilli() + timeoutMs,
		Call: &rlmmpb.BrokerRequest_UpdateSegment{UpdateSegment: &rlmmpb.UpdateSegmentRequest{Update: &rlmmpb.SegmentUpdate{
			TopicIdPartition: tpToProto(tp), SegmentId: uuidToProto(md.ID.ID), EventTimestampMs: 2500,
			State: rlmmpb.SegmentState_DELETE_SEGMENT_STARTED, BrokerId: 7}}}})
	wantKind(rlmmpb.ErrorKind_UNKNOWN_SEGMENT)(t, rs)
	if e := rs[0].GetError(); e.GetMayBeRecorded() {
		t.Errorf("the refusal says the event may be recorded: %v", e)
	}
	after, err := base.HighWaterMarks(ctx, []int32{mp})
	if err != nil {
		t.Fatal(err)
	}
	if after[0] != before[0] {
		t.Fatalf("metadata partition %d grew from %d to %d records: the stale deletion was published", mp, before[0], after[0])
	}
}

// TestWaited: how long a request waited is its deadline less its timeout,
// on a Unix socket only.
func TestWaited(t *testing.T) {
	now := time.Now().UnixMilli()
	tests := []struct {
		name      string
		deadline  int64
		timeoutMs uint64
		atLeast   time.Duration
		atMost    time.Duration
		overUnix  bool
	}{
		{"sent 5 s ago", now + 60_000, 65_000, 5 * time.Second, 6 * time.Second, true},
		{"sent now", now + 60_000, 60_000, 0, staleAfter, true},
		{"no deadline", 0, 60_000, 0, 0, true},
		{"a deadline over TCP", now + 60_000, 65_000, 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			network := "tcp"
			if tt.overUnix {
				network = "unix"
			}
			bc := &brokerConn{c: fakeConn{network: network}}
			if w := bc.waited(tt.deadline, tt.timeoutMs); w < tt.atLeast || w > tt.atMost {
				t.Errorf("waited = %v, want between %v and %v", w, tt.atLeast, tt.atMost)
			}
		})
	}
}

// fakeConn is a connection whose local address is of the given network;
// nothing else of it is used.
type fakeConn struct {
	net.Conn
	network string
}

func (c fakeConn) LocalAddr() net.Addr { return fakeAddr(c.network) }

type fakeAddr string

func (a fakeAddr) Network() string { return string(a) }
func (a fakeAddr) String() string  { return "fake" }

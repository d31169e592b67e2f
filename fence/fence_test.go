package fence

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rlmm-go/rlmm"
)

const topic = "orders"

// fakeCluster is a 3-broker kfake cluster holding topic (2 partitions)
// and a client of it, both closed at cleanup.
func fakeCluster(t *testing.T) (*kfake.Cluster, *kgo.Client) {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.SeedTopics(2, topic))
	if err != nil {
		t.Fatalf("starting kfake: %v", err)
	}
	t.Cleanup(c.Close)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return c, cl
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// TestCheckAgainstKfake: the fence of the partition's leader admits its
// mutation, another broker's is refused naming both; the moment the
// cluster moves the leadership the two swap (no answer is kept).
func TestCheckAgainstKfake(t *testing.T) {
	c, cl := fakeCluster(t)
	ctx := testCtx(t)
	tp := rlmm.TopicIDPartition{TopicID: rlmm.Uuid{7}, Topic: topic, Partition: 1}
	leader := c.LeaderFor(topic, 1)
	other := (leader + 1) % 3
	if leader < 0 || leader > 2 {
		t.Fatalf("kfake's leader of %s-1 is %d, want one of nodes 0..2", topic, leader)
	}
	fences := map[int32]*Fence{}
	for _, id := range []int32{leader, other} {
		fences[id] = New(Config{Client: cl, BrokerID: id})
	}
	if err := fences[leader].Check(ctx, tp); err != nil {
		t.Fatalf("the leader %d's mutation refused: %v", leader, err)
	}
	err := fences[other].Check(ctx, tp)
	if !errors.Is(err, rlmm.ErrNotLeader) {
		t.Fatalf("broker %d's mutation (the leader is %d): %v, want ErrNotLeader", other, leader, err)
	}
	for _, want := range []string{fmt.Sprintf("names broker %d as leader", leader), fmt.Sprintf("this broker %d", other), tp.String()} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal %q does not name %q", err, want)
		}
	}
	if got := testutil.ToFloat64(fences[other].refusals); got != 1 {
		t.Errorf("broker %d's fence counted %v refusals, want 1", other, got)
	}
	if got := testutil.ToFloat64(fences[leader].refusals); got != 0 {
		t.Errorf("the leader %d's fence counted %v refusals, want 0", leader, got)
	}

	if err := c.MoveTopicPartition(topic, 1, other); err != nil {
		t.Fatal(err)
	}
	if err := fences[leader].Check(ctx, tp); !errors.Is(err, rlmm.ErrNotLeader) {
		t.Fatalf("the deposed leader %d's mutation right after the move: %v, want ErrNotLeader", leader, err)
	}
	if err := fences[other].Check(ctx, tp); err != nil {
		t.Fatalf("the new leader %d's mutation right after the move refused: %v", other, err)
	}
}

// TestOneCheckAsksEveryBrokerOnce: a check sends one Metadata request for
// its topic to each of the three brokers, and the next check asks again.
func TestOneCheckAsksEveryBrokerOnce(t *testing.T) {
	c, cl := fakeCluster(t)
	ctx := testCtx(t)
	// Connect the client first, so its own metadata refreshes are done.
	if err := cl.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	var requests atomic.Int32
	c.ControlKey(int16(kmsg.Metadata), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if m, ok := req.(*kmsg.MetadataRequest); ok && len(m.Topics) == 1 && m.Topics[0].Topic != nil && *m.Topics[0].Topic == topic {
			requests.Add(1)
		}
		return nil, nil, false
	})
	tp := rlmm.TopicIDPartition{TopicID: rlmm.Uuid{7}, Topic: topic, Partition: 0}
	f := New(Config{Client: cl, BrokerID: c.LeaderFor(topic, 0)})
	for i := int32(1); i <= 2; i++ {
		if err := f.Check(ctx, tp); err != nil {
			t.Fatalf("the leader's check: %v", err)
		}
		if got := requests.Load(); got != 3*i {
			t.Fatalf("after %d checks, %d Metadata requests for %s, want %d (one per broker per check)", i, got, topic, 3*i)
		}
	}
}

// TestSilentBrokerKeepsTheFenceShut: the deposed leader's broker, cut off
// from the others, is often cut off from its sidecar too and never
// answers. Every check still refuses the deposed broker, on the other
// brokers' answers; the leader is admitted.
func TestSilentBrokerKeepsTheFenceShut(t *testing.T) {
	c, cl := fakeCluster(t)
	ctx := testCtx(t)
	leader := c.LeaderFor(topic, 1)
	deposed := (leader + 1) % 3
	release := make(chan struct{})
	t.Cleanup(func() { close(release) }) // before kfake's Close (cleanups run last first)
	c.ControlKey(int16(kmsg.Metadata), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if c.CurrentNode() == deposed {
			c.SleepControl(func() { <-release })
			return nil, errors.New("the deposed broker never answered"), true
		}
		return nil, nil, false
	})
	tp := rlmm.TopicIDPartition{TopicID: rlmm.Uuid{7}, Topic: topic, Partition: 1}
	const timeout = 300 * time.Millisecond
	for i := range 6 {
		// A fresh fence each time: a fresh round, whichever broker the
		// client would have picked first.
		f := New(Config{Client: cl, BrokerID: deposed, Timeout: timeout})
		err := f.Check(ctx, tp)
		if !errors.Is(err, rlmm.ErrNotLeader) {
			t.Fatalf("check %d of the deposed broker %d (leader %d, broker %d silent): %v, want ErrNotLeader", i, deposed, leader, deposed, err)
		}
	}
	if err := New(Config{Client: cl, BrokerID: leader, Timeout: timeout}).Check(ctx, tp); err != nil {
		t.Errorf("the leader %d's check with broker %d silent: %v", leader, deposed, err)
	}
}

// TestUnknownTopicPublishes: a topic the cluster does not know leaves the
// fence open (the package doc's choice when metadata cannot be had); each
// unanswered round is counted, and the warning said once a minute.
func TestUnknownTopicPublishes(t *testing.T) {
	_, cl := fakeCluster(t)
	reg := prometheus.NewRegistry()
	var logs strings.Builder // written by the checks below, read after them
	f := New(Config{Client: cl, BrokerID: 0, Timeout: 3 * time.Second, Registerer: reg,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	now := time.Unix(1000, 0)
	f.now = func() time.Time { return now }
	absent := rlmm.TopicIDPartition{TopicID: rlmm.Uuid{9}, Topic: "absent", Partition: 0}
	for i, step := range []time.Duration{0, time.Second, warnEvery} {
		now = now.Add(step)
		if err := f.Check(testCtx(t), absent); err != nil {
			t.Fatalf("check %d of a topic the cluster does not know: %v, want nil (published unfenced)", i, err)
		}
	}
	if n, err := testutil.GatherAndCount(reg, "rlmm_leader_fence_unanswered_rounds_total", "rlmm_leader_fence_refusals_total"); err != nil || n != 2 {
		t.Errorf("the registry has %d of the fence's 2 counters (%v)", n, err)
	}
	if got := testutil.ToFloat64(f.unanswered); got != 3 {
		t.Errorf("rlmm_leader_fence_unanswered_rounds_total = %v after 3 rounds no broker answered for the topic, want 3", got)
	}
	if warnings := strings.Count(logs.String(), "could not be had"); warnings != 2 {
		t.Errorf("%d warnings for checks at 0 s, 1 s and %s later, want 2 (once a minute):\n%s", warnings, warnEvery, logs.String())
	}
}

// TestEndedCheckIsNoAdmission: a check whose context ends returns that,
// not the admission an unanswered round gives.
func TestEndedCheckIsNoAdmission(t *testing.T) {
	_, cl := fakeCluster(t)
	f := New(Config{Client: cl, BrokerID: 0})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := f.Check(ctx, rlmm.TopicIDPartition{TopicID: rlmm.Uuid{7}, Topic: topic, Partition: 0}); !errors.Is(err, context.Canceled) {
		t.Errorf("a check with its context ended: %v, want context.Canceled", err)
	}
}

// TestNoFence: no broker id or no client builds no fence, and a nil
// fence admits everything.
func TestNoFence(t *testing.T) {
	_, cl := fakeCluster(t)
	if f := New(Config{Client: cl, BrokerID: -1}); f != nil {
		t.Errorf("New without a broker id = %v, want nil", f)
	}
	if f := New(Config{BrokerID: 1}); f != nil {
		t.Errorf("New without a client = %v, want nil", f)
	}
	var f *Fence
	if err := f.Check(testCtx(t), rlmm.TopicIDPartition{Topic: topic}); err != nil {
		t.Errorf("a nil fence's Check = %v, want nil", err)
	}
}

// BenchmarkCheck is what the fence adds to a copy's or deletion's start on
// a 3-broker kfake cluster over loopback: one round, every broker asked.
func BenchmarkCheck(b *testing.B) {
	c, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.SeedTopics(2, topic))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	ctx := context.Background()
	if err := cl.Ping(ctx); err != nil {
		b.Fatal(err)
	}
	tp := rlmm.TopicIDPartition{TopicID: rlmm.Uuid{7}, Topic: topic, Partition: 0}
	f := New(Config{Client: cl, BrokerID: c.LeaderFor(topic, 0)})
	for b.Loop() {
		if err := f.Check(ctx, tp); err != nil {
			b.Fatal(err)
		}
	}
}

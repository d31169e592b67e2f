package topicbased

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rlmm-go/rlmm"
)

// Every wait of a mutation is bounded: by ConsumeWait and by ctx, with an
// error that wraps ErrTimeout and says the event may still be recorded.
func TestMutationWaitsAreBounded(t *testing.T) {
	cases := []struct {
		name        string
		consumeWait time.Duration
		ctx         func() (context.Context, context.CancelFunc)
		wantCause   error
	}{
		{"ConsumeWait", 50 * time.Millisecond, func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) }, context.DeadlineExceeded},
		{"ctx deadline", time.Minute, func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 50*time.Millisecond)
		}, context.DeadlineExceeded},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			base := newLog(t, 3)
			pl := newPausableLog(base)
			m := startManager(t, Config{Log: pl, ConsumeWait: c.consumeWait})
			tp := topicPartition("foo", 1, 0)
			assign(t, m, tp)
			pl.Pause()
			ctx, cancel := c.ctx()
			defer cancel()
			err := m.AddSegment(ctx, segment(tp, 1, 0, 9))
			if !errors.Is(err, rlmm.ErrTimeout) || !errors.Is(err, c.wantCause) || !strings.Contains(err.Error(), "may still be recorded") {
				t.Fatalf("AddSegment with the pump held: %v; want ErrTimeout saying the event may still be recorded", err)
			}
			if !rlmm.IsRetriable(err) {
				t.Error("a timeout is not retriable")
			}
			// The event was published: once the pump runs, it is applied,
			// and the retried add is an idempotent success.
			pl.Resume()
			must(t, m.AddSegment(testCtx(t), segment(tp, 1, 0, 9)))
			if l, _ := m.ListSegments(tp); len(l) != 1 {
				t.Errorf("after the retry: %v", l)
			}
		})
	}
}

// A caller cancelling its context gets ErrTimeout wrapping context.Canceled.
func TestMutationCancelled(t *testing.T) {
	base := newLog(t, 3)
	pl := newPausableLog(base)
	m := startManager(t, Config{Log: pl})
	tp := topicPartition("foo", 1, 0)
	assign(t, m, tp)
	pl.Pause()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.AddSegment(ctx, segment(tp, 1, 0, 9)) }()
	waitFor(t, "the event in the log", func() bool { return hwm(t, base, m.MetadataPartitionOf(tp)) == 1 })
	cancel()
	if err := <-done; !errors.Is(err, rlmm.ErrTimeout) || !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled AddSegment: %v; want ErrTimeout and context.Canceled", err)
	}
	pl.Resume()
}

// Close answers blocked mutations and makes later calls fail with
// ErrClosed; it is idempotent.
func TestCloseUnblocksAndRejects(t *testing.T) {
	base := newLog(t, 3)
	pl := newPausableLog(base)
	m := startManager(t, Config{Log: pl})
	tps := distinctPartitions(t, 3, 2)
	assign(t, m, tps[0])
	pl.Pause()
	// One mutation waits for its offset, another for readiness.
	waiting := make(chan error, 2)
	go func() { waiting <- m.AddSegment(context.Background(), segment(tps[0], 1, 0, 9)) }()
	must(t, m.OnPartitionLeadershipChanges(testCtx(t), []rlmm.TopicIDPartition{tps[1]}, nil))
	// Make tps[1]'s partition not ready: publish behind the paused pump.
	_, err := base.Publish(testCtx(t), m.MetadataPartitionOf(tps[1]), []byte{1})
	must(t, err)
	must(t, m.OnStopPartitions(testCtx(t), []rlmm.TopicIDPartition{tps[1]}))
	must(t, m.OnPartitionLeadershipChanges(testCtx(t), []rlmm.TopicIDPartition{tps[1]}, nil))
	go func() { waiting <- m.AddSegment(context.Background(), segment(tps[1], 2, 0, 9)) }()
	waitFor(t, "the first event in the log", func() bool { return hwm(t, base, m.MetadataPartitionOf(tps[0])) == 1 })

	must(t, m.Close())
	for range 2 {
		select {
		case err := <-waiting:
			if !errors.Is(err, rlmm.ErrClosed) {
				t.Errorf("blocked mutation after Close: %v; want ErrClosed", err)
			}
		case <-time.After(testTimeout):
			t.Fatal("a blocked mutation was not answered by Close")
		}
	}
	must(t, m.Close())
	ctx := testCtx(t)
	for name, err := range map[string]error{
		"AddSegment":                   m.AddSegment(ctx, segment(tps[0], 3, 0, 9)),
		"UpdateSegment":                m.UpdateSegment(ctx, update(segment(tps[0], 1, 0, 9), rlmm.CopySegmentFinished)),
		"PutPartitionDelete":           m.PutPartitionDelete(ctx, rlmm.PartitionDelete{TopicIDPartition: tps[0]}),
		"OnPartitionLeadershipChanges": m.OnPartitionLeadershipChanges(ctx, tps, nil),
		"WriteSnapshot":                m.WriteSnapshot(ctx),
		"ShutdownAndFlush":             m.ShutdownAndFlush(ctx),
		"Sync":                         m.Sync(ctx, tps[0]),
	} {
		if !errors.Is(err, rlmm.ErrClosed) {
			t.Errorf("%s after Close: %v; want ErrClosed", name, err)
		}
	}
	if _, err := m.ListSegments(tps[0]); !errors.Is(err, rlmm.ErrClosed) {
		t.Errorf("read after Close: %v; want ErrClosed", err)
	}
	if m.IsReady(tps[0]) {
		t.Error("IsReady after Close")
	}
	pl.Resume()
}

// Start refuses a config without a log or with a negative wait.
func TestStartValidatesConfig(t *testing.T) {
	for name, cfg := range map[string]Config{
		"no log":        {},
		"negative wait": {Log: newLog(t, 3), ConsumeWait: -time.Second},
	} {
		if _, err := Start(context.Background(), cfg); !errors.Is(err, rlmm.ErrInvalidArgument) {
			t.Errorf("%s: %v; want ErrInvalidArgument", name, err)
		}
	}
	m := startManager(t, Config{Log: newLog(t, 3)})
	if err := m.WriteSnapshot(testCtx(t)); !errors.Is(err, rlmm.ErrInvalidArgument) {
		t.Errorf("WriteSnapshot without a directory: %v; want ErrInvalidArgument", err)
	}
}

// The manager consumes exactly the metadata partitions that cover hosted
// user partitions and keeps exactly the hosted user partitions: a stopped
// one leaves the view and the cache (its reads: ErrNotAssigned), its
// metadata partition stops being consumed once nothing hosted is left in it.
func TestHostedSetDrivesWhatIsConsumedAndKept(t *testing.T) {
	l := newLog(t, 3)
	m := startManager(t, Config{Log: l})
	tps := distinctPartitions(t, 3, 3) // tps[i] is in metadata partition i
	ctx := testCtx(t)
	assign(t, m, tps...)
	addFinished(t, m, segment(tps[2], 1, 0, 9))
	must(t, m.OnStopPartitions(ctx, tps[2:]))
	if !m.IsReady(tps[0]) || !m.IsReady(tps[1]) {
		t.Error("a hosted partition was dropped")
	}
	if m.IsReady(tps[2]) {
		t.Error("a stopped partition is still ready")
	}
	if l, err := m.ListSegments(tps[2]); len(l) != 0 || !errors.Is(err, rlmm.ErrNotAssigned) {
		t.Errorf("stopped partition served %v, %v; want ErrNotAssigned", l, err)
	}
	var got []int32
	for _, p := range m.Stats().Partitions {
		got = append(got, p.Partition)
	}
	if len(got) != 2 || got[0] != 0 || got[1] != 1 {
		t.Errorf("consumed metadata partitions %v; want the hosted ones, [0 1]", got)
	}
	if s := m.Stats(); s.Hosted != 2 || s.CachedPartitions != 0 {
		t.Errorf("Hosted %d, CachedPartitions %d; want 2 hosted, 0 cached (the stopped one's state dropped)", s.Hosted, s.CachedPartitions)
	}
}

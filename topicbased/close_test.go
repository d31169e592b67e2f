package topicbased

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/eventlog"
	"github.com/rlmm-go/rlmm/test/kafkatest"
	"github.com/rlmm-go/rlmm/wire"
)

// stuckPublishLog is a log whose Publish, once blocked is set, never
// reaches the log and waits until its ctx is done: a cluster that does not
// answer. inFlight counts the calls waiting.
type stuckPublishLog struct {
	eventlog.Log
	blocked  atomic.Bool
	inFlight atomic.Int32
}

func (l *stuckPublishLog) Publish(ctx context.Context, p int32, v []byte) (int64, error) {
	if !l.blocked.Load() {
		return l.Log.Publish(ctx, p, v)
	}
	l.inFlight.Add(1)
	defer l.inFlight.Add(-1)
	<-ctx.Done()
	return 0, ctx.Err()
}

// TestCloseEndsMutationsBlockedInPublish: with the log not answering,
// Close returns and every mutation waiting in Publish ends with
// rlmm.ErrClosed saying the event may still be recorded, long before its
// ConsumeWait (an hour here) would end it.
func TestCloseEndsMutationsBlockedInPublish(t *testing.T) {
	const mutators = 8
	log := &stuckPublishLog{Log: newLog(t, 4)}
	m := startManager(t, Config{Log: log, ConsumeWait: time.Hour})
	tps := distinctPartitions(t, 4, 4)
	assign(t, m, tps...)
	log.blocked.Store(true)

	errs := make(chan error, mutators)
	var wg sync.WaitGroup
	for i := range mutators { // two segments of each partition
		tp, start := tps[i%len(tps)], int64(i/len(tps))*100
		wg.Go(func() { errs <- m.AddSegment(context.Background(), segment(tp, uint64(i+1), start, start+99)) })
	}
	waitFor(t, "every mutation waiting in Publish", func() bool { return log.inFlight.Load() == mutators })

	closed := make(chan error, 1)
	go func() { closed <- m.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatalf("Close: %v", err)
		}
	case <-time.After(testTimeout):
		t.Fatalf("Close did not return within %s with mutations blocked in Publish", testTimeout)
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(testTimeout):
		t.Fatalf("%d mutations still blocked %s after Close returned", log.inFlight.Load(), testTimeout)
	}
	close(errs)
	n := 0
	for err := range errs {
		n++
		if !errors.Is(err, rlmm.ErrClosed) || !strings.Contains(err.Error(), "may still be recorded") || !MayBeRecorded(err) {
			t.Errorf("mutation ended with %v; want rlmm.ErrClosed saying (and MayBeRecorded) the event may still be recorded", err)
		}
	}
	if n != mutators {
		t.Fatalf("%d of %d mutations returned", n, mutators)
	}
}

// TestCloseEndsMutationsBlockedInPublishRealKafka: the same with a real
// broker of the test's own (test/kafkatest) stopped under the manager.
func TestCloseEndsMutationsBlockedInPublishRealKafka(t *testing.T) {
	if os.Getenv(envBootstrap) == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal(envBootstrap + " is unset in CI: make test starts a real Kafka broker and sets it")
		}
		t.Skip(envBootstrap + " is unset: the jars and Java for a broker of this test's own are where make test runs one")
	}
	c := kafkatest.StartT(t, kafkatest.Config{}, 5*time.Minute)
	log := kafkaBackend("private", c.Bootstrap()).open(t, 4)
	t.Cleanup(func() { _ = log.Close() })
	m := startManager(t, Config{Log: log, ConsumeWait: time.Hour})
	tps := distinctPartitions(t, 4, 4)
	assign(t, m, tps...)
	c.Stop()

	errs := make(chan error, len(tps))
	var wg sync.WaitGroup
	for i, tp := range tps {
		wg.Go(func() { errs <- m.AddSegment(context.Background(), segment(tp, uint64(i+1), 0, 99)) })
	}
	waitFor(t, "every mutation blocked in Publish, the broker down", func() bool { return m.Stats().Publishing == int64(len(tps)) })
	closeStart := time.Now()
	must(t, m.Close())
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(testTimeout):
		t.Fatalf("mutations still blocked %s after Close returned, the broker down", testTimeout)
	}
	close(errs)
	inPublish := 0
	for err := range errs {
		if !errors.Is(err, rlmm.ErrClosed) {
			t.Errorf("mutation ended with %v; want rlmm.ErrClosed", err)
		}
		if !strings.Contains(err.Error(), "may still be recorded") {
			t.Errorf("a mutation in Publish ended with %v; want it to say the event may still be recorded", err)
		}
		inPublish++
	}
	t.Logf("broker stopped: Close and %d mutations (%d of them in Publish) ended %s after Close began",
		len(tps), inPublish, time.Since(closeStart))
}

// TestCloseEndsMutationsWaitingForReadiness: a mutation waiting for its
// metadata partition to catch up ends at Close with rlmm.ErrClosed saying
// nothing was published.
func TestCloseEndsMutationsWaitingForReadiness(t *testing.T) {
	inner := newLog(t, 4)
	tp := distinctPartitions(t, 4, 1)[0]
	first := startManager(t, Config{Log: inner})
	assign(t, first, tp)
	addFinished(t, first, segment(tp, 1, 0, 99))
	must(t, first.Close())

	log := newPausableLog(inner)
	log.Pause() // the new manager cannot catch up
	m := startManager(t, Config{Log: log, ConsumeWait: time.Hour})
	must(t, m.OnPartitionLeadershipChanges(testCtx(t), []rlmm.TopicIDPartition{tp}, nil))
	errc := make(chan error, 1)
	go func() { errc <- m.AddSegment(context.Background(), segment(tp, 2, 100, 199)) }()
	waitFor(t, "the mutation waiting for readiness", func() bool { return m.Stats().WaitingReady == 1 })
	must(t, m.Close())
	select {
	case err := <-errc:
		if !errors.Is(err, rlmm.ErrClosed) || !strings.Contains(err.Error(), "nothing was published") || MayBeRecorded(err) {
			t.Fatalf("mutation ended with %v; want rlmm.ErrClosed saying (and MayBeRecorded false) nothing was published", err)
		}
	case <-time.After(testTimeout):
		t.Fatalf("mutation still waiting %s after Close", testTimeout)
	}
	if h := hwm(t, inner, wire.MetadataPartition(tp, 4)); h != 2 {
		t.Fatalf("metadata partition holds %d records, want the first manager's 2 only", h)
	}
}

package topicbased

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/eventlog"
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
		if !errors.Is(err, rlmm.ErrClosed) || !strings.Contains(err.Error(), "may still be recorded") {
			t.Errorf("mutation ended with %v; want rlmm.ErrClosed saying the event may still be recorded", err)
		}
	}
	if n != mutators {
		t.Fatalf("%d of %d mutations returned", n, mutators)
	}
}

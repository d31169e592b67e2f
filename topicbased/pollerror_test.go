package topicbased

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/eventlog"
	"github.com/rlmm-go/rlmm/wire"
)

// errRefused stands for a log that refuses to be read, as Kafka does for a
// principal without READ on the metadata topic.
var errRefused = errors.New("TOPIC_AUTHORIZATION_FAILED: not authorized to read the metadata topic")

// refusingLog is a log whose subscriptions' Poll always fails with
// errRefused, counting the calls.
type refusingLog struct {
	eventlog.Log
	polls atomic.Int64
}

func (l *refusingLog) Subscribe(ctx context.Context) (eventlog.Subscription, error) {
	s, err := l.Log.Subscribe(ctx)
	if err != nil {
		return nil, err
	}
	return &refusingSub{Subscription: s, log: l}, nil
}

type refusingSub struct {
	eventlog.Subscription
	log *refusingLog
}

func (s *refusingSub) Poll(context.Context) ([]eventlog.Record, error) {
	s.log.polls.Add(1)
	return nil, errRefused
}

// TestFailingPollIsNamedAndPaced: a Poll that fails is logged, retried
// after a pause (not in a tight loop), and named by the timeout of a wait
// for the partition to catch up, so the operator learns why nothing is ready.
func TestFailingPollIsNamedAndPaced(t *testing.T) {
	log := &refusingLog{Log: newLog(t, 4)}
	tp := distinctPartitions(t, 4, 1)[0]
	// Something to catch up with, so the partition cannot be ready at once.
	if _, err := log.Publish(testCtx(t), wire.MetadataPartition(tp, 4), []byte("x")); err != nil {
		t.Fatal(err)
	}
	m := startManager(t, Config{Log: log, ConsumeWait: time.Hour})
	if err := m.OnPartitionLeadershipChanges(testCtx(t), []rlmm.TopicIDPartition{tp}, nil); err != nil {
		t.Fatal(err)
	}
	const wait = 1200 * time.Millisecond
	ctx, cancelWait := context.WithTimeout(testCtx(t), wait)
	defer cancelWait()
	started := time.Now()
	err := m.WaitReady(ctx, tp)
	if err == nil {
		t.Fatal("WaitReady succeeded over a log that refuses every Poll")
	}
	if !strings.Contains(err.Error(), errRefused.Error()) {
		t.Errorf("WaitReady's error does not name the failing read: %v", err)
	}
	// pollRetryDelay between failures: a handful of polls, not a spin.
	if n, most := log.polls.Load(), int64(time.Since(started)/pollRetryDelay)+3; n > most {
		t.Errorf("%d polls in %s: the pump spins on a failing Poll (want at most %d)", n, time.Since(started).Round(time.Millisecond), most)
	}
}

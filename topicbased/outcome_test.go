package topicbased

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/eventlog"
)

// TestMayBeRecorded: a mutation's error says whether its event may be in
// the log. Refusals before publishing and the state machine's verdicts are
// false; a publish that failed or timed out, a close or a timeout while the
// pump had not applied the event are true.
func TestMayBeRecorded(t *testing.T) {
	short := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.Background(), 200*time.Millisecond)
	}
	tests := []struct {
		name string
		// run returns the mutation's error.
		run  func(t *testing.T) error
		want bool
	}{
		{"invalid argument", func(t *testing.T) error {
			m := startManager(t, Config{Log: newLog(t, 4)})
			tp := distinctPartitions(t, 4, 1)[0]
			assign(t, m, tp)
			md := segment(tp, 1, 0, 99)
			md.State = rlmm.CopySegmentFinished
			return m.AddSegment(testCtx(t), md)
		}, false},
		{"not assigned", func(t *testing.T) error {
			m := startManager(t, Config{Log: newLog(t, 4)})
			return m.AddSegment(testCtx(t), segment(distinctPartitions(t, 4, 1)[0], 1, 0, 99))
		}, false},
		{"forbidden transition", func(t *testing.T) error {
			m := startManager(t, Config{Log: newLog(t, 4)})
			tp := distinctPartitions(t, 4, 1)[0]
			assign(t, m, tp)
			return m.UpdateSegment(testCtx(t), update(segment(tp, 1, 0, 99), rlmm.CopySegmentFinished))
		}, false},
		{"closed before", func(t *testing.T) error {
			m := startManager(t, Config{Log: newLog(t, 4)})
			tp := distinctPartitions(t, 4, 1)[0]
			assign(t, m, tp)
			must(t, m.Close())
			return m.AddSegment(testCtx(t), segment(tp, 1, 0, 99))
		}, false},
		{"timed out in Publish", func(t *testing.T) error {
			log := &stuckPublishLog{Log: newLog(t, 4)}
			m := startManager(t, Config{Log: log})
			tp := distinctPartitions(t, 4, 1)[0]
			assign(t, m, tp)
			log.blocked.Store(true)
			ctx, cancel := short()
			defer cancel()
			return m.AddSegment(ctx, segment(tp, 1, 0, 99))
		}, true},
		{"refused by the log", func(t *testing.T) error {
			m := startManager(t, Config{Log: deniedWriteLog{newLog(t, 4)}})
			tp := distinctPartitions(t, 4, 1)[0]
			assign(t, m, tp)
			return m.AddSegment(testCtx(t), segment(tp, 1, 0, 99))
		}, false},
		{"failed in Publish, fate unknown", func(t *testing.T) error {
			m := startManager(t, Config{Log: failingLog{newLog(t, 4)}})
			tp := distinctPartitions(t, 4, 1)[0]
			assign(t, m, tp)
			return m.AddSegment(testCtx(t), segment(tp, 1, 0, 99))
		}, true},
		{"timed out waiting for the pump", func(t *testing.T) error {
			log := newPausableLog(newLog(t, 4))
			m := startManager(t, Config{Log: log})
			tp := distinctPartitions(t, 4, 1)[0]
			assign(t, m, tp)
			log.Pause()
			defer log.Resume()
			ctx, cancel := short()
			defer cancel()
			return m.AddSegment(ctx, segment(tp, 1, 0, 99))
		}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.run(t)
			if err == nil {
				t.Fatal("the mutation succeeded")
			}
			if got := MayBeRecorded(err); got != tc.want {
				t.Errorf("MayBeRecorded(%v) = %v, want %v", err, got, tc.want)
			}
			if MayBeRecorded(fmt.Errorf("wrapped: %w", err)) != tc.want {
				t.Error("MayBeRecorded does not see through wrapping")
			}
		})
	}
	if MayBeRecorded(nil) || MayBeRecorded(errors.New("other")) {
		t.Error("MayBeRecorded of nil or a foreign error is true")
	}
}

// errDenied stands for a cluster's refusal of a write.
var errDenied = errors.New("TOPIC_AUTHORIZATION_FAILED: not authorized to access topics")

// deniedWriteLog refuses every record as a cluster refuses an unauthorized
// write: nothing appended.
type deniedWriteLog struct{ eventlog.Log }

func (deniedWriteLog) Publish(context.Context, int32, []byte) (int64, error) {
	return 0, &eventlog.RefusedError{Err: errDenied}
}

// failingLog fails every publish without saying whether it appended.
type failingLog struct{ eventlog.Log }

func (failingLog) Publish(context.Context, int32, []byte) (int64, error) {
	return 0, errors.New("connection reset while producing")
}

package topicbased

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/rlmm-go/rlmm"
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

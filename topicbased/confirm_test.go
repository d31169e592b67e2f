package topicbased

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/eventlog/memlog"
)

// TestUnconfirmedRefusalIsATimeout: a manager whose cache stopped (its
// log's delivery held back, as when the leader it fetches from is frozen)
// is asked to finish a segment that another manager added before the call
// began. Its cache refuses (unknown segment), and the log cannot confirm
// the refusal within the call's bound: the answer must not be that refusal,
// a stale read the history rules out (the cluster fault test's frozen
// broker phase caught it), but a timeout that published nothing.
func TestUnconfirmedRefusalIsATimeout(t *testing.T) {
	l := memlog.New(1)
	t.Cleanup(func() { _ = l.Close() })
	held := newPausableLog(l)
	a := startManager(t, Config{Log: l})
	b := startManager(t, Config{Log: held})
	tp := topicPartition("confirm", 1, 0)
	assign(t, a, tp)
	assign(t, b, tp)

	held.Pause()
	md := segment(tp, 1, 0, 99)
	must(t, a.AddSegment(testCtx(t), md))
	ctx, cancel := context.WithTimeout(testCtx(t), 300*time.Millisecond)
	err := b.UpdateSegment(ctx, update(md, rlmm.CopySegmentFinished))
	cancel()
	held.Resume()

	switch {
	case errors.Is(err, rlmm.ErrUnknownSegment):
		t.Fatalf("UpdateSegment answered the stale cache's refusal: %v", err)
	case !errors.Is(err, rlmm.ErrTimeout) || MayBeRecorded(err) || !strings.Contains(err.Error(), "nothing was published"):
		t.Fatalf("UpdateSegment = %v, want a timeout (rlmm.ErrTimeout) that published nothing", err)
	}
	must(t, b.Sync(testCtx(t), tp))
	list, err := b.ListSegments(tp)
	must(t, err)
	if len(list) != 1 || list[0].State != rlmm.CopySegmentStarted {
		t.Fatalf("after the refused call the segments are %v, want the one added, %s", list, rlmm.CopySegmentStarted)
	}
}

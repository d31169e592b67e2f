package fault

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/topicbased"
)

// The workload of the single-manager fault tests: mutators, each on a user
// partition of its own, add a segment then finish it, again and again, and
// after every acknowledged mutation read their partition back. What they
// saw is recorded for the checks and the figures.

// Classes of a mutation's result.
const (
	resultOK = "ok"
	// resultMaybe: the error says the event may be recorded (ErrTimeout
	// after publishing, a publish error, ErrClosed after publishing).
	resultMaybe = "maybe recorded"
	// resultNotRecorded: the error says nothing was published.
	resultNotRecorded = "not recorded"
	// resultUnclassified: the error does not say whether the event may be
	// recorded: a broken promise.
	resultUnclassified = "unclassified"
)

// classify says what a mutation's error promises about its event.
func classify(err error) string {
	if err == nil {
		return resultOK
	}
	text := err.Error()
	switch {
	case strings.Contains(text, "nothing was published") || strings.Contains(text, "publishes nothing"):
		return resultNotRecorded
	case strings.Contains(text, "may still be recorded") || strings.Contains(text, "may or may not be in the log") ||
		strings.Contains(text, "is in the log"):
		return resultMaybe
	}
	return resultUnclassified
}

// workload is the recorded state of a run of mutators over one manager.
type workload struct {
	m           *topicbased.Manager
	tps         []rlmm.TopicIDPartition
	consumeWait time.Duration
	// callTimeout is the ctx timeout of mutator i's calls (0: none, so
	// ConsumeWait bounds them).
	callTimeout func(i int) time.Duration

	mu           sync.Mutex
	acked        map[rlmm.SegmentID]rlmm.SegmentState // the highest acknowledged state
	maybe        map[rlmm.SegmentID]rlmm.SegmentState // the state of a call that may be recorded
	segs         map[rlmm.SegmentID]rlmm.SegmentMetadata
	ackTimes     map[int32][]time.Time // acknowledgements by metadata partition
	results      map[string]int
	examples     map[string]string // one error text per class
	maxOverrun   time.Duration     // the longest a call took past its bound
	maxLatency   time.Duration
	maxPending   time.Duration // the longest call that did not succeed
	reads        int
	notReady     int
	staleReads   []string
	unclassified []string

	stop atomic.Bool
	wg   sync.WaitGroup
}

func newWorkload(m *topicbased.Manager, tps []rlmm.TopicIDPartition, consumeWait time.Duration, callTimeout func(int) time.Duration) *workload {
	return &workload{m: m, tps: tps, consumeWait: consumeWait, callTimeout: callTimeout,
		acked: map[rlmm.SegmentID]rlmm.SegmentState{}, maybe: map[rlmm.SegmentID]rlmm.SegmentState{}, segs: map[rlmm.SegmentID]rlmm.SegmentMetadata{},
		ackTimes: map[int32][]time.Time{}, results: map[string]int{}, examples: map[string]string{}}
}

// start runs one mutator per user partition until halt.
func (w *workload) start() {
	for i, tp := range w.tps {
		w.wg.Go(func() { w.mutator(i, tp) })
	}
}

// halt stops the mutators and waits for their calls to end.
func (w *workload) halt() {
	w.stop.Store(true)
	w.wg.Wait()
}

func (w *workload) mutator(i int, tp rlmm.TopicIDPartition) {
	for k := int64(0); !w.stop.Load(); k++ {
		md := segment(tp, uuidN(uint64(tp.Partition)<<32|uint64(k)), k)
		w.mu.Lock()
		w.segs[md.ID] = md
		w.mu.Unlock()
		if !w.call(i, tp, md.ID, rlmm.CopySegmentStarted, func(ctx context.Context) error { return w.m.AddSegment(ctx, md) }) {
			continue
		}
		w.call(i, tp, md.ID, rlmm.CopySegmentFinished, func(ctx context.Context) error {
			return w.m.UpdateSegment(ctx, update(md, rlmm.CopySegmentFinished))
		})
	}
}

// call runs one mutation with mutator i's bound, records its result and, if
// it succeeded, checks the partition's reads. It reports success.
func (w *workload) call(i int, tp rlmm.TopicIDPartition, id rlmm.SegmentID, state rlmm.SegmentState, f func(context.Context) error) bool {
	bound := w.consumeWait
	ctx := context.Background()
	if d := w.callTimeout(i); d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
		bound = min(bound, d)
	}
	start := time.Now()
	err := f(ctx)
	took := time.Since(start)
	class := classify(err)
	w.mu.Lock()
	w.results[class]++
	w.maxLatency = max(w.maxLatency, took)
	w.maxOverrun = max(w.maxOverrun, took-bound)
	if err != nil {
		w.maxPending = max(w.maxPending, took)
		if _, ok := w.examples[class]; !ok {
			w.examples[class] = err.Error()
		}
		if class == resultMaybe {
			w.maybe[id] = state
		}
		if class == resultUnclassified && len(w.unclassified) < 10 {
			w.unclassified = append(w.unclassified, err.Error())
		}
	} else {
		if cur, ok := w.acked[id]; !ok || state > cur {
			w.acked[id] = state
		}
		mp := w.m.MetadataPartitionOf(tp)
		w.ackTimes[mp] = append(w.ackTimes[mp], time.Now())
	}
	w.mu.Unlock()
	if err == nil {
		w.checkReads(tp)
	}
	return err == nil
}

// checkReads reads tp and compares with every acknowledged mutation of it:
// each must be visible in its acknowledged state or a later one; ErrNotReady
// is an allowed answer.
func (w *workload) checkReads(tp rlmm.TopicIDPartition) {
	w.mu.Lock()
	want := map[rlmm.SegmentID]rlmm.SegmentState{}
	for id, st := range w.acked {
		if id.TopicIDPartition == tp {
			want[id] = st
		}
	}
	w.mu.Unlock()
	list, err := w.m.ListSegments(tp)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.reads++
	switch {
	case errors.Is(err, rlmm.ErrNotReady):
		w.notReady++
		return
	case err != nil:
		w.staleReads = append(w.staleReads, fmt.Sprintf("ListSegments(%s): %v", tp, err))
		return
	}
	got := map[rlmm.SegmentID]rlmm.SegmentState{}
	for _, s := range list {
		got[s.ID] = s.State
	}
	for id, st := range want {
		if g, ok := got[id]; !ok || g < st {
			if len(w.staleReads) < 10 {
				w.staleReads = append(w.staleReads, fmt.Sprintf("%s: read %v (present %v), acknowledged %s", id, g, ok, st))
			}
		}
	}
}

// ackedOn counts acknowledgements on the given metadata partitions in [from, to).
func (w *workload) ackedOn(parts []int32, from, to time.Time) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, p := range parts {
		for _, at := range w.ackTimes[p] {
			if !at.Before(from) && at.Before(to) {
				n++
			}
		}
	}
	return n
}

// firstAck returns the time of the first acknowledgement on the given
// lost replays the topic with a fresh manager over a fresh log and returns
// the acknowledged mutations it does not show, with the number checked. It
// also logs how many of the calls that may have been recorded were.
func (w *workload) lost(t *testing.T, c *cluster, topic string, partitions int32) (lost []string, checked int) {
	t.Helper()
	l := openLog(t, c, topic, partitions, nil)
	fresh := startManager(t, topicbased.Config{Log: l, ConsumeWait: testTimeout})
	defer func() { must(t, fresh.Close()) }()
	assign(t, fresh, w.tps...)
	w.mu.Lock()
	defer w.mu.Unlock()
	got := map[rlmm.SegmentID]rlmm.SegmentState{}
	for _, tp := range w.tps {
		list, err := fresh.ListSegments(tp)
		must(t, err)
		for _, s := range list {
			got[s.ID] = s.State
		}
	}
	for id, st := range w.acked {
		checked++
		if g, ok := got[id]; !ok || g < st {
			lost = append(lost, fmt.Sprintf("%s acknowledged %s, replayed %v (present %v)", id, st, g, ok))
		}
	}
	recorded := 0
	for id, st := range w.maybe {
		if g, ok := got[id]; ok && g >= st {
			recorded++
		}
	}
	t.Logf("of %d calls that ended with \"may still be recorded\", %d were in the log at the end", len(w.maybe), recorded)
	slices.Sort(lost)
	return lost, checked
}

// report logs the workload's figures and fails the test on a broken promise.
func (w *workload) report(t *testing.T, slack time.Duration) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	acked := 0
	for _, st := range w.acked {
		if st == rlmm.CopySegmentFinished {
			acked += 2
		} else {
			acked++
		}
	}
	t.Logf("mutations: %d acknowledged, %d maybe recorded, %d not recorded, %d unclassified; max latency %s, max pending (failed call) %s, max time past its bound %s",
		acked, w.results[resultMaybe], w.results[resultNotRecorded], w.results[resultUnclassified],
		w.maxLatency.Round(time.Millisecond), w.maxPending.Round(time.Millisecond), max(0, w.maxOverrun).Round(time.Millisecond))
	for _, class := range []string{resultMaybe, resultNotRecorded} {
		if ex, ok := w.examples[class]; ok {
			t.Logf("  a %q error: %s", class, ex)
		}
	}
	t.Logf("reads after acknowledgements: %d, %d answered ErrNotReady, %d stale or failed", w.reads, w.notReady, len(w.staleReads))
	if acked == 0 {
		t.Error("no mutation was acknowledged: the run checks nothing")
	}
	for _, u := range w.unclassified {
		t.Errorf("a pending mutation's error does not say whether it may be recorded: %s", u)
	}
	for _, s := range w.staleReads {
		t.Errorf("stale read: %s", s)
	}
	if w.maxOverrun > slack {
		t.Errorf("a mutation took %s past its bound (allowed slack %s)", w.maxOverrun, slack)
	}
}

// Package eventlogtest is the conformance suite of the eventlog.Log contract.
// Every implementation (memlog, filelog, kafkalog) runs it from its tests:
//
//	func TestConformance(t *testing.T) {
//		eventlogtest.Run(t, func(t *testing.T, partitions int32) eventlog.Log {
//			return mylog.New(partitions)
//		})
//	}
//
// The suite checks what the eventlog package documents: an id per log, dense offsets from 0,
// order per partition, replay then live delivery, exact Add and Remove,
// waiting past the high-water mark, the log start offset and Add below it
// (on a log that can delete records: Truncater), several subscriptions, concurrent
// publishers, Close and context cancellation unblocking calls, argument errors
// and values that are never aliased.
//
// It is meant to be run against a real Apache Kafka broker too, so record
// counts are small and every wait is bounded by a generous timeout rather
// than a tight one; nothing asserts on speed. It uses only the standard
// library and the rlmm and eventlog packages.
package eventlogtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/eventlog"
)

// Open creates a fresh, empty log with the given partition count. The suite
// closes it (and every subscription it opens) when the test ends; Open may
// also register its own cleanup with t.Cleanup.
type Open func(t *testing.T, partitions int32) eventlog.Log

// Timeouts of the suite. They bound waits for records that must come; they
// are generous because a real broker on a loaded machine runs the suite too.
const (
	// deliveryTimeout bounds the wait for records that must be delivered.
	deliveryTimeout = 30 * time.Second
	// quietPeriod is how long the suite watches for records that must NOT
	// be delivered. A longer period catches more bugs but slows the suite.
	quietPeriod = 300 * time.Millisecond
)

// Run runs every conformance test as a subtest of t, each on a fresh log.
func Run(t *testing.T, open Open) {
	tests := []struct {
		name string
		fn   func(t *testing.T, open Open)
	}{
		{"IDNamesTheLog", testIDNamesTheLog},
		{"OffsetsDenseFromZero", testOffsetsDenseFromZero},
		{"HighWaterMarks", testHighWaterMarks},
		{"StartOffsets", testStartOffsets},
		{"AddBelowStart", testAddBelowStart},
		{"OrderPerPartition", testOrderPerPartition},
		{"AddReplaysThenFollows", testAddReplaysThenFollows},
		{"AddPastHighWaterMarkWaits", testAddPastHighWaterMarkWaits},
		{"AddRestartsConsumedPartition", testAddRestartsConsumedPartition},
		{"RemoveStopsDelivery", testRemoveStopsDelivery},
		{"RemoveDropsFetchedRecords", testRemoveDropsFetchedRecords},
		{"ReAddResumesWhereAsked", testReAddResumesWhereAsked},
		{"SeveralSubscriptions", testSeveralSubscriptions},
		{"ConcurrentPublishers", testConcurrentPublishers},
		{"ValuesNotAliased", testValuesNotAliased},
		{"EmptyValue", testEmptyValue},
		{"InvalidArguments", testInvalidArguments},
		{"ContextCancelPoll", testContextCancelPoll},
		{"ContextCancelPublish", testContextCancelPublish},
		{"CloseUnblocksPoll", testCloseUnblocksPoll},
		{"SubscriptionCloseUnblocksPoll", testSubscriptionCloseUnblocksPoll},
		{"CloseWhilePublishing", testCloseWhilePublishing},
		{"UseAfterClose", testUseAfterClose},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, open) })
	}
}

// testIDNamesTheLog: every fresh log has an id of its own, not the zero
// one, the same on every call and after Close.
func testIDNamesTheLog(t *testing.T, open Open) {
	a, b := openLog(t, open, 2), openLog(t, open, 2)
	idA, idB := a.ID(), b.ID()
	if idA == rlmm.ZeroUuid || idB == rlmm.ZeroUuid {
		t.Fatalf("fresh logs have ids %s and %s: want neither the zero id", idA, idB)
	}
	if idA == idB {
		t.Fatalf("two fresh logs share the id %s", idA)
	}
	publish(t, a, 0, []byte("x"))
	if got := a.ID(); got != idA {
		t.Fatalf("ID() changed from %s to %s after a publish", idA, got)
	}
	if err := a.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if got := a.ID(); got != idA {
		t.Fatalf("ID() after Close = %s, want %s", got, idA)
	}
}

// --- helpers ---------------------------------------------------------------

// openLog opens a fresh log and closes it when the test ends.
func openLog(t *testing.T, open Open, partitions int32) eventlog.Log {
	t.Helper()
	l := open(t, partitions)
	if l == nil {
		t.Fatalf("Open returned a nil log")
	}
	if got := l.Partitions(); got != partitions {
		t.Fatalf("Partitions() = %d, want %d", got, partitions)
	}
	t.Cleanup(func() {
		if err := l.Close(); err != nil && !errors.Is(err, rlmm.ErrClosed) {
			t.Errorf("closing the log: %v", err)
		}
	})
	return l
}

// subscribe opens a subscription and closes it when the test ends (before
// the log, since cleanups run last-in first-out).
func subscribe(t *testing.T, l eventlog.Log) eventlog.Subscription {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), deliveryTimeout)
	defer cancel()
	sub, err := l.Subscribe(ctx)
	if err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	t.Cleanup(func() {
		if err := sub.Close(); err != nil && !errors.Is(err, rlmm.ErrClosed) {
			t.Errorf("closing the subscription: %v", err)
		}
	})
	return sub
}

// value is the deterministic value of record i of partition p in a test.
func value(p int32, i int) []byte {
	return fmt.Appendf(nil, "p%d-r%d", p, i)
}

// publish appends value to p and fails the test on error.
func publish(t *testing.T, l eventlog.Log, p int32, v []byte) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), deliveryTimeout)
	defer cancel()
	off, err := l.Publish(ctx, p, v)
	if err != nil {
		t.Fatalf("Publish(partition %d): %v", p, err)
	}
	return off
}

// publishN appends value(p, from..from+n-1) to p and checks the offsets.
func publishN(t *testing.T, l eventlog.Log, p int32, from, n int) {
	t.Helper()
	for i := from; i < from+n; i++ {
		if off := publish(t, l, p, value(p, i)); off != int64(i) {
			t.Fatalf("Publish(partition %d) record %d got offset %d, want %d", p, i, off, i)
		}
	}
}

// add calls sub.Add and fails the test on error.
func add(t *testing.T, sub eventlog.Subscription, p int32, offset int64) {
	t.Helper()
	if err := sub.Add(p, offset); err != nil {
		t.Fatalf("Add(%d, %d): %v", p, offset, err)
	}
}

// remove calls sub.Remove and fails the test on error.
func remove(t *testing.T, sub eventlog.Subscription, p int32) {
	t.Helper()
	if err := sub.Remove(p); err != nil {
		t.Fatalf("Remove(%d): %v", p, err)
	}
}

// pollUntil polls sub until it has collected at least n records or timeout
// passes (then the test fails), and returns what it collected. Every record
// is checked for a valid partition and offset.
func pollUntil(t *testing.T, sub eventlog.Subscription, n int, timeout time.Duration) []eventlog.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var got []eventlog.Record
	for len(got) < n {
		recs, err := sub.Poll(ctx)
		if err != nil {
			t.Fatalf("Poll after %d of %d records: %v", len(got), n, err)
		}
		for _, r := range recs {
			if r.Offset < 0 || r.Partition < 0 {
				t.Fatalf("Poll returned a record with partition %d offset %d", r.Partition, r.Offset)
			}
		}
		got = append(got, recs...)
	}
	return got
}

// pollQuiet polls sub for d and returns everything delivered meanwhile; a
// Poll ending with the deadline is the expected outcome.
func pollQuiet(t *testing.T, sub eventlog.Subscription, d time.Duration) []eventlog.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var got []eventlog.Record
	for {
		recs, err := sub.Poll(ctx)
		got = append(got, recs...)
		if err != nil {
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Poll: got %v, want a context deadline error", err)
			}
			return got
		}
	}
}

// pollUnblockedBy starts a Poll with ctx, lets it block, calls unblock, and
// checks that the Poll returns an error wrapping want within
// deliveryTimeout; what names the event for the failure message.
func pollUnblockedBy(t *testing.T, ctx context.Context, sub eventlog.Subscription, what string, unblock func(), want error) {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := sub.Poll(ctx)
		done <- err
	}()
	time.Sleep(50 * time.Millisecond) // let Poll block (not required for correctness)
	unblock()
	select {
	case err := <-done:
		if !errors.Is(err, want) {
			t.Fatalf("Poll after %s: got %v, want %v", what, err, want)
		}
	case <-time.After(deliveryTimeout):
		t.Fatalf("Poll did not return within %v of %s", deliveryTimeout, what)
	}
}

// checkSequence checks that recs (of one partition, in delivery order) are
// exactly the offsets from..from+len-1 with the values value(p, offset).
func checkSequence(t *testing.T, p int32, recs []eventlog.Record, from int64) {
	t.Helper()
	for i, r := range recs {
		want := from + int64(i)
		if r.Partition != p || r.Offset != want {
			t.Fatalf("record %d: got partition %d offset %d, want partition %d offset %d", i, r.Partition, r.Offset, p, want)
		}
		if !bytes.Equal(r.Value, value(p, int(want))) {
			t.Fatalf("partition %d offset %d: value %q, want %q", p, want, r.Value, value(p, int(want)))
		}
	}
}

// byPartition splits recs by partition, keeping delivery order.
func byPartition(recs []eventlog.Record) map[int32][]eventlog.Record {
	m := make(map[int32][]eventlog.Record)
	for _, r := range recs {
		m[r.Partition] = append(m[r.Partition], r)
	}
	return m
}

// highWaterMarks calls HighWaterMarks and fails the test on error.
func highWaterMarks(t *testing.T, l eventlog.Log, ps []int32) []int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), deliveryTimeout)
	defer cancel()
	hw, err := l.HighWaterMarks(ctx, ps)
	if err != nil {
		t.Fatalf("HighWaterMarks(%v): %v", ps, err)
	}
	if len(hw) != len(ps) {
		t.Fatalf("HighWaterMarks(%v) returned %d marks, want %d", ps, len(hw), len(ps))
	}
	return hw
}

// --- tests -----------------------------------------------------------------

func testOffsetsDenseFromZero(t *testing.T, open Open) {
	l := openLog(t, open, 3)
	// Interleave partitions so that a shared counter would show.
	for i := range 10 {
		for p := range int32(3) {
			if off := publish(t, l, p, value(p, i)); off != int64(i) {
				t.Fatalf("partition %d record %d: offset %d, want %d", p, i, off, i)
			}
		}
	}
}

func testHighWaterMarks(t *testing.T, open Open) {
	l := openLog(t, open, 3)
	if hw := highWaterMarks(t, l, []int32{0, 1, 2}); hw[0] != 0 || hw[1] != 0 || hw[2] != 0 {
		t.Fatalf("empty log: high-water marks %v, want [0 0 0]", hw)
	}
	publishN(t, l, 0, 0, 2)
	publishN(t, l, 2, 0, 5)
	tests := []struct {
		ask  []int32
		want []int64
	}{
		{[]int32{0, 1, 2}, []int64{2, 0, 5}},
		{[]int32{2, 0}, []int64{5, 2}},
		{[]int32{1}, []int64{0}},
		{[]int32{}, []int64{}},
	}
	for _, tc := range tests {
		hw := highWaterMarks(t, l, tc.ask)
		for i := range tc.want {
			if hw[i] != tc.want[i] {
				t.Errorf("HighWaterMarks(%v) = %v, want %v", tc.ask, hw, tc.want)
				break
			}
		}
	}
}

func testOrderPerPartition(t *testing.T, open Open) {
	l := openLog(t, open, 3)
	const n = 30
	for i := range n {
		for p := range int32(3) {
			publish(t, l, p, value(p, i))
		}
	}
	sub := subscribe(t, l)
	for p := range int32(3) {
		add(t, sub, p, 0)
	}
	got := byPartition(pollUntil(t, sub, 3*n, deliveryTimeout))
	for p := range int32(3) {
		if len(got[p]) != n {
			t.Fatalf("partition %d: %d records delivered, want %d", p, len(got[p]), n)
		}
		checkSequence(t, p, got[p], 0)
	}
	if extra := pollQuiet(t, sub, quietPeriod); len(extra) != 0 {
		t.Fatalf("%d records delivered beyond the %d published, first partition %d offset %d", len(extra), 3*n, extra[0].Partition, extra[0].Offset)
	}
}

func testAddReplaysThenFollows(t *testing.T, open Open) {
	l := openLog(t, open, 2)
	publishN(t, l, 1, 0, 5)
	sub := subscribe(t, l)
	add(t, sub, 1, 2)
	checkSequence(t, 1, pollUntil(t, sub, 3, deliveryTimeout), 2)
	// Live appends after the replay.
	for i := 5; i < 8; i++ {
		publishN(t, l, 1, i, 1)
		checkSequence(t, 1, pollUntil(t, sub, 1, deliveryTimeout), int64(i))
	}
	// Records of a partition not added are not delivered.
	publishN(t, l, 0, 0, 3)
	if extra := pollQuiet(t, sub, quietPeriod); len(extra) != 0 {
		t.Fatalf("delivered partition %d offset %d, which was never added", extra[0].Partition, extra[0].Offset)
	}
}

func testAddPastHighWaterMarkWaits(t *testing.T, open Open) {
	l := openLog(t, open, 1)
	publishN(t, l, 0, 0, 2)
	sub := subscribe(t, l)
	add(t, sub, 0, 4)
	if got := pollQuiet(t, sub, quietPeriod); len(got) != 0 {
		t.Fatalf("Add past the high-water mark delivered offset %d before it was written", got[0].Offset)
	}
	publishN(t, l, 0, 2, 4) // offsets 2..5
	checkSequence(t, 0, pollUntil(t, sub, 2, deliveryTimeout), 4)
}

func testAddRestartsConsumedPartition(t *testing.T, open Open) {
	l := openLog(t, open, 1)
	publishN(t, l, 0, 0, 6)
	sub := subscribe(t, l)
	add(t, sub, 0, 0)
	checkSequence(t, 0, pollUntil(t, sub, 6, deliveryTimeout), 0)
	// Add on a consumed partition restarts it, backwards here.
	add(t, sub, 0, 1)
	checkSequence(t, 0, pollUntil(t, sub, 5, deliveryTimeout), 1)
	// And forwards, skipping records not yet delivered.
	publishN(t, l, 0, 6, 4) // offsets 6..9
	add(t, sub, 0, 8)
	got := pollUntil(t, sub, 2, deliveryTimeout)
	if got[0].Offset != 8 {
		t.Fatalf("after Add(0, 8) the first record has offset %d, want 8", got[0].Offset)
	}
	checkSequence(t, 0, got, 8)
}

func testRemoveStopsDelivery(t *testing.T, open Open) {
	l := openLog(t, open, 2)
	sub := subscribe(t, l)
	add(t, sub, 0, 0)
	add(t, sub, 1, 0)
	publishN(t, l, 0, 0, 2)
	publishN(t, l, 1, 0, 2)
	pollUntil(t, sub, 4, deliveryTimeout)
	remove(t, sub, 0)
	remove(t, sub, 0) // removing twice is not an error
	publishN(t, l, 0, 2, 3)
	publishN(t, l, 1, 2, 1)
	got := pollUntil(t, sub, 1, deliveryTimeout)
	got = append(got, pollQuiet(t, sub, quietPeriod)...)
	for _, r := range got {
		if r.Partition == 0 {
			t.Fatalf("partition 0 offset %d delivered after Remove(0) returned", r.Offset)
		}
	}
	checkSequence(t, 1, got, 2)
	// Removing a partition that was never added is not an error either.
	remove(t, sub, 1)
	remove(t, sub, 1)
}

func testRemoveDropsFetchedRecords(t *testing.T, open Open) {
	// Records of p may already sit in the subscription's buffers when Remove
	// is called; none of them may come out of Poll afterwards.
	l := openLog(t, open, 2)
	sub := subscribe(t, l)
	add(t, sub, 0, 0)
	add(t, sub, 1, 0)
	publishN(t, l, 0, 0, 20)
	// Give a prefetching implementation time to fetch partition 0.
	time.Sleep(quietPeriod)
	remove(t, sub, 0)
	publishN(t, l, 1, 0, 1) // a marker: once it arrives, anything buffered would have too
	got := pollUntil(t, sub, 1, deliveryTimeout)
	got = append(got, pollQuiet(t, sub, quietPeriod)...)
	for _, r := range got {
		if r.Partition == 0 {
			t.Fatalf("partition 0 offset %d delivered after Remove(0) returned", r.Offset)
		}
	}
	checkSequence(t, 1, got, 0)
}

func testReAddResumesWhereAsked(t *testing.T, open Open) {
	l := openLog(t, open, 1)
	sub := subscribe(t, l)
	add(t, sub, 0, 0)
	publishN(t, l, 0, 0, 4)
	checkSequence(t, 0, pollUntil(t, sub, 4, deliveryTimeout), 0)
	remove(t, sub, 0)
	publishN(t, l, 0, 4, 4) // offsets 4..7 while removed
	tests := []struct {
		name string
		from int64
	}{
		{"where it stopped", 4},
		{"from the start", 0},
		{"in the middle", 6},
	}
	for _, tc := range tests {
		add(t, sub, 0, tc.from)
		got := pollUntil(t, sub, int(8-tc.from), deliveryTimeout)
		if len(got) != int(8-tc.from) {
			t.Fatalf("re-Add %s (offset %d): %d records, want %d", tc.name, tc.from, len(got), 8-tc.from)
		}
		checkSequence(t, 0, got, tc.from)
		remove(t, sub, 0)
	}
}

func testSeveralSubscriptions(t *testing.T, open Open) {
	l := openLog(t, open, 2)
	subs := []eventlog.Subscription{subscribe(t, l), subscribe(t, l), subscribe(t, l)}
	// Different assignments: all, only 1, only 0 from offset 3.
	add(t, subs[0], 0, 0)
	add(t, subs[0], 1, 0)
	add(t, subs[1], 1, 0)
	add(t, subs[2], 0, 3)
	publishN(t, l, 0, 0, 6)
	publishN(t, l, 1, 0, 6)
	all := byPartition(pollUntil(t, subs[0], 12, deliveryTimeout))
	checkSequence(t, 0, all[0], 0)
	checkSequence(t, 1, all[1], 0)
	checkSequence(t, 1, pollUntil(t, subs[1], 6, deliveryTimeout), 0)
	checkSequence(t, 0, pollUntil(t, subs[2], 3, deliveryTimeout), 3)
	// Closing one subscription does not disturb the others.
	if err := subs[1].Close(); err != nil {
		t.Fatalf("closing a subscription: %v", err)
	}
	publishN(t, l, 0, 6, 1)
	checkSequence(t, 0, pollUntil(t, subs[0], 1, deliveryTimeout), 6)
	checkSequence(t, 0, pollUntil(t, subs[2], 1, deliveryTimeout), 6)
}

func testConcurrentPublishers(t *testing.T, open Open) {
	const (
		publishers = 16
		perPub     = 25
		partitions = 4
	)
	l := openLog(t, open, partitions)
	type ack struct {
		p   int32
		off int64
		v   string
	}
	acks := make(chan ack, publishers*perPub)
	errs := make(chan error, publishers)
	var wg sync.WaitGroup
	for g := range publishers {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), deliveryTimeout)
			defer cancel()
			for i := range perPub {
				p := int32((g + i) % partitions)
				v := fmt.Sprintf("g%d-i%d", g, i)
				off, err := l.Publish(ctx, p, []byte(v))
				if err != nil {
					errs <- fmt.Errorf("publisher %d record %d: %w", g, i, err)
					return
				}
				acks <- ack{p, off, v}
			}
		})
	}
	wg.Wait()
	close(acks)
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	acked := make(map[int32]map[int64]string)
	for a := range acks {
		if acked[a.p] == nil {
			acked[a.p] = make(map[int64]string)
		}
		if prev, dup := acked[a.p][a.off]; dup {
			t.Fatalf("partition %d offset %d acknowledged twice (%q and %q)", a.p, a.off, prev, a.v)
		}
		acked[a.p][a.off] = a.v
	}
	sub := subscribe(t, l)
	ps := make([]int32, partitions)
	for p := range int32(partitions) {
		ps[p] = p
		add(t, sub, p, 0)
	}
	hw := highWaterMarks(t, l, ps)
	got := byPartition(pollUntil(t, sub, publishers*perPub, deliveryTimeout))
	seen := make(map[string]bool)
	for p := range int32(partitions) {
		if hw[p] != int64(len(acked[p])) {
			t.Errorf("partition %d: high-water mark %d, but %d records acknowledged", p, hw[p], len(acked[p]))
		}
		for i, r := range got[p] {
			if r.Offset != int64(i) {
				t.Fatalf("partition %d: record %d has offset %d (offsets not dense)", p, i, r.Offset)
			}
			if want := acked[p][r.Offset]; string(r.Value) != want {
				t.Fatalf("partition %d offset %d: value %q, acknowledged %q", p, r.Offset, r.Value, want)
			}
			if seen[string(r.Value)] {
				t.Fatalf("value %q delivered twice", r.Value)
			}
			seen[string(r.Value)] = true
		}
	}
	if len(seen) != publishers*perPub {
		t.Fatalf("%d distinct records delivered, want %d", len(seen), publishers*perPub)
	}
}

func testValuesNotAliased(t *testing.T, open Open) {
	l := openLog(t, open, 1)
	buf := []byte("original")
	publish(t, l, 0, buf)
	copy(buf, "XXXXXXXX") // the caller reuses its buffer after Publish
	subA, subB := subscribe(t, l), subscribe(t, l)
	add(t, subA, 0, 0)
	add(t, subB, 0, 0)
	a := pollUntil(t, subA, 1, deliveryTimeout)
	if string(a[0].Value) != "original" {
		t.Fatalf("stored value %q changed with the caller's buffer, want %q", a[0].Value, "original")
	}
	// The receiver owns what it got: scribbling on it changes nothing for
	// another subscription or a later replay.
	for i := range a[0].Value {
		a[0].Value[i] = 'Y'
	}
	if b := pollUntil(t, subB, 1, deliveryTimeout); string(b[0].Value) != "original" {
		t.Fatalf("second subscription got %q, want %q", b[0].Value, "original")
	}
	add(t, subA, 0, 0)
	if again := pollUntil(t, subA, 1, deliveryTimeout); string(again[0].Value) != "original" {
		t.Fatalf("replay got %q, want %q", again[0].Value, "original")
	}
}

func testEmptyValue(t *testing.T, open Open) {
	l := openLog(t, open, 1)
	publish(t, l, 0, []byte{})
	publish(t, l, 0, []byte("x"))
	sub := subscribe(t, l)
	add(t, sub, 0, 0)
	got := pollUntil(t, sub, 2, deliveryTimeout)
	if len(got[0].Value) != 0 || string(got[1].Value) != "x" {
		t.Fatalf("got values %q, %q; want \"\", \"x\"", got[0].Value, got[1].Value)
	}
}

func testInvalidArguments(t *testing.T, open Open) {
	l := openLog(t, open, 2)
	ctx, cancel := context.WithTimeout(context.Background(), deliveryTimeout)
	defer cancel()
	for _, p := range []int32{-1, 2, 1 << 30} {
		if _, err := l.Publish(ctx, p, []byte("v")); !errors.Is(err, rlmm.ErrInvalidArgument) {
			t.Errorf("Publish to partition %d of 2: got %v, want rlmm.ErrInvalidArgument", p, err)
		}
	}
	sub := subscribe(t, l)
	tests := []struct {
		p   int32
		off int64
	}{{-1, 0}, {2, 0}, {0, -1}}
	for _, tc := range tests {
		if err := sub.Add(tc.p, tc.off); !errors.Is(err, rlmm.ErrInvalidArgument) {
			t.Errorf("Add(%d, %d) on a log of 2 partitions: got %v, want rlmm.ErrInvalidArgument", tc.p, tc.off, err)
		}
	}
	// Nothing was appended by the failed calls.
	if hw := highWaterMarks(t, l, []int32{0, 1}); hw[0] != 0 || hw[1] != 0 {
		t.Fatalf("high-water marks %v after rejected publishes, want [0 0]", hw)
	}
}

func testContextCancelPoll(t *testing.T, open Open) {
	l := openLog(t, open, 1)
	sub := subscribe(t, l)
	add(t, sub, 0, 0)
	ctx, cancel := context.WithCancel(context.Background())
	pollUnblockedBy(t, ctx, sub, "its context being cancelled", cancel, context.Canceled)
	// The subscription still works afterwards.
	publishN(t, l, 0, 0, 1)
	checkSequence(t, 0, pollUntil(t, sub, 1, deliveryTimeout), 0)
}

func testContextCancelPublish(t *testing.T, open Open) {
	l := openLog(t, open, 1)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := l.Publish(ctx, 0, []byte("v")); !errors.Is(err, context.Canceled) {
		t.Fatalf("Publish with a cancelled context: got %v, want context.Canceled", err)
	}
	ctx, cancel = context.WithCancel(context.Background())
	cancel()
	if _, err := l.HighWaterMarks(ctx, []int32{0}); !errors.Is(err, context.Canceled) {
		t.Fatalf("HighWaterMarks with a cancelled context: got %v, want context.Canceled", err)
	}
	// A cancelled publish may or may not have appended; the log still works
	// and offsets stay dense.
	hw := highWaterMarks(t, l, []int32{0})
	if off := publish(t, l, 0, []byte("after")); off != hw[0] {
		t.Fatalf("publish after a cancelled one: offset %d, want the high-water mark %d", off, hw[0])
	}
}

func testCloseUnblocksPoll(t *testing.T, open Open) {
	l := open(t, 1)
	sub, err := l.Subscribe(context.Background())
	if err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	add(t, sub, 0, 0)
	pollUnblockedBy(t, context.Background(), sub, "the log closing", func() {
		if err := l.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}, rlmm.ErrClosed)
	if err := sub.Close(); err != nil && !errors.Is(err, rlmm.ErrClosed) {
		t.Fatalf("closing a subscription of a closed log: %v", err)
	}
}

func testSubscriptionCloseUnblocksPoll(t *testing.T, open Open) {
	l := openLog(t, open, 1)
	sub, err := l.Subscribe(context.Background())
	if err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	add(t, sub, 0, 0)
	pollUnblockedBy(t, context.Background(), sub, "its subscription closing", func() {
		if err := sub.Close(); err != nil {
			t.Errorf("subscription Close: %v", err)
		}
	}, rlmm.ErrClosed)
	if err := sub.Close(); err != nil && !errors.Is(err, rlmm.ErrClosed) {
		t.Fatalf("second subscription Close: %v", err)
	}
	if _, err := sub.Poll(context.Background()); !errors.Is(err, rlmm.ErrClosed) {
		t.Fatalf("Poll on a closed subscription: got %v, want rlmm.ErrClosed", err)
	}
	// The log is unaffected.
	publishN(t, l, 0, 0, 1)
}

func testCloseWhilePublishing(t *testing.T, open Open) {
	// Publishers race with Close: each call either succeeds or fails with
	// rlmm.ErrClosed (or, for a network log, an error that wraps it), and
	// none hangs. Acknowledged offsets stay unique.
	l := open(t, 2)
	const publishers = 8
	var wg sync.WaitGroup
	var mu sync.Mutex
	acked := make(map[[2]int64]bool)
	started := make(chan struct{}, publishers)
	errs := make(chan error, publishers)
	for g := range publishers {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), deliveryTimeout)
			defer cancel()
			p := int32(g % 2)
			for i := 0; ; i++ {
				if i == 1 {
					started <- struct{}{}
				}
				off, err := l.Publish(ctx, p, value(p, i))
				if err != nil {
					if !errors.Is(err, rlmm.ErrClosed) {
						errs <- fmt.Errorf("publisher %d: Publish racing Close: got %v, want rlmm.ErrClosed", g, err)
					}
					return
				}
				mu.Lock()
				key := [2]int64{int64(p), off}
				dup := acked[key]
				acked[key] = true
				mu.Unlock()
				if dup {
					errs <- fmt.Errorf("partition %d offset %d acknowledged twice", p, off)
					return
				}
			}
		})
	}
	for range publishers {
		select {
		case <-started:
		case <-time.After(deliveryTimeout):
			t.Fatalf("publishers did not get going within %v", deliveryTimeout)
		}
	}
	if err := l.Close(); err != nil {
		t.Errorf("Close while publishing: %v", err)
	}
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(deliveryTimeout):
		t.Fatalf("Publish calls still blocked %v after Close", deliveryTimeout)
	}
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func testUseAfterClose(t *testing.T, open Open) {
	l := open(t, 1)
	sub, err := l.Subscribe(context.Background())
	if err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	if err := sub.Close(); err != nil {
		t.Fatalf("subscription Close: %v", err)
	}
	if err := l.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := l.Close(); err != nil && !errors.Is(err, rlmm.ErrClosed) {
		t.Fatalf("second Close: got %v, want nil or rlmm.ErrClosed", err)
	}
	ctx := context.Background()
	if _, err := l.Publish(ctx, 0, []byte("v")); !errors.Is(err, rlmm.ErrClosed) {
		t.Errorf("Publish after Close: got %v, want rlmm.ErrClosed", err)
	}
	if _, err := l.Subscribe(ctx); !errors.Is(err, rlmm.ErrClosed) {
		t.Errorf("Subscribe after Close: got %v, want rlmm.ErrClosed", err)
	}
	if _, err := l.HighWaterMarks(ctx, []int32{0}); !errors.Is(err, rlmm.ErrClosed) {
		t.Errorf("HighWaterMarks after Close: got %v, want rlmm.ErrClosed", err)
	}
	if _, err := l.StartOffsets(ctx, []int32{0}); !errors.Is(err, rlmm.ErrClosed) {
		t.Errorf("StartOffsets after Close: got %v, want rlmm.ErrClosed", err)
	}
}

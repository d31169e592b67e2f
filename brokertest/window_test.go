package brokertest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// windowDelay is the plugin's test hook rlmm.serve.test.assign.delay.ms in
// TestNoOffsetOutOfRangeInTheAssignmentWindow: every new sidecar gets the
// broker's partitions this long after it answers, and every leadership
// change of the broker reaches the sidecar this long after the broker made
// it. Longer than a restarted broker takes from configuring the plugin to
// leading its partition (about 10 s here), so the consumers' first reads
// after a broker restart fall into the window too; below windowCallTimeout,
// so a read held for it is answered, not timed out.
const windowDelay = 20000

// windowCallTimeout is the plugin's rlmm.serve.call.timeout.ms in the test.
const windowCallTimeout = 30000

// TestNoOffsetOutOfRangeInTheAssignmentWindow holds open the windows in
// which a read can reach a sidecar that does not hold its partition (the
// plugin's test hook delays by windowDelay ms both the hand-over to a new
// sidecar and each leadership change of the broker) and reads remote
// offsets through them, with consumers that never reset
// (auto.offset.reset=none: kgo's NoResetOffset returns OffsetOutOfRange to
// the caller instead of recovering): after a kill -9 of the sidecar (the
// hand-over: reads wait for it) and across a restart of the broker (its
// leadership change: reads of the partition are refused NOT_ASSIGNED, a
// retriable ReplicaNotAvailable). A read answered "no segment" would be an
// OffsetOutOfRange here: there must be none, and every record must read
// back as produced. The plugin's log lines count the reads held by each
// window.
func TestNoOffsetOutOfRangeInTheAssignmentWindow(t *testing.T) {
	if requireMode(t) != modeRlmm {
		t.Skip("the sidecar (rlmm serve) exists only with rlmm's plugin: RLMM_BROKER_TEST=rlmm (make broker-test)")
	}
	ctx := testCtx(t)
	c := startClusterWith(t, 1, fmt.Sprintf("rlmm.config.rlmm.serve.test.assign.delay.ms=%d\nrlmm.config.rlmm.serve.call.timeout.ms=%d",
		windowDelay, windowCallTimeout))
	cl := c.client()
	tp := createTopic(ctx, t, cl, "window", []int32{1})

	const total = 4000
	produce(ctx, t, cl, tp.Topic, 0, total)
	ti := c.waitTiered(ctx, t, cl, tp, 0, 2)
	t.Logf("offsets 0..%d are remote only; the local log starts at %d", ti.remoteEnd, ti.localStart)
	log := filepath.Join(c.dir, "broker.log")

	// 1. The sidecar killed with -9: the plugin starts another, which
	// answers and then waits windowDelay ms for the partitions.
	pids, err := sidecars(c.dir)
	must(t, err)
	if len(pids) != 1 {
		t.Fatalf("%d rlmm serve processes under %s (%v), want the broker's one", len(pids), c.dir, pids)
	}
	must(t, syscall.Kill(pids[0], syscall.SIGKILL))
	t.Logf("killed rlmm serve pid %d with SIGKILL", pids[0])
	pid := waitHandOverStarts(ctx, t, log, "restarted", pids[0])
	held, err := c.readStrict(ctx, t, tp.Topic, total, []int64{0, ti.localStart / 2})
	must(t, err)
	if n := waitHandedOver(ctx, t, log, pid); n == 0 {
		t.Errorf("no read waited for the restarted sidecar pid %d to get the partitions: the window was not crossed", pid)
	} else {
		t.Logf("%d reads waited for the restarted sidecar pid %d; the consumers saw %d retriable fetch errors", n, pid, held)
	}

	// 2. The broker restarted: a new plugin instance, whose first sidecar
	// is handed over windowDelay ms after it answers, and gets the broker's
	// leadership change windowDelay ms after the broker made it. The
	// consumers start while the broker is down and fetch as soon as it
	// serves again.
	c.stopNode(1)
	before, err := grepFile(log, testHookHolding)
	must(t, err)
	type result struct {
		retriable int
		err       error
	}
	read := make(chan result, 1)
	go func() {
		n, err := c.readStrict(ctx, t, tp.Topic, total, []int64{0, ti.localStart / 2})
		read <- result{n, err}
	}()
	c.startNode(1)
	pid = waitHandOverStarts(ctx, t, log, "new", pids[0], pid)
	r := <-read
	must(t, r.err)
	n := waitHandedOver(ctx, t, log, pid)
	refused := waitChangeReached(ctx, t, log, len(before))
	t.Logf("after the broker's restart: %d reads waited for its new sidecar pid %d, %d reads of its partition were refused"+
		" NOT_ASSIGNED before its leadership change arrived; the consumers saw %d retriable fetch errors", n, pid, refused, r.retriable)
}

// testHookHolding is in the plugin's line when the test hook holds back a
// leadership change of the broker.
const testHookHolding = "holding back the leadership change"

// changeReached matches the plugin's line once a held-back leadership
// change reached the sidecar, with the reads refused so far.
var changeReached = regexp.MustCompile(`the leadership change of .* reached rlmm serve \((\d+) reads of partitions assigned here were refused`)

// waitChangeReached waits until the leadership change held back after the
// first skip hook lines reached the sidecar and returns how many reads of
// assigned partitions were refused NOT_ASSIGNED by then.
func waitChangeReached(ctx context.Context, t *testing.T, log string, skip int) int {
	t.Helper()
	n := -1
	waitFor(ctx, t, "the broker's held-back leadership change to reach its new sidecar", func() (bool, string, error) {
		held, err := grepFile(log, testHookHolding)
		if err != nil || len(held) <= skip {
			return false, fmt.Sprintf("%d changes held back", len(held)), err
		}
		lines, err := grepFile(log, "reached rlmm serve (")
		if err != nil {
			return false, "", err
		}
		// One line per change held back and sent, in order.
		if len(lines) < len(held) {
			return false, fmt.Sprintf("%d of %d held-back changes sent", len(lines), len(held)), nil
		}
		if m := changeReached.FindStringSubmatch(lines[len(lines)-1]); m != nil {
			n, _ = strconv.Atoi(m[1])
		}
		return n >= 0, "", nil
	})
	return n
}

// handOverWait matches the plugin's line when the test hook starts waiting
// before it hands a sidecar the partitions.
var handOverWait = regexp.MustCompile(`waiting \d+ ms before handing the (new|restarted) rlmm serve pid (\d+) the broker's partitions`)

// waitHandOverStarts waits for the plugin's hook line of a sidecar none of
// the pids in not ("new": a plugin instance's first, "restarted": after a
// death) and returns that sidecar's pid.
func waitHandOverStarts(ctx context.Context, t *testing.T, log, which string, not ...int) int {
	t.Helper()
	var pid int
	waitFor(ctx, t, "the plugin to hold back the partitions from a "+which+" sidecar", func() (bool, string, error) {
		lines, err := grepFile(log, "before handing the "+which+" rlmm serve pid")
		if err != nil {
			return false, "", err
		}
		for _, l := range lines {
			m := handOverWait.FindStringSubmatch(l)
			if m == nil {
				continue
			}
			if p, _ := strconv.Atoi(m[2]); !slices.Contains(not, p) {
				pid = p
			}
		}
		return pid != 0, fmt.Sprintf("%d hook lines", len(lines)), nil
	})
	t.Logf("the plugin holds back the partitions from the %s sidecar pid %d for %d ms", which, pid, windowDelay)
	return pid
}

// handedOver matches the plugin's line once it handed a sidecar the
// partitions, with the number of reads that waited for it.
var handedOver = regexp.MustCompile(`rlmm serve pid (\d+)\b[^(]*\((\d+) reads waited`)

// waitHandedOver waits for the plugin's hand-over line of sidecar pid and
// returns how many reads waited for it.
func waitHandedOver(ctx context.Context, t *testing.T, log string, pid int) int {
	t.Helper()
	var n = -1
	waitFor(ctx, t, fmt.Sprintf("the plugin to hand the partitions to sidecar pid %d", pid), func() (bool, string, error) {
		lines, err := grepFile(log, "rlmm serve pid "+strconv.Itoa(pid), "reads waited")
		if err != nil {
			return false, "", err
		}
		for _, l := range lines {
			if m := handedOver.FindStringSubmatch(l); m != nil && m[1] == strconv.Itoa(pid) {
				n, _ = strconv.Atoi(m[2])
			}
		}
		return n >= 0, "", nil
	})
	return n
}

// readStrict reads offsets from..to-1 of partition 0 with one consumer per
// start offset in froms, at the same time, each one never resetting its
// offset (kgo's NoResetOffset: auto.offset.reset=none). An
// OffsetOutOfRange, a record that is not the one produced at its offset, or
// a gap is its error. It returns how many other (retriable) fetch errors
// the consumers saw. It may run on a goroutine of its own.
func (c *cluster) readStrict(ctx context.Context, t *testing.T, topic string, to int64, froms []int64) (int, error) {
	var (
		mu        sync.Mutex
		retriable int
		wg        sync.WaitGroup
		failures  = make([]error, len(froms))
	)
	for i, from := range froms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n, err := c.readFrom(ctx, topic, from, to)
			mu.Lock()
			retriable += n
			mu.Unlock()
			failures[i] = err
		}()
	}
	wg.Wait()
	if err := errors.Join(failures...); err != nil {
		return retriable, err
	}
	for _, from := range froms {
		t.Logf("read offsets %d..%d of %s-0 back with auto.offset.reset=none: no OffsetOutOfRange, every record as produced", from, to-1, topic)
	}
	return retriable, nil
}

// readFrom is one consumer of readStrict.
func (c *cluster) readFrom(ctx context.Context, topic string, from, to int64) (int, error) {
	return c.readPartitionFrom(ctx, topic, 0, from, to)
}

// readPartitionFrom reads offsets from..to-1 of one partition of topic with
// a consumer that never resets its offset (auto.offset.reset=none), as
// readStrict's, and returns how many retriable fetch errors it saw.
func (c *cluster) readPartitionFrom(ctx context.Context, topic string, partition int32, from, to int64) (int, error) {
	cl, err := c.newClient(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {partition: kgo.NewOffset().At(from)}}),
		kgo.ConsumeResetOffset(kgo.NoResetOffset()), kgo.FetchMaxBytes(8<<20))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	rctx, cancel := context.WithTimeout(ctx, waitTimeout)
	defer cancel()
	next, retriable := from, 0
	for next < to {
		fs := cl.PollFetches(rctx)
		if err := rctx.Err(); err != nil {
			return retriable, fmt.Errorf("consuming %s-%d from %d: got up to offset %d of %d: %w", topic, partition, from, next, to, err)
		}
		var bad error
		fs.EachError(func(_ string, _ int32, err error) {
			if errors.Is(err, kerr.OffsetOutOfRange) {
				bad = fmt.Errorf("consuming %s-%d from %d: OffsetOutOfRange at offset %d: %w", topic, partition, from, next, err)
				return
			}
			retriable++
		})
		if bad != nil {
			return retriable, bad
		}
		fs.EachRecord(func(r *kgo.Record) {
			if bad != nil {
				return
			}
			if r.Offset != next {
				bad = fmt.Errorf("consuming %s-%d from %d: offset %d where %d was expected", topic, partition, from, r.Offset, next)
				return
			}
			if !bytes.Equal(r.Key, recordKey(next)) || !bytes.Equal(r.Value, recordValue(next)) {
				bad = fmt.Errorf("consuming %s-%d from %d: the record at offset %d is not the one produced (key %q)", topic, partition, from, next, r.Key)
				return
			}
			next++
		})
		if bad != nil {
			return retriable, bad
		}
	}
	return retriable, nil
}

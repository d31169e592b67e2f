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
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// windowDelay is how long each assignment change of the broker is held
// back on its way to rlmm serve in
// TestNoOffsetOutOfRangeInTheAssignmentWindow (by the seam the test runs as
// the plugin's rlmm.serve.binary, assignDelaySeam): the change waits in the
// plugin's outbox that long before the server records it. Longer than a restarted broker takes from configuring the plugin to
// leading its partition (about 10 s here), so the consumers' first reads
// after a broker restart fall into the window; below windowCallTimeout, so
// a change held for it is acknowledged, not timed out.
const windowDelay = 20 * time.Second

// windowCallTimeout is the plugin's rlmm.serve.call.timeout.ms in the test.
const windowCallTimeout = 30000

// TestNoOffsetOutOfRangeInTheAssignmentWindow reads remote offsets, with
// consumers that never reset (auto.offset.reset=none: kgo's NoResetOffset
// returns OffsetOutOfRange to the caller instead of recovering), through
// the two windows in which a read could reach a sidecar without its
// partition: after a kill -9 of the sidecar (reads wait for the restarted
// one, which knows the broker's partitions from its hosted set) and across
// a restart of the broker (its leadership change is held back in the
// server windowDelay, so reads come while it waits in the plugin's outbox;
// the new sidecar knows the partition from the hosted set its predecessor
// wrote). A read answered "no segment" would be an OffsetOutOfRange here:
// there must be none, and every record must read back as produced. The
// plugin's log lines count the reads that fell into each window.
func TestNoOffsetOutOfRangeInTheAssignmentWindow(t *testing.T) {
	if requireMode(t) != modeRlmm {
		t.Skip("the sidecar (rlmm serve) exists only with rlmm's plugin: RLMM_BROKER_TEST=rlmm (make broker-test)")
	}
	ctx := testCtx(t)
	c := startClusterWith(t, 1, fmt.Sprintf("%s\nrlmm.config.rlmm.serve.call.timeout.ms=%d",
		assignDelaySeam(t, windowDelay), windowCallTimeout))
	cl := c.client()
	tp := createTopic(ctx, t, cl, "window", []int32{1})

	const total = 4000
	produce(ctx, t, cl, tp.Topic, 0, total)
	ti := c.waitTiered(ctx, t, cl, tp, 0, 2)
	t.Logf("offsets 0..%d are remote only; the local log starts at %d", ti.remoteEnd, ti.localStart)
	log := filepath.Join(c.nodeDir(1), "broker.log")

	// 1. The sidecar killed with -9: the plugin starts another; reads wait
	// for it within their bound.
	killed := c.killSidecar(t)
	t.Logf("killed rlmm serve pid %d with SIGKILL", killed)
	held, err := c.readStrict(ctx, t, tp.Topic, total, []int64{0, ti.localStart / 2})
	must(t, err)
	pid, n := waitCallsGo(ctx, t, log, "restarted", killed)
	// A read in the window either waited for the restarted sidecar or was
	// refused NOT_READY by it while it caught up (a retriable fetch error).
	if n+held == 0 {
		t.Errorf("no call waited for the restarted sidecar pid %d and no fetch was refused: the window was not crossed", pid)
	} else {
		t.Logf("%d calls waited for the restarted sidecar pid %d; the consumers saw %d retriable fetch errors", n, pid, held)
	}

	// 2. The broker restarted: a new plugin instance and sidecar; the
	// broker's leadership change waits windowDelay in the server while the
	// consumers, started while the broker was down, fetch as soon as it
	// serves again.
	c.stopNode(1)
	before, err := grepFile(log, outboxAcknowledged)
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
	r := <-read
	must(t, r.err)
	inWindow := waitChangeReached(ctx, t, log, len(before))
	if inWindow == 0 {
		t.Errorf("no read came while the restarted broker's leadership change was on its way: the window was not crossed")
	}
	t.Logf("after the broker's restart: %d reads of its partition came while its leadership change was held back;"+
		" the consumers saw %d retriable fetch errors", inWindow, r.retriable)
}

// outboxAcknowledged is in the plugin's line when the server acknowledged
// an assignment change of its outbox.
const outboxAcknowledged = "reached rlmm serve ("

// changeReached matches that line, with the reads of the change's
// partitions that came while it was on its way.
var changeReached = regexp.MustCompile(`the leadership change of .* reached rlmm serve \((\d+) reads of its partitions came while it was on its way`)

// waitChangeReached waits for a leadership change acknowledged after the
// first skip lines and returns the largest count of reads in its window.
func waitChangeReached(ctx context.Context, t *testing.T, log string, skip int) int {
	t.Helper()
	n := -1
	waitFor(ctx, t, "the restarted broker's leadership change to reach its sidecar", func() (bool, string, error) {
		lines, err := grepFile(log, outboxAcknowledged)
		if err != nil || len(lines) <= skip {
			return false, fmt.Sprintf("%d changes acknowledged", len(lines)), err
		}
		for _, l := range lines[skip:] {
			if m := changeReached.FindStringSubmatch(l); m != nil {
				if k, _ := strconv.Atoi(m[1]); k > n {
					n = k
				}
			}
		}
		return n >= 0, "", nil
	})
	return n
}

// callsGo matches the plugin's line when calls go to a (new or restarted)
// sidecar, with the calls that waited for it.
var callsGo = regexp.MustCompile(`calls go to the (new|restarted) rlmm serve pid (\d+) at .* \((\d+) calls waited for it\)`)

// waitCallsGo waits for the plugin's line of a which ("new", "restarted")
// sidecar none of the pids in not, and returns its pid and the calls that
// waited for it.
func waitCallsGo(ctx context.Context, t *testing.T, log, which string, not ...int) (int, int) {
	t.Helper()
	pid, n := 0, 0
	waitFor(ctx, t, "calls to go to a "+which+" sidecar", func() (bool, string, error) {
		lines, err := grepFile(log, "calls go to the "+which+" rlmm serve pid")
		if err != nil {
			return false, "", err
		}
		for _, l := range lines {
			m := callsGo.FindStringSubmatch(l)
			if m == nil {
				continue
			}
			if p, _ := strconv.Atoi(m[2]); !slices.Contains(not, p) {
				pid = p
				n, _ = strconv.Atoi(m[3])
			}
		}
		return pid != 0, fmt.Sprintf("%d lines", len(lines)), nil
	})
	return pid, n
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

package kafkalog

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/eventlog"
	"github.com/rlmm-go/rlmm/eventlog/eventlogtest"
	"github.com/rlmm-go/rlmm/test/kafkatest"
)

// The tests of this file run against a real Apache Kafka broker: the one
// `make test` starts (test/kafkatest's command), or one of the test's own.

func TestConformanceRealKafka(t *testing.T) {
	addr := realBootstrap(t)
	eventlogtest.Run(t, func(t *testing.T, partitions int32) eventlog.Log {
		return truncatingLog{openLog(t, testConfig(t, []string{addr}, partitions))}
	})
}

func TestSubscriptionAddedWhileProducingRealKafka(t *testing.T) {
	addr := realBootstrap(t)
	testSubscriptionAddedWhileProducing(t, openLog(t, testConfig(t, []string{addr}, 4)))
}

func TestOpenRealKafkaCreatesTopic(t *testing.T) {
	addr := realBootstrap(t)
	l := openLog(t, testConfig(t, []string{addr}, 0))
	if l.Partitions() != DefaultNumPartitions {
		t.Fatalf("Partitions() = %d, want Kafka's default %d", l.Partitions(), DefaultNumPartitions)
	}
	// A second log on the existing topic sees the same count.
	again := openLog(t, Config{BootstrapServers: []string{addr}, Topic: l.Topic(), ConnectTimeout: testTimeout})
	if again.Partitions() != DefaultNumPartitions {
		t.Fatalf("reopened Partitions() = %d, want %d", again.Partitions(), DefaultNumPartitions)
	}
}

// privateBroker starts a one-node broker of its own (test/kafkatest, so
// restarting it disturbs no other package's tests that share the broker of
// make test), stopped when the test ends.
func privateBroker(t *testing.T) *kafkatest.Cluster {
	t.Helper()
	realBootstrap(t) // the jars and Java are there only where make test runs a broker
	return kafkatest.StartT(t, kafkatest.Config{}, 5*time.Minute)
}

// TestBrokerRestartWhilePublishing restarts a real broker while publishers
// run and a subscription follows every partition: no acknowledged record is
// lost or duplicated, publishing resumes, and the subscription delivers the
// whole log in order across the restart.
func TestBrokerRestartWhilePublishing(t *testing.T) {
	started := time.Now()
	c := privateBroker(t)
	t.Logf("private broker started in %s", time.Since(started).Round(time.Millisecond))
	l := openLog(t, testConfig(t, c.Bootstrap(), 4))
	testRestartWhilePublishing(t, l, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		if err := c.Restart(ctx); err != nil {
			t.Errorf("restarting the broker: %v", err)
		}
	})
}

// testRestartWhilePublishing runs publishers on every partition of l and a
// subscription following them, calls restart once enough records are
// acknowledged, and checks the log and the delivered records afterwards.
func testRestartWhilePublishing(t *testing.T, l *Log, restart func()) {
	const parts = 4
	if l.Partitions() != parts {
		t.Fatalf("the restart test needs %d partitions, the log has %d", parts, l.Partitions())
	}
	sub := subscribeLog(t, l)
	for p := range int32(parts) {
		if err := sub.Add(p, 0); err != nil {
			t.Fatal(err)
		}
	}

	type ack struct {
		p   int32
		off int64
	}
	var (
		mu     sync.Mutex
		acked  = map[ack]string{}
		counts [parts]int
		failed int
		stop   = make(chan struct{})
		wg     sync.WaitGroup
	)
	for p := range int32(parts) {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				v := fmt.Sprintf("p%d-%d", p, i)
				ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
				off, err := l.Publish(ctx, p, []byte(v))
				cancel()
				mu.Lock()
				if err != nil {
					failed++ // allowed while the broker is down; it may or may not be written
				} else {
					acked[ack{p, off}] = v
					counts[p]++
				}
				mu.Unlock()
				if err != nil {
					time.Sleep(50 * time.Millisecond)
				}
			}
		})
	}
	snapshot := func() [parts]int {
		mu.Lock()
		defer mu.Unlock()
		return counts
	}
	waitEach := func(what string, min [parts]int) {
		deadline := time.Now().Add(testTimeout)
		for {
			c := snapshot()
			ok := true
			for p := range parts {
				if c[p] < min[p] {
					ok = false
				}
			}
			if ok {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: acknowledged per partition %v, want at least %v", what, c, min)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	// The follower: polls all the time, also while the broker is down.
	var (
		dmu       sync.Mutex
		delivered []eventlog.Record
	)
	pollErr := make(chan error, 1)
	pollCtx, pollCancel := context.WithCancel(context.Background())
	defer pollCancel()
	var pollWG sync.WaitGroup
	pollWG.Go(func() {
		for {
			recs, err := sub.Poll(pollCtx)
			if err != nil {
				if pollCtx.Err() == nil {
					pollErr <- err
				}
				return
			}
			dmu.Lock()
			delivered = append(delivered, recs...)
			dmu.Unlock()
		}
	})

	waitEach("before the restart", [parts]int{50, 50, 50, 50})
	restartStart := time.Now()
	restart()
	t.Logf("broker restarted in %s", time.Since(restartStart).Round(time.Millisecond))
	before := snapshot()
	waitEach("after the restart (publishing must resume)", [parts]int{before[0] + 50, before[1] + 50, before[2] + 50, before[3] + 50})
	close(stop)
	wg.Wait()

	// The log holds every acknowledged record, once.
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	hw, err := l.HighWaterMarks(ctx, []int32{0, 1, 2, 3})
	if err != nil {
		t.Fatalf("HighWaterMarks after the restart: %v", err)
	}
	total := int64(0)
	for _, h := range hw {
		total += h
	}
	deadline := time.Now().Add(testTimeout)
	for {
		dmu.Lock()
		n := int64(len(delivered))
		dmu.Unlock()
		if n >= total {
			break
		}
		select {
		case err := <-pollErr:
			t.Fatalf("the subscription failed across the restart: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("the subscription delivered %d of the %d records in the log", n, total)
		}
	}
	pollCancel()
	pollWG.Wait()

	mu.Lock()
	defer mu.Unlock()
	next := make([]int64, parts)
	seen := map[string]bool{}
	for _, r := range delivered {
		if r.Offset != next[r.Partition] {
			t.Fatalf("the subscription delivered %d/%d, want offset %d: a gap or a repeat across the restart", r.Partition, r.Offset, next[r.Partition])
		}
		next[r.Partition]++
		if seen[string(r.Value)] {
			t.Fatalf("value %q is in the log twice (offset %d/%d): the idempotent producer duplicated it", r.Value, r.Partition, r.Offset)
		}
		seen[string(r.Value)] = true
		if v, ok := acked[ack{r.Partition, r.Offset}]; ok && v != string(r.Value) {
			t.Fatalf("%d/%d holds %q but Publish acknowledged %q there", r.Partition, r.Offset, r.Value, v)
		}
	}
	for a, v := range acked {
		if a.off >= next[a.p] {
			t.Fatalf("acknowledged record %q at %d/%d is missing (partition has %d records)", v, a.p, a.off, next[a.p])
		}
	}
	t.Logf("restart test: %d acknowledged, %d failed publishes while the broker was down, %d records in the log, high-water marks %v",
		len(acked), failed, len(delivered), hw)
}

// TestOpenRealKafkaRefusesAnotherPartitionCount: an existing topic whose
// partition count differs from the configured one (as rlmm serve always
// configures one, Kafka's 50 by default) is refused with both counts named,
// and the topic is left as it was; it never maps user partitions onto a
// count other than the configured one.
func TestOpenRealKafkaRefusesAnotherPartitionCount(t *testing.T) {
	addr := realBootstrap(t)
	existing := openLog(t, testConfig(t, []string{addr}, 4))
	for _, configured := range []int32{DefaultNumPartitions, 3, 5} {
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		l, err := Open(ctx, Config{BootstrapServers: []string{addr}, Topic: existing.Topic(), NumPartitions: configured, ConnectTimeout: testTimeout})
		cancel()
		if err == nil {
			_ = l.Close()
			t.Fatalf("Open with %d partitions configured over a topic of 4 succeeded", configured)
		}
		if !errors.Is(err, rlmm.ErrInvalidArgument) || !strings.Contains(err.Error(), "has 4 partitions") ||
			!strings.Contains(err.Error(), fmt.Sprintf("num.partitions is %d", configured)) || !strings.Contains(err.Error(), existing.Topic()) {
			t.Fatalf("Open with %d configured: %v; want rlmm.ErrInvalidArgument naming the topic, 4 and %d", configured, err, configured)
		}
		t.Logf("configured %d: %v", configured, err)
	}
	// The topic is as it was; the right count, or none, opens it.
	for _, configured := range []int32{4, 0} {
		l := openLog(t, Config{BootstrapServers: []string{addr}, Topic: existing.Topic(), NumPartitions: configured, ConnectTimeout: testTimeout})
		if l.Partitions() != 4 {
			t.Fatalf("Open with %d configured: %d partitions, want 4", configured, l.Partitions())
		}
	}
}

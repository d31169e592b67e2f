package kafkalog

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rlmm-go/rlmm/eventlog"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/goleak"
)

// envBootstrap names the broker of the real-broker tests, set by `make test`
// (see docs/bench/kafkalog.md for the commands).
const envBootstrap = "RLMM_KAFKA_BOOTSTRAP"

// testTimeout bounds every wait of these tests.
const testTimeout = 60 * time.Second

func TestMain(m *testing.M) {
	code := m.Run()
	closeClusters()
	if code == 0 {
		// The only kgo goroutine excused: the fetch manager of a stopped
		// consumer session (every Add of a consumed partition and every
		// Remove stops one) sometimes keeps waiting for a fetch source of
		// its closed client to cancel. It belongs to franz-go v1.22.3 (the
		// loop PR twmb/franz-go#1339 made wait for pending sources), not
		// to a client this package forgot to close: an unclosed client
		// would still show its metadata and connection-reaper goroutines.
		if err := goleak.Find(goleak.IgnoreTopFunction("github.com/twmb/franz-go/pkg/kgo.(*fetchManager).manageFetchConcurrency")); err != nil {
			fmt.Fprintln(os.Stderr, "goroutine leak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

var (
	clustersMu sync.Mutex
	clusters   = map[int]*kfake.Cluster{}
)

// fakeCluster returns the package's shared in-process kfake cluster with n
// brokers, started on first use and closed by TestMain.
func fakeCluster(t testing.TB, n int) *kfake.Cluster {
	t.Helper()
	clustersMu.Lock()
	defer clustersMu.Unlock()
	if c, ok := clusters[n]; ok {
		return c
	}
	c, err := kfake.NewCluster(kfake.NumBrokers(n))
	if err != nil {
		t.Fatalf("starting kfake with %d brokers: %v", n, err)
	}
	clusters[n] = c
	return c
}

func closeClusters() {
	clustersMu.Lock()
	defer clustersMu.Unlock()
	for n, c := range clusters {
		c.Close()
		delete(clusters, n)
	}
}

// realBootstrap returns the address of the real Kafka broker of `make test`,
// or skips (fails in CI) when there is none.
func realBootstrap(t testing.TB) string {
	t.Helper()
	addr := os.Getenv(envBootstrap)
	if addr == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal(envBootstrap + " unset in CI: make test starts the broker")
		}
		t.Skip(envBootstrap + " unset: no real Kafka broker to test against; start one with " +
			"`go run ./test/kafkatest/cmd/kafkatest start <dir>` and export the variable it prints (make test does this)")
	}
	return addr
}

var topicSeq atomic.Int64

// uniqueTopic returns a topic name no other test of this process uses.
func uniqueTopic(t testing.TB) string {
	name := strings.NewReplacer("/", ".", " ", "_", "#", "_").Replace(t.Name())
	if len(name) > 150 {
		name = name[:150]
	}
	return fmt.Sprintf("rlmm-test.%d.%d.%s", time.Now().UnixNano()%1e9, topicSeq.Add(1), name)
}

// testConfig is a Config for a fresh topic with the given partition count
// (0: the default) at the given addresses.
func testConfig(t testing.TB, addrs []string, partitions int32) Config {
	return Config{
		BootstrapServers: addrs,
		Topic:            uniqueTopic(t),
		NumPartitions:    partitions,
		ConnectTimeout:   testTimeout,
	}
}

// openLog opens a log with cfg and closes it when the test ends.
func openLog(t testing.TB, cfg Config) *Log {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	l, err := Open(ctx, cfg)
	if err != nil {
		t.Fatalf("Open(%v, topic %s): %v", cfg.BootstrapServers, cfg.Topic, err)
	}
	t.Cleanup(func() {
		_ = l.Close()
		deleteTopic(t, l.cfg)
	})
	return l
}

// deleteTopic removes a test's topic, so the broker that make test shares
// between packages does not pile up thousands of partitions. Best effort:
// a topic another openLog of the same test already deleted is fine.
func deleteTopic(t testing.TB, cfg Config) {
	opts, err := cfg.clientOpts("cleanup")
	if err != nil {
		return
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := kadm.NewClient(cl).DeleteTopic(ctx, cfg.Topic); err != nil && !errors.Is(err, kerr.UnknownTopicOrPartition) {
		t.Logf("deleting test topic %s: %v", cfg.Topic, err)
	}
}

// subscribeLog opens a subscription closed when the test ends.
func subscribeLog(t testing.TB, l *Log) eventlog.Subscription {
	t.Helper()
	s, err := l.Subscribe(context.Background())
	if err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// pollN polls until n records arrived or the timeout passed.
func pollN(t testing.TB, s eventlog.Subscription, n int) []eventlog.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	var out []eventlog.Record
	for len(out) < n {
		recs, err := s.Poll(ctx)
		if err != nil {
			t.Fatalf("Poll after %d of %d records: %v", len(out), n, err)
		}
		out = append(out, recs...)
	}
	return out
}

// recordValue is the value the tests publish as record i of partition p.
func recordValue(p int32, i int) []byte { return fmt.Appendf(nil, "p%d-r%d", p, i) }

// publishContinuously starts, under wg, one publisher per partition of l
// until ctx ends: record i of partition p is recordValue(p, i), one every
// pause. After each, published(p, i, offset) checks or records it. A failed
// publish (ctx still live) or check is sent to errs (one slot per partition
// needed) and stops that publisher.
func publishContinuously(ctx context.Context, wg *sync.WaitGroup, l *Log, pause time.Duration, errs chan<- error, published func(p int32, i int, off int64) error) {
	for p := range l.Partitions() {
		wg.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				off, err := l.Publish(ctx, p, recordValue(p, i))
				if err != nil {
					if ctx.Err() == nil {
						errs <- fmt.Errorf("publish %d to %d: %w", i, p, err)
					}
					return
				}
				if err := published(p, i, off); err != nil {
					errs <- err
					return
				}
				time.Sleep(pause)
			}
		})
	}
}

// truncatingLog is the log with DeleteRecordsBefore (Kafka's DeleteRecords
// through kadm), so the conformance suite can move the log start offset.
type truncatingLog struct{ *Log }

// DeleteRecordsBefore deletes the records of partition below offset.
func (l truncatingLog) DeleteRecordsBefore(ctx context.Context, partition int32, offset int64) error {
	return deleteRecords(ctx, l.Log, partition, offset)
}

// deleteRecords moves the log start offset of partition to offset.
func deleteRecords(ctx context.Context, l *Log, partition int32, offset int64) error {
	var os kadm.Offsets
	os.Add(kadm.Offset{Topic: l.cfg.Topic, Partition: partition, At: offset})
	resp, err := l.admin.DeleteRecords(ctx, os)
	if err != nil {
		return fmt.Errorf("DeleteRecords %s-%d before %d: %w", l.cfg.Topic, partition, offset, err)
	}
	r, ok := resp.Lookup(l.cfg.Topic, partition)
	switch {
	case !ok:
		return fmt.Errorf("DeleteRecords %s-%d: no answer for the partition", l.cfg.Topic, partition)
	case r.Err != nil:
		return fmt.Errorf("DeleteRecords %s-%d before %d: %w", l.cfg.Topic, partition, offset, r.Err)
	case r.LowWatermark != offset:
		return fmt.Errorf("DeleteRecords %s-%d before %d: the start is now %d", l.cfg.Topic, partition, offset, r.LowWatermark)
	}
	return nil
}

package fault

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/goleak"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/eventlog/kafkalog"
	"github.com/rlmm-go/rlmm/test/faultdisk"
	"github.com/rlmm-go/rlmm/test/kafkatest"
	"github.com/rlmm-go/rlmm/topicbased"
	"github.com/rlmm-go/rlmm/wire"
)

const (
	// envFault turns the tests on: TestMain then starts the cluster.
	envFault = "RLMM_FAULT_TESTS"
	// envKeep keeps the cluster's directory after the run.
	envKeep = "RLMM_FAULT_KEEP"
	// envDir names the cluster's directory instead of a temporary one: a
	// cluster there (one the kafkatest command started) is used as it is
	// and left running; an empty directory gets a new cluster, stopped at
	// the end like a temporary one.
	envDir = "RLMM_FAULT_DIR"
	// nodes is the size of the cluster.
	nodes = 3
	// testTimeout bounds every wait for something that must happen.
	testTimeout = 2 * time.Minute
	// startTimeout bounds the cluster's start (the jars resolved the
	// first time, three JVMs on a busy machine).
	startTimeout = 10 * time.Minute
)

var (
	// repoRoot is the module root (the tests run in test/fault/).
	repoRoot, _ = filepath.Abs("../..")
	// theCluster is the cluster TestMain started (nil when not running):
	// the shared fault cluster when the cluster fault tests are on.
	theCluster *cluster
	// sharedFC is the fault cluster (nil unless envClusterFaults is 1).
	sharedFC *fcluster
	// clusterErr is why the cluster could not be started.
	clusterErr error
)

func TestMain(m *testing.M) {
	switch {
	case os.Getenv(envClusterFaults) == "1":
		// One cluster for every test: the tiered one of the cluster
		// fault tests, with the SASL_SSL listener the others need.
		fc, stop, err := startFaultCluster()
		if err != nil {
			clusterErr = err
			break
		}
		sharedFC = fc
		theCluster = &cluster{k: fc.k, bootstrap: fc.k.Bootstrap(), sasl: fc.k.SecureBootstrap(), security: fc.k.Security().Dir, stopFn: stop}
	case os.Getenv(envFault) == "1":
		theCluster, clusterErr = startCluster()
	}
	code := m.Run()
	if theCluster != nil {
		theCluster.stop()
	}
	if code == 0 {
		// The one franz-go goroutine excused, as in eventlog/kafkalog: the
		// fetch manager of a stopped consumer session of a closed client
		// (franz-go v1.22.3) can still be waiting for its sources to cancel.
		if err := goleak.Find(leakOptions...); err != nil {
			fmt.Fprintln(os.Stderr, "goroutine leak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// requireCluster returns the cluster, or skips the test with the reason
// (fails it when CI=true) when the fault tests are off or the cluster could
// not start.
func requireCluster(t *testing.T) *cluster {
	t.Helper()
	var reason string
	switch {
	case errors.Is(clusterErr, faultdisk.ErrNoPrivilege):
		reason = clusterErr.Error()
	case clusterErr != nil:
		t.Fatalf("the three-node Kafka cluster did not start: %v", clusterErr)
	case theCluster == nil:
		reason = envFault + " and " + envClusterFaults + " are not 1: these tests start a three-node Kafka cluster (test/kafkatest) and kill its nodes; `make fault-test` runs them"
	}
	if reason != "" {
		if os.Getenv("CI") == "true" {
			t.Fatal(reason + " (CI=true: the fault tests must run; scripts/test.sh has a step for them)")
		}
		t.Skip(reason)
	}
	return theCluster
}

// cluster is the three-node cluster of test/kafkatest, every node a broker
// and a controller voter, with a SASL_SSL/SCRAM listener.
type cluster struct {
	k         *kafkatest.Cluster
	bootstrap []string // PLAINTEXT addresses, node i at index i-1
	sasl      []string // SASL_SSL addresses
	security  string   // directory of the CA, keys and users.properties
	keep      bool     // keep the directory
	reuse     bool     // a cluster of RLMM_FAULT_DIR that was running: leave it so
	stopFn    func()   // the shared fault cluster's stop
}

// clusterConfig is the cluster the tests need.
var clusterConfig = kafkatest.Config{Nodes: nodes, Security: kafkatest.SASLSCRAM}

func startCluster() (*cluster, error) {
	if reason := kafkatest.CannotRun(); reason != "" {
		return nil, errors.New(reason)
	}
	dir, keep := os.Getenv(envDir), os.Getenv(envKeep) == "1"
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	start := time.Now()
	c := &cluster{keep: keep}
	switch {
	case dir != "" && hasCluster(dir):
		k, err := kafkatest.Open(dir)
		if err != nil {
			return nil, err
		}
		if cfg := k.Config(); cfg.Nodes != nodes || cfg.Security != kafkatest.SASLSCRAM {
			return nil, fmt.Errorf("%s holds a %d-node %s cluster; the fault tests need %d nodes with %s", dir, cfg.Nodes, cfg.Security, nodes, kafkatest.SASLSCRAM)
		}
		if !k.Running() {
			if err := k.Restart(ctx); err != nil {
				return nil, err
			}
		}
		c.k, c.reuse = k, true
	default:
		if dir == "" {
			var err error
			if dir, err = os.MkdirTemp("", "rlmm-fault-"); err != nil {
				return nil, err
			}
		}
		k, err := kafkatest.Start(ctx, dir, clusterConfig, os.Stderr)
		if err != nil {
			if !keep {
				_ = os.RemoveAll(dir)
			}
			return nil, err
		}
		c.k = k
	}
	c.bootstrap, c.sasl, c.security = c.k.Bootstrap(), c.k.SecureBootstrap(), c.k.Security().Dir
	fmt.Fprintf(os.Stderr, "test/fault: %d-node cluster up in %s at %s (directory %s)\n", nodes, time.Since(start).Round(time.Millisecond), strings.Join(c.bootstrap, ","), dir)
	return c, nil
}

// hasCluster reports whether dir holds a cluster of test/kafkatest.
func hasCluster(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "cluster.json"))
	return err == nil
}

func (c *cluster) stop() {
	if c.stopFn != nil {
		c.stopFn()
		return
	}
	if c.reuse {
		fmt.Fprintf(os.Stderr, "test/fault: left the cluster in %s running (%s)\n", c.k.Dir(), envDir)
		return
	}
	// Stop continues a node a failed test left paused, so it can act on
	// SIGTERM.
	c.k.Stop()
	if pids := c.k.PIDs(); len(pids) > 0 {
		fmt.Fprintf(os.Stderr, "test/fault: processes %v of the cluster still run\n", pids)
	}
	if c.keep {
		fmt.Fprintf(os.Stderr, "test/fault: kept %s\n", c.k.Dir())
		return
	}
	_ = os.RemoveAll(c.k.Dir())
}

// admin returns a kadm client over the PLAINTEXT listeners, closed at the
// end of the test.
func (c *cluster) admin(t testing.TB) *kadm.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.bootstrap...), kgo.MetadataMinAge(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

// partitionInfo is a partition's leader and in-sync replicas.
type partitionInfo struct {
	leader int32
	isr    []int32
}

// describe returns each partition's leader and ISR.
func describe(ctx context.Context, adm *kadm.Client, topic string) (map[int32]partitionInfo, error) {
	topics, err := adm.ListTopics(ctx, topic)
	if err != nil {
		return nil, err
	}
	d, ok := topics[topic]
	if !ok || d.Err != nil {
		return nil, fmt.Errorf("topic %s: %v", topic, d.Err)
	}
	out := map[int32]partitionInfo{}
	for p, pd := range d.Partitions {
		out[p] = partitionInfo{leader: pd.Leader, isr: slices.Sorted(slices.Values(pd.ISR))}
	}
	return out, nil
}

// mostLeader returns the node leading most partitions of topic and those
// partitions.
func mostLeader(t testing.TB, adm *kadm.Client, topic string) (int32, []int32) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	parts, err := describe(ctx, adm, topic)
	if err != nil {
		t.Fatal(err)
	}
	led := map[int32][]int32{}
	for p, pi := range parts {
		led[pi.leader] = append(led[pi.leader], p)
	}
	best := int32(-1)
	for n, ps := range led {
		if n >= 0 && (best < 0 || len(ps) > len(led[best]) || (len(ps) == len(led[best]) && n < best)) {
			best = n
		}
	}
	if best < 0 {
		t.Fatalf("no partition of %s has a leader: %v", topic, parts)
	}
	slices.Sort(led[best])
	return best, led[best]
}

// waitFullISR waits until every partition of topic has all nodes in sync
// and a leader, and returns how long that took.
func waitFullISR(t testing.TB, adm *kadm.Client, topic string) time.Duration {
	t.Helper()
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	var last string
	for {
		parts, err := describe(ctx, adm, topic)
		full := err == nil && len(parts) > 0
		for p, pi := range parts {
			if pi.leader < 0 || len(pi.isr) != nodes {
				full = false
				last = fmt.Sprintf("partition %d: leader %d, ISR %v", p, pi.leader, pi.isr)
			}
		}
		if full {
			return time.Since(start)
		}
		if err != nil {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			t.Fatalf("topic %s did not get all %d replicas in sync within %s: %s", topic, nodes, testTimeout, last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// leadersMovedWithin watches, for at most d, whether every partition of
// topic gets a leader other than node n, and returns when that happened
// (false if it did not). Each look is bounded, so a paused node that a
// metadata request reaches costs a look, not the watch.
func leadersMovedWithin(adm *kadm.Client, topic string, n int32, d time.Duration) (time.Duration, bool) {
	start := time.Now()
	for time.Since(start) < d {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		parts, err := describe(ctx, adm, topic)
		cancel()
		moved := err == nil && len(parts) > 0
		for _, pi := range parts {
			if pi.leader == n || pi.leader < 0 {
				moved = false
			}
		}
		if moved {
			return time.Since(start), true
		}
		time.Sleep(200 * time.Millisecond)
	}
	return d, false
}

var topicSeq atomic.Int64

// uniqueTopic is a metadata topic name no other test uses.
func uniqueTopic(t testing.TB) string {
	return fmt.Sprintf("rlmm-fault.%d.%d.%s", time.Now().UnixNano()%1e9, topicSeq.Add(1), strings.ReplaceAll(t.Name(), "/", "."))
}

// openLog opens a kafkalog over the PLAINTEXT listeners, closed at the end of
// the test. A zero replication factor and min ISR take kafkalog's defaults,
// which on three brokers are 3 and 2.
func openLog(t testing.TB, c *cluster, topic string, partitions int32, logger *slog.Logger) *kafkalog.Log {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	l, err := kafkalog.Open(ctx, kafkalog.Config{BootstrapServers: c.bootstrap, Topic: topic, NumPartitions: partitions,
		ConnectTimeout: testTimeout, Logger: logger})
	if err != nil {
		t.Fatalf("kafkalog.Open(%s): %v", topic, err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// checkTopicSettings fails the test unless topic has replication factor 3
// and min.insync.replicas 2.
func checkTopicSettings(t testing.TB, adm *kadm.Client, topic string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	topics, err := adm.ListTopics(ctx, topic)
	must(t, err)
	for p, pd := range topics[topic].Partitions {
		if len(pd.Replicas) != 3 {
			t.Fatalf("partition %d of %s has %d replicas, want 3", p, topic, len(pd.Replicas))
		}
	}
	rc, err := adm.DescribeTopicConfigs(ctx, topic)
	must(t, err)
	cfg, err := rc.On(topic, nil)
	must(t, err)
	for _, kv := range cfg.Configs {
		if kv.Key == "min.insync.replicas" && kv.MaybeValue() != "2" {
			t.Fatalf("%s has min.insync.replicas=%s, want 2", topic, kv.MaybeValue())
		}
	}
}

// startManager starts a topic-based manager over l, closed at the end of the
// test unless the test closes it first.
func startManager(t testing.TB, cfg topicbased.Config) *topicbased.Manager {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	m, err := topicbased.Start(ctx, cfg)
	if err != nil {
		t.Fatalf("topicbased.Start: %v", err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m
}

// assign makes m host tps (as leader) and waits until each is ready.
func assign(t testing.TB, m *topicbased.Manager, tps ...rlmm.TopicIDPartition) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	must(t, m.OnPartitionLeadershipChanges(ctx, tps, nil))
	for _, tp := range tps {
		if err := m.WaitReady(ctx, tp); err != nil {
			t.Fatalf("WaitReady(%s): %v", tp, err)
		}
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// uuidN returns a deterministic valid Uuid numbered n.
func uuidN(n uint64) rlmm.Uuid {
	var u rlmm.Uuid
	binary.BigEndian.PutUint64(u[:8], 0x2000+n)
	binary.BigEndian.PutUint64(u[8:], n*0x9e3779b97f4a7c15+11)
	return u
}

// userPartitions returns count user partitions of one topic, spread over
// every metadata partition of a topic with n partitions (round robin).
func userPartitions(t testing.TB, n int32, count int) []rlmm.TopicIDPartition {
	t.Helper()
	need := (count + int(n) - 1) / int(n)
	byMP := make([][]rlmm.TopicIDPartition, n)
	topicID := uuidN(uint64(time.Now().UnixNano() % 1e12))
	filled := 0
	for p := int32(0); filled < int(n) && p < 1_000_000; p++ {
		tp := rlmm.TopicIDPartition{TopicID: topicID, Topic: "faults", Partition: p}
		mp := wire.MetadataPartition(tp, n)
		if len(byMP[mp]) < need {
			byMP[mp] = append(byMP[mp], tp)
			if len(byMP[mp]) == need {
				filled++
			}
		}
	}
	if filled < int(n) {
		t.Fatalf("could not spread %d user partitions over %d metadata partitions", count, n)
	}
	out := make([]rlmm.TopicIDPartition, count)
	for i := range out {
		out[i] = byMP[i%int(n)][i/int(n)]
	}
	return out
}

// segment returns a COPY_SEGMENT_STARTED segment of tp numbered k.
func segment(tp rlmm.TopicIDPartition, id rlmm.Uuid, k int64) rlmm.SegmentMetadata {
	start := k * 100
	return rlmm.SegmentMetadata{
		ID:          rlmm.SegmentID{TopicIDPartition: tp, ID: id},
		StartOffset: start, EndOffset: start + 99, MaxTimestampMs: 1000 + start, BrokerID: 1,
		EventTimestampMs: 500 + start, SizeInBytes: 100, State: rlmm.CopySegmentStarted,
		LeaderEpochs:  []rlmm.EpochStart{{Epoch: 0, StartOffset: start}},
		TxnIndexEmpty: true,
	}
}

// update moves md to state.
func update(md rlmm.SegmentMetadata, state rlmm.SegmentState) rlmm.SegmentUpdate {
	return rlmm.SegmentUpdate{ID: md.ID, EventTimestampMs: md.EventTimestampMs + 1, State: state, BrokerID: 2}
}

// captureLog is a slog handler that keeps every record's text (message and
// attributes) for the secret scan, and forwards nothing.
type captureLog struct {
	mu    *sync.Mutex
	buf   *bytes.Buffer
	attrs []slog.Attr
	group string
}

func newCaptureLog() *captureLog { return &captureLog{mu: &sync.Mutex{}, buf: &bytes.Buffer{}} }

// Enabled captures every level, debug included (franz-go logs at debug).
func (h *captureLog) Enabled(context.Context, slog.Level) bool { return true }

// Handle appends the record as one text line.
func (h *captureLog) Handle(_ context.Context, r slog.Record) error {
	var b bytes.Buffer
	th := slog.NewTextHandler(&b, &slog.HandlerOptions{Level: slog.LevelDebug})
	var hh slog.Handler = th.WithAttrs(h.attrs)
	if h.group != "" {
		hh = hh.WithGroup(h.group)
	}
	_ = hh.Handle(context.Background(), r)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.buf.Write(b.Bytes())
	return nil
}

// WithAttrs returns a handler that adds attrs.
func (h *captureLog) WithAttrs(attrs []slog.Attr) slog.Handler {
	c := *h
	c.attrs = append(slices.Clip(h.attrs), attrs...)
	return &c
}

// WithGroup returns a handler that qualifies later attributes.
func (h *captureLog) WithGroup(name string) slog.Handler {
	c := *h
	c.group = name
	return &c
}

func (h *captureLog) String() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.buf.String()
}

// testLogger returns a logger that writes to the test's output when
// RLMM_TEST_LOG=1, else nil (discard).
func testLogger(t testing.TB) *slog.Logger {
	if os.Getenv("RLMM_TEST_LOG") != "1" {
		return nil
	}
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

type tWriter struct{ t testing.TB }

func (w tWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(b)))
	return len(b), nil
}

// leakOptions excuse the one franz-go goroutine eventlog/kafkalog excuses
// (see TestMain).
var leakOptions = []goleak.Option{
	goleak.IgnoreTopFunction("github.com/twmb/franz-go/pkg/kgo.(*fetchManager).manageFetchConcurrency"),
}

// checkNoLeak makes the test fail if any goroutine it started is left when
// all its cleanups have run (registered first, it runs last).
func checkNoLeak(t *testing.T) {
	t.Helper()
	before := goleak.IgnoreCurrent()
	t.Cleanup(func() {
		opts := append(slices.Clip(leakOptions), before)
		if sharedFC != nil {
			// The shared cluster's proxies carry its own traffic on
			// connections made meanwhile (a broker's, a sidecar's): they
			// are the cluster's, ended by its Net's Close after the run
			// (TestMain's check has no such excuse).
			opts = append(opts,
				goleak.IgnoreAnyFunction("github.com/Shopify/toxiproxy/v2.(*ToxicLink).read"),
				goleak.IgnoreAnyFunction("github.com/Shopify/toxiproxy/v2.(*ToxicLink).write"),
				goleak.IgnoreAnyFunction("github.com/Shopify/toxiproxy/v2/toxics.(*ToxicStub).Run"),
				goleak.IgnoreAnyFunction("github.com/rlmm-go/rlmm/test/faultnet.(*Net).handle"))
		}
		if err := goleak.Find(opts...); err != nil {
			t.Errorf("goroutines left after Close: %v", err)
		} else {
			t.Logf("no goroutine left after Close (goleak)")
		}
	})
}

package brokertest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/goleak"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/eventlog"
	"github.com/rlmm-go/rlmm/eventlog/kafkalog"
	"github.com/rlmm-go/rlmm/internal/view"
	"github.com/rlmm-go/rlmm/test/kafkatest"
	"github.com/rlmm-go/rlmm/wire"
)

const (
	// envMode names the RLMM under test: modeRlmm or modeKafka.
	envMode = "RLMM_BROKER_TEST"
	// defaultVersion is the Kafka version of the tests when
	// RLMM_KAFKA_VERSION (kafkatest.EnvVersion) names none.
	defaultVersion = "4.3.1"
	modeKafka      = "kafka"
	modeRlmm       = "rlmm"

	// segmentBytes is the topics' segment.bytes: Kafka 4.x's minimum.
	segmentBytes = 1 << 20
	// valueBytes is the size of every record value: about a thousand
	// records fill a segment.
	valueBytes = 1000
	// waitTimeout bounds every wait for something the broker must do.
	waitTimeout = 3 * time.Minute
	// testTimeout bounds a whole test.
	testTimeout = 8 * time.Minute
	// startTimeout bounds a cluster's first start (its jars resolved, its
	// nodes formatted and answering) and each node's later starts.
	startTimeout = 4 * time.Minute
	// brokerHeap is every broker JVM's heap.
	brokerHeap = "384m"
)

var (
	// repoRoot is the module root (the tests run in test/broker/).
	repoRoot, _ = filepath.Abs(filepath.Join("..", ".."))
	// rlmmBinary is the rlmm command built by TestMain ("" when skipped).
	rlmmBinary string
	// pluginJar is rlmm's broker plugin (mode rlmm only).
	pluginJar string
	// setupErr is why TestMain could not build what the tests need.
	setupErr error
)

func TestMain(m *testing.M) {
	var tmp string
	mode := os.Getenv(envMode)
	if (mode == modeKafka || mode == modeRlmm) && kafkatest.CannotRun() == "" {
		tmp, setupErr = setup(mode)
	}
	code := m.Run()
	if tmp != "" {
		_ = os.RemoveAll(tmp)
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goroutines leaked:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// setup builds the rlmm binary and, for mode rlmm, the plugin
// (scripts/plugin.sh build, which skips Maven when nothing changed).
func setup(mode string) (string, error) {
	tmp, err := os.MkdirTemp("", "rlmm-brokertest-")
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	cache := &kafkatest.Cache{RepoRoot: repoRoot}
	bin := filepath.Join(tmp, "rlmm")
	if err := cache.RLMMBinary(ctx, bin); err != nil {
		return tmp, err
	}
	rlmmBinary = bin
	if mode != modeRlmm {
		return tmp, nil
	}
	pluginJar, err = cache.PluginJar(ctx)
	return tmp, err
}

// requireMode returns the RLMM under test, or skips the test with the reason
// (fails it when CI=true) if none is selected.
func requireMode(t *testing.T) string {
	t.Helper()
	mode := os.Getenv(envMode)
	if mode != modeKafka && mode != modeRlmm {
		reason := fmt.Sprintf("broker test needs %s=rlmm (rlmm's plugin) or %s=kafka (Kafka's own RLMM), got %q; "+
			"make broker-test and make broker-test-kafka set it", envMode, envMode, mode)
		if os.Getenv("CI") == "true" {
			t.Fatal(reason)
		}
		t.Skip(reason)
	}
	kafkatest.Require(t)
	if setupErr != nil {
		t.Fatalf("setup: %v", setupErr)
	}
	return mode
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// kafkaVersion is the Kafka version the tests run (RLMM_KAFKA_VERSION, else
// defaultVersion).
func kafkaVersion() string {
	if v := os.Getenv(kafkatest.EnvVersion); v != "" {
		return v
	}
	return defaultVersion
}

// cluster is a tiered-storage Kafka cluster (of kafkaVersion) run by
// test/kafkatest.
type cluster struct {
	t    *testing.T
	kc   *kafkatest.Cluster
	mode string
	// rlmm is the RLMM the brokers run from the cluster's first start:
	// mode, but for a test that starts on another (TestRollingMigration
	// starts on Kafka's).
	rlmm      string
	version   string // the brokers' Kafka version
	dir       string
	nodes     int
	addrs     []string // broker address of node i+1
	remoteDir string   // the file-system RSM's root (rsm.config.dir)
	// rsm is the remote storage manager: rsmLocal (Kafka's
	// LocalTieredStorage), rsmFixture (test/broker/fixture-rsm) or rsmAiven.
	rsm string

	mu sync.Mutex
	// nodeExtra are more server.properties lines of one node, written at
	// its next start after every other line (editNodeExtra).
	nodeExtra map[int]string
}

// clusterOptions are the settings of a test's cluster beside its size.
type clusterOptions struct {
	// rlmm is the RLMM of the first start (modeKafka or modeRlmm); the
	// test's mode when empty.
	rlmm string
	// extra are server.properties lines of every node, after extraConfig
	// (a key of both takes extra's value).
	extra string
	// aiven, when set, makes Aiven's RSM on this bucket the cluster's RSM.
	aiven *kafkatest.AivenS3
}

// startCluster starts a cluster of nodes nodes in a temporary directory and
// stops it when the test ends (printing the logs' tails if it failed).
func startCluster(t *testing.T, nodes int) *cluster {
	t.Helper()
	return startClusterOpts(t, nodes, clusterOptions{})
}

// startClusterWith is startCluster with more server.properties lines for
// every broker (after extraConfig, so a key of both takes extra's value).
func startClusterWith(t *testing.T, nodes int, extra string) *cluster {
	t.Helper()
	return startClusterOpts(t, nodes, clusterOptions{extra: extra})
}

// startClusterOpts starts a cluster of nodes nodes with o.
func startClusterOpts(t *testing.T, nodes int, o clusterOptions) *cluster {
	t.Helper()
	mode := requireMode(t)
	if o.rlmm == "" {
		o.rlmm = mode
	}
	c := &cluster{t: t, mode: mode, rlmm: o.rlmm, version: kafkaVersion(), nodes: nodes, nodeExtra: map[int]string{}}
	cfg := kafkatest.Config{
		Version:    c.version,
		Nodes:      nodes,
		Tiered:     true,
		RLMM:       kafkatest.RLMMKafka,
		Heap:       brokerHeap,
		Extra:      strings.TrimSpace(extraConfig + "\n" + o.extra),
		NodeExtra:  c.extraOf,
		RLMMBinary: rlmmBinary,
	}
	if o.rlmm == modeRlmm {
		cfg.RLMM, cfg.PluginJar = kafkatest.RLMMPlugin, pluginJar
	}
	c.rsm = kafkatest.DefaultRSM(c.version)
	if o.aiven != nil {
		// A name of the bucket's own: each test tiers to a new bucket.
		cfg.RSM = rsmAiven + "-" + o.aiven.Bucket
		kafkatest.RegisterRSM(cfg.RSM, kafkatest.AivenRSM(*o.aiven))
		c.rsm = rsmAiven
	}
	c.kc = kafkatest.StartT(t, cfg, startTimeout)
	c.dir, c.addrs, c.remoteDir = c.kc.Dir(), c.kc.Bootstrap(), c.kc.RemoteDir()
	for n := 1; n <= nodes; n++ {
		c.checkVersion(n)
	}
	t.Logf("%d-node Kafka %s cluster (%s RLMM, %s RSM) at %s in %s", nodes, c.version, c.rlmm, c.rsm,
		strings.Join(c.addrs, ","), c.dir)
	return c
}

// extraOf is node's own server.properties lines (kafkatest's NodeExtra).
func (c *cluster) extraOf(node int) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nodeExtra[node]
}

// editNodeExtra changes node's own server.properties lines, written at its
// next start after every other line (so a key of them wins).
func (c *cluster) editNodeExtra(node int, edit func(lines string) string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.nodeExtra[node] = edit(c.nodeExtra[node])
}

// kafkaVersionLine is Kafka's AppInfoParser line naming the version of the
// jars a broker runs (test/kafkatest logs it at INFO into broker.log).
var kafkaVersionLine = regexp.MustCompile(`Kafka version: (\S+)`)

// checkVersion checks that node n runs the cluster's Kafka version: every
// "Kafka version:" line of its broker.log (the broker's own, and its
// clients' in the same JVM) names c.version, and there is one.
func (c *cluster) checkVersion(n int) {
	c.t.Helper()
	lines, err := grepFile(filepath.Join(c.nodeDir(n), "broker.log"), "Kafka version: ")
	if err != nil {
		c.t.Fatalf("node %d: %v", n, err)
	}
	if len(lines) == 0 {
		c.t.Fatalf("node %d: no \"Kafka version:\" line in its broker.log: which version runs is unknown", n)
	}
	for _, l := range lines {
		if m := kafkaVersionLine.FindStringSubmatch(l); m == nil || m[1] != c.version {
			c.t.Fatalf("node %d runs another Kafka than %s: %q", n, c.version, l)
		}
	}
}

// extraConfig is added to every broker: metadata topic small enough for
// quick reads and the fastest remote fetch wait.
const extraConfig = "rlmm.config.remote.log.metadata.topic.num.partitions=10"

// nodeDir is node i's directory (1-based).
func (c *cluster) nodeDir(i int) string { return c.kc.Node(i).Dir() }

func (c *cluster) stopNode(i int) {
	c.t.Helper()
	start := time.Now()
	c.kc.StopNode(i)
	c.t.Logf("node %d stopped in %s", i, time.Since(start).Round(time.Millisecond))
}

func (c *cluster) startNode(i int) {
	c.t.Helper()
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	must(c.t, c.kc.StartNode(ctx, i))
	c.checkVersion(i)
	c.t.Logf("node %d started in %s", i, time.Since(start).Round(time.Millisecond))
}

// client returns a kgo client of the cluster (producer without compression,
// so segment sizes follow the record sizes), closed at the end of the test.
func (c *cluster) client(opts ...kgo.Opt) *kgo.Client {
	c.t.Helper()
	cl, err := c.newClient(opts...)
	must(c.t, err)
	c.t.Cleanup(cl.Close)
	return cl
}

// newClient is client without the cleanup: the caller closes it.
func (c *cluster) newClient(opts ...kgo.Opt) (*kgo.Client, error) {
	base := []kgo.Opt{
		kgo.SeedBrokers(c.addrs...),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.ProducerBatchMaxBytes(256 << 10),
		kgo.RecordRetries(20),
		kgo.FetchMaxWait(500 * time.Millisecond),
		// Every record names its partition (0 for the one-partition topics).
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
	}
	return kgo.NewClient(append(base, opts...)...)
}

// topicConfigs are the settings of every tiered topic of the tests: small
// segments, everything but the active segment leaves the local log once
// copied, files go quickly.
func topicConfigs(extra map[string]string) map[string]*string {
	m := map[string]*string{}
	for k, v := range map[string]string{
		"remote.storage.enable": "true",
		"segment.bytes":         strconv.Itoa(segmentBytes),
		"local.retention.bytes": "1",
		"local.retention.ms":    "1000",
		"file.delete.delay.ms":  "100",
	} {
		m[k] = &v
	}
	for k, v := range extra {
		m[k] = &v
	}
	return m
}

// createTopic creates a one-partition tiered topic whose replicas are
// replicas (the first is the preferred leader) and returns its partition.
func createTopic(ctx context.Context, t *testing.T, cl *kgo.Client, topic string, replicas []int32) rlmm.TopicIDPartition {
	t.Helper()
	return createTopicAssigned(ctx, t, cl, topic, [][]int32{replicas})[0]
}

// createTopicAssigned creates a tiered topic of len(assignment) partitions,
// partition i on the brokers assignment[i] (the first its preferred leader),
// waits until every partition has a leader and returns them in order.
func createTopicAssigned(ctx context.Context, t *testing.T, cl *kgo.Client, topic string, assignment [][]int32) []rlmm.TopicIDPartition {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 30000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic = topic
	rt.NumPartitions = -1
	rt.ReplicationFactor = -1
	for i, replicas := range assignment {
		a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		a.Partition = int32(i)
		a.Replicas = replicas
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
	}
	for k, v := range topicConfigs(nil) {
		cfg := kmsg.NewCreateTopicsRequestTopicConfig()
		cfg.Name = k
		cfg.Value = v
		rt.Configs = append(rt.Configs, cfg)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	must(t, err)
	for _, rt := range resp.Topics {
		if err := kerr.ErrorForCode(rt.ErrorCode); err != nil {
			msg := ""
			if rt.ErrorMessage != nil {
				msg = *rt.ErrorMessage
			}
			t.Fatalf("creating topic %s: %v %s", topic, err, msg)
		}
	}
	return waitLeaders(ctx, t, cl, topic, len(assignment))
}

// waitLeaders waits until the topic has n partitions, each with a leader,
// and returns them in order.
func waitLeaders(ctx context.Context, t *testing.T, cl *kgo.Client, topic string, n int) []rlmm.TopicIDPartition {
	t.Helper()
	var tps []rlmm.TopicIDPartition
	adm := kadm.NewClient(cl)
	waitFor(ctx, t, fmt.Sprintf("topic %s to have %d partitions, each with a leader", topic, n), func() (bool, string, error) {
		td, err := adm.ListTopics(ctx, topic)
		if err != nil {
			return false, "", err
		}
		d, ok := td[topic]
		if !ok || d.Err != nil || len(d.Partitions) != n {
			return false, fmt.Sprintf("%+v", d), nil
		}
		tps = tps[:0]
		for i := range int32(n) {
			p, ok := d.Partitions[i]
			if !ok || p.Leader < 0 {
				return false, fmt.Sprintf("partition %d: %+v", i, p), nil
			}
			tps = append(tps, rlmm.TopicIDPartition{TopicID: rlmm.Uuid(d.ID), Topic: topic, Partition: i})
		}
		return true, "", nil
	})
	return tps
}

// alterTopic sets topic configurations (incrementally).
func alterTopic(ctx context.Context, t *testing.T, cl *kgo.Client, topic string, configs map[string]string) {
	t.Helper()
	var alters []kadm.AlterConfig
	for k, v := range configs {
		alters = append(alters, kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: &v})
	}
	resps, err := kadm.NewClient(cl).AlterTopicConfigs(ctx, alters, topic)
	must(t, err)
	for _, r := range resps {
		if r.Err != nil {
			t.Fatalf("altering %s %v: %v %s", topic, configs, r.Err, r.ErrMessage)
		}
	}
}

// leader returns the current leader of a one-partition topic, and its ISR.
func leader(ctx context.Context, cl *kgo.Client, topic string) (int32, []int32, error) {
	td, err := kadm.NewClient(cl).ListTopics(ctx, topic)
	if err != nil {
		return -1, nil, err
	}
	d, ok := td[topic]
	if !ok || d.Err != nil || len(d.Partitions) != 1 {
		return -1, nil, fmt.Errorf("topic %s: %+v", topic, d)
	}
	p := d.Partitions[0]
	return p.Leader, p.ISR, nil
}

// partitionLeader returns the current leader, replicas and ISR of a
// partition of a topic of any size.
func partitionLeader(ctx context.Context, cl *kgo.Client, topic string, partition int32) (kadm.PartitionDetail, error) {
	td, err := kadm.NewClient(cl).ListTopics(ctx, topic)
	if err != nil {
		return kadm.PartitionDetail{}, err
	}
	d, ok := td[topic]
	if !ok || d.Err != nil {
		return kadm.PartitionDetail{}, fmt.Errorf("topic %s: %+v", topic, d)
	}
	p, ok := d.Partitions[partition]
	if !ok || p.Err != nil {
		return kadm.PartitionDetail{}, fmt.Errorf("topic %s partition %d: %+v", topic, partition, p)
	}
	return p, nil
}

// recordValue is record i's value: random bytes from a seed of i, so the
// segments' sizes do not depend on compression and a read back is checked
// byte by byte.
func recordValue(i int64) []byte {
	r := rand.New(rand.NewPCG(uint64(i), 0x726c6d6d))
	b := make([]byte, valueBytes)
	for j := 0; j < len(b); j += 8 {
		v := r.Uint64()
		for k := 0; k < 8 && j+k < len(b); k++ {
			b[j+k] = byte(v >> (8 * k))
		}
	}
	return b
}

func recordKey(i int64) []byte { return []byte(fmt.Sprintf("key-%09d", i)) }

// produce writes records from..to-1 (acks=all) and checks each lands at the
// offset equal to its index (one producer, no transactions: offsets are the
// indexes).
func produce(ctx context.Context, t *testing.T, cl *kgo.Client, topic string, from, to int64) {
	t.Helper()
	must(t, produceRecords(ctx, cl, topic, from, to, 0))
}

// produceRecords is produce returning the error, with a pause after every
// batch of 250 records (to spread a load over time).
func produceRecords(ctx context.Context, cl *kgo.Client, topic string, from, to int64, pause time.Duration) error {
	return produceRecordsTo(ctx, cl, topic, 0, from, to, pause)
}

// produceRecordsTo is produceRecords into one partition of the topic.
func produceRecordsTo(ctx context.Context, cl *kgo.Client, topic string, partition int32, from, to int64, pause time.Duration) error {
	const batch = 250
	for i := from; i < to; i += batch {
		var recs []*kgo.Record
		for j := i; j < min(i+batch, to); j++ {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: partition, Key: recordKey(j), Value: recordValue(j)})
		}
		res := cl.ProduceSync(ctx, recs...)
		if err := res.FirstErr(); err != nil {
			return fmt.Errorf("producing records %d..%d: %w", i, i+int64(len(recs))-1, err)
		}
		for k, r := range res {
			if r.Record.Offset != i+int64(k) {
				return fmt.Errorf("record %d landed at offset %d", i+int64(k), r.Record.Offset)
			}
		}
		if pause > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(pause):
			}
		}
	}
	return nil
}

// consume reads offsets from..to-1 with a fresh consumer and checks every
// record is the one produced at that offset.
func (c *cluster) consume(ctx context.Context, t *testing.T, topic string, from, to int64) {
	t.Helper()
	c.consumePartition(ctx, t, topic, 0, from, to)
}

// consumePartition is consume of one partition of the topic.
func (c *cluster) consumePartition(ctx context.Context, t *testing.T, topic string, partition int32, from, to int64) {
	t.Helper()
	cl, err := c.newClient(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {partition: kgo.NewOffset().At(from)}}),
		kgo.FetchMaxBytes(8<<20))
	must(t, err)
	defer cl.Close()
	rctx, cancel := context.WithTimeout(ctx, waitTimeout)
	defer cancel()
	next := from
	start := time.Now()
	for next < to {
		fs := cl.PollFetches(rctx)
		if err := rctx.Err(); err != nil {
			t.Fatalf("consuming %s from %d: got up to offset %d of %d: %v", topic, from, next, to, err)
		}
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) { ferr = err })
		if ferr != nil {
			t.Logf("fetch error (retried): %v", ferr)
			continue
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset != next {
				t.Fatalf("consuming %s: offset %d where %d was expected", topic, r.Offset, next)
			}
			if !bytes.Equal(r.Key, recordKey(next)) || !bytes.Equal(r.Value, recordValue(next)) {
				t.Fatalf("consuming %s: record at offset %d is not the one produced (key %q)", topic, next, r.Key)
			}
			next++
		})
	}
	t.Logf("read offsets %d..%d of %s-%d back, every byte as produced, in %s", from, to-1, topic, partition, time.Since(start).Round(time.Millisecond))
}

// listOffset is kafkatest.ListOffset of partition 0 of topic.
func listOffset(ctx context.Context, cl *kgo.Client, topic string, ts int64) (int64, error) {
	return kafkatest.ListOffset(ctx, cl, topic, 0, ts)
}

const (
	tsLatest        = -1
	tsEarliest      = -2
	tsEarliestLocal = -4
)

// waitFor polls cond every 300 ms until it is true, failing the test with
// the last status after waitTimeout.
func waitFor(ctx context.Context, t *testing.T, what string, cond func() (bool, string, error)) {
	t.Helper()
	wctx, cancel := context.WithTimeout(ctx, waitTimeout)
	defer cancel()
	start := time.Now()
	var status string
	var lastErr error
	for {
		ok, s, err := cond()
		if ok && err == nil {
			t.Logf("waited %s for %s", time.Since(start).Round(time.Millisecond), what)
			return
		}
		status, lastErr = s, err
		select {
		case <-wctx.Done():
			t.Fatalf("waited %s for %s: last status %s (error %v)", waitTimeout, what, status, lastErr)
		case <-time.After(300 * time.Millisecond):
		}
	}
}

// segment is one remote segment as the metadata topic tells its life.
type segment struct {
	meta   rlmm.SegmentMetadata
	states []rlmm.SegmentState // every state in event order, COPY_SEGMENT_STARTED first
	broker []int32             // the broker of each state's event
	// custom is the custom metadata of the COPY_SEGMENT_FINISHED event, as
	// the broker wrote it from what the RSM returned (nil: none).
	custom []byte
}

func (s *segment) state() rlmm.SegmentState { return s.states[len(s.states)-1] }

// metaView is everything the metadata topic holds for the tests' partitions.
type metaView struct {
	segs    map[rlmm.Uuid]*segment
	deletes map[rlmm.TopicIDPartition][]rlmm.PartitionDeleteState
	events  int
}

// readMetadata reads the whole __remote_log_metadata topic (up to its end
// now) with kafkalog and decodes every record with wire.
func (c *cluster) readMetadata(ctx context.Context) (*metaView, error) {
	log, err := kafkalog.Open(ctx, kafkalog.Config{BootstrapServers: c.addrs, SkipTopicCreation: true})
	if err != nil {
		return nil, err
	}
	defer log.Close()
	v := &metaView{segs: map[rlmm.Uuid]*segment{}, deletes: map[rlmm.TopicIDPartition][]rlmm.PartitionDeleteState{}}
	_, err = view.ReadLog(ctx, log, nil, func(r eventlog.Record) error {
		ev, err := wire.DecodeEvent(r.Value)
		if err != nil {
			return fmt.Errorf("metadata partition %d offset %d: %w", r.Partition, r.Offset, err)
		}
		v.events++
		switch ev.Key {
		case wire.KeySegment:
			v.segs[ev.Segment.ID.ID] = &segment{meta: ev.Segment, states: []rlmm.SegmentState{ev.Segment.State},
				broker: []int32{ev.Segment.BrokerID}}
		case wire.KeyUpdate:
			s, ok := v.segs[ev.Update.ID.ID]
			if !ok {
				return fmt.Errorf("metadata partition %d offset %d: update of unknown segment %s", r.Partition, r.Offset, ev.Update.ID)
			}
			s.states = append(s.states, ev.Update.State)
			s.broker = append(s.broker, ev.Update.BrokerID)
			if ev.Update.State == rlmm.CopySegmentFinished {
				s.custom = ev.Update.CustomMetadata
			}
		case wire.KeyPartitionDelete:
			tp := ev.PartitionDelete.TopicIDPartition
			v.deletes[tp] = append(v.deletes[tp], ev.PartitionDelete.State)
		}
		return nil
	})
	return v, err
}

// segments returns tp's segments sorted by start offset (then by their first
// event's time).
func (v *metaView) segments(tp rlmm.TopicIDPartition) []*segment {
	var out []*segment
	for _, s := range v.segs {
		if s.meta.ID.TopicIDPartition.TopicID == tp.TopicID && s.meta.ID.TopicIDPartition.Partition == tp.Partition {
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b *segment) int {
		if a.meta.StartOffset != b.meta.StartOffset {
			return int(a.meta.StartOffset - b.meta.StartOffset)
		}
		return int(a.meta.EventTimestampMs - b.meta.EventTimestampMs)
	})
	return out
}

// inState returns the segments of segs whose last state is one of states.
func inState(segs []*segment, states ...rlmm.SegmentState) []*segment {
	var out []*segment
	for _, s := range segs {
		if slices.Contains(states, s.state()) {
			out = append(out, s)
		}
	}
	return out
}

// contiguous checks that segs (sorted by start offset) cover offsets
// from..end without a gap, and returns end (from-1 when segs is empty).
// Every segment must reach past the ones before it. Two may overlap only
// where the copying broker changes: a new leader copies its own local
// segment holding the offset after the old leader's last remote one, whole,
// and the follower's segments need not start where the leader's did (Kafka's
// RemoteLogManager does this with either RLMM; a lookup takes the segment
// with the greatest start offset at or below the offset, in the epoch).
func contiguous(segs []*segment, from int64) (int64, error) {
	end := from - 1
	var prev *segment
	for _, s := range segs {
		switch {
		case s.meta.StartOffset > end+1:
			return end, fmt.Errorf("no segment covers offsets %d..%d (before segment %s at %d..%d)",
				end+1, s.meta.StartOffset-1, s.meta.ID.ID, s.meta.StartOffset, s.meta.EndOffset)
		case s.meta.EndOffset <= end:
			return end, fmt.Errorf("segment %s covers %d..%d, all covered already (up to %d)",
				s.meta.ID.ID, s.meta.StartOffset, s.meta.EndOffset, end)
		case s.meta.StartOffset <= end && prev != nil && prev.meta.BrokerID == s.meta.BrokerID:
			return end, fmt.Errorf("segments %s (%d..%d) and %s (%d..%d), both copied by broker %d, overlap",
				prev.meta.ID.ID, prev.meta.StartOffset, prev.meta.EndOffset, s.meta.ID.ID, s.meta.StartOffset,
				s.meta.EndOffset, s.meta.BrokerID)
		}
		end, prev = s.meta.EndOffset, s
	}
	return end, nil
}

func describe(segs []*segment) string {
	var b strings.Builder
	for _, s := range segs {
		fmt.Fprintf(&b, "[%d..%d %v by %v] ", s.meta.StartOffset, s.meta.EndOffset, s.states, s.broker)
	}
	return b.String()
}

// tiered is the state of a partition once every rolled segment is copied.
type tiered struct {
	finished   []*segment // COPY_SEGMENT_FINISHED, contiguous from the log start
	remoteEnd  int64      // the last finished segment's end offset
	localStart int64      // the earliest local offset (= remoteEnd+1)
}

// waitTiered waits until every segment of tp below the active one is
// copied and gone from the local log: finished segments contiguous from
// logStart to remoteEnd, nothing mid-copy, the earliest local offset
// remoteEnd+1, at least minSegments finished, and the leader's local log
// down to one segment.
func (c *cluster) waitTiered(ctx context.Context, t *testing.T, cl *kgo.Client, tp rlmm.TopicIDPartition, logStart int64, minSegments int) tiered {
	t.Helper()
	var res tiered
	waitFor(ctx, t, fmt.Sprintf("%s-%d: every rolled segment copied (at least %d) and gone locally", tp.Topic, tp.Partition, minSegments), func() (bool, string, error) {
		v, err := c.readMetadata(ctx)
		if err != nil {
			return false, "", err
		}
		all := v.segments(tp)
		fin := inState(all, rlmm.CopySegmentFinished)
		// A COPY_SEGMENT_STARTED segment whose offsets a finished one covers
		// is a copy the broker gave up and did again (an orphan to clean up,
		// as rlmm verify reports it once old); any other is still copying.
		var copying []*segment
		for _, s := range inState(all, rlmm.CopySegmentStarted) {
			if !slices.ContainsFunc(fin, func(f *segment) bool {
				return f.meta.StartOffset <= s.meta.StartOffset && s.meta.StartOffset <= f.meta.EndOffset
			}) {
				copying = append(copying, s)
			}
		}
		if len(copying) > 0 {
			return false, "copying: " + describe(copying), nil
		}
		end, err := contiguous(fin, logStart)
		if err != nil {
			return false, err.Error() + ": " + describe(all), nil
		}
		local, err := kafkatest.ListOffset(ctx, cl, tp.Topic, tp.Partition, tsEarliestLocal)
		if err != nil {
			return false, "", err
		}
		pd, err := partitionLeader(ctx, cl, tp.Topic, tp.Partition)
		if err != nil {
			return false, "", err
		}
		ld := pd.Leader
		files, err := localSegments(c.nodeDir(int(ld)), tp)
		if err != nil {
			return false, "", err
		}
		status := fmt.Sprintf("finished %s; earliest local offset %d; leader %d's local segments %v", describe(fin), local, ld, files)
		if len(fin) < minSegments || local != end+1 || len(files) != 1 || files[0] != local {
			return false, status, nil
		}
		res = tiered{finished: fin, remoteEnd: end, localStart: local}
		return true, status, nil
	})
	return res
}

// localSegments lists the base offsets of the partition's local .log files
// in node's data directory.
func localSegments(node string, tp rlmm.TopicIDPartition) ([]int64, error) {
	dir := filepath.Join(node, "data", tp.Topic+"-"+strconv.Itoa(int(tp.Partition)))
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []int64
	for _, e := range ents {
		if base, ok := strings.CutSuffix(e.Name(), ".log"); ok {
			n, err := strconv.ParseInt(base, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", e.Name(), err)
			}
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out, nil
}

// The RSMs the tests run, and the directory under the RSM's root where
// each file-system RSM keeps the partitions' files.
const (
	rsmLocal   = kafkatest.RSMLocal
	rsmFixture = kafkatest.RSMFixture
	// rsmAiven is Aiven's RSM on S3 (aiven_test.go): no files under the
	// RSM's root.
	rsmAiven = "aiven"
)

var rsmTopDir = map[string]string{rsmLocal: "kafka-tiered-storage", rsmFixture: "rlmm-fixture-rsm"}

// remoteFiles lists the RSM's files of the partition:
// <root>/<top>/<topic>-<partition>-<topicId>/<20-digit start>-<segment id>.<ext>
// (top is kafka-tiered-storage for LocalTieredStorage, rlmm-fixture-rsm for
// the fixture, which keeps the same names), keyed by "<start>-<segment id>",
// valued by the extensions present.
func (c *cluster) remoteFiles(tp rlmm.TopicIDPartition) (map[string][]string, error) {
	dir := filepath.Join(c.remoteDir, rsmTopDir[c.rsm], fmt.Sprintf("%s-%d-%s", tp.Topic, tp.Partition, tp.TopicID))
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return map[string][]string{}, nil
	}
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	for _, e := range ents {
		name := e.Name()
		dot := strings.LastIndexByte(name, '.')
		if dot < 0 {
			continue
		}
		out[name[:dot]] = append(out[name[:dot]], name[dot+1:])
	}
	return out, nil
}

// remoteKey is the LocalTieredStorage file stem of a segment.
func remoteKey(s *segment) string { return fmt.Sprintf("%020d-%s", s.meta.StartOffset, s.meta.ID.ID) }

// checkRemoteFiles checks LocalTieredStorage against the metadata topic:
// every segment of want has its data file and indexes, and every file
// belongs to a segment whose copy had started and whose deletion had not
// finished. The broker goes on tiering while a test looks (the active
// segment rolls and is copied, retention deletes again), so the topic is
// read before and after the files are listed: a copy starts (STARTED is
// written) before its files appear, and a deletion's files are gone before
// DELETE_SEGMENT_FINISHED is written. A file of a segment that was deleted
// before the listing, or that the metadata never named, is an error; so is
// a segment of want without its files, unless its deletion had begun by
// the second read.
func (c *cluster) checkRemoteFiles(ctx context.Context, t *testing.T, tp rlmm.TopicIDPartition, want []*segment) {
	t.Helper()
	before, err := c.readMetadata(ctx)
	must(t, err)
	files, err := c.remoteFiles(tp)
	must(t, err)
	after, err := c.readMetadata(ctx)
	must(t, err)
	for _, s := range want {
		exts := files[remoteKey(s)]
		if now := after.segs[s.meta.ID.ID]; now != nil && slices.Contains(now.states, rlmm.DeleteSegmentStarted) {
			continue // retention took it meanwhile: its files may be gone
		}
		for _, ext := range []string{"log", "index", "timeindex"} {
			if !slices.Contains(exts, ext) {
				t.Errorf("segment %s (%d..%d): no .%s file in LocalTieredStorage (has %v)", s.meta.ID.ID, s.meta.StartOffset, s.meta.EndOffset, ext, exts)
			}
		}
	}
	known := map[string]*segment{}
	for _, s := range after.segments(tp) {
		known[remoteKey(s)] = s
	}
	for key, exts := range files {
		s := known[key]
		switch {
		case s == nil:
			t.Errorf("LocalTieredStorage holds files %v of %s, a segment the metadata topic does not name", exts, key)
		case before.segs[s.meta.ID.ID] != nil && before.segs[s.meta.ID.ID].state() == rlmm.DeleteSegmentFinished:
			t.Errorf("LocalTieredStorage holds files %v of segment %s (%d..%d), deleted (DELETE_SEGMENT_FINISHED) before they were listed",
				exts, s.meta.ID.ID, s.meta.StartOffset, s.meta.EndOffset)
		}
	}
}

// rlmmRun runs the rlmm binary and returns its stdout and exit code.
func rlmmRun(ctx context.Context, t *testing.T, args ...string) (string, int) {
	t.Helper()
	cmd := exec.CommandContext(ctx, rlmmBinary, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("rlmm %s: %v", strings.Join(args, " "), err)
	}
	if code != 0 {
		t.Logf("rlmm %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, stdout.Bytes(), stderr.Bytes())
	}
	return stdout.String(), code
}

// rlmmJSON runs the rlmm binary with args and decodes its --json output
// into a T, failing the test when the output is not that JSON.
func rlmmJSON[T any](ctx context.Context, t *testing.T, args ...string) (T, int) {
	t.Helper()
	out, code := rlmmRun(ctx, t, args...)
	var doc T
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("rlmm %s: exit %d, not JSON (%v):\n%s", args[0], code, err, out)
	}
	return doc, code
}

// inspectPartition is the part of `rlmm inspect --json` the tests read.
type inspectPartition struct {
	TopicID         string         `json:"topicId"`
	Topic           string         `json:"topic"`
	Partition       int32          `json:"partition"`
	SegmentsByState map[string]int `json:"segmentsByState"`
	StartOffset     int64          `json:"startOffset"`
	EndOffset       int64          `json:"endOffset"`
	DeleteState     string         `json:"partitionDeleteState"`
	Segments        []struct {
		ID          string `json:"segmentId"`
		State       string `json:"state"`
		StartOffset int64  `json:"startOffset"`
		EndOffset   int64  `json:"endOffset"`
		BrokerID    int32  `json:"brokerId"`
	} `json:"segments"`
}

// verifyAndInspect runs `rlmm verify --kafka` (which must be clean) and
// `rlmm inspect --kafka --json --segments`, and checks that inspect shows
// tp with exactly the segments the metadata topic has not yet seen
// DELETE_SEGMENT_FINISHED.
func (c *cluster) verifyAndInspect(ctx context.Context, t *testing.T, tp rlmm.TopicIDPartition) {
	t.Helper()
	bootstrap := strings.Join(c.addrs, ",")
	if out, code := rlmmRun(ctx, t, "verify", "--kafka", bootstrap, "-q"); code != 0 {
		t.Errorf("rlmm verify --kafka %s: exit %d:\n%s", bootstrap, code, out)
	}
	// The broker may still be copying (the active segment rolls on its own),
	// so inspect runs between two reads of the metadata topic and its answer
	// is compared only when the two reads agree on every live segment.
	var p *inspectPartition
	waitFor(ctx, t, "rlmm inspect to agree with a quiet metadata topic", func() (bool, string, error) {
		before, err := c.readMetadata(ctx)
		if err != nil {
			return false, "", err
		}
		out, code := rlmmRun(ctx, t, "inspect", "--kafka", bootstrap, "-q", "--json", "--segments", "--topic", tp.Topic)
		if code != 0 {
			return false, "", fmt.Errorf("rlmm inspect --kafka %s: exit %d", bootstrap, code)
		}
		after, err := c.readMetadata(ctx)
		if err != nil {
			return false, "", err
		}
		live := liveStates(before.segments(tp))
		if moved := liveStates(after.segments(tp)); fmt.Sprint(moved) != fmt.Sprint(live) {
			return false, fmt.Sprintf("the topic moved from %v to %v during inspect", live, moved), nil
		}
		var doc struct {
			Partitions []inspectPartition `json:"partitions"`
		}
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			return false, "", fmt.Errorf("rlmm inspect --json: %w", err)
		}
		p = nil
		for i := range doc.Partitions {
			if doc.Partitions[i].TopicID == tp.TopicID.String() && doc.Partitions[i].Partition == tp.Partition {
				p = &doc.Partitions[i]
			}
		}
		if p == nil {
			return false, "", fmt.Errorf("rlmm inspect shows no partition %s: %s", tp, out)
		}
		shown := map[string]string{}
		for _, s := range p.Segments {
			shown[s.ID] = s.State
		}
		if fmt.Sprint(shown) != fmt.Sprint(live) {
			// The topic held still around inspect: a real disagreement.
			t.Fatalf("rlmm inspect shows segments %v of %s, the metadata topic says %v", shown, tp, live)
		}
		return true, "", nil
	})
	t.Logf("rlmm verify clean; rlmm inspect: %s segments by state %v, finished offsets %d..%d",
		tp, p.SegmentsByState, p.StartOffset, p.EndOffset)
}

// liveStates maps every segment not yet DELETE_SEGMENT_FINISHED to its state.
func liveStates(segs []*segment) map[string]string {
	live := map[string]string{}
	for _, s := range segs {
		if s.state() != rlmm.DeleteSegmentFinished {
			live[s.meta.ID.ID.String()] = s.state().String()
		}
	}
	return live
}

// sidecars returns the pids of the `rlmm serve` processes whose command
// line names a path under dir (the plugin's children of that broker).
func sidecars(dir string) ([]int, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		if len(args) < 2 || filepath.Base(args[0]) != "rlmm" || args[1] != "serve" {
			continue
		}
		if strings.Contains(string(b), dir+string(filepath.Separator)) {
			out = append(out, pid)
		}
	}
	return out, nil
}

// grepFile returns the lines of path containing every one of words.
func grepFile(path string, words ...string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		ok := true
		for _, w := range words {
			if !strings.Contains(line, w) {
				ok = false
				break
			}
		}
		if ok {
			out = append(out, line)
		}
	}
	return out, sc.Err()
}

// killSidecar kills the cluster's one rlmm serve with SIGKILL and returns
// its pid.
func (c *cluster) killSidecar(t *testing.T) int {
	t.Helper()
	pids, err := sidecars(c.dir)
	must(t, err)
	if len(pids) != 1 {
		t.Fatalf("%d rlmm serve processes under %s (%v), want the broker's one", len(pids), c.dir, pids)
	}
	must(t, syscall.Kill(pids[0], syscall.SIGKILL))
	return pids[0]
}

// waitNewSidecar waits until the plugin runs a new rlmm serve in place of
// the killed one.
func (c *cluster) waitNewSidecar(ctx context.Context, t *testing.T, killed int) {
	t.Helper()
	waitFor(ctx, t, "the plugin to start a new rlmm serve", func() (bool, string, error) {
		now, err := sidecars(c.dir)
		return len(now) == 1 && now[0] != killed, "", err
	})
}

// Command brokerbench is the broker half of `make bench-compare`: the same
// workload on a Kafka 4.3.1 broker with tiered storage (LocalTieredStorage),
// once with Kafka's own TopicBasedRemoteLogMetadataManager and once with
// rlmm's plugin, each broker started by test/kafkatest in a fresh temporary
// directory. It prints one JSON object on stdout.
//
//	brokerbench restart --mode kafka|rlmm|none --events N [--plugin-jar J --rlmm-binary B]
//	brokerbench restart --mode kafka|rlmm|none --again DIR
//	brokerbench copy    --mode kafka|rlmm [--mib M] [--partitions P] [--plugin-jar J --rlmm-binary B]
//	brokerbench report  --dir RESULTS [--events "N ..."] [--benchmarks docs/BENCHMARKS.md]
//	brokerbench memory  --mode kafka|rlmm [--brokers N] [--rf R] [--partitions P] [--segments S] [--plugin-jar J --rlmm-binary B]
//	brokerbench memory-report --dir RESULTS --configs "N:R:P ..." [--benchmarks docs/BENCHMARKS.md]
//	brokerbench curve   --events N --runs R --out DIR [--heap 1g] --plugin-jar J --rlmm-binary B
//	brokerbench curve-report --dir RESULTS --events "N ..." --runs R [--svg FILE] [--benchmarks docs/bench/broker.md]
//
// restart: a one-partition tiered topic with a few segments in remote
// storage; then N realistic metadata events (segments added and finished, a
// tenth of them deleted again, for 100 other user partitions) written with
// package wire straight into the metadata partition that holds the topic's
// partition, so the RLMM must take them all in before it serves that
// partition; the broker is stopped (rlmm's sidecar writes its snapshot) and
// started again. Measured: from launching the broker to its listener
// answering, and from launching to the first record of offset 0 (only in
// remote storage) fetched by a consumer that retries until it is served;
// the control, a second consumer from the same moment, fetches offset 3000,
// the first of 100 records produced once every earlier one was tiered and
// the topic's local retention set back to its whole retention (so it is in
// the local log only, and its fetch reads no remote metadata).
// Mode none is the floor no RLMM can go under: the same restart of a broker
// with tiered storage off, the topic not tiered and its
// records all in the local log, the same N events written into a plain topic
// of as many partitions as the metadata topic (so the broker loads the same
// logs at its start); both fetches are then of the local log.
//
// The brokers' directories are made under BROKERBENCH_DIR (default: the
// system's temporary directory). With BROKERBENCH_KEEP=1 the cluster's directory is kept; restart --again
// DIR times one more restart of it (no new topic, no new events), e.g. with
// more server.properties lines (--extra) or with BROKERBENCH_TRACE=1, which logs the fetching clients at debug level with
// wall-clock stamps to line up with the broker's and the sidecar's logs.
//
// copy: P tiered partitions (1 MiB segments) and M MiB produced as fast as
// one client can; measured from the metadata topic's events: per copied
// segment the span from its COPY_SEGMENT_STARTED event to its
// COPY_SEGMENT_FINISHED event (the broker takes both timestamps: the span is
// the add's wait, LocalTieredStorage's copy of the segment and the finish's
// creation), and segments finished per second over the run.
//
// curve: the restart workload at one event count, written once and
// restarted in turns with Kafka's RLMM, rlmm's plugin and without tiered
// storage (curve.go says how); curve-report makes its table and its plot
// (package internal/svgchart), the restart curve.
//
// memory: the per-broker heap and RSS of the RLMM on an N-broker cluster
// (memory.go says what is measured and how).
//
// It uses franz-go (kgo, kadm, kmsg) like the tests, and rlmm's wire and
// eventlog/kafkalog packages for the metadata. Exit status 0 with the JSON
// result, 1 with {"error": ...}, 2 for bad usage.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/eventlog"
	"github.com/rlmm-go/rlmm/eventlog/kafkalog"
	"github.com/rlmm-go/rlmm/internal/view"
	"github.com/rlmm-go/rlmm/test/kafkatest"
	"github.com/rlmm-go/rlmm/wire"
)

var errUsage = errors.New("usage")

// metadataPartitions is the metadata topic's partition count (Kafka's default).
const metadataPartitions = 50

func main() {
	if len(os.Args) > 1 && (os.Args[1] == "report" || os.Args[1] == "memory-report" || os.Args[1] == "curve-report") {
		rep := report
		switch os.Args[1] {
		case "memory-report":
			rep = memoryReport
		case "curve-report":
			rep = curveReport
		}
		if err := rep(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "brokerbench report:", err)
			if errors.Is(err, errUsage) {
				os.Exit(2)
			}
			os.Exit(1)
		}
		return
	}
	out, err := run(os.Args[1:])
	if err != nil {
		out = map[string]any{"error": err.Error()}
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", " ")
	_ = enc.Encode(out)
	switch {
	case errors.Is(err, errUsage):
		os.Exit(2)
	case err != nil:
		os.Exit(1)
	}
}

type options struct {
	mode       string
	events     int
	mib        int
	partitions int
	pluginJar  string
	binary     string
	again      string // restart only: a kept broker directory to restart
	againExtra string // restart --again only: more server.properties lines
	// memory only
	brokers  int
	rf       int
	segments int
	// curve only
	runs   int
	out    string
	heap   string // the broker's heap; "" = 1g
	warmup bool
}

func run(args []string) (map[string]any, error) {
	if len(args) > 0 && args[0] == "memory" {
		return memory(args[1:])
	}
	if len(args) > 0 && args[0] == "curve" {
		return curve(args[1:])
	}
	if len(args) == 0 || (args[0] != "restart" && args[0] != "copy") {
		return nil, fmt.Errorf("%w: brokerbench restart|copy|memory --mode kafka|rlmm[|none] [flags]", errUsage)
	}
	var o options
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	fs.StringVar(&o.mode, "mode", "", "the RLMM: kafka or rlmm; restart also none (tiered storage off, the floor)")
	fs.IntVar(&o.events, "events", 100000, "restart: metadata events written before the restart")
	fs.IntVar(&o.mib, "mib", 100, "copy: MiB produced")
	fs.IntVar(&o.partitions, "partitions", 4, "copy: user partitions")
	fs.StringVar(&o.pluginJar, "plugin-jar", "", "rlmm's plugin jar (mode rlmm)")
	fs.StringVar(&o.binary, "rlmm-binary", "", "the rlmm binary (mode rlmm)")
	fs.StringVar(&o.againExtra, "extra", "", "restart --again: server.properties lines added for that restart (e.g. rlmm.config.rlmm.serve.args=--log-level debug)")
	fs.StringVar(&o.again, "again", "", "restart: time one more restart of this cluster directory, kept by an earlier run (BROKERBENCH_KEEP=1), instead of a fresh one")
	if err := fs.Parse(args[1:]); err != nil {
		return nil, fmt.Errorf("%w: %v", errUsage, err)
	}
	if o.mode != "kafka" && o.mode != "rlmm" && (o.mode != modeNone || args[0] != "restart") {
		return nil, fmt.Errorf("%w: --mode must be kafka or rlmm (restart: also none), got %q", errUsage, o.mode)
	}
	if o.mode == "rlmm" && o.again == "" && (o.pluginJar == "" || o.binary == "") {
		return nil, fmt.Errorf("%w: --mode rlmm needs --plugin-jar and --rlmm-binary", errUsage)
	}
	if o.events < 2 || o.mib < 2 || o.partitions < 1 {
		return nil, fmt.Errorf("%w: --events >= 2, --mib >= 2, --partitions >= 1", errUsage)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	if o.again != "" {
		if args[0] != "restart" {
			return nil, fmt.Errorf("%w: --again is a flag of restart", errUsage)
		}
		// The cluster as its record (cluster.json) says it is: the RLMM of
		// its first start.
		kc, err := kafkatest.Open(o.again)
		if err != nil {
			return nil, err
		}
		kc.Stop()
		b := &broker{o: o, kc: kc, dir: kc.Dir(), nodes: len(kc.Nodes())}
		if o.againExtra != "" {
			b.extra = kc.Config().Extra + "\n" + o.againExtra
		}
		defer kc.Stop() // the directory stays
		return timeRestart(ctx, b, map[string]any{"workload": "restart", "mode": o.mode, "again": o.again})
	}
	b, err := startBroker(ctx, o)
	if err != nil {
		return nil, err
	}
	defer b.close()
	if args[0] == "restart" {
		return restart(ctx, o, b)
	}
	return copyLoad(ctx, o, b)
}

// modeNone is the restart's floor: a broker without tiered storage.
const modeNone = "none"

// benchVersion is the Kafka version of every broker of the benchmarks.
const benchVersion = "4.3.1"

// broker is a tiered cluster run by test/kafkatest: one node, or
// o.brokers nodes for the memory workload.
type broker struct {
	o     options
	kc    *kafkatest.Cluster
	dir   string
	addr  string // the first node's address
	addrs []string
	nodes int
	// rlmm is the RLMM of the next start ("" keeps the running one).
	rlmm kafkatest.RLMM
	// extra replaces every node's server.properties lines at the next
	// start ("" keeps them).
	extra string
	// fetchWait bounds each first fetch after a restart (0: 10 minutes).
	fetchWait time.Duration
}

// Every cluster has one controller, node 1 (a broker too): the other nodes
// are brokers only, so each node's role is the same in every run (an active
// controller's heap is tens of MiB larger than a broker's).

func startBroker(ctx context.Context, o options) (*broker, error) {
	return startNodes(ctx, o, 1, "")
}

// startNodes starts a cluster of nodes nodes with extra server.properties
// lines on every node.
func startNodes(ctx context.Context, o options, nodes int, extra string) (*broker, error) {
	return startNodesWith(ctx, o, nodes, extra, nil)
}

// startNodesWith is startNodes with tune applied to the cluster's
// configuration (when not nil) before its start.
func startNodesWith(ctx context.Context, o options, nodes int, extra string, tune func(*kafkatest.Config)) (*broker, error) {
	dir, err := os.MkdirTemp(os.Getenv("BROKERBENCH_DIR"), "rlmm-brokerbench-")
	if err != nil {
		return nil, err
	}
	heap := o.heap
	if heap == "" {
		heap = "1g"
	}
	cfg := kafkatest.Config{Version: benchVersion, Nodes: nodes, Controllers: 1, Tiered: o.mode != modeNone,
		RLMM: kafkatest.RLMMKafka, Heap: heap, Extra: extra}
	if o.mode == "rlmm" {
		cfg.RLMM, cfg.PluginJar, cfg.RLMMBinary = kafkatest.RLMMPlugin, o.pluginJar, o.binary
	}
	if tune != nil {
		tune(&cfg)
	}
	kc, err := kafkatest.Start(ctx, dir, cfg, os.Stderr)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	b := &broker{o: o, kc: kc, dir: kc.Dir(), nodes: nodes, addrs: kc.Bootstrap()}
	b.addr = b.addrs[0]
	return b, nil
}

// stop stops every node of b (its data stays).
func (b *broker) stop() { b.kc.Stop() }

func (b *broker) close() {
	b.kc.Stop()
	if os.Getenv("BROKERBENCH_KEEP") != "" {
		// Kept for a look at the broker's and the sidecar's logs.
		fmt.Fprintf(os.Stderr, "brokerbench: BROKERBENCH_KEEP: broker directory %s kept\n", b.dir)
		return
	}
	_ = os.RemoveAll(b.dir)
}

// nodeDir is node n's directory (1-based).
func (b *broker) nodeDir(n int) string { return b.kc.Node(n).Dir() }

// brokerPid is node n's broker JVM's pid.
func (b *broker) brokerPid(_ context.Context, n int) (int, error) {
	if pid := b.kc.Node(n).PID(); pid != 0 {
		return pid, nil
	}
	return 0, fmt.Errorf("node %d of %s is not running", n, b.dir)
}

func (b *broker) client(opts ...kgo.Opt) (*kgo.Client, error) {
	return kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(b.addr), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.ProducerBatchMaxBytes(1 << 20), kgo.RecordRetries(20), kgo.UnknownTopicRetries(50),
		kgo.RecordPartitioner(kgo.ManualPartitioner())}, opts...)...)
}

// createTopic creates a tiered topic and returns its id.
func createTopic(ctx context.Context, cl *kgo.Client, topic string, partitions int) (rlmm.Uuid, error) {
	return createTopicWith(ctx, cl, topic, partitions, map[string]string{"remote.storage.enable": "true", "segment.bytes": "1048576",
		"local.retention.bytes": "1", "local.retention.ms": "1000", "file.delete.delay.ms": "100"})
}

// createTopicWith creates a topic of these settings and returns its id.
func createTopicWith(ctx context.Context, cl *kgo.Client, topic string, partitions int, settings map[string]string) (rlmm.Uuid, error) {
	cfg := map[string]*string{}
	for k, v := range settings {
		cfg[k] = &v
	}
	adm := kadm.NewClient(cl)
	res, err := adm.CreateTopic(ctx, int32(partitions), 1, cfg, topic)
	if err != nil {
		return rlmm.Uuid{}, err
	}
	if res.Err != nil {
		return rlmm.Uuid{}, fmt.Errorf("creating %s: %w %s", topic, res.Err, res.ErrMessage)
	}
	return rlmm.Uuid(res.ID), nil
}

// produce writes n records of 1000 random bytes, round robin over the
// topic's partitions, as fast as the client goes.
func produce(ctx context.Context, cl *kgo.Client, topic string, partitions int, n int) error {
	r := rand.New(rand.NewPCG(1, 2))
	ap := newAsyncProducer(ctx, cl)
	for i := range n {
		v := make([]byte, 1000)
		for j := range v {
			v[j] = byte(r.Uint32())
		}
		ap.produce(&kgo.Record{Topic: topic, Partition: int32(i % partitions), Value: v})
	}
	return ap.flush()
}

// asyncProducer produces records without waiting for each one and keeps
// the first failure, which flush returns after every record is done.
type asyncProducer struct {
	ctx  context.Context
	cl   *kgo.Client
	errs chan error // buffered 1: the first failure
}

func newAsyncProducer(ctx context.Context, cl *kgo.Client) *asyncProducer {
	return &asyncProducer{ctx: ctx, cl: cl, errs: make(chan error, 1)}
}

func (p *asyncProducer) produce(r *kgo.Record) {
	p.cl.Produce(p.ctx, r, func(_ *kgo.Record, err error) {
		if err != nil {
			select {
			case p.errs <- err:
			default:
			}
		}
	})
}

// flush waits for every record produced and returns the first failure.
func (p *asyncProducer) flush() error {
	if err := p.cl.Flush(p.ctx); err != nil {
		return err
	}
	select {
	case err := <-p.errs:
		return err
	default:
		return nil
	}
}

// poll retries cond every interval until it is true or ctx ends.
func poll(ctx context.Context, interval time.Duration, what string, cond func() (bool, error)) error {
	var last error
	for {
		ok, err := cond()
		if ok && err == nil {
			return nil
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w (last error %v)", what, ctx.Err(), last)
		case <-time.After(interval):
		}
	}
}

func restart(ctx context.Context, o options, b *broker) (map[string]any, error) {
	out, err := prepareRestart(ctx, o, b)
	if err != nil {
		return nil, err
	}
	// Let the running RLMM take the events in before the stop (rlmm's
	// sidecar then writes them into its snapshot at the stop; Kafka's RLMM
	// replays its metadata partitions from the start whatever it had read).
	time.Sleep(time.Duration(max(3, o.events/100000)) * time.Second)
	b.stop()
	return timeRestart(ctx, b, out)
}

// prepareRestart writes the restart workload into the running broker b:
// the topic, its records (tiered unless o.mode is none) and o.events
// metadata events. It returns the fields of the result it knows.
func prepareRestart(ctx context.Context, o options, b *broker) (map[string]any, error) {
	cl, err := b.client()
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	const topic = "bench"
	var id rlmm.Uuid
	metadataTopic := "__remote_log_metadata"
	if o.mode == modeNone {
		// The floor: no tiered storage, the same records in the local log
		// only, the events in a plain topic shaped as the metadata topic.
		metadataTopic = "bench-metadata"
		if id, err = createTopicWith(ctx, cl, topic, 1, map[string]string{"segment.bytes": "1048576"}); err != nil {
			return nil, err
		}
		if _, err := createTopicWith(ctx, cl, metadataTopic, metadataPartitions, map[string]string{"retention.ms": "-1"}); err != nil {
			return nil, err
		}
		// Every partition led before the events are written (the real
		// metadata topic is created at the broker's start, long before).
		lctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		adm := kadm.NewClient(cl)
		if err := poll(lctx, 200*time.Millisecond, "every partition of "+metadataTopic+" led", func() (bool, error) {
			offs, err := adm.ListEndOffsets(lctx, metadataTopic)
			if err == nil {
				err = offs.Error()
			}
			return err == nil && len(offs[metadataTopic]) == metadataPartitions, err
		}); err != nil {
			return nil, err
		}
	} else if id, err = createTopic(ctx, cl, topic, 1); err != nil {
		return nil, err
	}
	if err := produce(ctx, cl, topic, 1, restartRecords); err != nil {
		return nil, err
	}
	wctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	if o.mode != modeNone {
		// Every record in remote storage only (local.retention.ms rolls
		// the last segment too), then local retention back to the topic's
		// own, so that the records produced next stay in the local log.
		if err := poll(wctx, 200*time.Millisecond, "every record in remote storage", func() (bool, error) {
			off, err := kafkatest.ListOffset(wctx, cl, topic, 0, -4)
			return off >= restartRecords, err
		}); err != nil {
			return nil, err
		}
		if err := keepLocal(wctx, cl, topic); err != nil {
			return nil, err
		}
	}
	// The control's records: in the local log only.
	if err := produce(ctx, cl, topic, 1, localRecords); err != nil {
		return nil, err
	}
	tp := rlmm.TopicIDPartition{TopicID: id, Topic: topic, Partition: 0}
	mp := wire.MetadataPartition(tp, metadataPartitions)
	fillStart := time.Now()
	if err := fill(ctx, cl, metadataTopic, mp, o.events); err != nil {
		return nil, err
	}
	return map[string]any{
		"workload": "restart", "mode": o.mode, "events": o.events, "metadataPartition": mp, "fillMs": time.Since(fillStart).Milliseconds(),
	}, nil
}

// timeRestart starts the stopped broker b and adds to out the spans from
// the launch to its listener answering and to the first fetches served.
func timeRestart(ctx context.Context, b *broker, out map[string]any) (map[string]any, error) {
	const topic = "bench"
	launched := time.Now()
	var opts []kafkatest.RestartOption
	if b.rlmm != "" {
		opts = append(opts, kafkatest.WithRLMM(b.rlmm))
	}
	if b.extra != "" {
		opts = append(opts, kafkatest.WithExtra(b.extra))
	}
	if err := b.kc.Restart(ctx, opts...); err != nil {
		return nil, err
	}
	if b.addr == "" {
		// --again: the kept cluster's first address.
		b.addrs = b.kc.Bootstrap()
		b.addr = b.addrs[0]
	}
	answered := time.Since(launched)
	// The control: the same restart's first fetch of a record in the local
	// log (the first produced after the tiering), which needs no RLMM. What the broker and the client
	// take after a restart (the partition's leader, metadata, reconnects)
	// is in both spans; the remote fetch's excess over the local one is
	// what the RLMM adds.
	local := make(chan error, 1)
	var localAt time.Duration
	go func() {
		err := firstFetch(ctx, b, topic, restartRecords)
		localAt = time.Since(launched)
		local <- err
	}()
	remoteErr := firstFetch(ctx, b, topic, 0)
	fetchedAt := time.Since(launched)
	localErr := <-local
	if err := errors.Join(remoteErr, localErr); err != nil {
		return nil, err
	}
	maps.Copy(out, map[string]any{
		"launchToAnswerMs":      answered.Milliseconds(),
		"launchToRemoteFetchMs": fetchedAt.Milliseconds(), "answerToRemoteFetchMs": (fetchedAt - answered).Milliseconds(),
		"launchToLocalFetchMs": localAt.Milliseconds(), "answerToLocalFetchMs": (localAt - answered).Milliseconds(),
		"answeredAt": launched.Add(answered).UTC().Format("15:04:05.000"),
	})
	return out, nil
}

// The restart workload's topic: restartRecords records tiered (in remote
// storage only), then localRecords in the local log only.
const (
	restartRecords = 3000
	localRecords   = 100
)

// keepLocal sets topic's local retention back to its whole retention (-2),
// so no record produced from now on leaves the local log during the run.
func keepLocal(ctx context.Context, cl *kgo.Client, topic string) error {
	v := "-2"
	res, err := kadm.NewClient(cl).AlterTopicConfigs(ctx, []kadm.AlterConfig{
		{Op: kadm.SetConfig, Name: "local.retention.ms", Value: &v},
		{Op: kadm.SetConfig, Name: "local.retention.bytes", Value: &v}}, topic)
	if err == nil {
		for _, r := range res {
			err = errors.Join(err, r.Err)
		}
	}
	if err != nil {
		return fmt.Errorf("setting the local retention of %s back: %w", topic, err)
	}
	return nil
}

// firstFetch consumes the record at offset with a client that retries until
// the broker serves it (offset 0 is in remote storage only, offset
// restartRecords in the local log only).
//
// With BROKERBENCH_TRACE set the client logs at debug level to stderr,
// each line stamped with the wall clock, to line up what the broker
// answered before it served the fetch with the broker's and the RLMM's logs.
func firstFetch(ctx context.Context, b *broker, topic string, offset int64) error {
	opts := []kgo.Opt{kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(offset)}}),
		kgo.FetchMaxWait(50 * time.Millisecond), kgo.RetryBackoffFn(func(int) time.Duration { return 20 * time.Millisecond })}
	if os.Getenv("BROKERBENCH_TRACE") != "" {
		opts = append(opts, kgo.WithLogger(kgo.BasicLogger(os.Stderr, kgo.LogLevelDebug, func() string {
			return fmt.Sprintf("%s fetch@%d ", time.Now().UTC().Format("15:04:05.000"), offset)
		})))
	}
	cl, err := b.client(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	wait := b.fetchWait
	if wait == 0 {
		wait = 10 * time.Minute
	}
	fctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	for {
		fs := cl.PollFetches(fctx)
		if err := fctx.Err(); err != nil {
			return fmt.Errorf("no fetch of offset %d served: %w", offset, err)
		}
		var rec *kgo.Record
		fs.EachRecord(func(r *kgo.Record) {
			if rec == nil {
				rec = r
			}
		})
		if rec != nil {
			if rec.Offset != offset {
				return fmt.Errorf("first record fetched at offset %d, want %d", rec.Offset, offset)
			}
			return nil
		}
	}
}

// fill writes n events into partition mp of the metadata topic: segments of 100 user
// partitions that the partitioner places there, each added and finished,
// every tenth deleted again (started, finished), with offsets and sizes of
// 1 MiB segments.
func fill(ctx context.Context, cl *kgo.Client, metadataTopic string, mp int32, n int) error {
	var tps []rlmm.TopicIDPartition
	r := rand.New(rand.NewPCG(7, 7))
	for len(tps) < 100 {
		tp := rlmm.TopicIDPartition{TopicID: rlmm.UuidFromBits(r.Int64(), r.Int64()), Topic: fmt.Sprintf("filler-%d", len(tps)),
			Partition: int32(r.IntN(64))}
		if wire.MetadataPartition(tp, metadataPartitions) == mp {
			tps = append(tps, tp)
		}
	}
	next := make([]int64, len(tps))
	now := time.Now().Add(-time.Hour).UnixMilli()
	ap := newAsyncProducer(ctx, cl)
	send := func(ev wire.Event) error {
		v, err := wire.AppendEvent(nil, &ev)
		if err != nil {
			return err
		}
		ap.produce(&kgo.Record{Topic: metadataTopic, Partition: mp, Value: v})
		return nil
	}
	written := 0
	for seg := 0; written < n; seg++ {
		i := seg % len(tps)
		tp := tps[i]
		id := rlmm.SegmentID{TopicIDPartition: tp, ID: rlmm.UuidFromBits(r.Int64(), r.Int64())}
		start := next[i]
		next[i] += 1000
		now += 3
		m := rlmm.SegmentMetadata{ID: id, StartOffset: start, EndOffset: start + 999, MaxTimestampMs: now, BrokerID: 1,
			EventTimestampMs: now, LeaderEpochs: []rlmm.EpochStart{{Epoch: 0, StartOffset: start}}, SizeInBytes: 1 << 20,
			State: rlmm.CopySegmentStarted, TxnIndexEmpty: true}
		steps := []wire.Event{wire.SegmentEvent(m),
			wire.UpdateEvent(rlmm.SegmentUpdate{ID: id, EventTimestampMs: now + 1, State: rlmm.CopySegmentFinished, BrokerID: 1})}
		if seg%10 == 0 {
			steps = append(steps,
				wire.UpdateEvent(rlmm.SegmentUpdate{ID: id, EventTimestampMs: now + 2, State: rlmm.DeleteSegmentStarted, BrokerID: 1}),
				wire.UpdateEvent(rlmm.SegmentUpdate{ID: id, EventTimestampMs: now + 2, State: rlmm.DeleteSegmentFinished, BrokerID: 1}))
		}
		for _, ev := range steps {
			if written == n {
				break
			}
			if err := send(ev); err != nil {
				return err
			}
			written++
		}
	}
	if err := ap.flush(); err != nil {
		return fmt.Errorf("writing the metadata events: %w", err)
	}
	return nil
}

// copyLoad produces o.mib MiB over o.partitions tiered partitions and
// measures the copies from the metadata events.
func copyLoad(ctx context.Context, o options, b *broker) (map[string]any, error) {
	cl, err := b.client(kgo.MaxBufferedRecords(20000))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	const topic = "load"
	id, err := createTopic(ctx, cl, topic, o.partitions)
	if err != nil {
		return nil, err
	}
	records := o.mib * 1024 * 1024 / 1000
	start := time.Now()
	if err := produce(ctx, cl, topic, o.partitions, records); err != nil {
		return nil, err
	}
	produced := time.Since(start)
	// Every partition's rolled segments are copied when each partition's
	// earliest local offset is its end (local.retention.ms rolls the last).
	wctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	var segs []*segLife
	if err := poll(wctx, 500*time.Millisecond, "every segment copied", func() (bool, error) {
		segs, err = readSegments(wctx, b.addr, id)
		if err != nil {
			return false, err
		}
		done, started := 0, 0
		for _, s := range segs {
			if s.finished > 0 {
				done++
			} else {
				started++
			}
		}
		// At least one: the spans below need a copied segment.
		return started == 0 && done >= max(1, o.mib-2*o.partitions), nil
	}); err != nil {
		return nil, err
	}
	var spans []float64
	first, last := int64(1<<62), int64(0)
	for _, s := range segs {
		spans = append(spans, float64(s.finished-s.started))
		first = min(first, s.started)
		last = max(last, s.finished)
	}
	slices.Sort(spans)
	q := func(p float64) float64 { return spans[min(len(spans)-1, int(p*float64(len(spans))))] }
	window := float64(last-first) / 1000
	return map[string]any{
		"workload": "copy", "mode": o.mode, "mib": o.mib, "partitions": o.partitions, "records": records,
		"produceMs": produced.Milliseconds(), "segments": len(segs),
		"spanP50Ms": q(0.50), "spanP99Ms": q(0.99), "spanMaxMs": spans[len(spans)-1],
		"copyWindowS": window, "segmentsPerSecond": float64(len(segs)) / window,
	}, nil
}

// segLife is one segment's copy as the metadata events tell it.
type segLife struct{ started, finished int64 }

// readSegments reads the metadata topic and returns the copies of topic id.
func readSegments(ctx context.Context, addr string, id rlmm.Uuid) ([]*segLife, error) {
	log, err := kafkalog.Open(ctx, kafkalog.Config{BootstrapServers: []string{addr}, SkipTopicCreation: true})
	if err != nil {
		return nil, err
	}
	defer log.Close()
	segs := map[rlmm.Uuid]*segLife{}
	_, err = view.ReadLog(ctx, log, nil, func(r eventlog.Record) error {
		ev, err := wire.DecodeEvent(r.Value)
		if err != nil {
			return err
		}
		switch {
		case ev.Key == wire.KeySegment && ev.Segment.ID.TopicIDPartition.TopicID == id:
			segs[ev.Segment.ID.ID] = &segLife{started: ev.Segment.EventTimestampMs}
		case ev.Key == wire.KeyUpdate && ev.Update.State == rlmm.CopySegmentFinished:
			if s, ok := segs[ev.Update.ID.ID]; ok {
				s.finished = ev.Update.EventTimestampMs
			}
		}
		return nil
	})
	out := make([]*segLife, 0, len(segs))
	for _, s := range segs {
		out = append(out, s)
	}
	return out, err
}

package brokertest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rlmm-go/rlmm"
)

// migrationGuide is the operators' guide TestRollingMigration follows: it
// reads the settings of each step out of the guide's marked blocks.
const migrationGuide = "docs/migration.md"

// The guide's placeholders the test replaces with what exists here: the
// plugin jar's path, and the sidecar's metrics address (three brokers on one
// host cannot share a port; the test also wants the size gauges fresh).
const (
	guideJar     = "/opt/rlmm/rlmm-plugin-0.1.0.jar"
	guideMetrics = "--metrics-listen 127.0.0.1:9464"
)

// The RLMM classes the guide's steps must name.
const (
	rlmmPluginClass = "org.rlmm.plugin.RlmmRemoteLogMetadataManager"
	kafkaRLMMClass  = "org.apache.kafka.server.log.remote.metadata.storage.TopicBasedRemoteLogMetadataManager"
	rlmmClassKey    = "remote.log.metadata.manager.class.name"
)

// guideSteps are the settings blocks of the migration guide, by their
// marker (<!-- migration-test: NAME --> before a fenced block).
type guideSteps struct {
	kept, toRlmm, toKafka [][2]string // key, value
	removeOnRollback      []string    // keys; a trailing * matches a prefix
}

// readMigrationGuide parses the guide's four marked blocks and checks that
// they say what a migration needs (the classes of both RLMMs, the jar).
func readMigrationGuide(t *testing.T) guideSteps {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, migrationGuide))
	must(t, err)
	blocks := map[string][]string{}
	lines := strings.Split(string(b), "\n")
	for i := 0; i < len(lines); i++ {
		name, ok := strings.CutPrefix(strings.TrimSpace(lines[i]), "<!-- migration-test: ")
		if !ok {
			continue
		}
		name = strings.TrimSuffix(name, " -->")
		if i+1 >= len(lines) || !strings.HasPrefix(lines[i+1], "```") {
			t.Fatalf("%s: the marker of %q is not followed by a fenced block", migrationGuide, name)
		}
		var body []string
		for i += 2; i < len(lines) && !strings.HasPrefix(lines[i], "```"); i++ {
			if l := strings.TrimSpace(lines[i]); l != "" && !strings.HasPrefix(l, "#") {
				body = append(body, l)
			}
		}
		blocks[name] = body
	}
	pairs := func(name string) [][2]string {
		body, ok := blocks[name]
		if !ok || len(body) == 0 {
			t.Fatalf("%s has no block marked %q", migrationGuide, name)
		}
		var out [][2]string
		for _, l := range body {
			k, v, ok := strings.Cut(l, "=")
			if !ok {
				t.Fatalf("%s, block %q: %q is not key=value", migrationGuide, name, l)
			}
			out = append(out, [2]string{strings.TrimSpace(k), strings.TrimSpace(v)})
		}
		return out
	}
	g := guideSteps{kept: pairs("kept"), toRlmm: pairs("to-rlmm"), toKafka: pairs("to-kafka"), removeOnRollback: blocks["remove-on-rollback"]}
	if len(g.removeOnRollback) == 0 {
		t.Fatalf("%s has no block marked %q", migrationGuide, "remove-on-rollback")
	}
	value := func(ps [][2]string, key string) string {
		for _, p := range ps {
			if p[0] == key {
				return p[1]
			}
		}
		return ""
	}
	if v := value(g.toRlmm, rlmmClassKey); v != rlmmPluginClass {
		t.Fatalf("%s: the migration step sets %s=%q, want %s", migrationGuide, rlmmClassKey, v, rlmmPluginClass)
	}
	if v := value(g.toKafka, rlmmClassKey); v != kafkaRLMMClass {
		t.Fatalf("%s: the rollback step sets %s=%q, want %s", migrationGuide, rlmmClassKey, v, kafkaRLMMClass)
	}
	if value(g.toRlmm, "remote.log.metadata.manager.class.path") == "" {
		t.Fatalf("%s: the migration step sets no remote.log.metadata.manager.class.path", migrationGuide)
	}
	// The placeholders the test replaces must be there to be replaced.
	for i, p := range g.toRlmm {
		switch p[0] {
		case "remote.log.metadata.manager.class.path":
			if p[1] != guideJar {
				t.Fatalf("%s: the plugin jar is %q; the test replaces %q", migrationGuide, p[1], guideJar)
			}
			g.toRlmm[i][1] = pluginJar
		case "rlmm.config.rlmm.serve.args":
			if !strings.Contains(p[1], guideMetrics) {
				t.Fatalf("%s: rlmm.serve.args %q lacks %q, which the test replaces", migrationGuide, p[1], guideMetrics)
			}
			g.toRlmm[i][1] = strings.Replace(p[1], guideMetrics, "--metrics-listen 127.0.0.1:0", 1) + " --metrics-sizes-max-age 0s"
		}
	}
	return g
}

func joinProperties(ps [][2]string) string {
	var b strings.Builder
	for _, p := range ps {
		fmt.Fprintf(&b, "%s=%s\n", p[0], p[1])
	}
	return b.String()
}

// editProperties changes node n's own server.properties lines (see
// editNodeExtra; the broker stopped, they take effect at its start): every
// line of a key in remove (a trailing * matches a prefix) or in set goes,
// and set's lines are appended. The cluster's lines (the RLMM of its first
// start, Kafka's) come before them: a key set here wins, and a key the
// guide removes was only ever set here.
func (c *cluster) editProperties(n int, what string, remove []string, set [][2]string) {
	c.t.Helper()
	drop := func(key string) bool {
		for _, r := range remove {
			if p, ok := strings.CutSuffix(r, "*"); (ok && strings.HasPrefix(key, p)) || key == r {
				return true
			}
		}
		return slices.ContainsFunc(set, func(p [2]string) bool { return p[0] == key })
	}
	c.editNodeExtra(n, func(lines string) string {
		var out []string
		for l := range strings.Lines(lines) {
			l = strings.TrimSuffix(l, "\n")
			if k, _, ok := strings.Cut(l, "="); ok && !strings.HasPrefix(l, "#") && drop(strings.TrimSpace(k)) {
				continue
			}
			out = append(out, l)
		}
		out = append(out, "# "+what+" ("+migrationGuide+")")
		return strings.Join(out, "\n") + "\n" + joinProperties(set)
	})
}

// migrationLoad is the traffic of TestRollingMigration on the topic of
// replication factor 3: one producer (acks=all) into every partition, a
// consumer following it from offset 0, and readers reading remote offsets
// from their start again and again; all consumers never reset
// (auto.offset.reset=none).
type migrationLoad struct {
	c      *cluster
	topic  string
	parts  int32
	remote int64 // readers read this many offsets at a time (remote ones)

	mu        sync.Mutex
	acked     []int64 // per partition: offsets below are acknowledged
	followed  []int64 // per partition: the follower's next offset
	failures  []error
	reads     int // the readers' reads of remote offsets, all complete
	retriable int // retriable fetch errors the consumers saw

	stopProducing, stopReading context.CancelFunc
	wg                         sync.WaitGroup
}

// migrationRate is how many records the producer writes into each
// partition per round, and migrationRound the pause between rounds: about
// a segment (a thousand records) per partition every 15 s.
const (
	migrationRate  = 25
	migrationRound = 300 * time.Millisecond
)

func (l *migrationLoad) fail(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.failures = append(l.failures, err)
}

// start runs the producer, the follower and the readers until stop. from
// is each partition's next offset (what was produced before).
func (l *migrationLoad) start(ctx context.Context, from int64) {
	l.acked = make([]int64, l.parts)
	l.followed = make([]int64, l.parts)
	for p := range l.acked {
		l.acked[p] = from
	}
	pctx, stopP := context.WithCancel(ctx)
	rctx, stopR := context.WithCancel(ctx)
	l.stopProducing, l.stopReading = stopP, stopR
	l.wg.Add(3)
	go func() { defer l.wg.Done(); l.produce(pctx) }()
	go func() { defer l.wg.Done(); l.follow(rctx) }()
	go func() { defer l.wg.Done(); l.readRemote(rctx) }()
}

// produce writes rounds of migrationRate records into every partition,
// record i at offset i (one idempotent producer): a produce that fails
// after its retries, or lands elsewhere, is a failure.
func (l *migrationLoad) produce(ctx context.Context) {
	cl, err := l.c.newClient(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordRetries(math.MaxInt32),
		kgo.RecordDeliveryTimeout(2*time.Minute))
	if err != nil {
		l.fail(err)
		return
	}
	defer cl.Close()
	next := slices.Clone(l.acked)
	for ctx.Err() == nil {
		var recs []*kgo.Record
		for p := range l.parts {
			for i := next[p]; i < next[p]+migrationRate; i++ {
				recs = append(recs, &kgo.Record{Topic: l.topic, Partition: p, Key: recordKey(i), Value: recordValue(i)})
			}
		}
		res := cl.ProduceSync(context.WithoutCancel(ctx), recs...)
		if err := res.FirstErr(); err != nil {
			l.fail(fmt.Errorf("producing (acks=all): %w", err))
			return
		}
		for _, r := range res {
			if want := string(recordKey(r.Record.Offset)); string(r.Record.Key) != want {
				l.fail(fmt.Errorf("%s-%d: record %q landed at offset %d", l.topic, r.Record.Partition, r.Record.Key, r.Record.Offset))
				return
			}
		}
		l.mu.Lock()
		for p := range l.parts {
			next[p] += migrationRate
			l.acked[p] = next[p]
		}
		l.mu.Unlock()
		select {
		case <-ctx.Done():
		case <-time.After(migrationRound):
		}
	}
}

// follow consumes every partition from offset 0 as the producer writes,
// checking every record, until stopped and caught up with what was
// acknowledged.
func (l *migrationLoad) follow(ctx context.Context) {
	offsets := map[int32]kgo.Offset{}
	for p := range l.parts {
		offsets[p] = kgo.NewOffset().At(0)
	}
	cl, err := l.c.newClient(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{l.topic: offsets}),
		kgo.ConsumeResetOffset(kgo.NoResetOffset()), kgo.FetchMaxBytes(8<<20))
	if err != nil {
		l.fail(err)
		return
	}
	defer cl.Close()
	next := make([]int64, l.parts)
	for {
		if ctx.Err() != nil {
			return
		}
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		fs := cl.PollFetches(pctx)
		cancel()
		var bad error
		fs.EachError(func(_ string, p int32, err error) {
			switch {
			case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
			case errors.Is(err, kerr.OffsetOutOfRange):
				bad = fmt.Errorf("the follower of %s-%d: OffsetOutOfRange at offset %d: %w", l.topic, p, next[p], err)
			default:
				l.mu.Lock()
				l.retriable++
				l.mu.Unlock()
			}
		})
		fs.EachRecord(func(r *kgo.Record) {
			if bad != nil {
				return
			}
			p := r.Partition
			if r.Offset != next[p] || !bytes.Equal(r.Key, recordKey(r.Offset)) || !bytes.Equal(r.Value, recordValue(r.Offset)) {
				bad = fmt.Errorf("the follower of %s-%d: offset %d (key %q) where %d was expected", l.topic, p, r.Offset, r.Key, next[p])
				return
			}
			next[p]++
		})
		if bad != nil {
			l.fail(bad)
			return
		}
		l.mu.Lock()
		copy(l.followed, next)
		l.mu.Unlock()
	}
}

// readRemote reads l.remote offsets of each partition in turn, one fresh
// consumer each (auto.offset.reset=none), until stopped: from offset 0 (a
// segment Kafka's RLMM recorded before the migration) and, every other
// round, from the middle of what was acknowledged (a segment copied during
// the migration, by a leader on either RLMM). The reads go to the
// partition's leader of the moment, through its RLMM.
func (l *migrationLoad) readRemote(ctx context.Context) {
	for round := 0; ctx.Err() == nil; round++ {
		p := int32(round/2) % l.parts
		from := int64(0)
		if round%2 == 1 {
			l.mu.Lock()
			from = min(l.acked[p]/2, l.acked[p]-l.remote)
			l.mu.Unlock()
		}
		n, err := l.c.readPartitionFrom(ctx, l.topic, p, from, from+l.remote)
		if ctx.Err() != nil {
			return
		}
		l.mu.Lock()
		l.retriable += n
		if err == nil {
			l.reads++
		}
		l.mu.Unlock()
		if err != nil {
			l.fail(fmt.Errorf("reading remote offsets %d..%d: %w", from, from+l.remote-1, err))
			return
		}
	}
}

// stop stops the producer, waits until the follower has read everything
// acknowledged, stops the consumers, and returns the acknowledged ends.
func (l *migrationLoad) stop(ctx context.Context, t *testing.T) []int64 {
	t.Helper()
	l.stopProducing()
	waitFor(ctx, t, "the follower to read every acknowledged record", func() (bool, string, error) {
		l.mu.Lock()
		defer l.mu.Unlock()
		if len(l.failures) > 0 {
			return true, "", nil
		}
		return slices.Equal(l.followed, l.acked), fmt.Sprintf("followed %v, acknowledged %v", l.followed, l.acked), nil
	})
	l.stopReading()
	l.wg.Wait()
	for _, err := range l.failures {
		t.Error(err)
	}
	var total int64
	for _, a := range l.acked {
		total += a
	}
	t.Logf("load: %d records acknowledged (acks=all) over %d partitions, every one read by the follower in order; "+
		"%d complete reads of %d remote offsets (from 0, and from the middle of the acknowledged ones); %d retriable fetch errors, no OffsetOutOfRange",
		total, l.parts, l.reads, l.remote, l.retriable)
	return slices.Clone(l.acked)
}

// The topics of TestRollingMigration: one of replication factor 3 under
// load, and one of replication factor 1 with a partition on each broker (so
// that a sidecar holding another broker's partition shows).
const (
	migrationTopic    = "migrated"
	migrationTopicRF1 = "migrated-rf1"
	migrationParts    = 6
	// migrationFirst records go into every partition before the load: more
	// than a segment, so offsets from 0 are remote once tiered.
	migrationFirst = 1300
)

// TestRollingMigration migrates a live cluster from Kafka's RLMM to rlmm's
// plugin one broker at a time, and rolls one broker back, following
// docs/migration.md (its settings are read from the guide's marked blocks):
// three Kafka brokers (each also a controller) start on Kafka's
// TopicBasedRemoteLogMetadataManager with the guide's kept settings (the
// metadata topic of replication factor 3 and min.insync.replicas 2,
// checked); a topic of replication factor 3 (min.insync.replicas 2, 6
// partitions, leaders spread) is under load throughout (migrationLoad);
// brokers 1, 2 and 3 are restarted onto the plugin in turn (stop, the
// guide's to-rlmm settings, start, back in the ISR, preferred leaders
// elected), so the cluster runs mixed both ways; then broker 2 is rolled
// back (remove-on-rollback, to-kafka). After every step: the broker runs
// the RLMM of the step (a sidecar or none), every partition gets a remote
// segment copied by its leader of the moment (an rlmm leader with Kafka
// followers, and the reverse), rlmm verify is clean, and every sidecar
// holds in memory exactly what its broker hosts (checkSidecarHolds). At the end: no
// produce failed, no consumer saw OffsetOutOfRange, every acknowledged
// record reads back in order from offset 0, rlmm verify and rlmm scrub find
// nothing, and each sidecar holds in memory exactly what its broker hosts,
// once more.
func TestRollingMigration(t *testing.T) {
	if requireMode(t) != modeRlmm {
		t.Skip("the migration test runs Kafka's RLMM and rlmm's plugin in one cluster: it starts on Kafka's RLMM itself and " +
			"needs the plugin, RLMM_BROKER_TEST=rlmm (make broker-test)")
	}
	started := time.Now()
	guide := readMigrationGuide(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	t.Cleanup(cancel)
	c := startClusterOpts(t, 3, clusterOptions{rlmm: modeKafka, extra: joinProperties(guide.kept)})
	cl := c.client()
	checkMetadataTopic(ctx, t, cl)

	spread := make([][]int32, migrationParts)
	for i := range spread {
		spread[i] = []int32{int32(i%3 + 1), int32((i+1)%3 + 1), int32((i+2)%3 + 1)}
	}
	tps := createTopicAssigned(ctx, t, cl, migrationTopic, spread)
	alterTopic(ctx, t, cl, migrationTopic, map[string]string{"min.insync.replicas": "2"})
	rf1 := createTopicAssigned(ctx, t, cl, migrationTopicRF1, [][]int32{{1}, {2}, {3}})
	all := append(slices.Clone(tps), rf1...)
	produceAll(ctx, t, cl, all, 0, migrationFirst)
	c.waitAllTiered(ctx, t, cl, all)
	load := &migrationLoad{c: c, topic: migrationTopic, parts: migrationParts, remote: 1000}
	load.start(ctx, migrationFirst)
	t.Logf("on Kafka's RLMM, under load, after %s", time.Since(started).Round(time.Second))

	running := map[int]string{1: modeKafka, 2: modeKafka, 3: modeKafka}
	mixedLeaders := map[string]bool{}
	steps := []struct {
		node int
		to   string
	}{{1, modeRlmm}, {2, modeRlmm}, {3, modeRlmm}, {2, modeKafka}}
	for _, step := range steps {
		stepStart := time.Now()
		before, err := c.readMetadata(ctx)
		must(t, err)
		c.stopNode(step.node)
		if running[step.node] == modeRlmm {
			waitFor(ctx, t, fmt.Sprintf("broker %d's sidecar to exit", step.node), func() (bool, string, error) {
				pids, err := sidecars(c.nodeDir(step.node))
				return len(pids) == 0, fmt.Sprintf("rlmm serve pids %v", pids), err
			})
		}
		if step.to == modeRlmm {
			c.editProperties(step.node, "to-rlmm", nil, guide.toRlmm)
		} else {
			c.editProperties(step.node, "remove-on-rollback, to-kafka", guide.removeOnRollback, guide.toKafka)
		}
		c.startNode(step.node)
		running[step.node] = step.to
		c.checkRunsRLMM(ctx, t, step.node, step.to)
		c.waitInSync(ctx, t, cl, step.node, migrationTopic, "__remote_log_metadata")
		c.electPreferred(ctx, t, cl, migrationTopic, migrationParts)
		for _, l := range c.waitCopiesByLeaders(ctx, t, cl, tps, before, running) {
			mixedLeaders[l] = true
		}
		if out, code := rlmmRun(ctx, t, "verify", "--kafka", strings.Join(c.addrs, ","), "-q"); code != 0 {
			t.Errorf("after broker %d moved to %s's RLMM: rlmm verify: exit %d:\n%s", step.node, step.to, code, out)
		}
		// Under load: every sidecar holds what its broker hosts.
		hosted := c.hosting(ctx, t, cl, migrationTopic, migrationTopicRF1)
		for n := 1; n <= 3; n++ {
			if running[n] == modeRlmm {
				c.checkSidecarHolds(ctx, t, n, hosted[int32(n)])
			}
		}
		t.Logf("broker %d on %s's RLMM (brokers %v) in %s", step.node, step.to, running, time.Since(stepStart).Round(time.Second))
	}

	// Both ways: a leader on rlmm copied with followers on Kafka's RLMM, and
	// the reverse.
	if !mixedLeaders[modeRlmm] || !mixedLeaders[modeKafka] {
		t.Errorf("the cluster never ran mixed both ways: leaders with followers on the other RLMM ran %v", mixedLeaders)
	}
	acked := load.stop(ctx, t)
	c.waitAllTiered(ctx, t, cl, all)
	var wg sync.WaitGroup
	errs := make([]error, len(all))
	for i, tp := range all {
		end := int64(migrationFirst)
		if tp.Topic == migrationTopic {
			end = acked[tp.Partition]
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = c.readPartitionFrom(ctx, tp.Topic, tp.Partition, 0, end)
		}()
	}
	wg.Wait()
	must(t, errors.Join(errs...))
	t.Logf("every acknowledged record of the %d partitions read back in order from offset 0 (auto.offset.reset=none)", len(all))

	bootstrap := strings.Join(c.addrs, ",")
	if out, code := rlmmRun(ctx, t, "verify", "--kafka", bootstrap, "-q"); code != 0 {
		t.Errorf("rlmm verify --kafka %s: exit %d:\n%s", bootstrap, code, out)
	}
	waitFor(ctx, t, "rlmm scrub to find nothing missing or orphaned", func() (bool, string, error) {
		doc, code := rlmmJSON[scrubDoc](ctx, t, "scrub", "--json", "-q", "--kafka", bootstrap, "--layout", "local", "--remote-dir", c.remoteDir)
		return code == 0 && doc.OK && doc.Summary.Missing == 0 && doc.Summary.Orphans == 0, describeScrub(&doc), nil
	})
	hosted := c.hosting(ctx, t, cl, migrationTopic, migrationTopicRF1)
	for n := 1; n <= 3; n++ {
		if running[n] == modeRlmm {
			c.checkSidecarHolds(ctx, t, n, hosted[int32(n)])
		}
	}
	t.Logf("migrated and rolled back in %s", time.Since(started).Round(time.Second))
}

// checkMetadataTopic checks the metadata topic is as the guide's kept
// settings make it: replication factor 3, min.insync.replicas 2.
func checkMetadataTopic(ctx context.Context, t *testing.T, cl *kgo.Client) {
	t.Helper()
	const topic = "__remote_log_metadata"
	adm := kadm.NewClient(cl)
	waitFor(ctx, t, "the metadata topic of replication factor 3 and min.insync.replicas 2", func() (bool, string, error) {
		td, err := adm.ListTopics(ctx, topic)
		if err != nil {
			return false, "", err
		}
		d, ok := td[topic]
		if !ok || d.Err != nil || len(d.Partitions) == 0 {
			return false, fmt.Sprintf("%+v", d), nil
		}
		for _, p := range d.Partitions {
			if len(p.Replicas) != 3 {
				return false, "", fmt.Errorf("%s-%d has replicas %v, want 3", topic, p.Partition, p.Replicas)
			}
		}
		rcs, err := adm.DescribeTopicConfigs(ctx, topic)
		if err != nil {
			return false, "", err
		}
		rc, err := rcs.On(topic, nil)
		if err != nil {
			return false, "", err
		}
		for _, cfg := range rc.Configs {
			if cfg.Key == "min.insync.replicas" {
				v := cfg.MaybeValue()
				if v != "2" {
					return false, "", fmt.Errorf("%s has min.insync.replicas %s, want 2", topic, v)
				}
				return true, "", nil
			}
		}
		return false, "no min.insync.replicas in its configs", nil
	})
}

// checkRunsRLMM checks node n runs the RLMM to (started with the node): a
// sidecar under its directory for rlmm, none for Kafka's, and the class its
// server.properties names.
func (c *cluster) checkRunsRLMM(ctx context.Context, t *testing.T, n int, to string) {
	t.Helper()
	props, err := os.ReadFile(filepath.Join(c.nodeDir(n), "server.properties"))
	must(t, err)
	want := map[string]string{modeRlmm: rlmmPluginClass, modeKafka: kafkaRLMMClass}[to]
	if got := lastProperty(string(props), rlmmClassKey); got != want {
		t.Fatalf("broker %d: %s=%s, want %s", n, rlmmClassKey, got, want)
	}
	if to == modeKafka {
		pids, err := sidecars(c.nodeDir(n))
		must(t, err)
		if len(pids) != 0 {
			t.Fatalf("broker %d runs Kafka's RLMM, but rlmm serve pids %v run under its directory", n, pids)
		}
		return
	}
	waitFor(ctx, t, fmt.Sprintf("broker %d's sidecar to run", n), func() (bool, string, error) {
		pids, err := sidecars(c.nodeDir(n))
		return len(pids) == 1, fmt.Sprintf("rlmm serve pids %v", pids), err
	})
}

// lastProperty is the value of the last line of key in a properties text
// (the one Kafka takes).
func lastProperty(props, key string) string {
	v := ""
	for l := range strings.Lines(props) {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(l), key+"="); ok {
			v = rest
		}
	}
	return v
}

// waitInSync waits until node n is in the ISR of every partition of the
// topics it hosts.
func (c *cluster) waitInSync(ctx context.Context, t *testing.T, cl *kgo.Client, n int, topics ...string) {
	t.Helper()
	waitFor(ctx, t, fmt.Sprintf("broker %d in the ISR of every partition it hosts of %v", n, topics), func() (bool, string, error) {
		td, err := kadm.NewClient(cl).ListTopics(ctx, topics...)
		if err != nil {
			return false, "", err
		}
		for _, topic := range topics {
			d, ok := td[topic]
			if !ok || d.Err != nil {
				return false, fmt.Sprintf("%s: %+v", topic, d), nil
			}
			for _, p := range d.Partitions {
				if slices.Contains(p.Replicas, int32(n)) && !slices.Contains(p.ISR, int32(n)) {
					return false, fmt.Sprintf("%s-%d: ISR %v", topic, p.Partition, p.ISR), nil
				}
			}
		}
		return true, "", nil
	})
}

// electPreferred elects the preferred leaders of the topic's partitions and
// waits until each leads.
func (c *cluster) electPreferred(ctx context.Context, t *testing.T, cl *kgo.Client, topic string, parts int32) {
	t.Helper()
	set := kadm.TopicsSet{topic: {}}
	for p := range parts {
		set[topic][p] = struct{}{}
	}
	res, err := kadm.NewClient(cl).ElectLeaders(ctx, kadm.ElectPreferredReplica, set)
	must(t, err)
	for _, ps := range res {
		for _, r := range ps {
			if r.Err != nil && !errors.Is(r.Err, kerr.ElectionNotNeeded) {
				t.Fatalf("electing the preferred leader of %s-%d: %v %s", topic, r.Partition, r.Err, r.ErrMessage)
			}
		}
	}
	waitFor(ctx, t, "the preferred leaders of "+topic+" to lead", func() (bool, string, error) {
		for p := range parts {
			pd, err := partitionLeader(ctx, cl, topic, p)
			if err != nil {
				return false, "", err
			}
			if pd.Leader != pd.Replicas[0] {
				return false, fmt.Sprintf("%s-%d: leader %d of %v", topic, p, pd.Leader, pd.Replicas), nil
			}
		}
		return true, "", nil
	})
}

// waitCopiesByLeaders waits until every partition of tps has a segment
// finished since before (a read of the metadata topic) and copied by its
// leader now, and logs the mixed state: which partitions an rlmm broker
// leads with followers on Kafka's RLMM, and the reverse. It returns the
// RLMMs of the leaders that had a follower on the other RLMM.
func (c *cluster) waitCopiesByLeaders(ctx context.Context, t *testing.T, cl *kgo.Client, tps []rlmm.TopicIDPartition, before *metaView, running map[int]string) []string {
	t.Helper()
	var mixedLeaders []string
	leaders := map[rlmm.TopicIDPartition]int32{}
	var mixed []string
	for _, tp := range tps {
		pd, err := partitionLeader(ctx, cl, tp.Topic, tp.Partition)
		must(t, err)
		leaders[tp] = pd.Leader
		var others []string
		for _, r := range pd.Replicas {
			if r != pd.Leader && running[int(r)] != running[int(pd.Leader)] {
				others = append(others, fmt.Sprintf("%d (%s)", r, running[int(r)]))
			}
		}
		if len(others) > 0 {
			mixedLeaders = append(mixedLeaders, running[int(pd.Leader)])
			mixed = append(mixed, fmt.Sprintf("%s-%d: leader %d (%s), followers %s", tp.Topic, tp.Partition, pd.Leader,
				running[int(pd.Leader)], strings.Join(others, ", ")))
		}
	}
	waitFor(ctx, t, "every partition to get a remote segment copied by its leader", func() (bool, string, error) {
		v, err := c.readMetadata(ctx)
		if err != nil {
			return false, "", err
		}
		var waiting []string
		for _, tp := range tps {
			if !slices.ContainsFunc(inState(v.segments(tp), rlmm.CopySegmentFinished), func(s *segment) bool {
				return before.segs[s.meta.ID.ID] == nil && s.meta.BrokerID == leaders[tp]
			}) {
				waiting = append(waiting, fmt.Sprintf("%s-%d (leader %d)", tp.Topic, tp.Partition, leaders[tp]))
			}
		}
		return len(waiting) == 0, "waiting for " + strings.Join(waiting, ", "), nil
	})
	if len(mixed) == 0 {
		t.Logf("every partition's replicas run one RLMM")
	} else {
		t.Logf("mixed: %s", strings.Join(mixed, "; "))
	}
	return mixedLeaders
}

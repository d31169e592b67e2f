package main

// brokerbench memory: the per-broker memory of the RLMM on a cluster of
// --brokers nodes (test/kafkatest, every node a broker, node 1 also the
// one controller), for one topic of
// --partitions partitions of replication factor --rf (partition i on nodes
// i%N+1, (i+1)%N+1, ...) with --segments finished remote segments each.
//
// The segments are not copied by the brokers (that would take a GiB per
// thousand segments): every partition gets --segments small records, then
// the bench writes, with package wire, a COPY_SEGMENT_STARTED and a
// COPY_SEGMENT_FINISHED event per offset (a one-offset segment, leader epoch
// 0, by the partition's leader) into the partition's metadata partition.
// Every segment lies inside the partition's log and its leader epoch, so the
// brokers' RemoteLogManager keeps them (no retention applies: 7 days, no
// size limit) and copies nothing (the only local segment is the active one);
// the run checks that the metadata topic holds no event but the bench's.
//
// Measured per broker, before the events (the topic produced, nothing
// remote yet) and once every RLMM has applied them:
//   - the broker JVM's live heap: the total of `jcmd PID GC.class_histogram`
//     (a full GC first), and the part of it in the classes of Kafka's RLMM
//     (org.apache.kafka.server.log.remote.metadata.storage.*, and
//     RemoteLogSegmentMetadata*: its own objects only, a lower bound, since
//     its maps' entries are the JDK's classes);
//   - the broker's RSS (VmRSS of /proc/PID/status);
//   - with rlmm, the sidecar's (rlmm serve's) Go heap from its /metrics
//     (go_memstats_heap_inuse_bytes, heap_alloc) and its RSS, read after
//     its first garbage collection once it caught up, and the lowest heap
//     goal (next_gc: twice the heap marked live) of its next collections.
//
// Ready: every sidecar's metadata partitions assigned, ready, lag 0 (rlmm);
// and for both, the brokers' live heaps steady (two full-GC samples within
// 1% or 256 KiB of each other, 3 s apart), since Kafka's RLMM tells nothing
// of its progress from outside.

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/eventlog"
	"github.com/rlmm-go/rlmm/eventlog/kafkalog"
	"github.com/rlmm-go/rlmm/internal/view"
	"github.com/rlmm-go/rlmm/wire"
)

func memory(args []string) (map[string]any, error) {
	var o options
	fs := flag.NewFlagSet("memory", flag.ContinueOnError)
	fs.StringVar(&o.mode, "mode", "", "the RLMM: kafka or rlmm")
	fs.IntVar(&o.brokers, "brokers", 3, "nodes of the cluster")
	fs.IntVar(&o.rf, "rf", 1, "replication factor of the topic")
	fs.IntVar(&o.partitions, "partitions", 30, "partitions of the topic")
	fs.IntVar(&o.segments, "segments", 2000, "finished remote segments per partition")
	fs.StringVar(&o.pluginJar, "plugin-jar", "", "rlmm's plugin jar (mode rlmm)")
	fs.StringVar(&o.binary, "rlmm-binary", "", "the rlmm binary (mode rlmm)")
	if err := fs.Parse(args); err != nil {
		return nil, fmt.Errorf("%w: %v", errUsage, err)
	}
	if o.mode != "kafka" && o.mode != "rlmm" {
		return nil, fmt.Errorf("%w: --mode must be kafka or rlmm, got %q", errUsage, o.mode)
	}
	if o.mode == "rlmm" && (o.pluginJar == "" || o.binary == "") {
		return nil, fmt.Errorf("%w: --mode rlmm needs --plugin-jar and --rlmm-binary", errUsage)
	}
	if o.brokers < 1 || o.brokers > 9 || o.rf < 1 || o.rf > o.brokers || o.partitions < 1 || o.segments < 1 {
		return nil, fmt.Errorf("%w: --brokers 1..9, --rf 1..brokers, --partitions >= 1, --segments >= 1", errUsage)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	// The RemoteLogManager's tasks list every remote segment of a leader's
	// partitions each run: every 5 s here (100 ms is test/kafkatest's
	// default for the tests), so they do not take the machine's CPUs.
	extra := "remote.log.manager.task.interval.ms=5000"
	if o.mode == "rlmm" {
		extra += "\nrlmm.config.rlmm.serve.args=--metrics-listen 127.0.0.1:0"
	}
	b, err := startNodes(ctx, o, o.brokers, extra)
	if err != nil {
		return nil, err
	}
	defer b.close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.addrs...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchMaxBytes(1<<20), kgo.MaxBufferedRecords(50000), kgo.RecordRetries(20), kgo.UnknownTopicRetries(50))
	if err != nil {
		return nil, err
	}
	defer cl.Close()

	const topic = "mem"
	tps, leaders, err := createSpreadTopic(ctx, cl, topic, o)
	if err != nil {
		return nil, err
	}
	if err := produceSmall(ctx, cl, tps, o.segments); err != nil {
		return nil, err
	}
	hosted := make([]int, o.brokers+1)
	consumed := make([]map[int32]bool, o.brokers+1) // metadata partitions each node consumes
	for n := range consumed {
		consumed[n] = map[int32]bool{}
	}
	for i, tp := range tps {
		for r := range o.rf {
			n := (i+r)%o.brokers + 1
			hosted[n]++
			consumed[n][wire.MetadataPartition(tp, metadataPartitions)] = true
		}
	}
	// The partitions of the metadata partitions a node consumes: what a
	// manager that keeps every partition of them holds.
	inConsumed := make([]int, o.brokers+1)
	for n := 1; n <= o.brokers; n++ {
		for _, tp := range tps {
			if consumed[n][wire.MetadataPartition(tp, metadataPartitions)] {
				inConsumed[n]++
			}
		}
	}
	if err := b.waitSteady(ctx, false); err != nil {
		return nil, fmt.Errorf("before the events: %w", err)
	}
	before, err := b.measure(ctx)
	if err != nil {
		return nil, err
	}
	fillStart := time.Now()
	events, err := fillSegments(ctx, cl, tps, leaders, o.segments)
	if err != nil {
		return nil, err
	}
	fillTook := time.Since(fillStart)
	if err := b.waitSteady(ctx, true); err != nil {
		return nil, fmt.Errorf("after the events: %w", err)
	}
	after, err := b.measure(ctx)
	if err != nil {
		return nil, err
	}
	if o.mode == "rlmm" {
		if err := b.lowestGoals(ctx, after); err != nil {
			return nil, err
		}
	}
	foreign, err := foreignEvents(ctx, b.addrs, events)
	if err != nil {
		return nil, err
	}
	var nodes []map[string]any
	for n := 1; n <= o.brokers; n++ {
		nodes = append(nodes, map[string]any{
			"node": n, "hostedReplicas": hosted[n], "hostedSegments": hosted[n] * o.segments,
			"consumedMetadataPartitions": len(consumed[n]), "partitionsInConsumedMetadataPartitions": inConsumed[n],
			"before": before[n-1], "after": after[n-1],
		})
	}
	return map[string]any{
		"workload": "memory", "mode": o.mode, "brokers": o.brokers, "rf": o.rf, "partitions": o.partitions,
		"segmentsPerPartition": o.segments, "metadataPartitions": metadataPartitions, "eventsWritten": events,
		"eventsNotByTheBench": foreign, "fillMs": fillTook.Milliseconds(), "nodes": nodes,
	}, nil
}

// createSpreadTopic creates the tiered topic, partition i on nodes i%N+1,
// (i+1)%N+1, ..., and returns its partitions and their leaders.
func createSpreadTopic(ctx context.Context, cl *kgo.Client, topic string, o options) ([]rlmm.TopicIDPartition, []int32, error) {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 60000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic = topic
	rt.NumPartitions, rt.ReplicationFactor = -1, -1
	for i := range o.partitions {
		a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		a.Partition = int32(i)
		for r := range o.rf {
			a.Replicas = append(a.Replicas, int32((i+r)%o.brokers+1))
		}
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
	}
	for k, v := range map[string]string{"remote.storage.enable": "true", "segment.bytes": "1073741824"} {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = k, kmsg.StringPtr(v)
		rt.Configs = append(rt.Configs, c)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, nil, err
	}
	for _, t := range resp.Topics {
		if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
			return nil, nil, fmt.Errorf("creating %s: %w", topic, err)
		}
	}
	var tps []rlmm.TopicIDPartition
	var leaders []int32
	wctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	err = poll(wctx, 300*time.Millisecond, "every partition led by its preferred leader", func() (bool, error) {
		td, err := kadm.NewClient(cl).ListTopics(wctx, topic)
		if err != nil {
			return false, err
		}
		d := td[topic]
		if d.Err != nil || len(d.Partitions) != o.partitions {
			return false, nil
		}
		tps, leaders = tps[:0], leaders[:0]
		for i := range int32(o.partitions) {
			p := d.Partitions[i]
			if p.Leader != i%int32(o.brokers)+1 || len(p.ISR) != o.rf {
				return false, nil
			}
			tps = append(tps, rlmm.TopicIDPartition{TopicID: rlmm.Uuid(d.ID), Topic: topic, Partition: i})
			leaders = append(leaders, p.Leader)
		}
		return true, nil
	})
	return tps, leaders, err
}

// produceSmall writes n records of 16 bytes into every partition (offsets
// 0..n-1) and checks that each partition ends at n.
func produceSmall(ctx context.Context, cl *kgo.Client, tps []rlmm.TopicIDPartition, n int) error {
	ap := newAsyncProducer(ctx, cl)
	for _, tp := range tps {
		for range n {
			ap.produce(&kgo.Record{Topic: tp.Topic, Partition: tp.Partition, Value: make([]byte, 16)})
		}
	}
	if err := ap.flush(); err != nil {
		return fmt.Errorf("producing: %w", err)
	}
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, tps[0].Topic)
	if err != nil {
		return err
	}
	for _, tp := range tps {
		if o, ok := ends.Lookup(tp.Topic, tp.Partition); !ok || o.Err != nil || o.Offset != int64(n) {
			return fmt.Errorf("%s-%d ends at %+v, want %d", tp.Topic, tp.Partition, o, n)
		}
	}
	return nil
}

// fillSegments writes, for every partition and offset i < n, a one-offset
// segment [i, i] of leader epoch 0 copied by the partition's leader:
// COPY_SEGMENT_STARTED then COPY_SEGMENT_FINISHED. It returns the count of
// events written.
func fillSegments(ctx context.Context, cl *kgo.Client, tps []rlmm.TopicIDPartition, leaders []int32, n int) (int, error) {
	r := rand.New(rand.NewPCG(11, 13))
	now := time.Now().UnixMilli()
	ap := newAsyncProducer(ctx, cl)
	written := 0
	var buf []byte
	send := func(mp int32, ev wire.Event) error {
		var err error
		buf, err = wire.AppendEvent(buf[:0], &ev)
		if err != nil {
			return err
		}
		v := append([]byte(nil), buf...)
		ap.produce(&kgo.Record{Topic: "__remote_log_metadata", Partition: mp, Value: v})
		written++
		return nil
	}
	for i := range n {
		for k, tp := range tps {
			mp := wire.MetadataPartition(tp, metadataPartitions)
			id := rlmm.SegmentID{TopicIDPartition: tp, ID: rlmm.UuidFromBits(r.Int64(), r.Int64())}
			off := int64(i)
			m := rlmm.SegmentMetadata{ID: id, StartOffset: off, EndOffset: off, MaxTimestampMs: now, BrokerID: leaders[k],
				EventTimestampMs: now, LeaderEpochs: []rlmm.EpochStart{{Epoch: 0, StartOffset: off}}, SizeInBytes: 100,
				State: rlmm.CopySegmentStarted, TxnIndexEmpty: true}
			if err := send(mp, wire.SegmentEvent(m)); err != nil {
				return written, err
			}
			up := rlmm.SegmentUpdate{ID: id, EventTimestampMs: now, State: rlmm.CopySegmentFinished, BrokerID: leaders[k]}
			if err := send(mp, wire.UpdateEvent(up)); err != nil {
				return written, err
			}
		}
	}
	if err := ap.flush(); err != nil {
		return written, fmt.Errorf("writing the metadata events: %w", err)
	}
	return written, nil
}

// foreignEvents reads the whole metadata topic and returns how many of its
// events the bench did not write (it wrote ours).
func foreignEvents(ctx context.Context, addrs []string, ours int) (int, error) {
	log, err := kafkalog.Open(ctx, kafkalog.Config{BootstrapServers: addrs, SkipTopicCreation: true})
	if err != nil {
		return 0, err
	}
	defer log.Close()
	total := 0
	_, err = view.ReadLog(ctx, log, nil, func(eventlog.Record) error { total++; return nil })
	return total - ours, err
}

// nodeMemory is one node's figures at one moment.
type nodeMemory struct {
	BrokerPid         int   `json:"brokerPid"`
	BrokerLiveHeap    int64 `json:"brokerLiveHeap"`    // class histogram total after a full GC
	BrokerRlmmClasses int64 `json:"brokerRlmmClasses"` // of which Kafka's RLMM's own classes
	BrokerRSS         int64 `json:"brokerRss"`
	SidecarPid        int   `json:"sidecarPid,omitempty"`
	SidecarHeapInuse  int64 `json:"sidecarHeapInuse,omitempty"`
	SidecarHeapAlloc  int64 `json:"sidecarHeapAlloc,omitempty"`
	SidecarNextGC     int64 `json:"sidecarNextGc,omitempty"`
	// after the events: the lowest heap goal of SidecarGCs collections,
	// and the lowest live heap they marked (go_gc_heap_live_bytes, from
	// the runtime: exact where the goal is twice the live heap only
	// roughly; 0 from an rlmm serve that does not export it)
	SidecarLiveHeap int64 `json:"sidecarLiveHeap,omitempty"`
	SidecarGCs      int   `json:"sidecarGcs,omitempty"`
	SidecarRSS      int64 `json:"sidecarRss,omitempty"`
}

// liveHeap returns the total and the RLMM classes' part of a JVM's class
// histogram (jcmd GC.class_histogram runs a full GC first).
func liveHeap(ctx context.Context, pid int) (total, rlmmClasses int64, err error) {
	out, err := exec.CommandContext(ctx, "jcmd", strconv.Itoa(pid), "GC.class_histogram").Output()
	if err != nil {
		return 0, 0, fmt.Errorf("jcmd %d GC.class_histogram: %w", pid, err)
	}
	row := regexp.MustCompile(`^\s*\d+:\s+\d+\s+(\d+)\s+(\S+)`)
	for line := range strings.Lines(string(out)) {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "Total" {
			total, _ = strconv.ParseInt(f[2], 10, 64)
			continue
		}
		m := row.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		if strings.HasPrefix(m[2], "org.apache.kafka.server.log.remote.metadata.storage.") ||
			strings.HasPrefix(m[2], "org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadata") {
			n, _ := strconv.ParseInt(m[1], 10, 64)
			rlmmClasses += n
		}
	}
	if total == 0 {
		return 0, 0, fmt.Errorf("jcmd %d GC.class_histogram: no Total line", pid)
	}
	return total, rlmmClasses, nil
}

// rss returns VmRSS of a process in bytes.
func rss(pid int) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
}

// sidecarPid finds the `rlmm serve` whose command line names node n's
// directory.
func (b *broker) sidecarPid(n int) (int, error) {
	dir := b.nodeDir(n) + string(filepath.Separator)
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		c, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(c), "\x00"), "\x00")
		if len(args) >= 2 && strings.HasPrefix(filepath.Base(args[0]), "rlmm") && args[1] == "serve" && strings.Contains(string(c), dir) {
			return pid, nil
		}
	}
	return 0, fmt.Errorf("no rlmm serve under %s", dir)
}

var endpointLine = regexp.MustCompile(`serve: operations endpoint.*address=([0-9.:]+)`)

// metrics returns node n's sidecar's /metrics, sample name (with labels) to value.
func (b *broker) metrics(ctx context.Context, n int) (map[string]float64, error) {
	log, err := os.ReadFile(filepath.Join(b.nodeDir(n), "broker.log"))
	if err != nil {
		return nil, err
	}
	ms := endpointLine.FindAllStringSubmatch(string(log), -1)
	if len(ms) == 0 {
		return nil, fmt.Errorf("node %d: no \"serve: operations endpoint\" line in broker.log", n)
	}
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, "http://"+ms[len(ms)-1][1]+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			out[line[:i]] = v
		}
	}
	return out, sc.Err()
}

// sidecarsCaughtUp is nil once every sidecar's assigned metadata partitions
// are ready with no lag and it collected garbage after since (zero: any).
func (b *broker) sidecarsCaughtUp(ctx context.Context, since time.Time) error {
	for n := 1; n <= b.nodes; n++ {
		m, err := b.metrics(ctx, n)
		if err != nil {
			return err
		}
		for k, v := range m {
			p, ok := strings.CutPrefix(k, "rlmm_partition_assigned{")
			if !ok || v != 1 {
				continue
			}
			if m["rlmm_partition_ready{"+p] != 1 || m["rlmm_partition_lag{"+p] != 0 {
				return fmt.Errorf("node %d: metadata partition %s ready %v lag %v", n, p, m["rlmm_partition_ready{"+p], m["rlmm_partition_lag{"+p])
			}
		}
		if last := m["go_memstats_last_gc_time_seconds"]; !since.IsZero() && last < float64(since.UnixNano())/1e9 {
			return fmt.Errorf("node %d: the sidecar's last GC (%v) is older than %v", n, time.Unix(int64(last), 0), since)
		}
	}
	return nil
}

// waitSteady waits until the sidecars (rlmm) caught up, and with gc until
// each collected garbage after that (the Go runtime forces a collection
// every 2 minutes at the latest), and every broker's live heap is steady.
func (b *broker) waitSteady(ctx context.Context, gc bool) error {
	wctx, cancel := context.WithTimeout(ctx, 8*time.Minute)
	defer cancel()
	if b.o.mode == "rlmm" {
		if err := poll(wctx, time.Second, "every sidecar caught up", func() (bool, error) {
			err := b.sidecarsCaughtUp(wctx, time.Time{})
			return err == nil, err
		}); err != nil {
			return err
		}
		if gc {
			caughtUp := time.Now()
			if err := poll(wctx, time.Second, "a garbage collection of every sidecar after it caught up", func() (bool, error) {
				err := b.sidecarsCaughtUp(wctx, caughtUp)
				return err == nil, err
			}); err != nil {
				return err
			}
		}
	}
	prev := make([]int64, b.nodes+1)
	return poll(wctx, 3*time.Second, "every broker's live heap steady", func() (bool, error) {
		steady := true
		for n := 1; n <= b.nodes; n++ {
			pid, err := b.brokerPid(wctx, n)
			if err != nil {
				return false, err
			}
			total, _, err := liveHeap(wctx, pid)
			if err != nil {
				return false, err
			}
			d := total - prev[n]
			if d < 0 {
				d = -d
			}
			if d > max(total/100, 256<<10) {
				steady = false
			}
			prev[n] = total
		}
		return steady, nil
	})
}

// gcCycles is how many of a sidecar's collections lowestGoals watches.
const gcCycles = 5

// lowestGoals watches every sidecar's next gcCycles garbage collections
// (for at most 3 minutes, at least one each) and keeps in m the lowest heap
// goal they set: the goal is twice the heap marked live, and the lowest is
// the one least inflated by what was in flight at the mark (a snapshot
// being written, a list being streamed to the broker).
func (b *broker) lowestGoals(ctx context.Context, m []nodeMemory) error {
	wctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	last := make([]float64, b.nodes)
	for {
		done := true
		for i := range m {
			mt, err := b.metrics(wctx, i+1)
			if err != nil {
				return err
			}
			if gc := mt["go_memstats_last_gc_time_seconds"]; gc != last[i] {
				if last[i] != 0 {
					m[i].SidecarGCs++
					m[i].SidecarNextGC = min(m[i].SidecarNextGC, int64(mt["go_memstats_next_gc_bytes"]))
					if live, ok := mt["go_gc_heap_live_bytes"]; ok && live > 0 {
						if m[i].SidecarLiveHeap == 0 || int64(live) < m[i].SidecarLiveHeap {
							m[i].SidecarLiveHeap = int64(live)
						}
					}
				}
				last[i] = gc
			}
			done = done && m[i].SidecarGCs >= gcCycles
		}
		if done {
			return nil
		}
		select {
		case <-wctx.Done():
			for i := range m {
				if m[i].SidecarGCs == 0 {
					return fmt.Errorf("node %d: the sidecar collected no garbage in 3 minutes", i+1)
				}
			}
			return nil
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// measure takes every node's figures.
func (b *broker) measure(ctx context.Context) ([]nodeMemory, error) {
	var out []nodeMemory
	for n := 1; n <= b.nodes; n++ {
		var m nodeMemory
		var err error
		if m.BrokerPid, err = b.brokerPid(ctx, n); err != nil {
			return nil, err
		}
		if m.BrokerLiveHeap, m.BrokerRlmmClasses, err = liveHeap(ctx, m.BrokerPid); err != nil {
			return nil, err
		}
		if m.BrokerRSS, err = rss(m.BrokerPid); err != nil {
			return nil, err
		}
		if b.o.mode == "rlmm" {
			if m.SidecarPid, err = b.sidecarPid(n); err != nil {
				return nil, err
			}
			if m.SidecarRSS, err = rss(m.SidecarPid); err != nil {
				return nil, err
			}
			mt, err := b.metrics(ctx, n)
			if err != nil {
				return nil, err
			}
			m.SidecarHeapInuse = int64(mt["go_memstats_heap_inuse_bytes"])
			m.SidecarHeapAlloc = int64(mt["go_memstats_heap_alloc_bytes"])
			m.SidecarNextGC = int64(mt["go_memstats_next_gc_bytes"])
		}
		out = append(out, m)
	}
	return out, nil
}

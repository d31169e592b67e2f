package fault

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/topicbased"
)

// The workload of the cluster fault tests: tiered topics under continuous
// produce (acks=all, every acknowledged offset and value recorded),
// readers from the log start offset (remote storage) with
// auto.offset.reset=none, leadership moving, and rlmm's own API driven by
// the linearizability clients of linearizability_test.go on two managers.

const (
	// wlValueBytes is every record's size: about a thousand fill a segment.
	wlValueBytes = 1000
	// wlRate is the records produced per second over all partitions.
	wlRate = 500
	// wlReadBatch is how many records a reader round reads at most.
	wlReadBatch = 2500
)

// wlTopics are the tiered topics: name, partitions, replication factor.
// The RF 2 topic's replicas move between brokers, so a sidecar's broker
// stops hosting it now and then.
var wlTopics = []struct {
	name       string
	partitions int32
	rf         int16
}{
	{"fc.a", 3, 3},
	{"fc.b", 2, 3},
	{"fc.moving", 1, 2},
}

type tpKey struct {
	topic     string
	partition int32
}

func (k tpKey) String() string { return fmt.Sprintf("%s-%d", k.topic, k.partition) }

// clusterLoad is the workload: it runs the load and records what it saw.
type clusterLoad struct {
	fc   *fcluster
	adm  *kadm.Client
	tps  []tpKey
	stop context.CancelFunc
	wg   sync.WaitGroup

	mu    sync.Mutex
	acked map[tpKey]map[int64]string // offset -> record id
	seen  map[string]bool            // verify and scrub findings reported

	produced, produceFailed          atomic.Int64
	readRecords, readRounds          atomic.Int64
	oorRetention, oorWrong, mismatch atomic.Int64
	moves, moveFailed                atomic.Int64
	moving                           atomic.Bool // the leadership mover acts
	problems                         problemLog
	managers                         [2]*topicbased.Manager
	linTopic                         string // the managers' metadata topic
	// warmup and settle are a phase's load before its first fault and
	// after its last heal, before the checks.
	warmup, settle time.Duration
}

// problemLog keeps the first problems of a phase.
type problemLog struct {
	mu   sync.Mutex
	list []string
	n    int
}

func (p *problemLog) add(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n++
	if len(p.list) < 20 {
		p.list = append(p.list, fmt.Sprintf(format, args...))
	}
}

func (p *problemLog) take() ([]string, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	l, n := p.list, p.n
	p.list, p.n = nil, 0
	return l, n
}

// topicConfig is every tiered topic's: 1 MiB segments (Kafka 4's
// minimum), the local log only the active segment once copied, remote
// retention two minutes so retention deletes during a run.
func topicConfig() map[string]*string {
	m := map[string]*string{}
	for k, v := range map[string]string{
		"remote.storage.enable": "true",
		"segment.bytes":         strconv.Itoa(1 << 20),
		"local.retention.bytes": "1",
		"local.retention.ms":    "1000",
		"retention.ms":          "120000",
		"file.delete.delay.ms":  "100",
		"min.insync.replicas":   "2",
	} {
		m[k] = &v
	}
	return m
}

// startClusterLoad creates the topics and starts the producer, the reader and
// the leadership mover; the linearizability clients run per phase.
func startClusterLoad(t *testing.T, fc *fcluster) *clusterLoad {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(fc.k.Bootstrap()...), kgo.MetadataMinAge(100*time.Millisecond),
		kgo.RequestTimeoutOverhead(5*time.Second))
	must(t, err)
	t.Cleanup(cl.Close)
	w := &clusterLoad{fc: fc, adm: kadm.NewClient(cl), acked: map[tpKey]map[int64]string{}, seen: map[string]bool{},
		warmup: 10 * time.Second, settle: 15 * time.Second}
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	for _, tp := range wlTopics {
		res, err := w.adm.CreateTopic(ctx, tp.partitions, tp.rf, topicConfig(), tp.name)
		if err == nil {
			err = res.Err
		}
		if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
			t.Fatalf("creating %s: %v", tp.name, err)
		}
		for p := range tp.partitions {
			k := tpKey{tp.name, p}
			w.tps = append(w.tps, k)
			w.acked[k] = map[int64]string{}
		}
	}
	// Two managers of rlmm's own API over their own metadata topic, through
	// the proxies like everything else.
	fake := &cluster{k: fc.k, bootstrap: fc.k.Bootstrap()}
	topic := uniqueTopic(t)
	w.linTopic = topic
	for i := range w.managers {
		l := openLog(t, fake, topic, metaPartitions, testLogger(t))
		w.managers[i] = startManager(t, topicbased.Config{Log: l, ConsumeWait: faultConsumeWait, Logger: testLogger(t)})
	}
	runCtx, stop := context.WithCancel(context.Background())
	w.stop = stop
	w.wg.Go(func() { w.produce(runCtx) })
	w.wg.Go(func() { w.read(runCtx) })
	w.wg.Go(func() { w.move(runCtx) })
	t.Cleanup(w.halt)
	return w
}

// halt stops every goroutine of the workload.
func (w *clusterLoad) halt() {
	w.stop()
	w.wg.Wait()
}

// recordID and value: a record's value starts with its id and a '|'.
func recordValue(id string) []byte {
	v := make([]byte, wlValueBytes)
	n := copy(v, id+"|")
	for i := n; i < len(v); i++ {
		v[i] = 'a' + byte(i%26)
	}
	return v
}

func valueID(v []byte) string {
	s := string(v)
	if i := strings.IndexByte(s, '|'); i >= 0 {
		return s[:i]
	}
	return s
}

// produce sends wlRate records a second, round robin over the partitions,
// acks=all, and records every acknowledged offset.
func (w *clusterLoad) produce(ctx context.Context) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(w.fc.k.Bootstrap()...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordDeliveryTimeout(90*time.Second), kgo.ProducerLinger(20*time.Millisecond),
		kgo.MaxBufferedRecords(5000), kgo.MetadataMinAge(200*time.Millisecond))
	if err != nil {
		w.problems.add("producer: %v", err)
		return
	}
	defer cl.Close()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	per := max(1, wlRate/50)
	var seq int64
	for {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			_ = cl.Flush(fctx)
			cancel()
			return
		case <-tick.C:
		}
		if cl.BufferedProduceRecords() > 4000 {
			continue // the cluster is slow: do not queue without bound
		}
		for range per {
			seq++
			k := w.tps[seq%int64(len(w.tps))]
			id := "r" + strconv.FormatInt(seq, 10)
			r := &kgo.Record{Topic: k.topic, Partition: k.partition, Value: recordValue(id)}
			cl.Produce(context.Background(), r, func(r *kgo.Record, err error) {
				if err != nil {
					w.produceFailed.Add(1)
					return
				}
				w.produced.Add(1)
				w.mu.Lock()
				w.acked[tpKey{r.Topic, r.Partition}][r.Offset] = id
				w.mu.Unlock()
			})
		}
	}
}

// ackedID is the id acknowledged at offset o of k ("" when none).
func (w *clusterLoad) ackedID(k tpKey, o int64) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.acked[k][o]
}

// read reads, one partition after another, from its log start offset (in
// remote storage once tiered) up to wlReadBatch records, with
// auto.offset.reset=none, checking each acknowledged record's value. An
// OffsetOutOfRange below the log start offset is retention passing the
// reader (counted); at or above it, a wrong answer.
func (w *clusterLoad) read(ctx context.Context) {
	for i := 0; ctx.Err() == nil; i++ {
		k := w.tps[i%len(w.tps)]
		w.readRound(ctx, k)
		w.readRounds.Add(1)
	}
}

func (w *clusterLoad) readRound(ctx context.Context, k tpKey) {
	lctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	starts, err := w.adm.ListStartOffsets(lctx, k.topic)
	cancel()
	if err != nil {
		sleepCtx(ctx, time.Second)
		return
	}
	so, ok := starts.Lookup(k.topic, k.partition)
	if !ok || so.Err != nil {
		sleepCtx(ctx, time.Second)
		return
	}
	from := so.Offset
	cl, err := kgo.NewClient(kgo.SeedBrokers(w.fc.k.Bootstrap()...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{k.topic: {k.partition: kgo.NewOffset().At(from)}}),
		kgo.ConsumeResetOffset(kgo.NoResetOffset()), kgo.FetchMaxWait(500*time.Millisecond), kgo.MetadataMinAge(200*time.Millisecond))
	if err != nil {
		w.problems.add("reader: %v", err)
		return
	}
	defer cl.Close()
	next, end := from, from+wlReadBatch
	deadline := time.Now().Add(45 * time.Second)
	for next < end && time.Now().Before(deadline) && ctx.Err() == nil {
		pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		fs := cl.PollFetches(pctx)
		cancel()
		for _, fe := range fs.Errors() {
			if errors.Is(fe.Err, context.DeadlineExceeded) || errors.Is(fe.Err, context.Canceled) {
				continue
			}
			if errors.Is(fe.Err, kerr.OffsetOutOfRange) {
				w.judgeOOR(ctx, k, next, fetchedFrom(cl, k))
				return
			}
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset < next {
				w.problems.add("%s: offset %d read after %d: out of order", k, r.Offset, next-1)
			}
			next = r.Offset + 1
			w.readRecords.Add(1)
			if id := w.ackedID(k, r.Offset); id != "" && id != valueID(r.Value) {
				w.mismatch.Add(1)
				w.problems.add("%s offset %d: read %q, acknowledged %q", k, r.Offset, valueID(r.Value), id)
			}
		})
	}
}

// fetchedFrom names the broker cl fetched k from and the leader epoch it
// fetched at, as cl's metadata has them, for the report of an
// OffsetOutOfRange (a partitioned broker may still call itself the leader).
func fetchedFrom(cl *kgo.Client, k tpKey) string {
	leader, epoch, err := cl.PartitionLeader(k.topic, k.partition)
	if err != nil {
		return fmt.Sprintf("fetched from an unknown leader (%v)", err)
	}
	return fmt.Sprintf("fetched from node %d at leader epoch %d", leader, epoch)
}

// judgeOOR decides whether an OffsetOutOfRange at offset o of k was
// retention passing the reader (o below the log start offset now) or a
// wrong answer, and returns the log start offset it read (o when none).
// from says where the failed fetch went (fetchedFrom); a wrong answer's
// report names it and the leader epoch of the log start offset.
func (w *clusterLoad) judgeOOR(ctx context.Context, k tpKey, o int64, from string) int64 {
	for range 5 {
		lctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		starts, err := w.adm.ListStartOffsets(lctx, k.topic)
		ends, err2 := w.adm.ListEndOffsets(lctx, k.topic)
		cancel()
		so, ok := starts.Lookup(k.topic, k.partition)
		eo, ok2 := ends.Lookup(k.topic, k.partition)
		if err != nil || err2 != nil || !ok || !ok2 || so.Err != nil || eo.Err != nil {
			sleepCtx(ctx, time.Second)
			continue
		}
		if o < so.Offset {
			w.oorRetention.Add(1)
			return so.Offset
		}
		w.oorWrong.Add(1)
		w.problems.add("%s: OffsetOutOfRange at offset %d, inside the log [%d, %d) (%s; the log start offset is in leader epoch %d)", k, o, so.Offset, eo.Offset, from, so.LeaderEpoch)
		return o
	}
	w.oorWrong.Add(1)
	w.problems.add("%s: OffsetOutOfRange at offset %d, and the log start offset could not be read to judge it", k, o)
	return o
}

// move moves leadership while w.moving: every 4 s a preferred-leader
// election of an RF 3 partition after its replica list is rotated, every
// 20 s the RF 2 topic's replicas to another pair of brokers.
func (w *clusterLoad) move(ctx context.Context) {
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	for i := 0; ; i++ {
		if !sleepCtx(ctx, 4*time.Second) {
			return
		}
		if !w.moving.Load() {
			continue
		}
		k := w.tps[rng.IntN(len(w.tps))]
		if err := w.moveOnce(ctx, k, i%5 == 4); err != nil {
			w.moveFailed.Add(1)
		} else {
			w.moves.Add(1)
		}
	}
}

func (w *clusterLoad) moveOnce(ctx context.Context, k tpKey, reassign bool) error {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	topics, err := w.adm.ListTopics(ctx, k.topic)
	if err != nil {
		return err
	}
	pd, ok := topics[k.topic].Partitions[k.partition]
	if !ok || pd.Err != nil {
		return fmt.Errorf("%s: not described", k)
	}
	replicas := append([]int32(nil), pd.Replicas...)
	if len(replicas) == 3 {
		replicas = append(replicas[1:], replicas[0]) // the next one leads
	} else if reassign {
		// The pair that leaves out one of today's replicas.
		var out int32 = 1
		for out = 1; out <= nodes; out++ {
			if out == replicas[0] || out == replicas[1] {
				continue
			}
			break
		}
		replicas = []int32{out, replicas[0]}
	} else {
		replicas = []int32{replicas[1], replicas[0]}
	}
	var req kadm.AlterPartitionAssignmentsReq
	req.Assign(k.topic, k.partition, replicas)
	res, err := w.adm.AlterPartitionAssignments(ctx, req)
	if err == nil {
		err = res.Error()
	}
	if err != nil {
		return err
	}
	var set kadm.TopicsSet
	set.Add(k.topic, k.partition)
	_, err = w.adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, set)
	return err
}

// sleepCtx sleeps d, false if ctx ended first.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}

// linRun is one phase's linearizability clients (linClient of
// linearizability_test.go) on the workload's two managers, on segments of
// their own.
type linRun struct {
	rec    *linRecorder
	stop   atomic.Bool
	wg     sync.WaitGroup
	leader [linPartitions]atomic.Int32
	tps    []rlmm.TopicIDPartition
	ms     [2]*topicbased.Manager
	flip   context.CancelFunc
}

// startLin starts the clients; the leadership of the user partitions
// flips between the managers every 5 s.
func (w *clusterLoad) startLin(t *testing.T) *linRun {
	t.Helper()
	r := &linRun{rec: &linRecorder{base: time.Now(), counts: map[string]int{}}, ms: w.managers}
	r.tps = userPartitions(t, metaPartitions, linPartitions)
	for p := range r.tps {
		r.leader[p].Store(int32(p % 2))
	}
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if err := r.moveLeadership(ctx); err != nil {
		t.Fatalf("assigning the linearizability partitions: %v", err)
	}
	for _, m := range r.ms {
		for _, tp := range r.tps {
			must(t, m.WaitReady(ctx, tp))
		}
	}
	segs := make([]rlmm.SegmentMetadata, linPartitions*linSegments)
	base := uint64(time.Now().UnixNano() % 1e12)
	for i := range segs {
		segs[i] = segment(r.tps[i/linSegments], uuidN(base+uint64(i)), int64(i%linSegments))
	}
	for client := range linClients {
		r.wg.Go(func() { linClient(client, r.rec, &r.stop, r.ms, &r.leader, segs) })
	}
	fctx, flip := context.WithCancel(context.Background())
	r.flip = flip
	r.wg.Go(func() {
		for sleepCtx(fctx, 5*time.Second) {
			for p := range r.tps {
				r.leader[p].Store(1 - r.leader[p].Load())
			}
			cctx, cancel := context.WithTimeout(fctx, linCallWait)
			if err := r.moveLeadership(cctx); err != nil && fctx.Err() == nil {
				r.rec.count("leadership change failed")
			}
			cancel()
		}
	})
	return r
}

func (r *linRun) moveLeadership(ctx context.Context) error {
	var led [2][]rlmm.TopicIDPartition
	for p, tp := range r.tps {
		led[r.leader[p].Load()] = append(led[r.leader[p].Load()], tp)
	}
	var errs []error
	for i, m := range r.ms {
		errs = append(errs, m.OnPartitionLeadershipChanges(ctx, led[i], led[1-i]))
	}
	return errors.Join(errs...)
}

// finish stops the clients and checks the history with porcupine: the
// wrong answers (0 or 1: porcupine names no count) and the problems.
func (r *linRun) finish(t *testing.T) (ops int, wrong int) {
	t.Helper()
	r.flip()
	r.stop.Store(true)
	r.wg.Wait()
	rec := r.rec
	end := time.Since(rec.base).Nanoseconds() + 1
	for i := range rec.history {
		if rec.history[i].Output.(linOutput).verdict == "maybe" {
			rec.history[i].Return = end
		}
	}
	for _, err := range rec.broken {
		t.Errorf("rlmm API: broken promise: %v", err)
	}
	t.Logf("rlmm API history: %d operations (%d ok, %d refused by the state machine, %d maybe recorded, %d not recorded, %d segment reads, %d reads failed or not ready, %d leadership changes failed)",
		len(rec.history), rec.counts["ok"], rec.counts["transition"]+rec.counts["unknown"], rec.counts["maybe"], rec.counts["dropped"], rec.counts["read"], rec.counts["read failed"], rec.counts["leadership change failed"])
	if rec.counts["ok"] == 0 {
		t.Error("rlmm API: no mutation succeeded in the phase: the history checks nothing")
	}
	res, info := porcupine.CheckOperationsVerbose(linModel.ToModel(), rec.history, time.Minute)
	switch res {
	case porcupine.Ok:
	case porcupine.Unknown:
		t.Errorf("porcupine could not decide within a minute (%d operations)", len(rec.history))
	default:
		t.Errorf("rlmm API: the history of %d operations is not linearizable: a read answered what the history rules out", len(rec.history))
		wrong = 1
		// The history, drawn by porcupine, outlives the test: the failing
		// segment's operations and the longest linearizable prefix.
		if f, err := os.CreateTemp("", "rlmm-lin-*.html"); err == nil {
			_ = f.Close()
			if err := porcupine.VisualizePath(linModel.ToModel(), info, f.Name()); err == nil {
				t.Logf("rlmm API: the history drawn in %s", f.Name())
			}
		}
	}
	return len(rec.history), wrong
}

package sim

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/topicbased"
)

// roundMs is the simulated time between two rounds.
const roundMs = 60_000

// broker is one simulated broker: its manager (nil while stopped) and the
// directory of its snapshot.
type broker struct {
	id  int32
	mgr *topicbased.Manager
	dir string
}

// engine is the state of one Run.
type engine struct {
	cfg     Config
	brokers []*broker
	parts   []*partitionModel
	master  *rand.Rand // bookkeeping decisions, used by one goroutine at a time
	baseMs  int64

	mu          sync.Mutex // guards the fields below
	mutLat      []time.Duration
	lookLat     []time.Duration
	differences []string
	done, total int64
	phase       string

	mutations, lookups, notReady, stale atomic.Int64
	copied, failed, retired, multiEpoch atomic.Int64
	moves                               int64
	busy                                time.Duration
}

// Run plays the simulation described by cfg and returns its report. A
// mutation that fails, or a broker that cannot start, ends the run with an
// error; disagreements with the model are collected in Report.Differences.
// Run starts and closes its brokers; it does not close cfg.Log.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	// The simulated clock ends about now: round r happens Rounds-r minutes ago.
	e := &engine{cfg: c, master: rand.New(rand.NewPCG(uint64(c.Seed), 0x5eed)),
		baseMs: time.Now().UnixMilli() - int64(c.Rounds+1)*roundMs}
	defer e.closeBrokers()
	return e.run(ctx)
}

func (e *engine) run(ctx context.Context) (*Report, error) {
	c := &e.cfg
	started := time.Now()
	e.layout()
	if err := e.startBrokers(ctx); err != nil {
		return nil, err
	}
	// One broker is down for one round, a rolling restart; the topic is
	// deleted while it is down, so its restart replays the deletion.
	stopRound := max(1, c.Rounds/2)
	restartRound := stopRound + 1
	deleteRound := stopRound
	stopped := int32(e.master.IntN(c.Brokers))
	// Progress units: a partition's round, a deleted partition, a
	// partition checked on a broker at the end.
	all, gone := int64(len(e.parts)), int64(0)
	for _, p := range e.parts {
		if p.topic == c.Topics-1 {
			gone++
		}
	}
	units := int64(deleteRound)*all + int64(c.Rounds-deleteRound)*(all-gone) + gone + int64(c.Brokers)*all
	e.setProgress(0, units, "starting")
	var restart Restart
	for r := range c.Rounds {
		if r == stopRound {
			if err := e.stopBroker(ctx, stopped); err != nil {
				return nil, err
			}
		}
		if r == deleteRound {
			if err := e.deleteTopic(ctx, c.Topics-1); err != nil {
				return nil, err
			}
		}
		if r == restartRound {
			var err error
			if restart, err = e.restartBroker(ctx, stopped); err != nil {
				return nil, err
			}
		}
		if err := e.rollAndMove(ctx); err != nil {
			return nil, err
		}
		if err := e.round(ctx, r); err != nil {
			return nil, err
		}
	}
	if err := e.finalCheck(ctx); err != nil {
		return nil, err
	}
	rep := e.report(ctx, restart)
	rep.DurationSec = time.Since(started).Seconds()
	return rep, nil
}

// layout creates the topics and partitions and assigns replicas round robin.
func (e *engine) layout() {
	c := &e.cfg
	idx := 0
	for t := range c.Topics {
		topicID := randomUuid(e.master)
		n := c.Partitions / c.Topics
		if t < c.Partitions%c.Topics {
			n++
		}
		for p := range n {
			tp := rlmm.TopicIDPartition{TopicID: topicID, Topic: fmt.Sprintf("topic-%d", t), Partition: int32(p)}
			pm := &partitionModel{tp: tp, topic: t, epochs: []rlmm.EpochStart{{Epoch: 0, StartOffset: 0}},
				ever: map[rlmm.Uuid]rlmm.SegmentMetadata{}}
			for k := range c.ReplicationFactor {
				pm.replicas = append(pm.replicas, int32((idx+k)%c.Brokers))
			}
			pm.leader = pm.replicas[0]
			e.parts = append(e.parts, pm)
			idx++
		}
	}
}

// randomUuid draws a Uuid from rng the way Kafka's randomUuid shapes one
// (version 4), never a reserved value nor one printing with a leading '-'.
func randomUuid(rng *rand.Rand) rlmm.Uuid {
	for {
		u := rlmm.UuidFromBits(int64(rng.Uint64()), int64(rng.Uint64()))
		u[6] = u[6]&0x0f | 0x40
		u[8] = u[8]&0x3f | 0x80
		if u != rlmm.ZeroUuid && u != rlmm.OneUuid && u.String()[0] != '-' {
			return u
		}
	}
}

func (e *engine) startManager(ctx context.Context, b *broker) (*topicbased.Manager, error) {
	m, err := topicbased.Start(ctx, topicbased.Config{
		Log: e.cfg.Log, SnapshotDir: b.dir, SnapshotInterval: e.cfg.SnapshotInterval,
		ConsumeWait: e.cfg.ConsumeWait, Logger: e.cfg.Logger.With("broker", b.id),
	})
	if err != nil {
		return nil, fmt.Errorf("starting broker %d: %w", b.id, err)
	}
	return m, nil
}

// hosted returns the partitions broker id leads and follows (deleted ones
// excluded).
func (e *engine) hosted(id int32) (leaders, followers []rlmm.TopicIDPartition) {
	for _, p := range e.parts {
		if p.deleted || !slices.Contains(p.replicas, id) {
			continue
		}
		if p.leader == id {
			leaders = append(leaders, p.tp)
		} else {
			followers = append(followers, p.tp)
		}
	}
	return leaders, followers
}

func (e *engine) startBrokers(ctx context.Context) error {
	for id := range int32(e.cfg.Brokers) {
		b := &broker{id: id, dir: filepath.Join(e.cfg.WorkDir, fmt.Sprintf("broker-%d", id))}
		if err := os.MkdirAll(b.dir, 0o755); err != nil {
			return fmt.Errorf("creating the snapshot directory of broker %d: %w", id, err)
		}
		m, err := e.startManager(ctx, b)
		if err != nil {
			return err
		}
		b.mgr = m
		e.brokers = append(e.brokers, b)
	}
	for _, b := range e.brokers {
		leaders, followers := e.hosted(b.id)
		if err := b.mgr.OnPartitionLeadershipChanges(ctx, leaders, followers); err != nil {
			return fmt.Errorf("broker %d: assigning %d partitions: %w", b.id, len(leaders)+len(followers), err)
		}
	}
	for _, b := range e.brokers {
		leaders, followers := e.hosted(b.id)
		if _, err := e.awaitReady(ctx, b, append(leaders, followers...)); err != nil {
			return err
		}
	}
	return nil
}

// awaitReady waits until b is ready for every tp, bounded by SettleTimeout:
// topicbased's WaitReady wakes on the pump's notification, so readiness is
// seen as soon as it happens, without polling.
func (e *engine) awaitReady(ctx context.Context, b *broker, tps []rlmm.TopicIDPartition) (time.Duration, error) {
	start := time.Now()
	wctx, cancel := context.WithTimeout(ctx, e.cfg.SettleTimeout)
	defer cancel()
	for _, tp := range tps {
		if err := b.mgr.WaitReady(wctx, tp); err != nil {
			if ctx.Err() != nil {
				return 0, ctx.Err()
			}
			if errors.Is(err, rlmm.ErrTimeout) {
				return 0, fmt.Errorf("%w: broker %d: partition %s not ready after %s", rlmm.ErrTimeout, b.id, tp, e.cfg.SettleTimeout)
			}
			return 0, fmt.Errorf("broker %d: waiting for partition %s to be ready: %w", b.id, tp, err)
		}
	}
	return time.Since(start), nil
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// awaitView polls until b lists exactly the model's segments for p,
// bounded by SettleTimeout. It returns the last difference on timeout.
func (e *engine) awaitView(ctx context.Context, b *broker, p *partitionModel) (string, error) {
	want := p.expectedList()
	deadline := time.Now().Add(e.cfg.SettleTimeout)
	pause := 100 * time.Microsecond
	for {
		got, err := b.mgr.ListSegments(p.tp)
		var diff string
		switch {
		case errors.Is(err, rlmm.ErrNotReady):
			diff = "not ready"
		case err != nil:
			return "", fmt.Errorf("broker %d: listing %s: %w", b.id, p.tp, err)
		default:
			if diff = diffSegments(got, want); diff == "" {
				return "", nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Sprintf("broker %d, partition %s, after waiting %s: %s", b.id, p.tp, e.cfg.SettleTimeout, diff), nil
		}
		if err := sleep(ctx, pause); err != nil {
			return "", err
		}
		pause = min(2*pause, 5*time.Millisecond)
	}
}

func (e *engine) addDifference(format string, args ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.differences) < 1000 {
		e.differences = append(e.differences, fmt.Sprintf(format, args...))
	}
}

func (e *engine) setProgress(done, total int64, phase string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if total > 0 {
		e.total = total
	}
	e.done = done
	e.phase = phase
	if e.cfg.Progress != nil {
		e.cfg.Progress(e.done, e.total, e.phase)
	}
}

func (e *engine) step(phase string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.done++
	if e.done > e.total {
		e.total = e.done
	}
	e.phase = phase
	if e.cfg.Progress != nil {
		e.cfg.Progress(e.done, e.total, e.phase)
	}
}

// notifications batches leadership changes per broker.
type notifications map[int32]*[2][]rlmm.TopicIDPartition

func (n notifications) lead(b int32, tp rlmm.TopicIDPartition) { n.get(b)[0] = append(n.get(b)[0], tp) }
func (n notifications) follow(b int32, tp rlmm.TopicIDPartition) {
	n.get(b)[1] = append(n.get(b)[1], tp)
}
func (n notifications) get(b int32) *[2][]rlmm.TopicIDPartition {
	if n[b] == nil {
		n[b] = &[2][]rlmm.TopicIDPartition{}
	}
	return n[b]
}

func (e *engine) send(ctx context.Context, n notifications) error {
	for id, lists := range n {
		b := e.brokers[id]
		if b.mgr == nil {
			continue
		}
		if err := b.mgr.OnPartitionLeadershipChanges(ctx, lists[0], lists[1]); err != nil {
			return fmt.Errorf("broker %d: leadership change: %w", id, err)
		}
	}
	return nil
}

// moveLeader makes another live replica of p its leader with a new leader
// epoch starting at the end of the local log. It reports whether it could.
func (e *engine) moveLeader(p *partitionModel, n notifications) bool {
	var candidates []int32
	for _, r := range p.replicas {
		if r != p.leader && e.brokers[r].mgr != nil {
			candidates = append(candidates, r)
		}
	}
	if len(candidates) == 0 {
		return false
	}
	old := p.leader
	p.leader = candidates[e.master.IntN(len(candidates))]
	p.epochs = append(p.epochs, rlmm.EpochStart{Epoch: p.epoch() + 1, StartOffset: p.logEnd})
	p.catchUp = true
	n.lead(p.leader, p.tp)
	if e.brokers[old].mgr != nil {
		n.follow(old, p.tp)
	}
	e.moves++
	return true
}

// rollAndMove appends records to every partition's local log, moving some
// leaderships half way so the next segment spans two epochs.
func (e *engine) rollAndMove(ctx context.Context) error {
	n := notifications{}
	half := e.cfg.RecordsPerSegment / 2
	for _, p := range e.parts {
		if p.deleted {
			continue
		}
		p.logEnd += int64(half/2 + 1 + e.master.IntN(half))
		if e.master.Float64() < e.cfg.LeaderMoveRate {
			e.moveLeader(p, n)
		}
		p.logEnd += int64(half/2 + 1 + e.master.IntN(half))
	}
	return e.send(ctx, n)
}

// stopBroker moves leadership away from broker id, then shuts it down with
// a final snapshot.
func (e *engine) stopBroker(ctx context.Context, id int32) error {
	b := e.brokers[id]
	n := notifications{}
	for _, p := range e.parts {
		if !p.deleted && p.leader == id {
			e.moveLeader(p, n)
		}
	}
	if err := e.send(ctx, n); err != nil {
		return err
	}
	if err := b.mgr.ShutdownAndFlush(ctx); err != nil {
		return fmt.Errorf("broker %d: shutdown: %w", id, err)
	}
	b.mgr = nil
	return nil
}

// restartBroker starts broker id again from its snapshot as a follower of
// its partitions and measures the time until all of them are ready.
func (e *engine) restartBroker(ctx context.Context, id int32) (Restart, error) {
	b := e.brokers[id]
	total, err := e.events(ctx)
	if err != nil {
		return Restart{}, err
	}
	start := time.Now()
	m, err := e.startManager(ctx, b)
	if err != nil {
		return Restart{}, err
	}
	b.mgr = m
	leaders, followers := e.hosted(id)
	if err := m.OnPartitionLeadershipChanges(ctx, leaders, followers); err != nil {
		return Restart{}, fmt.Errorf("broker %d: assigning partitions after restart: %w", id, err)
	}
	if _, err := e.awaitReady(ctx, b, append(leaders, followers...)); err != nil {
		return Restart{}, err
	}
	took := time.Since(start)
	st := m.Stats()
	return Restart{Broker: id, DurationMs: float64(took) / float64(time.Millisecond),
		EventsReplayed: int64(st.Consumed()), EventsTotal: total, SnapshotSegments: st.SnapshotSegments}, nil
}

// events returns the number of records in the log.
func (e *engine) events(ctx context.Context) (int64, error) {
	n := e.cfg.Log.Partitions()
	parts := make([]int32, n)
	for i := range parts {
		parts[i] = int32(i)
	}
	hwms, err := e.cfg.Log.HighWaterMarks(ctx, parts)
	if err != nil {
		return 0, fmt.Errorf("reading the log's high-water marks: %w", err)
	}
	var total int64
	for _, h := range hwms {
		total += h
	}
	return total, nil
}

// parallel runs fn for every partition selected by keep, at most
// Concurrency at a time, and adds the time taken to the busy time.
func (e *engine) parallel(ctx context.Context, phase string, keep func(*partitionModel) bool, fn func(context.Context, int, *partitionModel) error) error {
	start := time.Now()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(e.cfg.Concurrency)
	for i, p := range e.parts {
		if !keep(p) {
			continue
		}
		g.Go(func() error {
			if err := fn(gctx, i, p); err != nil {
				return err
			}
			e.step(phase)
			return nil
		})
	}
	err := g.Wait()
	e.mu.Lock()
	e.busy += time.Since(start)
	e.mu.Unlock()
	return err
}

// partitionWork is one partition's share of a round: its own random source
// (so the workload does not depend on scheduling), clock and samples.
type partitionWork struct {
	e       *engine
	p       *partitionModel
	rng     *rand.Rand
	nowMs   int64
	mutLat  []time.Duration
	lookLat []time.Duration
}

func (e *engine) work(r, i int, p *partitionModel) *partitionWork {
	return &partitionWork{e: e, p: p, rng: rand.New(rand.NewPCG(uint64(e.cfg.Seed), uint64(r)<<32|uint64(i))),
		nowMs: e.baseMs + int64(r)*roundMs}
}

// flush hands the samples to the engine.
func (w *partitionWork) flush() {
	w.e.mu.Lock()
	defer w.e.mu.Unlock()
	w.e.mutLat = append(w.e.mutLat, w.mutLat...)
	w.e.lookLat = append(w.e.lookLat, w.lookLat...)
}

func (w *partitionWork) tick() int64 { w.nowMs++; return w.nowMs }

func (w *partitionWork) leader() *broker { return w.e.brokers[w.p.leader] }

// mutate runs one mutation on the leader and records its latency.
func (w *partitionWork) mutate(ctx context.Context, what string, op func(rlmm.Manager) error) error {
	b := w.leader()
	start := time.Now()
	err := op(b.mgr)
	took := time.Since(start)
	if err != nil {
		return fmt.Errorf("broker %d, partition %s: %s: %w", b.id, w.p.tp, what, err)
	}
	w.mutLat = append(w.mutLat, took)
	w.e.mutations.Add(1)
	return nil
}

func (w *partitionWork) add(ctx context.Context, m rlmm.SegmentMetadata) error {
	if err := w.mutate(ctx, "add segment "+m.ID.ID.String(), func(mg rlmm.Manager) error { return mg.AddSegment(ctx, m) }); err != nil {
		return err
	}
	w.p.add(m)
	return nil
}

func (w *partitionWork) update(ctx context.Context, id rlmm.SegmentID, st rlmm.SegmentState, custom []byte) error {
	u := rlmm.SegmentUpdate{ID: id, EventTimestampMs: w.tick(), CustomMetadata: custom, State: st, BrokerID: w.p.leader}
	if err := w.mutate(ctx, fmt.Sprintf("update segment %s to %s", id.ID, st), func(mg rlmm.Manager) error { return mg.UpdateSegment(ctx, u) }); err != nil {
		return err
	}
	return w.p.update(u)
}

func (w *partitionWork) putDelete(ctx context.Context, st rlmm.PartitionDeleteState) error {
	d := rlmm.PartitionDelete{TopicIDPartition: w.p.tp, State: st, EventTimestampMs: w.tick(), BrokerID: w.p.leader}
	if err := w.mutate(ctx, "partition delete "+st.String(), func(mg rlmm.Manager) error { return mg.PutPartitionDelete(ctx, d) }); err != nil {
		return err
	}
	w.p.putDelete(st)
	return nil
}

// catchUp waits, after a leadership move, until the new leader has applied
// everything the previous leaders wrote for the partition.
func (w *partitionWork) catchUp(ctx context.Context) error {
	if !w.p.catchUp {
		return nil
	}
	diff, err := w.e.awaitView(ctx, w.leader(), w.p)
	if err != nil {
		return err
	}
	if diff != "" {
		return fmt.Errorf("new leader never caught up: %s", diff)
	}
	w.p.catchUp = false
	return nil
}

// round runs every live partition's copy, retention and reads.
func (e *engine) round(ctx context.Context, r int) error {
	phase := fmt.Sprintf("round %d/%d", r+1, e.cfg.Rounds)
	return e.parallel(ctx, phase, func(p *partitionModel) bool { return !p.deleted }, func(ctx context.Context, i int, p *partitionModel) error {
		w := e.work(r, i, p)
		defer w.flush()
		if err := w.catchUp(ctx); err != nil {
			return err
		}
		if err := w.copySegment(ctx); err != nil {
			return err
		}
		if err := w.retention(ctx); err != nil {
			return err
		}
		for range e.cfg.LookupsPerRound {
			if err := w.lookup(ctx); err != nil {
				return err
			}
		}
		return nil
	})
}

// copySegment copies the uncopied part of the local log as one segment,
// failing and cleaning up some attempts first.
func (w *partitionWork) copySegment(ctx context.Context) error {
	p := w.p
	start, end := p.copiedEnd, p.logEnd-1
	epochs := p.segmentEpochs(start, end)
	for attempt := 0; ; attempt++ {
		m := rlmm.SegmentMetadata{
			ID:          rlmm.SegmentID{TopicIDPartition: p.tp, ID: randomUuid(w.rng)},
			StartOffset: start, EndOffset: end, MaxTimestampMs: w.nowMs - 1, BrokerID: p.leader,
			EventTimestampMs: w.tick(), LeaderEpochs: slices.Clone(epochs),
			SizeInBytes: int32(min((end-start+1)*100, 1<<30)), State: rlmm.CopySegmentStarted,
			TxnIndexEmpty: w.rng.IntN(2) == 0,
		}
		if w.rng.IntN(4) == 0 {
			m.CustomMetadata = []byte{}
		}
		if err := w.add(ctx, m); err != nil {
			return err
		}
		if attempt < 3 && w.rng.Float64() < w.e.cfg.CopyFailureRate {
			// The copy to remote storage failed: clean up, then retry with a new id.
			if err := w.update(ctx, m.ID, rlmm.DeleteSegmentStarted, nil); err != nil {
				return err
			}
			if err := w.update(ctx, m.ID, rlmm.DeleteSegmentFinished, nil); err != nil {
				return err
			}
			w.e.failed.Add(1)
			continue
		}
		var custom []byte
		if w.rng.IntN(2) == 0 {
			custom = make([]byte, 8)
			for i := range custom {
				custom[i] = byte(w.rng.IntN(256))
			}
		}
		if err := w.update(ctx, m.ID, rlmm.CopySegmentFinished, custom); err != nil {
			return err
		}
		break
	}
	w.e.copied.Add(1)
	if len(epochs) > 1 {
		w.e.multiEpoch.Add(1)
	}
	p.copiedEnd = end + 1
	return nil
}

// retention deletes the oldest finished segments beyond Retain.
func (w *partitionWork) retention(ctx context.Context) error {
	for w.p.finishedCount() > w.e.cfg.Retain {
		old, _ := w.p.oldestFinished()
		if err := w.update(ctx, old.ID, rlmm.DeleteSegmentStarted, nil); err != nil {
			return err
		}
		if err := w.update(ctx, old.ID, rlmm.DeleteSegmentFinished, nil); err != nil {
			return err
		}
		w.e.retired.Add(1)
	}
	return nil
}

// lookup is one fetch-path read by (epoch, offset) from a random live
// replica: exact against the model on the leader, consistent on followers.
func (w *partitionWork) lookup(ctx context.Context) error {
	p := w.p
	var live []int32
	for _, r := range p.replicas {
		if w.e.brokers[r].mgr != nil {
			live = append(live, r)
		}
	}
	id := live[w.rng.IntN(len(live))]
	b := w.e.brokers[id]
	epoch, offset := w.target()
	for try := 0; ; try++ {
		start := time.Now()
		got, found, err := b.mgr.SegmentForOffset(p.tp, epoch, offset)
		w.lookLat = append(w.lookLat, time.Since(start))
		w.e.lookups.Add(1)
		if errors.Is(err, rlmm.ErrNotReady) && try < 1000 {
			w.e.notReady.Add(1)
			if err := sleep(ctx, time.Millisecond); err != nil {
				return err
			}
			continue
		}
		if err != nil {
			w.e.addDifference("broker %d: SegmentForOffset(%s, epoch %d, offset %d): %v", id, p.tp, epoch, offset, err)
			return nil
		}
		want := p.finishedCovering(epoch, offset)
		leader := id == p.leader
		switch {
		case found && (got.State != rlmm.CopySegmentFinished || !covers(&got, epoch, offset)):
			w.e.addDifference("broker %d: SegmentForOffset(%s, epoch %d, offset %d) returned a segment that does not qualify: %s", id, p.tp, epoch, offset, got)
		case found && leader && !slices.Contains(want, got.ID.ID):
			w.e.addDifference("leader %d: SegmentForOffset(%s, epoch %d, offset %d) returned %s; model has %v", id, p.tp, epoch, offset, got.ID.ID, want)
		case found && !leader:
			if _, known := p.ever[got.ID.ID]; !known {
				w.e.addDifference("follower %d: SegmentForOffset(%s, epoch %d, offset %d) returned unknown segment %s", id, p.tp, epoch, offset, got.ID.ID)
			}
		case !found && len(want) > 0 && leader:
			w.e.addDifference("leader %d: SegmentForOffset(%s, epoch %d, offset %d) found nothing; model has %v", id, p.tp, epoch, offset, want)
		case !found && len(want) > 0:
			w.e.stale.Add(1)
		}
		return nil
	}
}

// target picks a read position: mostly inside a finished segment, else
// anywhere in the local log under any epoch (often a miss).
func (w *partitionWork) target() (int32, int64) {
	p := w.p
	if w.rng.IntN(5) > 0 {
		var fin []*rlmm.SegmentMetadata
		for i := range p.segs {
			if p.segs[i].State == rlmm.CopySegmentFinished {
				fin = append(fin, &p.segs[i])
			}
		}
		if len(fin) > 0 {
			m := fin[w.rng.IntN(len(fin))]
			ep := m.LeaderEpochs[w.rng.IntN(len(m.LeaderEpochs))].Epoch
			if s, end, ok := epochRange(m, ep); ok && end >= s {
				return ep, s + w.rng.Int64N(end-s+1)
			}
		}
	}
	return p.epochs[w.rng.IntN(len(p.epochs))].Epoch, w.rng.Int64N(max(p.logEnd, 1))
}

// deleteTopic deletes every partition of topic t the way Kafka does:
// MARKED, STARTED, every segment deleted, FINISHED; then the replicas stop
// the partitions.
func (e *engine) deleteTopic(ctx context.Context, t int) error {
	err := e.parallel(ctx, "deleting a topic", func(p *partitionModel) bool { return p.topic == t && !p.deleted },
		func(ctx context.Context, i int, p *partitionModel) error {
			w := e.work(-1, i, p)
			w.nowMs = e.baseMs + int64(e.cfg.Rounds)*roundMs/2
			defer w.flush()
			if err := w.catchUp(ctx); err != nil {
				return err
			}
			if err := w.putDelete(ctx, rlmm.DeletePartitionMarked); err != nil {
				return err
			}
			if err := w.putDelete(ctx, rlmm.DeletePartitionStarted); err != nil {
				return err
			}
			for _, m := range p.expectedList() {
				if m.State != rlmm.DeleteSegmentStarted {
					if err := w.update(ctx, m.ID, rlmm.DeleteSegmentStarted, nil); err != nil {
						return err
					}
				}
				if err := w.update(ctx, m.ID, rlmm.DeleteSegmentFinished, nil); err != nil {
					return err
				}
			}
			return w.putDelete(ctx, rlmm.DeletePartitionFinished)
		})
	if err != nil {
		return err
	}
	stops := map[int32][]rlmm.TopicIDPartition{}
	for _, p := range e.parts {
		if p.topic == t {
			for _, r := range p.replicas {
				stops[r] = append(stops[r], p.tp)
			}
		}
	}
	for id, tps := range stops {
		if b := e.brokers[id]; b.mgr != nil {
			if err := b.mgr.OnStopPartitions(ctx, tps); err != nil {
				return fmt.Errorf("broker %d: stopping %d partitions of a deleted topic: %w", id, len(tps), err)
			}
		}
	}
	return nil
}

// finalCheck compares every live broker's view of every partition with the
// model: hosted partitions list exactly the model's segments and answer
// lookups and highest offsets like it; deleted partitions list nothing.
func (e *engine) finalCheck(ctx context.Context) error {
	for _, b := range e.brokers {
		if b.mgr == nil {
			continue
		}
		phase := fmt.Sprintf("checking broker %d", b.id)
		err := e.parallel(ctx, phase, func(*partitionModel) bool { return true }, func(ctx context.Context, _ int, p *partitionModel) error {
			if p.deleted {
				got, err := b.mgr.ListSegments(p.tp)
				if err != nil && !errors.Is(err, rlmm.ErrNotReady) {
					e.addDifference("broker %d, deleted partition %s: %v", b.id, p.tp, err)
				} else if len(got) > 0 {
					e.addDifference("broker %d, deleted partition %s still lists %d segments", b.id, p.tp, len(got))
				}
				return nil
			}
			if !slices.Contains(p.replicas, b.id) {
				return nil
			}
			diff, err := e.awaitView(ctx, b, p)
			if err != nil {
				return err
			}
			if diff != "" {
				e.addDifference("%s", diff)
				return nil
			}
			e.checkReads(b, p)
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// checkReads compares lookups at both ends of every finished segment's
// epochs, and the highest offset of every epoch, with the model.
func (e *engine) checkReads(b *broker, p *partitionModel) {
	for ep, want := range p.highestFinished() {
		got, ok, err := b.mgr.HighestOffsetForEpoch(p.tp, ep)
		if err != nil || !ok || got != want {
			e.addDifference("broker %d: HighestOffsetForEpoch(%s, %d) = %d, %v, %v; model %d", b.id, p.tp, ep, got, ok, err, want)
		}
	}
	for i := range p.segs {
		m := &p.segs[i]
		if m.State != rlmm.CopySegmentFinished {
			continue
		}
		for _, le := range m.LeaderEpochs {
			s, end, ok := epochRange(m, le.Epoch)
			if !ok || end < s {
				continue
			}
			for _, off := range []int64{s, end} {
				got, found, err := b.mgr.SegmentForOffset(p.tp, le.Epoch, off)
				if err != nil || !found || !slices.Contains(p.finishedCovering(le.Epoch, off), got.ID.ID) {
					e.addDifference("broker %d: SegmentForOffset(%s, epoch %d, offset %d) = %v, %v, %v; model %v",
						b.id, p.tp, le.Epoch, off, got.ID.ID, found, err, p.finishedCovering(le.Epoch, off))
				}
			}
		}
	}
}

// lookupTarget is a read whose answer the model knows.
type lookupTarget struct {
	tp     rlmm.TopicIDPartition
	epoch  int32
	offset int64
	want   []rlmm.Uuid
}

// lookupBurst measures lookup throughput on the live brokers with
// GOMAXPROCS readers, each read checked against the model.
func (e *engine) lookupBurst(ctx context.Context) (int64, time.Duration) {
	var targets []lookupTarget
	for _, p := range e.parts {
		for i := range p.segs {
			m := &p.segs[i]
			if m.State != rlmm.CopySegmentFinished {
				continue
			}
			for _, le := range m.LeaderEpochs {
				if s, end, ok := epochRange(m, le.Epoch); ok && end >= s {
					off := (s + end) / 2
					targets = append(targets, lookupTarget{p.tp, le.Epoch, off, p.finishedCovering(le.Epoch, off)})
				}
			}
		}
	}
	var live []*broker
	for _, b := range e.brokers {
		if b.mgr != nil {
			live = append(live, b)
		}
	}
	if len(targets) == 0 || len(live) == 0 {
		return 0, 0
	}
	readers := runtime.GOMAXPROCS(0)
	const perReader = 100_000
	var wg sync.WaitGroup
	start := time.Now()
	for r := range readers {
		wg.Go(func() {
			b := live[r%len(live)]
			for i := range perReader {
				if i%4096 == 0 && ctx.Err() != nil {
					return
				}
				t := &targets[(i*7919+r*104729)%len(targets)]
				got, found, err := b.mgr.SegmentForOffset(t.tp, t.epoch, t.offset)
				if err != nil {
					continue // not hosted by this broker: a miss or not ready, fine here
				}
				if found && !slices.Contains(t.want, got.ID.ID) {
					e.addDifference("broker %d: SegmentForOffset(%s, epoch %d, offset %d) = %s; model %v", b.id, t.tp, t.epoch, t.offset, got.ID.ID, t.want)
				}
			}
		})
	}
	wg.Wait()
	return int64(readers * perReader), time.Since(start)
}

// report gathers the figures, measures memory per segment and closes the
// brokers.
func (e *engine) report(ctx context.Context, restart Restart) *Report {
	c := &e.cfg
	rep := &Report{Seed: c.Seed, Brokers: c.Brokers, Topics: c.Topics, Partitions: len(e.parts), Rounds: c.Rounds,
		MetadataPartitions: c.Log.Partitions(), Restart: restart, DeletedTopic: fmt.Sprintf("topic-%d", c.Topics-1)}
	burst, burstTime := e.lookupBurst(ctx)
	for _, b := range e.brokers {
		if b.mgr != nil {
			st := b.mgr.Stats()
			rep.Rejected += int64(st.Rejected + st.Undecodable)
			for _, r := range b.mgr.Rejected() {
				e.addDifference("broker %d rejected the event at metadata partition %d, offset %d (%s): %v", b.id, r.Partition, r.Offset, r.Reason, r.Err)
			}
		}
	}
	if n, err := e.events(ctx); err == nil {
		rep.Events = n
	} else {
		e.addDifference("%v", err)
	}
	for _, p := range e.parts {
		rep.LiveSegments += int64(len(p.segs))
	}
	rep.HeapBytesPerSegment = e.heapPerSegment()

	e.mu.Lock()
	defer e.mu.Unlock()
	rep.Mutations = e.mutations.Load()
	if e.busy > 0 {
		rep.MutationsPerSec = float64(rep.Mutations) / e.busy.Seconds()
	}
	rep.MutationLatency = summarize(e.mutLat)
	rep.Lookups = e.lookups.Load() + burst
	if burstTime > 0 {
		rep.LookupsPerSec = float64(burst) / burstTime.Seconds()
	}
	rep.LookupLatency = summarize(e.lookLat)
	rep.NotReadyRetries = e.notReady.Load()
	rep.StaleFollowerReads = e.stale.Load()
	rep.SegmentsCopied, rep.CopiesFailed, rep.SegmentsRetired = e.copied.Load(), e.failed.Load(), e.retired.Load()
	rep.MultiEpochSegments = e.multiEpoch.Load()
	rep.LeaderMoves = e.moves
	rep.Differences = slices.Clone(e.differences)
	if rep.Differences == nil {
		rep.Differences = []string{}
	}
	rep.OK = len(rep.Differences) == 0 && rep.Rejected == 0
	return rep
}

// heapPerSegment closes the live broker whose cache holds the most
// segments and divides the heap this releases by those segments.
func (e *engine) heapPerSegment() float64 {
	var best *broker
	var bestSegs int64
	for _, b := range e.brokers {
		if b.mgr == nil {
			continue
		}
		// Count what the cache really holds: it may keep partitions of its
		// metadata partitions that this broker does not host.
		var n int64
		for _, p := range e.parts {
			if segs, err := b.mgr.ListSegments(p.tp); err == nil {
				n += int64(len(segs))
			}
		}
		if best == nil || n > bestSegs {
			best, bestSegs = b, n
		}
	}
	if best == nil || bestSegs == 0 {
		return 0
	}
	before := heapAlloc()
	_ = best.mgr.Close()
	best.mgr = nil
	after := heapAlloc()
	if after >= before {
		return 0
	}
	return float64(before-after) / float64(bestSegs)
}

func heapAlloc() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// closeBrokers closes every broker still running.
func (e *engine) closeBrokers() {
	for _, b := range e.brokers {
		if b.mgr != nil {
			_ = b.mgr.Close()
			b.mgr = nil
		}
	}
}

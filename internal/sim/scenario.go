package sim

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/topicbased"
)

// The scenario: the cluster the simulation plays (topics, partitions and
// their replicas, brokers started, stopped and restarted, leaders moved, a
// topic deleted).

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

// closeBrokers closes every broker still running.
func (e *engine) closeBrokers() {
	for _, b := range e.brokers {
		if b.mgr != nil {
			_ = b.mgr.Close()
			b.mgr = nil
		}
	}
}

package topicbased

import (
	"fmt"
	"maps"
	"time"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/wire"
)

// A manager keeps the state of the user partitions its broker hosts and of
// nothing else. Per metadata partition the pump owns three disjoint sets of
// them (metaPartition.kept, .pass.building, .queued), whose union is
// .want, the hosted user partitions that metadata partition covers:
//
//   - kept: their history is applied up to next-1, and every event of
//     them from next on is applied as it comes;
//   - building: a rebuild pass is reading the metadata partition again from
//     its log start to next-1, applying only their events (Kafka's manager
//     reads the metadata partition from its beginning too when a user
//     partition is assigned after it was consumed); when the pass reaches
//     next they join kept;
//   - queued: hosted since the pass under way started; the next pass takes
//     them all at once, so a thousand partitions hosted together, or while
//     a pass runs, cost one more pass, not a thousand.
//
// Readers see the sets through keepView, an immutable map the pump
// replaces after every change (publishView): a user partition absent from
// it is not hosted here (rlmm.ErrNotAssigned), one building or queued
// answers rlmm.ErrNotReady, one kept is served once its metadata partition
// is ready. A user partition that stops being hosted leaves nothing behind:
// it leaves the view first, then its state is dropped from the cache, and
// hosting it again rebuilds it with a pass.

// keepState is a hosted user partition's state in the readers' view.
type keepState uint8

const (
	keepReady    keepState = 1 // kept: served when its metadata partition is ready
	keepBuilding keepState = 2 // building or queued: rlmm.ErrNotReady
)

// keepEntry is one hosted user partition in the view.
type keepEntry struct {
	tp    rlmm.TopicIDPartition
	state keepState
}

// keepView is the readers' copy of the hosted user partitions: immutable
// once published in Manager.keep.
type keepView struct {
	parts map[wire.PartitionKey]keepEntry
}

// rebuildPass is a read of a metadata partition from its log start up to
// next-1 that applies only the events of building. Pump.
type rebuildPass struct {
	building map[wire.PartitionKey]rlmm.TopicIDPartition
	// read is the offset of the next record the pass reads.
	read int64
	// from is where the pass started; startedAt when.
	from      int64
	startedAt time.Time
}

// keeps reports whether the pump applies k's events at offset in p.
// Pump, under applyMu.
func (p *metaPartition) keeps(k wire.PartitionKey, offset int64) bool {
	if pass := p.pass; pass != nil && offset < p.next {
		_, ok := pass.building[k]
		return ok
	}
	if _, ok := p.kept[k]; ok {
		return true
	}
	if p.pass != nil {
		_, ok := p.pass.building[k]
		return ok
	}
	return false
}

// tracks reports whether k is kept, being rebuilt or queued. Pump, under
// applyMu.
func (p *metaPartition) tracks(k wire.PartitionKey) bool {
	if _, ok := p.kept[k]; ok {
		return true
	}
	if _, ok := p.queued[k]; ok {
		return true
	}
	if p.pass != nil {
		_, ok := p.pass.building[k]
		return ok
	}
	return false
}

// passSize is the number of user partitions the pass under way rebuilds.
// Pump, under applyMu.
func (p *metaPartition) passSize() int {
	if p.pass == nil {
		return 0
	}
	return len(p.pass.building)
}

// setWanted replaces every metadata partition's wanted set with the hosted
// user partitions it covers. Pump, under applyMu.
func (m *Manager) setWanted(hosted map[rlmm.TopicIDPartition]struct{}) {
	for i := range m.parts {
		clear(m.parts[i].want)
	}
	for tp := range hosted {
		p := &m.parts[wire.MetadataPartition(tp, m.n)]
		if p.want == nil {
			p.want = map[wire.PartitionKey]rlmm.TopicIDPartition{}
		}
		p.want[wire.KeyOf(tp)] = tp
	}
}

// reconcileKept brings mp's kept, building and queued sets to its wanted
// set: a user partition no longer wanted is dropped from the sets and the
// cache; a new one is kept at once when mp has applied nothing it could
// have missed (next is at the log start), and is queued for a pass
// otherwise. It starts a pass when none runs and some are queued. mp is
// consumed (assigned, not loading). Pump, under applyMu.
func (m *Manager) reconcileKept(mp int32) error {
	p := &m.parts[mp]
	dropUnwanted := func(set map[wire.PartitionKey]rlmm.TopicIDPartition) {
		for k, tp := range set {
			if _, ok := p.want[k]; !ok {
				delete(set, k)
				m.dropUserPartition(mp, tp)
			}
		}
	}
	dropUnwanted(p.kept)
	if p.pass != nil {
		dropUnwanted(p.pass.building)
	}
	dropUnwanted(p.queued)
	for k, tp := range p.want {
		if p.tracks(k) {
			continue
		}
		m.viewDirty = true
		if p.next <= p.start {
			p.kept[k] = tp
			continue
		}
		if p.queued == nil {
			p.queued = map[wire.PartitionKey]rlmm.TopicIDPartition{}
		}
		p.queued[k] = tp
	}
	if p.pass == nil && len(p.queued) > 0 {
		return m.startPass(mp)
	}
	return nil
}

// dropUnhostedHeld drops the snapshot's state of the metadata partitions
// that no hosted user partition needs: once the broker has said what it
// hosts, memory follows that (a partition hosted again later is replayed
// from its log start, as Kafka's manager always does). A state still being
// restored is dropped when it arrives (installRestored). Pump, under
// applyMu.
func (m *Manager) dropUnhostedHeld() {
	for i := range m.parts {
		p := &m.parts[i]
		if p.held && !p.assigned && !p.loading && len(p.want) == 0 {
			m.logger.Info("topicbased: snapshot state of a metadata partition dropped: it covers no hosted user partition",
				"partition", i, "user_partitions", len(p.kept))
			m.dropHeld(int32(i))
		}
	}
}

// dropUserPartition removes tp's state from the cache (it stopped being
// hosted, or its pass is abandoned). Pump, under applyMu.
func (m *Manager) dropUserPartition(mp int32, tp rlmm.TopicIDPartition) {
	m.viewDirty = true
	m.dropQueue = append(m.dropQueue, tp)
}

// startPass starts a rebuild pass of mp for its queued user partitions:
// the subscription reads mp again from its log start. Pump, under applyMu.
func (m *Manager) startPass(mp int32) error {
	p := &m.parts[mp]
	pass := &rebuildPass{building: p.queued, read: p.start, from: p.start, startedAt: time.Now()}
	p.queued = nil
	p.pass = pass
	m.viewDirty = true
	m.stats.passes.Add(1)
	if pass.read >= p.next {
		m.finishPass(mp)
		return nil
	}
	m.quiet(mp)
	if err := m.sub.Remove(mp); err != nil {
		return fmt.Errorf("topicbased: rebuild of %d user partitions of metadata partition %d: stop consuming it: %w", len(pass.building), mp, err)
	}
	if err := m.sub.Add(mp, pass.read); err != nil {
		m.markUnassigned(mp, "could not be consumed again for a rebuild (offset %d)")
		return fmt.Errorf("topicbased: rebuild of %d user partitions of metadata partition %d: consume it from offset %d: %w", len(pass.building), mp, pass.read, err)
	}
	m.logger.Info("topicbased: rebuilding newly hosted user partitions from their metadata partition's start",
		"partition", mp, "user_partitions", len(pass.building), "from_offset", pass.read, "to_offset", p.next)
	return nil
}

// finishPass ends mp's pass: its user partitions are kept from now on.
// Pump, under applyMu.
func (m *Manager) finishPass(mp int32) {
	p := &m.parts[mp]
	pass := p.pass
	p.pass = nil
	maps.Copy(p.kept, pass.building)
	m.stats.rebuilt.Add(uint64(len(pass.building)))
	m.viewDirty = true
	m.logger.Info("topicbased: newly hosted user partitions rebuilt", "partition", mp,
		"user_partitions", len(pass.building), "from_offset", pass.from, "to_offset", p.next, "duration", time.Since(pass.startedAt))
	if len(p.queued) > 0 {
		m.passDue = append(m.passDue, mp)
	}
}

// flushHosting finishes what a change of the sets left to do: drops the
// state of user partitions no longer hosted (after the view without them is
// published, so no reader is served half-dropped state), starts the passes
// due, and wakes whoever waits for a change. Pump, under applyMu.
func (m *Manager) flushHosting() {
	for len(m.passDue) > 0 {
		due := m.passDue
		m.passDue = nil
		for _, mp := range due {
			if p := &m.parts[mp]; p.assigned && !p.loading && p.pass == nil && len(p.queued) > 0 {
				if err := m.startPass(mp); err != nil {
					m.logger.Error("topicbased: rebuild pass could not start", "partition", mp, "error", err)
				}
			}
		}
	}
	if !m.viewDirty {
		return
	}
	m.viewDirty = false
	m.publishView()
	if len(m.dropQueue) > 0 {
		for _, tp := range m.dropQueue {
			m.inner.DropPartition(tp)
		}
		m.dropQueue = m.dropQueue[:0]
		m.version.Add(1)
	}
}

// publishView builds the readers' view from the pump's sets and wakes the
// callers waiting for a change of any metadata partition (changes of the
// view are rare: assignments and the end of passes). Pump, under applyMu.
func (m *Manager) publishView() {
	// Sized first: a restore publishes once per metadata partition
	// installed, and growing the map each time cost more than counting.
	n := 0
	for i := range m.parts {
		if p := &m.parts[i]; p.assigned {
			n += len(p.want)
		}
	}
	v := &keepView{parts: make(map[wire.PartitionKey]keepEntry, n)}
	for i := range m.parts {
		p := &m.parts[i]
		if !p.assigned {
			continue
		}
		for k, tp := range p.want {
			st := keepBuilding
			if _, ok := p.kept[k]; ok && !p.loading {
				st = keepReady
			}
			v.parts[k] = keepEntry{tp: tp, state: st}
		}
	}
	m.mu.Lock()
	m.keep.Store(v)
	for i := range m.parts {
		p := &m.parts[i]
		close(p.changed)
		p.changed = make(chan struct{})
	}
	m.readinessChangedLocked()
	m.mu.Unlock()
}

// readinessChangedLocked wakes ReadinessChanged's callers. Caller holds mu.
func (m *Manager) readinessChangedLocked() {
	close(m.readyChanged)
	m.readyChanged = make(chan struct{})
}

// ReadinessChanged returns a channel closed at the next change of the
// hosted user partitions or of the readiness of any of them (the server
// pushes readiness to the broker's plugin on it). Take the channel, then
// read HostedReadiness, then wait: no change is missed.
func (m *Manager) ReadinessChanged() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.readyChanged
}

// PartitionReadiness is one hosted user partition's readiness.
type PartitionReadiness struct {
	TopicIDPartition rlmm.TopicIDPartition
	// Ready: reads are served and IsReady is true.
	Ready bool
}

// HostedReadiness returns every user partition the manager hosts (given to
// OnPartitionLeadershipChanges and not stopped, as far as the pump has
// taken the change) with its readiness, in no particular order.
func (m *Manager) HostedReadiness() []PartitionReadiness {
	v := m.keep.Load()
	out := make([]PartitionReadiness, 0, len(v.parts))
	for _, e := range v.parts {
		out = append(out, PartitionReadiness{TopicIDPartition: e.tp, Ready: m.readyIn(v, e.tp)})
	}
	return out
}

// readyIn reports whether tp is kept in v and its metadata partition ready.
func (m *Manager) readyIn(v *keepView, tp rlmm.TopicIDPartition) bool {
	e, ok := v.parts[wire.KeyOf(tp)]
	if !ok || e.state != keepReady {
		return false
	}
	return m.parts[wire.MetadataPartition(tp, m.n)].status.Load()&statusMask == statusReady
}

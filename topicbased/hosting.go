package topicbased

import (
	"fmt"
	"maps"
	"slices"
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
// Readers see the sets through keepView, an immutable map per metadata
// partition; after a change the pump publishes a new view in which the
// changed metadata partitions' maps are new and the others are the old
// view's (publishView): a user partition absent from
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
	// byMP[mp] holds the hosted user partitions of metadata partition mp
	// (nil: none). A map is shared by consecutive views until its metadata
	// partition changes, so that a change of one metadata partition (a
	// restore installs them one at a time) copies only its own entries.
	byMP []map[wire.PartitionKey]keepEntry
	// hosted is the number of entries in all maps.
	hosted int
}

// entry returns k's entry; mp is k's metadata partition.
func (v *keepView) entry(mp int32, k wire.PartitionKey) (keepEntry, bool) {
	e, ok := v.byMP[mp][k]
	return e, ok
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
// user partitions it covers, and marks the view of those whose set
// changed. Pump, under applyMu.
func (m *Manager) setWanted(hosted map[rlmm.TopicIDPartition]struct{}) {
	want := make([]map[wire.PartitionKey]rlmm.TopicIDPartition, m.n)
	for tp := range hosted {
		mp := wire.MetadataPartition(tp, m.n)
		if want[mp] == nil {
			want[mp] = map[wire.PartitionKey]rlmm.TopicIDPartition{}
		}
		want[mp][wire.KeyOf(tp)] = tp
	}
	for i := range m.parts {
		if p := &m.parts[i]; !maps.Equal(p.want, want[i]) {
			p.want = want[i]
			m.markView(int32(i))
		}
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
		m.markView(mp)
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
	m.markView(mp)
	m.dropQueue = append(m.dropQueue, tp)
}

// startPass starts a rebuild pass of mp for its queued user partitions:
// the subscription reads mp again from its log start. Pump, under applyMu.
func (m *Manager) startPass(mp int32) error {
	p := &m.parts[mp]
	pass := &rebuildPass{building: p.queued, read: p.start, from: p.start, startedAt: time.Now()}
	p.queued = nil
	p.pass = pass
	m.markView(mp)
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
	m.markView(mp)
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

// markView marks mp's part of the readers' view out of date: its want,
// kept, loading or assigned changed. Pump, under applyMu.
func (m *Manager) markView(mp int32) {
	m.parts[mp].viewDirty = true
	m.viewDirty = true
}

// publishView publishes a view in which the maps of the metadata
// partitions marked by markView are built anew from the pump's sets and
// the others are the old view's, and wakes the callers waiting for a
// change of the marked ones (changes of the view are rare: assignments, a
// restored metadata partition installed, the end of passes). A restore
// publishes once per metadata partition it installs: rebuilding every
// map each time was 4-6% of the CPU of restoring 10,000,000 segments in
// 10,000 user partitions. Pump, under applyMu.
func (m *Manager) publishView() {
	old := m.keep.Load()
	v := &keepView{byMP: slices.Clone(old.byMP)}
	for i := range m.parts {
		p := &m.parts[i]
		if p.viewDirty {
			v.byMP[i] = nil
			if p.assigned && len(p.want) > 0 {
				v.byMP[i] = p.viewEntries()
			}
		}
		v.hosted += len(v.byMP[i])
	}
	m.mu.Lock()
	m.keep.Store(v)
	for i := range m.parts {
		if p := &m.parts[i]; p.viewDirty {
			p.viewDirty = false
			close(p.changed)
			p.changed = make(chan struct{})
		}
	}
	m.readinessChangedLocked()
	m.mu.Unlock()
}

// viewEntries returns the readers' entries of p's hosted user partitions.
// Pump, under applyMu.
func (p *metaPartition) viewEntries() map[wire.PartitionKey]keepEntry {
	out := make(map[wire.PartitionKey]keepEntry, len(p.want))
	for k, tp := range p.want {
		st := keepBuilding
		if _, ok := p.kept[k]; ok && !p.loading {
			st = keepReady
		}
		out[k] = keepEntry{tp: tp, state: st}
	}
	return out
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
	out := make([]PartitionReadiness, 0, v.hosted)
	for mp, part := range v.byMP {
		for _, e := range part {
			out = append(out, PartitionReadiness{TopicIDPartition: e.tp, Ready: m.readyEntry(int32(mp), e)})
		}
	}
	return out
}

// readyIn reports whether tp is kept in v and its metadata partition ready.
func (m *Manager) readyIn(v *keepView, tp rlmm.TopicIDPartition) bool {
	mp := wire.MetadataPartition(tp, m.n)
	e, ok := v.entry(mp, wire.KeyOf(tp))
	return ok && m.readyEntry(mp, e)
}

// readyEntry reports whether e, an entry of mp in a view, is kept and mp
// ready.
func (m *Manager) readyEntry(mp int32, e keepEntry) bool {
	return e.state == keepReady && m.parts[mp].status.Load()&statusMask == statusReady
}

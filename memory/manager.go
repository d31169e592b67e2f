package memory

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/rlmm-go/rlmm"
)

// Manager is the in-memory remote log metadata manager: the lifecycle state
// machine and the canonical cache. It implements rlmm.Manager on its own and
// is safe for concurrent use. See the package documentation for its rules.
type Manager struct {
	// wmu serializes every change (mutations, DropPartition, Import) and
	// Export, so that the writer may read partition state without locking
	// it and Export sees one consistent moment.
	wmu sync.Mutex
	// parts finds a partition without locking; only the writer changes it.
	parts  directory
	closed atomic.Bool
}

var _ rlmm.Manager = (*Manager)(nil)

// Option configures a Manager. No option is required.
type Option func(*Manager)

// New returns an empty Manager.
func New(opts ...Option) *Manager {
	m := &Manager{}
	for _, o := range opts {
		o(m)
	}
	return m
}

func errClosed() error { return fmt.Errorf("memory manager: %w", rlmm.ErrClosed) }

// lookup returns tp's partition with its read lock held, or nil. It retries
// when it meets a partition that a concurrent change dropped or replaced.
// It takes no lock of the Manager and does no I/O.
func (m *Manager) lookup(tp rlmm.TopicIDPartition) *partition {
	for {
		p := m.parts.get(&tp)
		if p == nil {
			return nil
		}
		p.mu.RLock()
		if !p.dead {
			return p
		}
		p.mu.RUnlock()
	}
}

// putPartition publishes p. Writer only.
func (m *Manager) putPartition(p *partition) {
	m.parts.set(p.tp, p)
}

// dropPartition forgets tp's partition, if any. Writer only.
func (m *Manager) dropPartition(tp rlmm.TopicIDPartition) {
	p := m.parts.get(&tp)
	if p == nil {
		return
	}
	// Unpublish first, then mark: a reader that still holds p sees it dead
	// and looks again, finding nothing (marking first would let it spin).
	m.parts.set(tp, nil)
	retire(p)
}

// replace publishes p in place of p.tp's current partition, if any (an
// empty p removes it). Caller holds wmu.
func (m *Manager) replace(p *partition) {
	old := m.parts.get(&p.tp)
	// Publish the new state before retiring the old one, so that a reader
	// sees one or the other, never a gap.
	if p.empty() {
		m.parts.set(p.tp, nil)
	} else {
		m.parts.set(p.tp, p)
	}
	retire(old)
}

// retire marks a partition that left the directory, so that a reader that
// found it before looks again. Caller holds wmu.
func retire(old *partition) {
	if old == nil {
		return
	}
	old.mu.Lock()
	old.dead = true
	old.mu.Unlock()
}

// AddSegment records a new segment in COPY_SEGMENT_STARTED. The metadata must
// pass Validate and be in COPY_SEGMENT_STARTED (rlmm.ErrInvalidArgument).
// Adding an id that already exists is a transition to COPY_SEGMENT_STARTED: a
// success that changes nothing while the segment is still STARTED, a
// *rlmm.TransitionError otherwise. On error nothing changes. The manager
// keeps its own copy of md. ctx is unused: the call never blocks on I/O.
func (m *Manager) AddSegment(_ context.Context, md rlmm.SegmentMetadata) error {
	m.wmu.Lock()
	defer m.wmu.Unlock()
	p, existing, err := m.checkAdd(&md)
	if err != nil || existing {
		return err
	}
	if p == nil {
		p = newPartition(md.ID.TopicIDPartition)
		p.add(&md) // not yet visible to readers: no lock needed
		m.putPartition(p)
		return nil
	}
	p.mu.Lock()
	p.add(&md)
	p.mu.Unlock()
	return nil
}

// CheckAddSegment returns exactly the error AddSegment would return now,
// without changing anything.
func (m *Manager) CheckAddSegment(md rlmm.SegmentMetadata) error {
	m.wmu.Lock()
	defer m.wmu.Unlock()
	_, _, err := m.checkAdd(&md)
	return err
}

// checkAdd returns md's partition (nil if it has no state yet), whether md's
// id already exists in COPY_SEGMENT_STARTED, or the error. Writer only.
func (m *Manager) checkAdd(md *rlmm.SegmentMetadata) (*partition, bool, error) {
	if m.closed.Load() {
		return nil, false, errClosed()
	}
	if err := md.Validate(); err != nil {
		return nil, false, err
	}
	if md.State != rlmm.CopySegmentStarted {
		return nil, false, fmt.Errorf("%w: segment %s of %s: a new segment must be in state %s, not %s",
			rlmm.ErrInvalidArgument, md.ID.ID, md.ID.TopicIDPartition, rlmm.CopySegmentStarted, md.State)
	}
	p := m.parts.get(&md.ID.TopicIDPartition)
	if p == nil {
		return nil, false, nil
	}
	i, ok := p.byID.get(&md.ID.ID, p)
	if !ok {
		return p, false, nil
	}
	if from := p.slot(i).state; from != rlmm.CopySegmentStarted {
		return nil, false, &rlmm.TransitionError{Segment: md.ID, From: from, Exists: true, To: rlmm.CopySegmentStarted}
	}
	return p, true, nil
}

// UpdateSegment moves a segment to u.State, taking the broker id, event
// timestamp and custom metadata from u (Kafka's createWithUpdates). Errors:
// rlmm.ErrInvalidArgument when u fails Validate, rlmm.ErrUnknownSegment when
// the segment does not exist, a *rlmm.TransitionError when its state forbids
// the move. On error nothing changes. ctx is unused.
func (m *Manager) UpdateSegment(_ context.Context, u rlmm.SegmentUpdate) error {
	m.wmu.Lock()
	defer m.wmu.Unlock()
	p, i, err := m.checkUpdate(&u)
	if err != nil {
		return err
	}
	p.mu.Lock()
	p.update(i, &u)
	p.mu.Unlock()
	if p.empty() {
		m.dropPartition(p.tp)
	}
	return nil
}

// CheckUpdateSegment returns exactly the error UpdateSegment would return
// now, without changing anything.
func (m *Manager) CheckUpdateSegment(u rlmm.SegmentUpdate) error {
	m.wmu.Lock()
	defer m.wmu.Unlock()
	_, _, err := m.checkUpdate(&u)
	return err
}

// checkUpdate returns the partition and slot of u's segment, or the error.
// Writer only.
func (m *Manager) checkUpdate(u *rlmm.SegmentUpdate) (*partition, int32, error) {
	if m.closed.Load() {
		return nil, 0, errClosed()
	}
	if err := u.Validate(); err != nil {
		return nil, 0, err
	}
	p := m.parts.get(&u.ID.TopicIDPartition)
	var i int32
	ok := false
	if p != nil {
		i, ok = p.byID.get(&u.ID.ID, p)
	}
	if !ok {
		return nil, 0, fmt.Errorf("%w: %s (update to %s)", rlmm.ErrUnknownSegment, u.ID, u.State)
	}
	if from := p.slot(i).state; !rlmm.CanTransition(from, u.State) {
		return nil, 0, &rlmm.TransitionError{Segment: u.ID, From: from, Exists: true, To: u.State}
	}
	return p, i, nil
}

// PutPartitionDelete records a partition's deletion state. As in Kafka, any
// defined state is accepted whatever came before (the transition rule is not
// enforced). DELETE_PARTITION_MARKED and _STARTED keep the segments visible;
// DELETE_PARTITION_FINISHED drops the partition's whole state, the delete
// state included. An undefined state is rlmm.ErrInvalidArgument. ctx is unused.
func (m *Manager) PutPartitionDelete(_ context.Context, d rlmm.PartitionDelete) error {
	m.wmu.Lock()
	defer m.wmu.Unlock()
	p, err := m.checkPartitionDelete(&d)
	if err != nil {
		return err
	}
	if d.State == rlmm.DeletePartitionFinished {
		m.dropPartition(d.TopicIDPartition)
		return nil
	}
	if p == nil {
		p = newPartition(d.TopicIDPartition)
		p.del, p.hasDel = d, true
		m.putPartition(p)
		return nil
	}
	p.mu.Lock()
	p.del, p.hasDel = d, true
	p.mu.Unlock()
	return nil
}

// CheckPartitionDelete returns exactly the error PutPartitionDelete would
// return now, without changing anything.
func (m *Manager) CheckPartitionDelete(d rlmm.PartitionDelete) error {
	m.wmu.Lock()
	defer m.wmu.Unlock()
	_, err := m.checkPartitionDelete(&d)
	return err
}

// checkPartitionDelete returns d's partition (nil if it has no state, or
// for DELETE_PARTITION_FINISHED, which only drops it) or the error. Writer
// only.
func (m *Manager) checkPartitionDelete(d *rlmm.PartitionDelete) (*partition, error) {
	if m.closed.Load() {
		return nil, errClosed()
	}
	if err := d.Validate(); err != nil {
		return nil, err
	}
	if d.State == rlmm.DeletePartitionFinished {
		return nil, nil
	}
	return m.parts.get(&d.TopicIDPartition), nil
}

// DropPartition forgets all state of tp (used when its metadata partition is
// no longer consumed). It does nothing after Close.
func (m *Manager) DropPartition(tp rlmm.TopicIDPartition) {
	m.wmu.Lock()
	defer m.wmu.Unlock()
	m.dropPartition(tp)
}

// SegmentForOffset returns the COPY_SEGMENT_FINISHED segment whose range for
// leaderEpoch covers offset; where several do, the one that finished last.
// The result is a copy the caller owns, which costs one allocation for its
// leader epochs (and one for custom metadata when present); use
// SegmentForOffsetInto on a hot path. A partition without state is a miss.
func (m *Manager) SegmentForOffset(tp rlmm.TopicIDPartition, leaderEpoch int32, offset int64) (rlmm.SegmentMetadata, bool, error) {
	var md rlmm.SegmentMetadata
	ok, err := m.SegmentForOffsetInto(tp, leaderEpoch, offset, &md)
	if !ok {
		return rlmm.SegmentMetadata{}, false, err
	}
	return md, true, nil
}

// SegmentForOffsetInto is SegmentForOffset writing into *dst and reusing the
// capacity of dst.LeaderEpochs and dst.CustomMetadata: with a dst reused
// across calls it does not allocate. On a miss *dst is left unchanged.
func (m *Manager) SegmentForOffsetInto(tp rlmm.TopicIDPartition, leaderEpoch int32, offset int64, dst *rlmm.SegmentMetadata) (bool, error) {
	if m.closed.Load() {
		return false, errClosed()
	}
	p := m.lookup(tp)
	if p == nil {
		return false, nil
	}
	i, ok := p.find(leaderEpoch, offset)
	if ok {
		p.fill(i, dst)
	}
	p.mu.RUnlock()
	return ok, nil
}

// HighestOffsetForEpoch returns the highest offset of leaderEpoch held by a
// segment that reached COPY_SEGMENT_FINISHED. It never decreases, not even
// when those segments are deleted (Kafka's rule).
func (m *Manager) HighestOffsetForEpoch(tp rlmm.TopicIDPartition, leaderEpoch int32) (int64, bool, error) {
	if m.closed.Load() {
		return 0, false, errClosed()
	}
	p := m.lookup(tp)
	if p == nil {
		return 0, false, nil
	}
	defer p.mu.RUnlock()
	h, ok := p.highestOf(leaderEpoch)
	return h, ok, nil
}

// ListSegments returns copies of every segment of tp not yet
// DELETE_SEGMENT_FINISHED, ordered by start offset, then end offset, then id.
func (m *Manager) ListSegments(tp rlmm.TopicIDPartition) ([]rlmm.SegmentMetadata, error) {
	return m.list(tp, 0, true)
}

// ListSegmentsForEpoch returns the segments of ListSegments that carry leaderEpoch.
func (m *Manager) ListSegmentsForEpoch(tp rlmm.TopicIDPartition, leaderEpoch int32) ([]rlmm.SegmentMetadata, error) {
	return m.list(tp, leaderEpoch, false)
}

func (m *Manager) list(tp rlmm.TopicIDPartition, ep int32, all bool) ([]rlmm.SegmentMetadata, error) {
	if m.closed.Load() {
		return nil, errClosed()
	}
	p := m.lookup(tp)
	if p == nil {
		return nil, nil
	}
	defer p.mu.RUnlock()
	idx := p.liveSlots(nil, ep, all)
	p.sortForList(idx)
	return p.copies(idx), nil
}

// RemoteLogSize sums the sizes of ListSegmentsForEpoch (a segment spanning
// several epochs counts in each, as in Kafka).
func (m *Manager) RemoteLogSize(tp rlmm.TopicIDPartition, leaderEpoch int32) (int64, error) {
	if m.closed.Load() {
		return 0, errClosed()
	}
	p := m.lookup(tp)
	if p == nil {
		return 0, nil
	}
	defer p.mu.RUnlock()
	var total int64
	for c := range p.chunks {
		for o := range p.chunks[c] {
			s := &p.chunks[c][o]
			if s.used() {
				if _, _, ok := p.epochRange(int32(c<<chunkBits|o), s, leaderEpoch); ok {
					total += int64(s.size)
				}
			}
		}
	}
	return total, nil
}

// NextSegmentWithTxnIndex is Kafka 4.0's rule: starting from the segment
// SegmentForOffset finds, follow the segments of leaderEpoch (each next
// lookup at the previous end offset + 1) past those whose transaction index
// is empty; return the first with one, or a miss at the first gap.
func (m *Manager) NextSegmentWithTxnIndex(tp rlmm.TopicIDPartition, leaderEpoch int32, offset int64) (rlmm.SegmentMetadata, bool, error) {
	if m.closed.Load() {
		return rlmm.SegmentMetadata{}, false, errClosed()
	}
	p := m.lookup(tp)
	if p == nil {
		return rlmm.SegmentMetadata{}, false, nil
	}
	defer p.mu.RUnlock()
	for {
		i, ok := p.find(leaderEpoch, offset)
		if !ok {
			return rlmm.SegmentMetadata{}, false, nil
		}
		s := p.slot(i)
		if s.flags&flagTxnEmpty == 0 {
			var md rlmm.SegmentMetadata
			p.fill(i, &md)
			return md, true, nil
		}
		// Kafka continues at the segment's end offset + 1. With epoch starts
		// past the segment's end (which Kafka accepts), the epoch's range can
		// reach beyond it and Kafka would find the same segment forever:
		// continue after the epoch's range instead, so the walk always ends.
		_, next, _ := p.epochRange(i, s, leaderEpoch)
		next = max(next, s.end)
		if next == math.MaxInt64 {
			return rlmm.SegmentMetadata{}, false, nil
		}
		offset = next + 1
	}
}

// OnPartitionLeadershipChanges does nothing: every partition is served.
func (m *Manager) OnPartitionLeadershipChanges(context.Context, []rlmm.TopicIDPartition, []rlmm.TopicIDPartition) error {
	if m.closed.Load() {
		return errClosed()
	}
	return nil
}

// OnStopPartitions does nothing: every partition is served.
func (m *Manager) OnStopPartitions(context.Context, []rlmm.TopicIDPartition) error {
	if m.closed.Load() {
		return errClosed()
	}
	return nil
}

// IsReady is true for every partition until Close.
func (m *Manager) IsReady(rlmm.TopicIDPartition) bool { return !m.closed.Load() }

// Close releases the state; later calls return rlmm.ErrClosed (Export,
// Partitions and View return nothing). Closing twice is harmless.
func (m *Manager) Close() error {
	m.closed.Store(true)
	m.wmu.Lock()
	defer m.wmu.Unlock()
	var tps []rlmm.TopicIDPartition
	m.parts.each(func(p *partition) { tps = append(tps, p.tp) })
	for _, tp := range tps {
		m.dropPartition(tp)
	}
	return nil
}

// Partitions lists the user partitions that have any state, sorted by
// topic, partition, then topic id.
func (m *Manager) Partitions() []rlmm.TopicIDPartition {
	var out []rlmm.TopicIDPartition
	m.parts.each(func(p *partition) { out = append(out, p.tp) })
	slices.SortFunc(out, compareTP)
	return out
}

// Holdings returns how many user partitions have any state (the length of
// Partitions, without building the list) and how many live segments (not
// DELETE_SEGMENT_FINISHED) they hold: what a cache costs.
func (m *Manager) Holdings() (partitions int, segments int64) {
	m.parts.each(func(p *partition) {
		partitions++
		p.mu.RLock()
		segments += int64(p.live)
		p.mu.RUnlock()
	})
	return partitions, segments
}

// sortPartitions sorts ps like Partitions.
func sortPartitions(ps []*partition) {
	slices.SortFunc(ps, func(a, b *partition) int { return compareTP(a.tp, b.tp) })
}

func compareTP(a, b rlmm.TopicIDPartition) int {
	if c := cmp.Compare(a.Topic, b.Topic); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Partition, b.Partition); c != 0 {
		return c
	}
	return slices.Compare(a.TopicID[:], b.TopicID[:])
}

package memory

import (
	"cmp"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/rlmm-go/rlmm"
)

// PartitionState is the whole state of one user partition, as Export returns
// it and Import takes it (the snapshot's unit).
type PartitionState struct {
	TopicIDPartition rlmm.TopicIDPartition
	// Segments holds every segment not DELETE_SEGMENT_FINISHED, ascending by
	// when each last changed state: the order Import re-inserts them in, so
	// that the newest finished segment still wins each lookup.
	Segments []rlmm.SegmentMetadata
	// HighestOffsets holds, per epoch, the never-decreasing highest finished
	// offset, sorted by epoch. Epochs without a finished segment are absent.
	HighestOffsets []EpochOffset
	// Delete is the latest partition-delete event, nil if none.
	Delete *rlmm.PartitionDelete
}

// EpochOffset pairs a leader epoch with an offset.
type EpochOffset struct {
	Epoch  int32
	Offset int64
}

// Export returns a copy of the state of every partition for which keep
// returns true (keep nil = all), sorted like Partitions. The copy is
// consistent: no change is applied while it is taken (reads go on: Export
// holds only the writer lock and builds nothing). Export then Import into a
// fresh Manager reproduces every read exactly. keep runs while mutations are
// held off, so it must not call the Manager's mutating methods, Export or
// Import (reads are fine). After Close it returns nil.
func (m *Manager) Export(keep func(rlmm.TopicIDPartition) bool) []PartitionState {
	m.wmu.Lock()
	defer m.wmu.Unlock()
	if m.closed.Load() {
		return nil
	}
	var parts []*partition
	m.parts.each(func(p *partition) {
		if keep == nil || keep(p.tp) {
			parts = append(parts, p)
		}
	})
	sortPartitions(parts)
	out := make([]PartitionState, 0, len(parts))
	for _, p := range parts {
		// The writer lock keeps the partition still: no read lock needed.
		out = append(out, p.export())
	}
	return out
}

func (p *partition) export() PartitionState {
	st := PartitionState{TopicIDPartition: p.tp}
	idx := p.liveSlots(make([]int32, 0, p.live), 0, true)
	slices.SortFunc(idx, func(a, b int32) int { return cmp.Compare(p.seqOf(a), p.seqOf(b)) })
	st.Segments = p.copies(idx)
	st.HighestOffsets = p.highestOffsets(nil)
	if p.hasDel {
		d := p.del
		st.Delete = &d
	}
	return st
}

// Import replaces the state of exactly the partitions it is given (a state
// with nothing in it removes the partition). It changes nothing when a state
// is invalid (rlmm.ErrInvalidArgument naming the
// partition and what is wrong): a segment that fails Validate, belongs to
// another partition, is DELETE_SEGMENT_FINISHED or repeats an id; highest
// offsets not sorted by epoch without duplicates; a delete of another
// partition, with an undefined state, or DELETE_PARTITION_FINISHED (which
// leaves no state to import); a partition given twice.
//
// Import keeps no reference to states or anything in them (segments,
// epochs and custom metadata are copied), so the caller may reuse them
// once it returns. The partitions are built before the writer lock is
// taken (several at a time when there are many segments), so that
// mutations of other partitions wait only for the publication.
func (m *Manager) Import(states []PartitionState) error {
	if m.closed.Load() {
		return errClosed()
	}
	// Build every partition aside (checking as it goes), then publish them
	// all: an invalid state leaves the Manager as it was.
	seen := make(map[rlmm.TopicIDPartition]struct{}, len(states))
	for k := range states {
		tp := states[k].TopicIDPartition
		if _, dup := seen[tp]; dup {
			return fmt.Errorf("%w: import: partition %s given twice", rlmm.ErrInvalidArgument, tp)
		}
		seen[tp] = struct{}{}
	}
	built, err := buildPartitions(states)
	if err != nil {
		return err
	}
	return m.publish(built)
}

// Install publishes the partitions the builders built, each replacing the
// partition's previous state (one that holds nothing removes it): what a
// snapshot loader does after decoding blocks into builders, on its own
// goroutines, with Finish called there too (Install finishes those that are
// not). A builder that failed, two builders of one partition, or a builder
// given twice are rlmm.ErrInvalidArgument and nothing changes. The builders
// must not be used afterwards. It does no I/O; the writer lock is held only
// to publish.
func (m *Manager) Install(builders []*PartitionBuilder) error {
	if m.closed.Load() {
		return errClosed()
	}
	seen := make(map[rlmm.TopicIDPartition]struct{}, len(builders))
	built := make([]*partition, len(builders))
	for k, b := range builders {
		if b == nil {
			return fmt.Errorf("%w: install: builder %d is nil", rlmm.ErrInvalidArgument, k)
		}
		if _, dup := seen[b.p.tp]; dup || b.installed {
			return fmt.Errorf("%w: install: partition %s given twice", rlmm.ErrInvalidArgument, b.p.tp)
		}
		seen[b.p.tp] = struct{}{}
		if err := b.Finish(); err != nil {
			return fmt.Errorf("%w: install: partition %s: %w", rlmm.ErrInvalidArgument, b.p.tp, err)
		}
		built[k] = b.p
	}
	for _, b := range builders {
		b.installed = true
	}
	return m.publish(built)
}

// publish makes the built partitions visible, each replacing the
// partition's previous state (an empty one removes it).
func (m *Manager) publish(built []*partition) error {
	m.wmu.Lock()
	defer m.wmu.Unlock()
	if m.closed.Load() {
		return errClosed()
	}
	for _, p := range built {
		m.replace(p)
	}
	return nil
}

// parallelImportSegments is the number of segments from which Import builds
// partitions on several goroutines: below it, starting them costs more than
// it saves.
const parallelImportSegments = 1024

// buildPartitions builds a partition of each state. With enough segments it
// uses up to GOMAXPROCS goroutines, each taking the next unbuilt state; the
// error returned is that of the first invalid state in states' order, as a
// sequential build would return.
func buildPartitions(states []PartitionState) ([]*partition, error) {
	built := make([]*partition, len(states))
	total := 0
	for k := range states {
		total += len(states[k].Segments)
	}
	workers := min(runtime.GOMAXPROCS(0), len(states), total/parallelImportSegments+1)
	if workers <= 1 {
		for k := range states {
			p, err := buildPartition(&states[k])
			if err != nil {
				return nil, err
			}
			built[k] = p
		}
		return built, nil
	}
	errs := make([]error, len(states))
	var next atomic.Int64
	var failed atomic.Bool
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for !failed.Load() {
				k := int(next.Add(1) - 1)
				if k >= len(states) {
					return
				}
				built[k], errs[k] = buildPartition(&states[k])
				if errs[k] != nil {
					failed.Store(true)
				}
			}
		})
	}
	wg.Wait()
	// Workers stop taking states after a failure, but every state before
	// the first failure was taken (they are taken in order), so the first
	// non-nil error is the one a sequential build meets first.
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return built, nil
}

// buildPartition checks a state and makes a partition of it, not yet
// visible to readers.
func buildPartition(st *PartitionState) (*partition, error) {
	b, err := builderOf(st)
	if err == nil {
		err = b.Finish()
	}
	if err != nil {
		return nil, err
	}
	return b.p, nil
}

// builderOf returns a builder fed with st (not finished).
func builderOf(st *PartitionState) (*PartitionBuilder, error) {
	b := NewPartitionBuilder(st.TopicIDPartition, SizesOf(st.Segments))
	for k := range st.Segments {
		if err := b.AddSegment(&st.Segments[k]); err != nil {
			return nil, err
		}
	}
	for _, eo := range st.HighestOffsets {
		if err := b.AddHighestOffset(eo.Epoch, eo.Offset); err != nil {
			return nil, err
		}
	}
	if st.Delete != nil {
		if err := b.SetDelete(st.Delete); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// PartitionView is a cheap per-partition summary for the CLI.
type PartitionView struct {
	TopicIDPartition rlmm.TopicIDPartition
	// SegmentsByState counts live segments, indexed by rlmm.SegmentState
	// (the DELETE_SEGMENT_FINISHED count is always 0: those are forgotten).
	SegmentsByState [4]int
	// RemoteBytes sums the sizes of live segments.
	RemoteBytes int64
	// StartOffset and EndOffset are the lowest start and highest end offsets
	// of live segments, -1 and -1 when there is none.
	StartOffset, EndOffset int64
	// Epochs lists, sorted, each epoch carried by a live segment or with a
	// finished offset, with its highest finished offset (Offset -1 when no
	// segment of it has finished).
	Epochs []EpochOffset
	// Delete is the latest partition-delete event, nil if none.
	Delete *rlmm.PartitionDelete
}

// View summarizes tp; false when tp has no state or after Close.
func (m *Manager) View(tp rlmm.TopicIDPartition) (PartitionView, bool) {
	if m.closed.Load() {
		return PartitionView{}, false
	}
	p := m.lookup(tp)
	if p == nil {
		return PartitionView{}, false
	}
	defer p.mu.RUnlock()
	v := PartitionView{TopicIDPartition: p.tp, RemoteBytes: p.bytes, StartOffset: -1, EndOffset: -1}
	for st, n := range p.counts {
		v.SegmentsByState[st] = int(n)
	}
	for c := range p.chunks {
		for o := range p.chunks[c] {
			s := &p.chunks[c][o]
			if !s.used() {
				continue
			}
			if v.StartOffset < 0 || s.start < v.StartOffset {
				v.StartOffset = s.start
			}
			if s.end > v.EndOffset {
				v.EndOffset = s.end
			}
		}
	}
	v.Epochs = p.emptied.mergeHighest(make([]EpochOffset, 0, len(p.epochs)+p.emptied.len()), p.epochs, true)
	if p.hasDel {
		d := p.del
		v.Delete = &d
	}
	return v, true
}

// SegmentFacts is what a size view reads of one live segment (internal/view
// sums them: inspect --sizes and rlmm serve's remote size gauges).
type SegmentFacts struct {
	State          rlmm.SegmentState
	StartOffset    int64
	MaxTimestampMs int64
	SizeInBytes    int32
}

// EachSegment calls fn with the facts of every live segment of tp (every
// state but DELETE_SEGMENT_FINISHED), in slot order, without allocating;
// false when tp has no state or after Close. It holds tp's read lock
// throughout, so a change to tp waits for the scan (some nanoseconds a
// segment: see BenchmarkRemoteSizes in server); fn must not call m.
func (m *Manager) EachSegment(tp rlmm.TopicIDPartition, fn func(*SegmentFacts)) bool {
	if m.closed.Load() {
		return false
	}
	p := m.lookup(tp)
	if p == nil {
		return false
	}
	defer p.mu.RUnlock()
	var f SegmentFacts
	for c := range p.chunks {
		for o := range p.chunks[c] {
			s := &p.chunks[c][o]
			if !s.used() {
				continue
			}
			f = SegmentFacts{State: s.state, StartOffset: s.start, MaxTimestampMs: s.maxTs, SizeInBytes: s.size}
			fn(&f)
		}
	}
	return true
}

package memory

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/rlmm-go/rlmm"
)

// LazyPartition is a partition whose state ImportLazy installs now and
// builds only when it is first needed.
type LazyPartition struct {
	TopicIDPartition rlmm.TopicIDPartition
	// Build returns a builder fed with the partition's state (Finish is
	// called for it if needed). It is called at most once, on whichever
	// goroutine first needs the state: a reader's, a writer's or
	// BuildPending's. It must not call the Manager.
	Build func() (*PartitionBuilder, error)
}

// pendingState is the not-yet-built state of a partition installed by
// ImportLazy. The partition in the directory is a placeholder holding only
// its topic partition and this; readers never lock a placeholder.
type pendingState struct {
	build func() (*PartitionBuilder, error)
	once  sync.Once
	// Set by once: exactly one of them.
	built *partition
	err   error
	// reported is set once the failure handler was told. Writer only.
	reported bool
}

// run builds the state, once; every caller returns when it is built.
func (ps *pendingState) run(tp rlmm.TopicIDPartition) {
	ps.once.Do(func() {
		b, err := ps.build()
		ps.build = nil // let go of whatever the closure holds
		switch {
		case err != nil:
		case b == nil:
			err = fmt.Errorf("%w: import: no builder", rlmm.ErrInvalidArgument)
		case b.p.tp != tp:
			err = fmt.Errorf("%w: import: builder of %s given for %s", rlmm.ErrInvalidArgument, b.p.tp, tp)
		default:
			err = b.Finish()
		}
		if err != nil {
			ps.err = fmt.Errorf("%w: the state of partition %s could not be built: %w", rlmm.ErrCorrupt, tp, err)
			return
		}
		ps.built = b.p
	})
}

// WithBuildFailure sets the function told when the state of a partition
// installed by ImportLazy cannot be built (its error wraps rlmm.ErrCorrupt).
// Until that partition is dropped or replaced, every read or change of it
// returns the same error. The function is called once per failed
// partition, on the goroutine that met the failure and possibly while the
// Manager's writer lock is held: it must not call the Manager, and should
// hand any work to another goroutine.
func WithBuildFailure(f func(tp rlmm.TopicIDPartition, err error)) Option {
	return func(m *Manager) { m.onBuildFailure = f }
}

// ImportLazy installs the given partitions, each replacing the partition's
// previous state, without building them: a partition's state is built the
// first time a read or a change needs it, or by BuildPending. A partition
// installed this way is listed by Partitions at once. Two entries of one
// partition are rlmm.ErrInvalidArgument (nothing changes).
//
// This is what lets a restart from a large snapshot be ready before the
// snapshot is decoded: Kafka itself opens a log segment's indexes lazily for
// the same reason.
func (m *Manager) ImportLazy(parts []LazyPartition) error {
	if m.closed.Load() {
		return errClosed()
	}
	seen := make(map[rlmm.TopicIDPartition]struct{}, len(parts))
	holders := make([]*partition, len(parts))
	for k := range parts {
		tp := parts[k].TopicIDPartition
		if _, dup := seen[tp]; dup {
			return fmt.Errorf("%w: import: partition %s given twice", rlmm.ErrInvalidArgument, tp)
		}
		seen[tp] = struct{}{}
		if parts[k].Build == nil {
			return fmt.Errorf("%w: import: partition %s without a Build function", rlmm.ErrInvalidArgument, tp)
		}
		holders[k] = &partition{tp: tp, pending: &pendingState{build: parts[k].Build}}
	}
	m.wmu.Lock()
	defer m.wmu.Unlock()
	if m.closed.Load() {
		return errClosed()
	}
	for _, h := range holders {
		m.replace(h)
	}
	m.pending.Add(int64(len(holders)))
	return nil
}

// PendingCount returns how many partitions installed by ImportLazy are
// neither built nor dropped yet (a failed one counts until it is dropped).
func (m *Manager) PendingCount() int { return int(m.pending.Load()) }

// BuildPending builds every partition still pending, on up to workers
// goroutines, and returns when all are built or failed (failures go to the
// WithBuildFailure function), or with ctx's error when ctx ends first.
func (m *Manager) BuildPending(ctx context.Context, workers int) error {
	var todo []*partition
	m.wmu.Lock()
	m.parts.each(func(p *partition) {
		if p.pending != nil {
			todo = append(todo, p)
		}
	})
	m.wmu.Unlock()
	// Build in the order of Partitions, so that a snapshot's partitions
	// are built in file order.
	sortPartitions(todo)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range max(min(workers, len(todo)), 1) {
		wg.Go(func() {
			for ctx.Err() == nil && !m.closed.Load() {
				k := int(next.Add(1) - 1)
				if k >= len(todo) {
					return
				}
				p := todo[k]
				p.pending.run(p.tp) // outside the writer lock
				m.wmu.Lock()
				_, _ = m.settle(p)
				m.wmu.Unlock()
			}
		})
	}
	wg.Wait()
	return ctx.Err()
}

// settle publishes the built state of placeholder p if the directory still
// holds p, and returns what now stands for p's partition (nil: nothing; it
// may be another placeholder if p was replaced meanwhile). A failed build
// returns its error (telling the failure function once). Caller holds wmu
// and has run p.pending.
func (m *Manager) settle(p *partition) (*partition, error) {
	if m.parts.get(&p.tp) != p {
		return m.parts.get(&p.tp), nil // dropped or replaced meanwhile
	}
	ps := p.pending
	if ps.err != nil {
		if !ps.reported {
			ps.reported = true
			if m.onBuildFailure != nil {
				m.onBuildFailure(p.tp, ps.err)
			}
		}
		return nil, ps.err
	}
	m.pending.Add(-1)
	if ps.built.empty() {
		m.parts.set(p.tp, nil)
		return nil, nil
	}
	m.parts.set(p.tp, ps.built)
	return ps.built, nil
}

// resolve returns the partition the directory holds for tp, building it
// first if it is a placeholder. Caller holds wmu.
func (m *Manager) resolve(tp *rlmm.TopicIDPartition) (*partition, error) {
	for {
		p := m.parts.get(tp)
		if p == nil || p.pending == nil {
			return p, nil
		}
		p.pending.run(p.tp)
		// With wmu held the directory still holds p: settle publishes its
		// state (or fails); look again to return what stands now.
		if _, err := m.settle(p); err != nil {
			return nil, err
		}
	}
}

// replace publishes p in place of tp's current partition, if any. Caller
// holds wmu.
func (m *Manager) replace(p *partition) {
	old := m.parts.get(&p.tp)
	// Publish the new state before retiring the old one, so that a reader
	// sees one or the other, never a gap.
	if p.empty() && p.pending == nil {
		m.parts.set(p.tp, nil)
	} else {
		m.parts.set(p.tp, p)
	}
	m.retire(old)
}

// retire marks a partition that left the directory. Caller holds wmu.
func (m *Manager) retire(old *partition) {
	switch {
	case old == nil:
	case old.pending != nil:
		// Readers never lock a placeholder; they find the directory changed.
		m.pending.Add(-1)
	default:
		old.mu.Lock()
		old.dead = true
		old.mu.Unlock()
	}
}

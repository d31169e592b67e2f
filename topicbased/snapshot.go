package topicbased

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/internal/atomicfile"
	"github.com/rlmm-go/rlmm/memory"
	"github.com/rlmm-go/rlmm/snapshot"
	"github.com/rlmm-go/rlmm/wire"
)

// SnapshotFileName is the name of the snapshot file inside Config.SnapshotDir.
const SnapshotFileName = "rlmm.snapshot"

// WriteSnapshot writes a snapshot of the cache now (after the previous
// snapshot's state is restored, if a restore is under way). It returns an
// error wrapping rlmm.ErrInvalidArgument when no SnapshotDir is configured.
func (m *Manager) WriteSnapshot(ctx context.Context) error {
	if m.closed.Load() {
		return fmt.Errorf("topicbased: write snapshot: %w", rlmm.ErrClosed)
	}
	if m.cfg.SnapshotDir == "" {
		return fmt.Errorf("%w: topicbased: write snapshot: no SnapshotDir configured", rlmm.ErrInvalidArgument)
	}
	if err := m.waitRestored(ctx); err != nil {
		return fmt.Errorf("topicbased: write snapshot: %w", err)
	}
	return m.writeSnapshot(ctx)
}

// writeSnapshot exports each held metadata partition with its committed
// offset under applyMu (so the two agree exactly), one metadata partition at
// a time so the pump is held only briefly, then streams the blocks into a
// temporary file outside the lock and replaces the snapshot with it.
// Metadata partitions are independent, so exporting them at slightly
// different moments keeps the snapshot consistent.
func (m *Manager) writeSnapshot(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("topicbased: write snapshot: %w", err)
	}
	m.snapMu.Lock()
	defer m.snapMu.Unlock()
	start := time.Now()
	// Every change counted up to here is in the exports below.
	version := m.version.Load()
	head := snapshot.Head{LogID: m.cfg.Log.ID(), Partitions: m.n, Committed: make([]int64, m.n)}
	var states []memory.PartitionState
	for i := range m.parts {
		mp := int32(i)
		m.applyMu.Lock()
		head.Committed[i] = -1
		if p := &m.parts[i]; p.held {
			head.Committed[i] = p.next - 1
			states = m.appendKept(states, mp)
		}
		m.applyMu.Unlock()
	}
	size, err := writeSnapshotFile(filepath.Join(m.cfg.SnapshotDir, SnapshotFileName), head, states)
	d := time.Since(start)
	m.met.SnapshotWritten(d, size, err)
	if err != nil {
		return fmt.Errorf("topicbased: write snapshot: %w", err)
	}
	m.lastSnapVersion = version
	m.logger.Debug("topicbased: snapshot written", "bytes", size, "user_partitions", len(states), "duration", d)
	return nil
}

// appendKept appends the state of mp's kept user partitions: their cache
// state, and an empty block for each one without state, so a restart knows
// it was kept (built to the committed offset) and needs no pass. Partitions
// being rebuilt are left out: their state is not built to the committed
// offset. Caller holds applyMu.
func (m *Manager) appendKept(states []memory.PartitionState, mp int32) []memory.PartitionState {
	p := &m.parts[mp]
	first := len(states)
	states = append(states, m.inner.Export(func(tp rlmm.TopicIDPartition) bool {
		if wire.MetadataPartition(tp, m.n) != mp {
			return false
		}
		_, ok := p.kept[wire.KeyOf(tp)]
		return ok
	})...)
	if len(states)-first == len(p.kept) {
		return states
	}
	exported := make(map[wire.PartitionKey]struct{}, len(states)-first)
	for i := first; i < len(states); i++ {
		exported[wire.KeyOf(states[i].TopicIDPartition)] = struct{}{}
	}
	for k, tp := range p.kept {
		if _, ok := exported[k]; !ok {
			states = append(states, memory.PartitionState{TopicIDPartition: tp})
		}
	}
	return states
}

// writeSnapshotFile replaces path with a snapshot of head and states
// (atomically: a crash leaves the old file or the new one) and returns its
// size.
func writeSnapshotFile(path string, head snapshot.Head, states []memory.PartitionState) (int64, error) {
	tps := make([]rlmm.TopicIDPartition, len(states))
	for i := range states {
		tps[i] = states[i].TopicIDPartition
	}
	f, err := atomicfile.Create(path, 0o600)
	if err != nil {
		return 0, err
	}
	defer f.Abort()
	w, err := snapshot.NewWriter(f, head, tps)
	if err != nil {
		return 0, err
	}
	for i := range states {
		if err := w.WriteBlock(&states[i]); err != nil {
			return 0, err
		}
	}
	size, err := w.Finish()
	if err != nil {
		return 0, err
	}
	if err := f.Commit(); err != nil {
		return 0, err
	}
	return size, f.Close()
}

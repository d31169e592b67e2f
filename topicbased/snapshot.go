package topicbased

import (
	"context"
	"fmt"
	"io"
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

// writeSnapshot replaces the snapshot file with one of the cache now
// (atomically: a crash leaves the old file or the new one).
func (m *Manager) writeSnapshot(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("topicbased: write snapshot: %w", err)
	}
	m.snapMu.Lock()
	defer m.snapMu.Unlock()
	start := time.Now()
	// Every change counted up to here is in the exports streamSnapshot takes.
	version := m.version.Load()
	size, blocks, err := writeSnapshotFile(filepath.Join(m.cfg.SnapshotDir, SnapshotFileName), m.streamSnapshot)
	d := time.Since(start)
	m.met.SnapshotWritten(d, size, err)
	if err != nil {
		// The last snapshot written stays (the new one went to a temporary
		// file, removed); the next write is tried at the next interval.
		m.snapFailures++
		return fmt.Errorf("topicbased: write snapshot: %w", err)
	}
	m.lastSnapVersion = version
	if m.snapFailures > 0 {
		m.logger.Info("topicbased: snapshot written again", "failed_writes_before", m.snapFailures,
			"bytes", size, "user_partitions", blocks, "duration", d)
		m.snapFailures = 0
		return nil
	}
	m.logger.Debug("topicbased: snapshot written", "bytes", size, "user_partitions", blocks, "duration", d)
	return nil
}

// streamSnapshot writes a snapshot (format version 4) of the held metadata
// partitions into dst and returns its size and block count. It exports
// each metadata partition with its committed offset under applyMu (so the
// two agree exactly), one at a time so the pump is held only briefly, and
// writes that export's blocks outside the lock before exporting the next:
// at most one metadata partition's copy of the cache is held. Metadata
// partitions are independent, so exporting them at slightly different
// moments keeps the snapshot consistent.
func (m *Manager) streamSnapshot(dst io.Writer) (int64, int, error) {
	w, err := snapshot.NewWriter(dst, m.cfg.Log.ID(), m.n)
	if err != nil {
		return 0, 0, err
	}
	for i := range m.parts {
		mp := int32(i)
		var states []memory.PartitionState
		m.applyMu.Lock()
		p := &m.parts[i]
		held, committed := p.held, p.next-1
		if held {
			states = m.appendKept(nil, mp)
		}
		m.applyMu.Unlock()
		if !held {
			continue // -1: nothing of it held
		}
		if testHookSnapshotExported != nil {
			testHookSnapshotExported()
		}
		if err := w.SetCommitted(mp, committed); err != nil {
			return 0, 0, err
		}
		for j := range states {
			if err := w.WriteBlock(&states[j]); err != nil {
				return 0, 0, err
			}
			states[j] = memory.PartitionState{} // written: let it go
		}
	}
	size, err := w.Finish()
	return size, w.Blocks(), err
}

// testHookSnapshotExported, when set (by a test, before the write), runs in
// streamSnapshot after each export, when the most memory is held: the
// tests measure the heap there.
var testHookSnapshotExported func()

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

// writeSnapshotFile replaces path with the snapshot write streams into it
// (atomically: a crash leaves the old file or the new one) and returns its
// size and block count.
func writeSnapshotFile(path string, write func(io.Writer) (int64, int, error)) (int64, int, error) {
	f, err := atomicfile.Create(path, 0o600)
	if err != nil {
		return 0, 0, err
	}
	defer f.Abort()
	size, blocks, err := write(f)
	if err != nil {
		return 0, 0, err
	}
	if err := f.Commit(); err != nil {
		return 0, 0, err
	}
	return size, blocks, f.Close()
}

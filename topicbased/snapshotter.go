package topicbased

import (
	"context"
	"fmt"
	"time"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/wire"
)

// housekeeper writes periodic snapshots when the cache advanced and samples
// the high-water marks for the lag metric.
func (m *Manager) housekeeper(ctx context.Context) {
	defer m.wg.Done()
	var snapTick, lagTick <-chan time.Time
	if m.cfg.SnapshotDir != "" && m.cfg.SnapshotInterval > 0 {
		t := time.NewTicker(m.cfg.SnapshotInterval)
		defer t.Stop()
		snapTick = t.C
	}
	if _, nop := m.met.(NopMetrics); !nop && m.cfg.LagInterval > 0 {
		t := time.NewTicker(m.cfg.LagInterval)
		defer t.Stop()
		lagTick = t.C
	}
	if snapTick == nil && lagTick == nil {
		<-ctx.Done()
		return
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-snapTick:
			m.snapMu.Lock()
			advanced := m.version.Load() != m.lastSnapVersion
			m.snapMu.Unlock()
			if advanced {
				if err := m.writeSnapshot(ctx); err != nil {
					m.logger.Warn("topicbased: periodic snapshot failed", "error", err)
				}
			}
		case <-lagTick:
			m.sampleHighWaterMarks(ctx)
		}
	}
}

// sampleHighWaterMarks refreshes the known high-water marks of the assigned
// metadata partitions and reports their progress.
func (m *Manager) sampleHighWaterMarks(ctx context.Context) {
	m.applyMu.Lock()
	var mps []int32
	for i := range m.parts {
		if m.parts[i].assigned {
			mps = append(mps, int32(i))
		}
	}
	m.applyMu.Unlock()
	if len(mps) == 0 {
		return
	}
	hw, err := m.log.HighWaterMarks(ctx, mps)
	if err != nil {
		m.logger.Debug("topicbased: sampling high-water marks failed", "error", err)
		return
	}
	m.applyMu.Lock()
	defer m.applyMu.Unlock()
	for i, mp := range mps {
		p := &m.parts[mp]
		if !p.assigned {
			continue
		}
		p.highWater = max(p.highWater, hw[i])
		m.met.PartitionProgress(mp, p.next-1, p.highWater)
	}
}

// WriteSnapshot writes a snapshot of the cache now. It returns an error
// wrapping rlmm.ErrInvalidArgument when no SnapshotDir is configured.
func (m *Manager) WriteSnapshot(ctx context.Context) error {
	if m.closed.Load() {
		return fmt.Errorf("topicbased: write snapshot: %w", rlmm.ErrClosed)
	}
	if m.cfg.SnapshotDir == "" {
		return fmt.Errorf("%w: topicbased: write snapshot: no SnapshotDir configured", rlmm.ErrInvalidArgument)
	}
	return m.writeSnapshot(ctx)
}

// writeSnapshot exports each held metadata partition with its committed
// offset under applyMu (so the two agree exactly), one metadata partition at
// a time so the pump is held only briefly, then encodes and writes the file
// outside the lock. Metadata partitions are independent, so exporting them
// at slightly different moments keeps the snapshot consistent.
func (m *Manager) writeSnapshot(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("topicbased: write snapshot: %w", err)
	}
	m.snapMu.Lock()
	defer m.snapMu.Unlock()
	start := time.Now()
	// Every change counted up to here is in the exports below.
	version := m.version.Load()
	s := &snapshot{partitions: m.n, committed: make([]int64, m.n)}
	for i := range m.parts {
		mp := int32(i)
		m.applyMu.Lock()
		p := &m.parts[i]
		s.committed[i] = -1
		if p.held {
			states, err := m.inner.ExportChecked(func(tp rlmm.TopicIDPartition) bool {
				return wire.MetadataPartition(tp, m.n) == mp
			})
			if err != nil {
				// A partition of the previous snapshot that cannot be built:
				// its metadata partition is being replayed, so this snapshot
				// holds none of it.
				m.logger.Warn("topicbased: snapshot leaves out a metadata partition being replayed", "partition", mp, "error", err)
			} else {
				s.committed[i] = p.next - 1
				s.states = append(s.states, states...)
			}
		}
		m.applyMu.Unlock()
	}

	data := encodeSnapshot(s)
	err := writeFileAtomic(m.cfg.SnapshotDir, SnapshotFileName, data)
	d := time.Since(start)
	m.met.SnapshotWritten(d, int64(len(data)), err)
	if err != nil {
		return fmt.Errorf("topicbased: write snapshot: %w", err)
	}
	m.lastSnapVersion = version
	m.logger.Debug("topicbased: snapshot written", "bytes", len(data), "user_partitions", len(s.states), "duration", d)
	return nil
}

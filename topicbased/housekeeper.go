package topicbased

import (
	"context"
	"time"
)

// housekeeper writes periodic snapshots when the cache advanced, samples
// the high-water marks for the lag metric (handing them to the pump, which
// owns the partitions' marks) and the log start offsets of the partitions
// catching up (see sampleStartOffsets).
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
	startTick := time.NewTicker(startCheckInterval)
	defer startTick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-snapTick:
			m.periodicSnapshot(ctx)
		case <-lagTick:
			m.sampleHighWaterMarks(ctx)
		case <-startTick.C:
			m.sampleStartOffsets(ctx)
		}
	}
}

// periodicSnapshot writes a snapshot if the cache advanced since the last
// one and the previous snapshot's state is restored (writing before would
// leave out what is still being restored).
func (m *Manager) periodicSnapshot(ctx context.Context) {
	select {
	case <-m.restoreDone:
	default:
		return
	}
	m.snapMu.Lock()
	advanced := m.version.Load() != m.lastSnapVersion
	m.snapMu.Unlock()
	if !advanced {
		return
	}
	if err := m.writeSnapshot(ctx); err != nil {
		m.logger.Warn("topicbased: periodic snapshot failed; the previous snapshot stays and the write is tried again at the next interval",
			"dir", m.cfg.SnapshotDir, "error", err)
	}
}

// sampleHighWaterMarks reads the high-water marks of the assigned metadata
// partitions and queues them for the pump, which merges them and reports
// the partitions' progress.
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
	// Not waited for: the pump applies it between two polls.
	_ = m.submit(&controlRequest{sampledOf: mps, sampled: hw, done: make(chan error, 1)})
}

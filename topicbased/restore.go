package topicbased

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/memory"
	"github.com/rlmm-go/rlmm/snapshot"
	"github.com/rlmm-go/rlmm/wire"
)

// restored is the decoded snapshot state of one metadata partition, which
// the restorer hands to the pump (the only writer of the cache) to install.
type restored struct {
	mp int32
	// builders hold the partition's user partitions, finished; nil when
	// failures > 0.
	builders []*memory.PartitionBuilder
	// blocks is how many user partitions the snapshot holds of mp;
	// failures how many of them could not be built (err is the first).
	blocks, failures int
	err              error
}

// openSnapshot opens the snapshot of cfg.SnapshotDir and checks its index
// and head (the footer of a version 4 file, the head of an older one:
// checksum, lengths, consistency with the log), without reading a block:
// the restorer checks each block's checksum as it decodes it, in its one
// read of the block. It returns the open file for the restorer, or nil (no
// snapshot, or one not used: the error says why, and the manager replays
// the log).
func (m *Manager) openSnapshot() (*os.File, *snapshot.Reader, error) {
	path := filepath.Join(m.cfg.SnapshotDir, SnapshotFileName)
	file, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read snapshot %s: %w", path, err)
	}
	keep := false
	defer func() {
		if !keep {
			_ = file.Close()
		}
	}()
	info, err := file.Stat()
	if err != nil {
		return nil, nil, fmt.Errorf("read snapshot %s: %w", path, err)
	}
	if !info.Mode().IsRegular() {
		return nil, nil, fmt.Errorf("read snapshot %s: not a regular file (%s)", path, info.Mode())
	}
	r, err := snapshot.Open(file, info.Size())
	if err != nil {
		return nil, nil, fmt.Errorf("snapshot %s: %w", path, err)
	}
	head := r.Head()
	if head.Partitions != m.n {
		// Not corrupt: a snapshot of another log (rlmm.ErrCorrupt means bad bytes).
		return nil, nil, fmt.Errorf("snapshot %s was taken with %d metadata partitions, the log has %d",
			path, head.Partitions, m.n)
	}
	if logID := m.cfg.Log.ID(); head.LogID != rlmm.ZeroUuid && logID != rlmm.ZeroUuid && head.LogID != logID {
		// Also when the new log holds more events than the snapshot
		// claims, which the offsets alone cannot tell (consume's check).
		return nil, nil, &otherLogError{path: path, snapshotLog: head.LogID, log: logID, held: heldCount(head)}
	}
	for _, blk := range r.Blocks() {
		if mp := wire.MetadataPartition(blk.TopicIDPartition, m.n); head.Committed[mp] < 0 {
			return nil, nil, fmt.Errorf("%w: snapshot %s holds partition %s of metadata partition %d, whose committed offset is %d",
				rlmm.ErrCorrupt, path, blk.TopicIDPartition, mp, head.Committed[mp])
		}
	}
	keep = true
	return file, r, nil
}

// otherLogError is why a snapshot is not used when it was written for a
// log other than the manager's: their ids differ.
type otherLogError struct {
	path             string
	snapshotLog, log rlmm.Uuid
	held             int // metadata partitions the snapshot held
}

func (e *otherLogError) Error() string {
	return fmt.Sprintf("snapshot %s was written for the log with id %s, this log's id is %s", e.path, e.snapshotLog, e.log)
}

// heldCount returns how many metadata partitions h holds state of.
func heldCount(h snapshot.Head) int {
	n := 0
	for _, c := range h.Committed {
		if c >= 0 {
			n++
		}
	}
	return n
}

// loadSnapshot checks the snapshot at Start (before the pump runs, so it
// sets the pump's fields itself) and returns what the restorer decodes, or
// nils when there is nothing to decode.
func (m *Manager) loadSnapshot() (*os.File, *snapshot.Reader) {
	if m.cfg.SnapshotDir == "" {
		return nil, nil
	}
	// Temporary files of a snapshot write interrupted by a crash.
	if stale, _ := filepath.Glob(filepath.Join(m.cfg.SnapshotDir, SnapshotFileName+".*.tmp")); len(stale) > 0 {
		for _, f := range stale {
			_ = os.Remove(f)
		}
		m.logger.Info("topicbased: removed temporary files of an interrupted snapshot write", "files", stale)
	}
	start := time.Now()
	file, r, err := m.openSnapshot()
	m.stats.loadDuration = time.Since(start)
	m.stats.loadErr = err
	segments := 0
	if r != nil {
		for _, blk := range r.Blocks() {
			segments += blk.Segments
		}
	}
	m.stats.loadedSegments = segments
	m.met.SnapshotLoaded(m.stats.loadDuration, segments, err)
	if other, ok := errors.AsType[*otherLogError](err); ok {
		m.stats.snapshotDropped.Add(uint64(other.held))
		m.logger.Warn("topicbased: snapshot dropped: it was written for another log (the metadata topic deleted and created again under the same name?); replaying every metadata partition from its log start",
			"dir", m.cfg.SnapshotDir, "snapshot_log_id", other.snapshotLog, "log_id", other.log,
			"metadata_partitions_dropped", other.held, "reason", other.Error())
		return nil, nil
	}
	if err != nil {
		m.logger.Warn("topicbased: snapshot not used; starting empty for a full replay",
			"dir", m.cfg.SnapshotDir, "error", err)
		return nil, nil
	}
	if r == nil {
		return nil, nil
	}
	blocks := make([]int, m.n)
	for _, blk := range r.Blocks() {
		mp := wire.MetadataPartition(blk.TopicIDPartition, m.n)
		blocks[mp]++
		// What the snapshot holds is what was kept (hosted) when it was
		// written, with or without state.
		m.parts[mp].kept[wire.KeyOf(blk.TopicIDPartition)] = blk.TopicIDPartition
	}
	for i, c := range r.Head().Committed {
		p := &m.parts[i]
		switch {
		case c < 0:
		case blocks[i] == 0:
			p.held, p.next = true, c+1
		default:
			p.loading, p.next = true, c+1
		}
	}
	m.stats.restorePending.Store(int64(len(r.Blocks())))
	m.logger.Info("topicbased: snapshot checked; decoding it in the background", "dir", m.cfg.SnapshotDir,
		"segments", segments, "user_partitions", len(r.Blocks()), "duration", m.stats.loadDuration)
	if len(r.Blocks()) == 0 {
		_ = file.Close()
		return nil, nil
	}
	return file, r
}

// restore reads the snapshot's blocks on every core, each once: it checks
// the block's checksum and decodes it straight into a
// memory.PartitionBuilder, and hands the pump each metadata partition as
// soon as all its blocks are built (or one failed, by its checksum or its
// content: it is logged with its reason, and the pump then replays that
// metadata partition from offset 0). Until the pump installs it, a
// metadata partition held by the snapshot is not consumed and, if
// assigned, answers rlmm.ErrNotReady. It closes file when done.
func (m *Manager) restore(ctx context.Context, file *os.File, r *snapshot.Reader) {
	defer m.wg.Done()
	defer func() { _ = file.Close() }()
	blocks := r.Blocks()
	parts := make([]restored, m.n)
	for i := range parts {
		parts[i].mp = int32(i)
	}
	mpOf := make([]int32, len(blocks))
	for k, blk := range blocks {
		mpOf[k] = wire.MetadataPartition(blk.TopicIDPartition, m.n)
		parts[mpOf[k]].blocks++
	}
	built := make([]*memory.PartitionBuilder, len(blocks))
	left := make([]int, m.n)
	for i := range parts {
		left[i] = parts[i].blocks
	}
	var mu sync.Mutex // guards parts and left
	_ = r.ForEachBlockUnchecked(ctx, runtime.GOMAXPROCS(0), func(k int, data []byte, err error) {
		var b *memory.PartitionBuilder
		if err == nil {
			err = snapshot.DecodeBlock(data, blocks[k], func(tp rlmm.TopicIDPartition, z memory.BuildSizes) (snapshot.Sink, error) {
				b = memory.NewPartitionBuilder(tp, z)
				return b, nil
			})
		}
		if err == nil {
			err = b.Finish() // the costly part, here on this core rather than in the pump
		}
		mp := mpOf[k]
		if err != nil {
			m.logger.Warn("topicbased: a snapshot block cannot be used; its metadata partition will be replayed from offset 0",
				"partition", blocks[k].TopicIDPartition, "metadata_partition", mp,
				"file_offset", blocks[k].Offset, "bytes", blocks[k].Length, "error", err)
		}
		mu.Lock()
		rp := &parts[mp]
		if err != nil {
			rp.failures++
			if rp.err == nil {
				rp.err = fmt.Errorf("user partition %s: %w", blocks[k].TopicIDPartition, err)
			}
		} else {
			built[k] = b
		}
		left[mp]--
		done := left[mp] == 0
		if done && rp.failures == 0 {
			for j := range blocks {
				if mpOf[j] == mp {
					rp.builders = append(rp.builders, built[j])
					built[j] = nil
				}
			}
		}
		mu.Unlock()
		if done {
			// No read of the log start here: one round trip per metadata
			// partition would cost a restart more than the decoding. The
			// start read at the assignment holds, and records deleted since
			// show as a gap in what the log delivers (applyBatch) or in the
			// housekeeper's sample (sampleStartOffsets).
			_ = m.submit(&controlRequest{restored: rp, done: make(chan error, 1)})
		}
	})
}

// installRestored installs a metadata partition's snapshot state (on the
// pump) and starts consuming it if it is assigned: from committed + 1, or
// from 0 when its state could not be built or it was removed meanwhile.
func (m *Manager) installRestored(r *restored) error {
	m.applyMu.Lock()
	defer m.applyMu.Unlock()
	defer m.restoreProgress(r)
	p := &m.parts[r.mp]
	if !p.loading {
		return nil // removed while loading: its state is not wanted any more
	}
	p.loading = false
	if !p.assigned && m.hostedKnown {
		// The broker said what it hosts, and nothing of it is here.
		m.dropHeld(r.mp)
		return nil
	}
	err := r.err
	if err == nil {
		if err = m.inner.Install(r.builders); err != nil {
			r.failures = r.blocks
		}
	}
	if err != nil {
		m.logger.Error("topicbased: the snapshot's state of a metadata partition cannot be built; replaying it from offset 0",
			"metadata_partition", r.mp, "user_partitions", r.blocks, "failed", r.failures, "error", err)
		p.next = 0
	} else {
		p.held = true
		m.version.Add(1)
	}
	if !p.assigned {
		return nil
	}
	return m.consume(r.mp)
}

// restoreProgress counts an installed (or refused) metadata partition and
// reports the end of the restore once nothing is left. Pump only.
func (m *Manager) restoreProgress(r *restored) {
	m.stats.buildFailures.Add(uint64(r.failures))
	if m.stats.restorePending.Add(-int64(r.blocks)) != 0 {
		return
	}
	d := time.Since(m.stats.startedAt)
	failures := m.stats.buildFailures.Load()
	m.met.SnapshotBuilt(d, failures)
	m.logger.Info("topicbased: snapshot state built", "since_start", d, "failures", failures)
	m.stats.buildDuration.Store(int64(d))
	close(m.restoreDone)
}

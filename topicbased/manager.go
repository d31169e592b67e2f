package topicbased

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/eventlog"
	"github.com/rlmm-go/rlmm/memory"
	"github.com/rlmm-go/rlmm/wire"
)

// Status of a metadata partition as readers see it, in the low two bits of
// metaPartition.status; the bits above count every change (a generation), so
// a reader can tell that the status changed while it read the cache.
const (
	statusUnassigned uint64 = 0
	statusCatchingUp uint64 = 1
	statusReady      uint64 = 2
	statusMask       uint64 = 3
)

// metaPartition is the manager's state of one metadata partition.
type metaPartition struct {
	// status is statusX | generation<<2. Written by the pump (under
	// applyMu and mu), read lock-free by readers.
	status atomic.Uint64

	// Owned by the pump goroutine; read by others only under applyMu.
	assigned bool
	// held: the cache holds this partition's user partitions as of offset
	// next-1 (assigned, or loaded from the snapshot and not yet dropped).
	held bool
	// next is the offset of the next event to apply; next-1 is the last
	// applied (the committed offset of a snapshot).
	next int64
	// target is the high-water mark observed when the partition was added:
	// ready once next >= target.
	target    int64
	addedAt   time.Time
	highWater int64

	// Guarded by Manager.mu.
	applied  int64                // last applied offset as published to mutators
	changed  chan struct{}        // closed (and replaced) on every status change
	waiters  map[int64]*waiter    // mutations waiting for their offset
	tickets  map[*ticket]struct{} // mutations in flight on this partition
	verdicts map[int64]error      // rejections recorded while tickets exist
	syncs    []syncWaiter         // Sync calls waiting for an applied offset
}

// syncWaiter is a Sync call waiting until the applied offset reaches offset.
type syncWaiter struct {
	offset int64
	done   chan error // buffered 1
}

// waiter is a mutation waiting for the pump to apply its offset.
type waiter struct {
	done chan error // buffered 1; receives the verdict
}

// ticket marks a mutation between "about to publish" and "verdict known", so
// that the pump records rejections it may need (the pump can apply the
// event before Publish even returns its offset).
type ticket struct {
	startApplied int64
}

// RejectedEvent is an event of the log that the pump skipped.
type RejectedEvent struct {
	// Partition and Offset locate the record in the log.
	Partition int32
	Offset    int64
	// Reason is a short classification: "undecodable", "rejected",
	// "misrouted" or "unexpected".
	Reason string
	// Err is the error the decoder or the state machine returned.
	Err error
}

// Manager is the topic-based remote log metadata manager: rlmm.Manager over
// an eventlog.Log, with the memory manager as its cache and optional
// snapshots. Create it with Start; it is safe for concurrent use.
type Manager struct {
	cfg    Config
	log    eventlog.Log
	n      int32
	inner  *memory.Manager
	sub    eventlog.Subscription
	logger *slog.Logger
	met    Metrics

	parts []metaPartition

	// applyMu is held by the pump while it changes the cache and the
	// partitions' offsets, and by a snapshot while it exports them, so a
	// snapshot's committed offsets match its dump exactly.
	applyMu sync.Mutex

	// mu guards the fields marked so, the hosted and explicit sets, the
	// control queue and the rejected list.
	mu           sync.Mutex
	hosted       map[rlmm.TopicIDPartition]struct{}
	explicit     map[int32]struct{}
	controlQueue []*controlRequest
	pollCancel   context.CancelFunc
	rejected     []RejectedEvent
	rejectedNext int // ring position once rejected is full

	// assignMu orders assignment requests; planned is the assignment after
	// every submitted request.
	assignMu sync.Mutex
	planned  map[int32]struct{}

	// snapMu serializes snapshot writes; lastSnapVersion is the version the
	// last written snapshot reflects.
	snapMu          sync.Mutex
	lastSnapVersion uint64

	// version counts every change of the cache (applied events and drops).
	version atomic.Uint64

	stats struct {
		applied, rejected, undecodable atomic.Uint64
		loadDuration                   time.Duration
		loadedSegments                 int
		loadErr                        error
		startedAt                      time.Time
		// buildDuration is the time from Start until every partition the
		// snapshot installed was built (0 until then).
		buildDuration atomic.Int64
		buildFailures atomic.Uint64
	}

	// snapFile is the snapshot file whose blocks the cache builds its
	// partitions from on first use (memory.ImportLazy); nil once every
	// partition is built, or without a snapshot.
	snapFileMu sync.Mutex
	snapFile   *snapshotFile

	closed    atomic.Bool
	closedCh  chan struct{}
	closeOnce sync.Once
	cancel    context.CancelFunc
	wg        sync.WaitGroup
}

var _ rlmm.Manager = (*Manager)(nil)

// Start loads the snapshot of cfg.SnapshotDir (if any) into a new cache,
// opens a subscription that consumes nothing, and starts the pump and the
// snapshotter. A missing, unreadable, corrupt or inconsistent snapshot is
// logged with its reason and the manager starts empty (a full replay): it is
// never fatal. The manager consumes nothing until OnPartitionLeadershipChanges
// or ReconcileAssignment assigns metadata partitions.
func Start(ctx context.Context, cfg Config) (*Manager, error) {
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	m := &Manager{
		cfg:      c,
		log:      c.Log,
		n:        c.Log.Partitions(),
		logger:   c.Logger,
		met:      c.Metrics,
		hosted:   map[rlmm.TopicIDPartition]struct{}{},
		explicit: map[int32]struct{}{},
		planned:  map[int32]struct{}{},
		closedCh: make(chan struct{}),
	}
	m.stats.startedAt = time.Now()
	m.parts = make([]metaPartition, m.n)
	for i := range m.parts {
		p := &m.parts[i]
		p.applied = -1
		p.changed = make(chan struct{})
		p.waiters = map[int64]*waiter{}
		p.tickets = map[*ticket]struct{}{}
		p.verdicts = map[int64]error{}
	}
	m.inner = m.newCache()
	m.loadSnapshot()

	sub, err := m.log.Subscribe(ctx)
	if err != nil {
		return nil, fmt.Errorf("topicbased: subscribe to the event log: %w", err)
	}
	m.sub = sub
	runCtx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	m.wg.Add(2)
	go m.pump(runCtx)
	go m.housekeeper(runCtx)
	if m.inner.PendingCount() > 0 {
		m.wg.Add(1)
		go m.buildSnapshotState(runCtx)
	}
	return m, nil
}

// newCache returns an empty cache that reports the partitions whose
// snapshot state cannot be built.
func (m *Manager) newCache() *memory.Manager {
	return memory.New(append(slices.Clip(m.cfg.MemoryOptions), memory.WithBuildFailure(m.onBuildFailure))...)
}

// buildSnapshotState builds, in the background on every core, the
// partitions the snapshot installed (reads and events build the ones they
// need first on their own), then closes the snapshot file.
func (m *Manager) buildSnapshotState(ctx context.Context) {
	defer m.wg.Done()
	if err := m.inner.BuildPending(ctx, runtime.GOMAXPROCS(0)); err != nil {
		return // stopping: Close or ShutdownAndFlush closes the file
	}
	d := time.Since(m.stats.startedAt)
	m.closeSnapshotFile()
	failures := m.stats.buildFailures.Load()
	m.met.SnapshotBuilt(d, failures)
	m.logger.Info("topicbased: snapshot state built", "since_start", d, "failures", failures)
	// Last: Stats shows the duration once everything above is done.
	m.stats.buildDuration.Store(int64(d))
}

// closeSnapshotFile closes the snapshot file the cache builds from, if open.
func (m *Manager) closeSnapshotFile() {
	m.snapFileMu.Lock()
	defer m.snapFileMu.Unlock()
	if m.snapFile != nil {
		_ = m.snapFile.close()
		m.snapFile = nil
	}
}

// onBuildFailure is told (by the cache, possibly under its writer lock)
// that a partition's state from the snapshot cannot be built: its metadata
// partition is dropped and replayed from offset 0 by the pump, which has the
// events of every acknowledged change. Until then, reads of the partition
// answer rlmm.ErrNotReady and mutations wait.
func (m *Manager) onBuildFailure(tp rlmm.TopicIDPartition, err error) {
	m.stats.buildFailures.Add(1)
	if m.closed.Load() {
		return
	}
	mp := wire.MetadataPartition(tp, m.n)
	m.logger.Error("topicbased: the snapshot's state of a partition cannot be built; replaying its metadata partition from offset 0",
		"partition", tp, "metadata_partition", mp, "error", err)
	// submit takes mu: nothing holds mu while calling the cache, so taking
	// it under the cache's writer lock cannot deadlock.
	_ = m.submit(&controlRequest{reset: []int32{mp}, done: make(chan error, 1)})
}

// loadSnapshot fills the cache and the committed offsets from the snapshot
// file, or leaves both empty with the reason logged.
func (m *Manager) loadSnapshot() {
	if m.cfg.SnapshotDir == "" {
		return
	}
	// Temporary files of a snapshot write interrupted by a crash.
	if stale, _ := filepath.Glob(filepath.Join(m.cfg.SnapshotDir, SnapshotFileName+".*.tmp")); len(stale) > 0 {
		for _, f := range stale {
			_ = os.Remove(f)
		}
		m.logger.Info("topicbased: removed temporary files of an interrupted snapshot write", "files", stale)
	}
	start := time.Now()
	segments, err := m.tryLoadSnapshot()
	m.stats.loadDuration = time.Since(start)
	m.stats.loadErr = err
	m.stats.loadedSegments = segments
	m.met.SnapshotLoaded(m.stats.loadDuration, segments, err)
	if err != nil {
		m.logger.Warn("topicbased: snapshot not used; starting empty for a full replay",
			"dir", m.cfg.SnapshotDir, "error", err)
		m.closeSnapshotFile()
		m.inner = m.newCache()
		for i := range m.parts {
			m.parts[i].held, m.parts[i].next = false, 0
		}
		return
	}
	m.logger.Info("topicbased: snapshot loaded", "dir", m.cfg.SnapshotDir,
		"segments", segments, "duration", m.stats.loadDuration)
}

// tryLoadSnapshot opens the snapshot, checks it whole (head, every block's
// checksum, consistency with the committed offsets) and installs its
// partitions in the cache without decoding them: each is built from its
// block on first use, or by buildSnapshotState in the background. A restart
// is thus ready after reading the file once, before any partition is built.
func (m *Manager) tryLoadSnapshot() (int, error) {
	path := filepath.Join(m.cfg.SnapshotDir, SnapshotFileName)
	file, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read snapshot %s: %w", path, err)
	}
	keep := false
	defer func() {
		if !keep {
			_ = file.Close()
		}
	}()
	info, err := file.Stat()
	if err != nil {
		return 0, fmt.Errorf("read snapshot %s: %w", path, err)
	}
	if !info.Mode().IsRegular() {
		return 0, fmt.Errorf("read snapshot %s: not a regular file (%s)", path, info.Mode())
	}
	f, err := openSnapshot(file, info.Size(), true)
	if err != nil {
		return 0, fmt.Errorf("snapshot %s: %w", path, err)
	}
	f.closer = file
	if f.s.partitions != m.n {
		return 0, fmt.Errorf("%w: snapshot %s was taken with %d metadata partitions, the log has %d",
			rlmm.ErrCorrupt, path, f.s.partitions, m.n)
	}
	segments := 0
	parts := make([]memory.LazyPartition, len(f.blocks))
	for k := range f.blocks {
		blk := &f.blocks[k]
		if mp := wire.MetadataPartition(blk.tp, m.n); f.s.committed[mp] < 0 {
			return 0, fmt.Errorf("%w: snapshot %s holds partition %s of metadata partition %d, whose committed offset is %d",
				rlmm.ErrCorrupt, path, blk.tp, mp, f.s.committed[mp])
		}
		segments += blk.segments
		parts[k] = memory.LazyPartition{TopicIDPartition: blk.tp, Build: func() (*memory.PartitionBuilder, error) { return f.builder(k) }}
	}
	if err := f.verify(); err != nil {
		return 0, fmt.Errorf("snapshot %s: %w", path, err)
	}
	if err := m.inner.ImportLazy(parts); err != nil {
		return 0, fmt.Errorf("%w: snapshot %s: %w", rlmm.ErrCorrupt, path, err)
	}
	keep = true
	m.snapFile = f
	for i, c := range f.s.committed {
		if c >= 0 {
			m.parts[i].held = true
			m.parts[i].next = c + 1
		}
	}
	return segments, nil
}

// MetadataPartitionCount returns the number of partitions of the event log.
func (m *Manager) MetadataPartitionCount() int32 { return m.n }

// MetadataPartitionOf returns the metadata partition that holds tp's events
// (Kafka's partitioner).
func (m *Manager) MetadataPartitionOf(tp rlmm.TopicIDPartition) int32 {
	return wire.MetadataPartition(tp, m.n)
}

// IsReady reports whether tp's metadata partition is consumed and caught up
// with the high-water mark observed when it was assigned.
func (m *Manager) IsReady(tp rlmm.TopicIDPartition) bool {
	if m.closed.Load() {
		return false
	}
	return m.parts[wire.MetadataPartition(tp, m.n)].status.Load()&statusMask == statusReady
}

// gate decides whether a read of tp may be served from the cache: serve is
// false for an unassigned metadata partition (a miss); err is ErrNotReady
// (or ErrClosed). status must be passed to stillValid after the cache read.
func (m *Manager) gate(tp rlmm.TopicIDPartition) (p *metaPartition, status uint64, serve bool, err error) {
	if m.closed.Load() {
		return nil, 0, false, fmt.Errorf("topicbased: read of %s: %w", tp, rlmm.ErrClosed)
	}
	mp := wire.MetadataPartition(tp, m.n)
	p = &m.parts[mp]
	status = p.status.Load()
	switch status & statusMask {
	case statusReady:
		return p, status, true, nil
	case statusCatchingUp:
		return p, status, false, fmt.Errorf("%w: partition %s: metadata partition %d is catching up", rlmm.ErrNotReady, tp, mp)
	}
	return p, status, false, nil
}

// read runs a cache read under the gate: it is retried if the metadata
// partition's status changed meanwhile (it was removed, so the cache may
// have been dropped under the read), so nothing stale is ever returned.
func gatedRead[T any](m *Manager, tp rlmm.TopicIDPartition, miss T, read func() (T, error)) (T, error) {
	for {
		p, status, serve, err := m.gate(tp)
		if !serve {
			return miss, err
		}
		v, err := read()
		if p.status.Load() == status {
			return v, m.readError(tp, err)
		}
	}
}

// readError turns the cache's refusal of a partition whose snapshot state
// cannot be built (its metadata partition is about to be replayed) into
// rlmm.ErrNotReady, which a caller retries.
func (m *Manager) readError(tp rlmm.TopicIDPartition, err error) error {
	if err == nil || !errors.Is(err, rlmm.ErrCorrupt) {
		return err
	}
	return fmt.Errorf("%w: partition %s: its state from the snapshot cannot be built; metadata partition %d is replayed from the log: %w",
		rlmm.ErrNotReady, tp, wire.MetadataPartition(tp, m.n), err)
}

type found[T any] struct {
	v  T
	ok bool
}

// SegmentForOffset returns the COPY_SEGMENT_FINISHED segment of tp that
// holds offset in leaderEpoch. A miss for an unassigned metadata partition;
// rlmm.ErrNotReady while it catches up. (The fetch path: written out
// without gatedRead's closure, to allocate nothing beyond the copy.)
func (m *Manager) SegmentForOffset(tp rlmm.TopicIDPartition, leaderEpoch int32, offset int64) (rlmm.SegmentMetadata, bool, error) {
	for {
		p, status, serve, err := m.gate(tp)
		if !serve {
			return rlmm.SegmentMetadata{}, false, err
		}
		v, ok, err := m.inner.SegmentForOffset(tp, leaderEpoch, offset)
		if p.status.Load() == status {
			return v, ok, m.readError(tp, err)
		}
	}
}

// SegmentForOffsetInto is SegmentForOffset writing into *dst, reusing its
// LeaderEpochs and CustomMetadata capacity: no allocation in steady state.
// *dst is unspecified when the result is a miss or an error.
func (m *Manager) SegmentForOffsetInto(tp rlmm.TopicIDPartition, leaderEpoch int32, offset int64, dst *rlmm.SegmentMetadata) (bool, error) {
	for {
		p, status, serve, err := m.gate(tp)
		if !serve {
			return false, err
		}
		ok, err := m.inner.SegmentForOffsetInto(tp, leaderEpoch, offset, dst)
		if p.status.Load() == status {
			return ok, m.readError(tp, err)
		}
	}
}

// HighestOffsetForEpoch returns the highest offset of leaderEpoch copied to
// remote storage. Gated like SegmentForOffset.
func (m *Manager) HighestOffsetForEpoch(tp rlmm.TopicIDPartition, leaderEpoch int32) (int64, bool, error) {
	r, err := gatedRead(m, tp, found[int64]{}, func() (found[int64], error) {
		v, ok, err := m.inner.HighestOffsetForEpoch(tp, leaderEpoch)
		return found[int64]{v, ok}, err
	})
	return r.v, r.ok, err
}

// ListSegments returns every segment of tp not yet DELETE_SEGMENT_FINISHED.
// Gated like SegmentForOffset (empty when unassigned).
func (m *Manager) ListSegments(tp rlmm.TopicIDPartition) ([]rlmm.SegmentMetadata, error) {
	return gatedRead(m, tp, nil, func() ([]rlmm.SegmentMetadata, error) { return m.inner.ListSegments(tp) })
}

// ListSegmentsForEpoch returns the segments of tp that carry leaderEpoch.
// Gated like SegmentForOffset.
func (m *Manager) ListSegmentsForEpoch(tp rlmm.TopicIDPartition, leaderEpoch int32) ([]rlmm.SegmentMetadata, error) {
	return gatedRead(m, tp, nil, func() ([]rlmm.SegmentMetadata, error) {
		return m.inner.ListSegmentsForEpoch(tp, leaderEpoch)
	})
}

// RemoteLogSize sums the sizes of ListSegmentsForEpoch. Gated like
// SegmentForOffset (0 when unassigned).
func (m *Manager) RemoteLogSize(tp rlmm.TopicIDPartition, leaderEpoch int32) (int64, error) {
	return gatedRead(m, tp, 0, func() (int64, error) { return m.inner.RemoteLogSize(tp, leaderEpoch) })
}

// NextSegmentWithTxnIndex returns the first finished segment at or after
// offset in leaderEpoch that has a transaction index. Gated like
// SegmentForOffset.
func (m *Manager) NextSegmentWithTxnIndex(tp rlmm.TopicIDPartition, leaderEpoch int32, offset int64) (rlmm.SegmentMetadata, bool, error) {
	r, err := gatedRead(m, tp, found[rlmm.SegmentMetadata]{}, func() (found[rlmm.SegmentMetadata], error) {
		v, ok, err := m.inner.NextSegmentWithTxnIndex(tp, leaderEpoch, offset)
		return found[rlmm.SegmentMetadata]{v, ok}, err
	})
	return r.v, r.ok, err
}

// View returns the cache's per-partition view of tp for the CLI, gated like
// SegmentForOffset.
func (m *Manager) View(tp rlmm.TopicIDPartition) (memory.PartitionView, bool, error) {
	r, err := gatedRead(m, tp, found[memory.PartitionView]{}, func() (found[memory.PartitionView], error) {
		v, ok := m.inner.View(tp)
		return found[memory.PartitionView]{v, ok}, nil
	})
	return r.v, r.ok, err
}

// UserPartitions returns the user partitions the cache holds whose metadata
// partition is assigned and ready, in no particular order.
func (m *Manager) UserPartitions() []rlmm.TopicIDPartition {
	all := m.inner.Partitions()
	out := all[:0]
	for _, tp := range all {
		if m.IsReady(tp) {
			out = append(out, tp)
		}
	}
	return out
}

// Rejected returns the most recent events the pump skipped (at most
// Config.RejectedLimit), oldest first.
func (m *Manager) Rejected() []RejectedEvent {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]RejectedEvent, 0, len(m.rejected))
	out = append(out, m.rejected[m.rejectedNext:]...)
	return append(out, m.rejected[:m.rejectedNext]...)
}

// PartitionStats is one metadata partition's state in Stats.
type PartitionStats struct {
	Partition int32
	// Assigned: consumed now. Ready: caught up with Target.
	Assigned, Ready bool
	// Applied is the last applied offset (-1 for none); Target the
	// high-water mark observed at assignment; HighWaterMark the highest one
	// known since.
	Applied, Target, HighWaterMark int64
}

// Stats is a point-in-time summary of the manager for operators and tests.
type Stats struct {
	// Events handled by the pump since Start: applied by the state
	// machine, rejected by it (or misrouted/unexpected), undecodable.
	Applied, Rejected, Undecodable uint64
	// SnapshotLoadDuration is how long Start spent loading the snapshot;
	// SnapshotSegments how many segments it loaded; SnapshotError why it
	// was not used (nil if it was, or there was none).
	SnapshotLoadDuration time.Duration
	SnapshotSegments     int
	SnapshotError        error
	// SnapshotPending counts the user partitions installed from the
	// snapshot whose state is not built yet (the load installs them and a
	// background build follows; a read builds what it needs first).
	// SnapshotBuildDuration is the time from Start until none was left (0
	// until then); SnapshotBuildFailures counts partitions whose state
	// could not be built, each making its metadata partition replay from 0.
	SnapshotPending       int
	SnapshotBuildDuration time.Duration
	SnapshotBuildFailures uint64
	// Partitions lists the assigned metadata partitions.
	Partitions []PartitionStats
}

// Consumed returns Applied + Rejected + Undecodable: every event the pump
// handled since Start (after a restart, the replayed tail).
func (s Stats) Consumed() uint64 { return s.Applied + s.Rejected + s.Undecodable }

// Stats returns the manager's counters and per-partition progress.
func (m *Manager) Stats() Stats {
	s := Stats{
		Applied:              m.stats.applied.Load(),
		Rejected:             m.stats.rejected.Load(),
		Undecodable:          m.stats.undecodable.Load(),
		SnapshotLoadDuration: m.stats.loadDuration,
		SnapshotSegments:     m.stats.loadedSegments,
		SnapshotError:        m.stats.loadErr,

		SnapshotPending:       m.inner.PendingCount(),
		SnapshotBuildDuration: time.Duration(m.stats.buildDuration.Load()),
		SnapshotBuildFailures: m.stats.buildFailures.Load(),
	}
	m.applyMu.Lock()
	defer m.applyMu.Unlock()
	for i := range m.parts {
		p := &m.parts[i]
		if !p.assigned {
			continue
		}
		s.Partitions = append(s.Partitions, PartitionStats{
			Partition: int32(i), Assigned: true, Ready: p.status.Load()&statusMask == statusReady,
			Applied: p.next - 1, Target: p.target, HighWaterMark: p.highWater,
		})
	}
	return s
}

// Close stops the pump and the snapshotter and closes the subscription,
// without writing a snapshot (see ShutdownAndFlush). Blocked mutations return
// rlmm.ErrClosed, and so do later calls. The event log is not closed. Close
// is idempotent.
func (m *Manager) Close() error {
	var err error
	m.closeOnce.Do(func() {
		err = m.stop()
		m.closeSnapshotFile()
		if errors.Is(err, rlmm.ErrClosed) {
			err = nil
		}
	})
	return err
}

// stop marks the manager closed, stops its goroutines and closes the
// subscription, whose Close error it returns. Called once, by Close or
// ShutdownAndFlush.
func (m *Manager) stop() error {
	m.closed.Store(true)
	close(m.closedCh)
	m.cancel()
	err := m.sub.Close()
	m.wg.Wait()
	return err
}

// ShutdownAndFlush stops the pump, writes a final snapshot of everything
// applied (if SnapshotDir is set) and closes the manager. The snapshot error,
// if any, is returned; the manager is closed either way.
func (m *Manager) ShutdownAndFlush(ctx context.Context) error {
	if m.closed.Load() {
		return fmt.Errorf("topicbased: shutdown: %w", rlmm.ErrClosed)
	}
	// Stop the goroutines first so the snapshot is the final state.
	m.closeOnce.Do(func() { _ = m.stop() })
	// The final snapshot builds what is not built yet from the old file.
	defer m.closeSnapshotFile()
	if m.cfg.SnapshotDir == "" {
		return nil
	}
	return m.writeSnapshot(ctx)
}

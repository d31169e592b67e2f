package topicbased

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/eventlog"
	"github.com/rlmm-go/rlmm/memory"
	"github.com/rlmm-go/rlmm/wire"
)

// Lock order. A goroutine that holds several of these locks took them in
// this order, and never takes an earlier one while holding a later one:
//
//	assignMu → snapMu → applyMu → mu → (the cache's own locks, inside memory)
//
// assignMu orders assignment requests (reconcile, forgetFailedAdds); snapMu
// serializes snapshot writes; applyMu is held by the pump while it changes
// the cache and the pump-owned fields, and by those who read the latter
// (Stats, a snapshot's export, the housekeeper listing the assigned
// partitions); mu guards the small shared state between the pump and the
// callers (waiters, tickets, verdicts, syncs, the control queue, the hosted
// and explicit sets, the rejected list). Nothing calls the log (Publish,
// Poll, HighWaterMarks) while holding applyMu or mu, except the pump's
// Subscription.Add/Remove under applyMu, which do not block on the log's
// writers. Readers take none of these locks: they load a status word and
// read the cache.

// Status of a metadata partition as readers see it, in the low two bits of
// metaPartition.status; the bits above count every change (a generation), so
// a reader can tell that the status changed while it read the cache.
const (
	statusUnassigned uint64 = 0
	statusCatchingUp uint64 = 1
	statusReady      uint64 = 2
	statusMask       uint64 = 3
)

// metaPartition is the manager's state of one metadata partition. Every
// field has one writer, named with it. "Pump" fields are written only by the
// pump goroutine under applyMu (Start sets them before the pump runs);
// others read them only under applyMu.
type metaPartition struct {
	// status is statusX | generation<<2. Written by the pump under applyMu
	// and mu; read lock-free by readers and waiters.
	status atomic.Uint64

	// assigned: consumed by this manager (or waiting for its snapshot state
	// to be installed, see loading). Pump.
	assigned bool
	// held: the cache holds this partition's user partitions as of offset
	// next-1 (assigned, or restored from the snapshot and not yet dropped).
	// Pump.
	held bool
	// loading: the snapshot holds state of this partition that the restorer
	// has not handed over yet; it is not consumed until then (next is
	// already the snapshot's committed + 1). Pump.
	loading bool
	// next is the offset of the next event to apply; next-1 is the last
	// applied (the committed offset of a snapshot). Pump.
	next int64
	// target is the high-water mark observed when the partition was added:
	// ready once next >= target. Pump.
	target int64
	// start is the highest log start offset observed since it was added
	// (at the add, before a restored state is consumed, by the
	// housekeeper while it catches up, and from a gap in what the log
	// delivered): next is never below it once consumed. Pump.
	start int64
	// addedAt is when it was added, for the catch-up time. Pump.
	addedAt time.Time
	// want, kept, pass and queued: the hosted user partitions this
	// metadata partition covers, and which of them are built, being
	// rebuilt, or waiting for a pass (hosting.go). For a partition held
	// from the snapshot and not consumed yet, kept is what the snapshot
	// holds. Pump.
	want   map[wire.PartitionKey]rlmm.TopicIDPartition
	kept   map[wire.PartitionKey]rlmm.TopicIDPartition
	pass   *rebuildPass
	queued map[wire.PartitionKey]rlmm.TopicIDPartition
	// viewDirty: want, kept, loading or assigned changed since this
	// partition's part of the readers' view was published (markView).
	// Pump.
	viewDirty bool
	// highWater is the highest high-water mark known: the target, what the
	// pump applied, and the housekeeper's samples, which reach it through
	// the pump's control queue. Pump.
	highWater int64

	// Written by the pump and by the callers, under Manager.mu.
	applied  int64                // last applied offset as published to mutators (pump)
	changed  chan struct{}        // closed (and replaced) on every status change (pump)
	waiters  map[int64]*waiter    // mutations waiting for their offset (callers add, pump answers)
	tickets  map[*ticket]struct{} // mutations in flight on this partition (callers)
	verdicts map[int64]error      // rejections recorded while tickets exist (pump adds, callers prune)
	syncs    []syncWaiter         // Sync calls waiting for an applied offset (callers add, pump answers)
	// stamps are the times of the latest applied batches, kept only when
	// Config.Metrics is a SplitMetrics (pump writes, callers read).
	stamps    [splitStamps]batchStamp
	stampNext int
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

// RejectedEvent is an event of the log that the pump skipped, or a range
// of events deleted from the log before the pump applied them
// (ReasonHistoryLost).
type RejectedEvent struct {
	// Partition and Offset locate the record in the log (for
	// ReasonHistoryLost: the first offset of the lost range).
	Partition int32
	Offset    int64
	// Reason classifies why it was skipped.
	Reason Reason
	// Err is the error the decoder or the state machine returned.
	Err error
}

// Manager is the topic-based remote log metadata manager: rlmm.Manager over
// an eventlog.Log, with the memory manager as its cache and optional
// snapshots. Create it with Start; it is safe for concurrent use.
//
// Each field has one writer, named with it ("Start": set before any
// goroutine runs, read-only after).
type Manager struct {
	cfg    Config                // Start
	log    eventlog.Log          // Start
	n      int32                 // Start
	logger *slog.Logger          // Start
	met    Metrics               // Start
	splits SplitMetrics          // Start: met, when it reports splits; nil otherwise
	sub    eventlog.Subscription // Start; Add, Remove and Poll by the pump only, Close by stop
	// inner is the cache (Start). The pump is its only writer (events,
	// drops, Install of the restored snapshot); readers read it without any
	// lock of this package; a snapshot exports it under applyMu.
	inner *memory.Manager

	parts []metaPartition // Start (the slice); its fields: see metaPartition

	// ahead is the pump's reader (the pump); held are batches it read that
	// the pump applies, oldest first, before it waits for another (quiet
	// appends them, the pump takes them).
	ahead *readAhead
	held  []*fetchedBatch

	// applyMu: see the lock order above.
	applyMu sync.Mutex

	// mu guards the fields marked so in metaPartition and these.
	mu           sync.Mutex
	hosted       map[rlmm.TopicIDPartition]struct{} // callers (OnPartitionLeadershipChanges, OnStopPartitions)
	controlQueue []*controlRequest                  // submit appends, the pump takes
	pollCancel   context.CancelFunc                 // the pump (submit calls it)
	rejected     []RejectedEvent                    // the pump
	rejectedNext int                                // the pump: ring position once rejected is full
	readyChanged chan struct{}                      // the pump closes and replaces it (ReadinessChanged)

	// keep is the readers' view of the hosted user partitions (the pump
	// publishes a new one after every change; readers load it).
	keep atomic.Pointer[keepView]
	// viewDirty: some metadata partition's part of the view is out of
	// date (metaPartition.viewDirty says which);
	// dropQueue: user partitions to drop from the cache once it is;
	// passDue: metadata partitions whose next pass is due. The pump,
	// under applyMu.
	viewDirty bool
	dropQueue []rlmm.TopicIDPartition
	passDue   []int32
	// hostedKnown: the broker has named what it hosts at least once (the
	// snapshot's state of what it does not host is dropped from then on).
	// The pump, under applyMu.
	hostedKnown bool

	// assignMu orders assignment requests; planned is the set of metadata
	// partitions and plannedHosted the hosted user partitions after every
	// submitted request. Callers, under assignMu.
	assignMu      sync.Mutex
	planned       map[int32]struct{}
	plannedHosted map[rlmm.TopicIDPartition]struct{}

	// snapMu serializes snapshot writes; lastSnapVersion is the version the
	// last written snapshot reflects; snapFailures counts the writes failed
	// since the last one written (a full or read-only disk), so the one
	// that succeeds again says so. Snapshot writers, under snapMu.
	snapMu          sync.Mutex
	lastSnapVersion uint64
	snapFailures    int

	// version counts every change of the cache (applied events, drops,
	// installs). The pump.
	version atomic.Uint64

	// restoreDone is closed by the pump once the snapshot's state is
	// installed (by Start when there is none to decode).
	restoreDone chan struct{}

	stats struct {
		// The pump.
		applied, rejected, undecodable atomic.Uint64
		// skipped counts events of user partitions not hosted here;
		// passes the rebuild passes started and rebuilt the user
		// partitions they rebuilt. The pump.
		skipped, passes, rebuilt atomic.Uint64
		// tombstones counts the records without a value (also in
		// rejected). The pump.
		tombstones atomic.Uint64
		// historyLost counts the events known deleted before they were
		// applied; snapshotDropped the metadata partitions whose snapshot
		// state was dropped because it claimed more than the log holds.
		historyLost, snapshotDropped atomic.Uint64
		// Start.
		loadDuration   time.Duration
		loadedSegments int
		loadErr        error
		startedAt      time.Time
		// restorePending counts the snapshot's user partitions not yet
		// installed or refused (Start sets it, the pump counts down);
		// buildFailures those that could not be built; buildDuration the
		// time from Start until none was pending (0 until then). The pump.
		restorePending atomic.Int64
		buildFailures  atomic.Uint64
		buildDuration  atomic.Int64
	}

	// inFlight counts the calls blocked in a wait, for Stats and for tests
	// that must know a call reached its wait: waitingReady the mutations
	// and Syncs waiting for readiness, publishing those in Log.Publish.
	// The callers.
	inFlight struct {
		waitingReady, publishing atomic.Int64
	}

	// pollErr is the error of the pump's last Poll when it failed, nil once
	// one succeeds (the pump writes it, timeoutError reads it): a log that
	// refuses to be read (no READ permission, a deleted topic) is why
	// nothing catches up, so a timeout names it.
	pollErr atomic.Pointer[error]

	// Close and ShutdownAndFlush (cancel: Start).
	closed    atomic.Bool
	closedCh  chan struct{}
	closeOnce sync.Once
	cancel    context.CancelFunc
	wg        sync.WaitGroup
}

var _ rlmm.Manager = (*Manager)(nil)

// Start checks the snapshot of cfg.SnapshotDir (if any), opens a
// subscription that consumes nothing, and starts the pump, the housekeeper
// and, for a usable snapshot, the restorer, which decodes the snapshot's
// blocks into the cache in the background: a metadata partition the
// snapshot holds answers rlmm.ErrNotReady until its state is installed. A
// missing, unreadable, corrupt or inconsistent snapshot is logged with its
// reason and the manager starts empty (a full replay): it is never fatal.
// The manager consumes nothing until OnPartitionLeadershipChanges or
// ReconcileAssignment assigns metadata partitions.
func Start(ctx context.Context, cfg Config) (*Manager, error) {
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	m := &Manager{
		cfg:           c,
		log:           c.Log,
		n:             c.Log.Partitions(),
		logger:        c.Logger,
		met:           c.Metrics,
		hosted:        map[rlmm.TopicIDPartition]struct{}{},
		planned:       map[int32]struct{}{},
		plannedHosted: map[rlmm.TopicIDPartition]struct{}{},
		readyChanged:  make(chan struct{}),
		closedCh:      make(chan struct{}),
		restoreDone:   make(chan struct{}),
	}
	m.splits, _ = c.Metrics.(SplitMetrics)
	m.stats.startedAt = time.Now()
	m.parts = make([]metaPartition, m.n)
	for i := range m.parts {
		p := &m.parts[i]
		p.applied = -1
		p.changed = make(chan struct{})
		p.waiters = map[int64]*waiter{}
		p.tickets = map[*ticket]struct{}{}
		p.verdicts = map[int64]error{}
		p.kept = map[wire.PartitionKey]rlmm.TopicIDPartition{}
	}
	m.keep.Store(&keepView{byMP: make([]map[wire.PartitionKey]keepEntry, m.n)})
	m.inner = memory.New(m.cfg.MemoryOptions...)
	file, snap := m.loadSnapshot()

	sub, err := m.log.Subscribe(ctx)
	if err != nil {
		if file != nil {
			_ = file.Close()
		}
		return nil, fmt.Errorf("topicbased: subscribe to the event log: %w", err)
	}
	m.sub = sub
	runCtx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	m.wg.Add(2)
	go m.pump(runCtx)
	go m.housekeeper(runCtx)
	if file != nil {
		m.wg.Add(1)
		go m.restore(runCtx, file, snap)
	} else {
		close(m.restoreDone)
	}
	return m, nil
}

// MetadataPartitionCount returns the number of partitions of the event log.
func (m *Manager) MetadataPartitionCount() int32 { return m.n }

// MetadataPartitionOf returns the metadata partition that holds tp's events
// (Kafka's partitioner).
func (m *Manager) MetadataPartitionOf(tp rlmm.TopicIDPartition) int32 {
	return wire.MetadataPartition(tp, m.n)
}

// IsReady reports whether tp is hosted here, its history built, and its
// metadata partition consumed and caught up with the high-water mark
// observed when it was assigned. It reads memory only.
func (m *Manager) IsReady(tp rlmm.TopicIDPartition) bool {
	if m.closed.Load() {
		return false
	}
	return m.readyIn(m.keep.Load(), tp)
}

// readGate is what gate saw, for stillValid after the cache read.
type readGate struct {
	p      *metaPartition
	status uint64
	view   *keepView
}

// stillValid reports whether nothing the gate checked changed during the
// cache read (a partition dropped meanwhile may have been read half-dropped).
func (g readGate) stillValid(m *Manager) bool {
	return g.p.status.Load() == g.status && m.keep.Load() == g.view
}

// gate decides whether a read of tp may be served from the cache: serve is
// true only for a hosted user partition whose history is built and whose
// metadata partition is ready; otherwise err wraps rlmm.ErrNotAssigned (not
// hosted here), rlmm.ErrNotReady (being built or catching up) or
// rlmm.ErrClosed. g must be checked with stillValid after the cache read.
func (m *Manager) gate(tp rlmm.TopicIDPartition) (g readGate, serve bool, err error) {
	if m.closed.Load() {
		return g, false, fmt.Errorf("topicbased: read of %s: %w", tp, rlmm.ErrClosed)
	}
	mp := wire.MetadataPartition(tp, m.n)
	g.p = &m.parts[mp]
	g.status = g.p.status.Load()
	g.view = m.keep.Load()
	e, hosted := g.view.entry(mp, wire.KeyOf(tp))
	switch {
	case !hosted || g.status&statusMask == statusUnassigned:
		return g, false, fmt.Errorf("%w: read of %s: the partition is not hosted by this manager (no leadership or follower change named it)", rlmm.ErrNotAssigned, tp)
	case e.state != keepReady:
		return g, false, fmt.Errorf("%w: partition %s: its history is being rebuilt from metadata partition %d", rlmm.ErrNotReady, tp, mp)
	case g.status&statusMask == statusCatchingUp:
		return g, false, fmt.Errorf("%w: partition %s: metadata partition %d is catching up", rlmm.ErrNotReady, tp, mp)
	}
	return g, true, nil
}

// read runs a cache read under the gate: it is retried if what the gate
// checked changed meanwhile (the partition was dropped, so the cache may
// have been dropped under the read), so nothing stale is ever returned.
func gatedRead[T any](m *Manager, tp rlmm.TopicIDPartition, miss T, read func() (T, error)) (T, error) {
	for {
		g, serve, err := m.gate(tp)
		if !serve {
			return miss, err
		}
		v, err := read()
		if g.stillValid(m) {
			return v, err
		}
	}
}

type found[T any] struct {
	v  T
	ok bool
}

// SegmentForOffset returns the COPY_SEGMENT_FINISHED segment of tp that
// holds offset in leaderEpoch. rlmm.ErrNotAssigned for a user partition not
// hosted here; rlmm.ErrNotReady while its history is built or its metadata
// partition catches up. (The fetch path: written out
// without gatedRead's closure, to allocate nothing beyond the copy.)
func (m *Manager) SegmentForOffset(tp rlmm.TopicIDPartition, leaderEpoch int32, offset int64) (rlmm.SegmentMetadata, bool, error) {
	for {
		g, serve, err := m.gate(tp)
		if !serve {
			return rlmm.SegmentMetadata{}, false, err
		}
		v, ok, err := m.inner.SegmentForOffset(tp, leaderEpoch, offset)
		if g.stillValid(m) {
			return v, ok, err
		}
	}
}

// SegmentForOffsetInto is SegmentForOffset writing into *dst, reusing its
// LeaderEpochs and CustomMetadata capacity: no allocation in steady state.
// *dst is unspecified when the result is a miss or an error.
func (m *Manager) SegmentForOffsetInto(tp rlmm.TopicIDPartition, leaderEpoch int32, offset int64, dst *rlmm.SegmentMetadata) (bool, error) {
	for {
		g, serve, err := m.gate(tp)
		if !serve {
			return false, err
		}
		ok, err := m.inner.SegmentForOffsetInto(tp, leaderEpoch, offset, dst)
		if g.stillValid(m) {
			return ok, err
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
// Gated like SegmentForOffset.
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
// SegmentForOffset.
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

// EachSegment calls fn with the facts of every live segment of tp in the
// cache (memory.Manager.EachSegment); false when the cache holds no state
// for tp. Not gated: rlmm serve's size gauges read the partitions
// UserPartitions returns, which are ready.
func (m *Manager) EachSegment(tp rlmm.TopicIDPartition, fn func(*memory.SegmentFacts)) bool {
	return m.inner.EachSegment(tp, fn)
}

// UserPartitions returns the hosted user partitions that are ready, in no
// particular order.
func (m *Manager) UserPartitions() []rlmm.TopicIDPartition {
	v := m.keep.Load()
	var out []rlmm.TopicIDPartition
	for mp, part := range v.byMP {
		for _, e := range part {
			if m.readyEntry(int32(mp), e) {
				out = append(out, e.tp)
			}
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
	// known since; LogStart the highest log start offset observed since
	// (0 until records are deleted).
	Applied, Target, HighWaterMark, LogStart int64
	// Kept counts its hosted user partitions whose history is built;
	// Building those a rebuild pass is reading or will read (hosted after
	// the metadata partition was consumed).
	Kept, Building int
}

// Stats is a point-in-time summary of the manager for operators and tests.
type Stats struct {
	// Events handled by the pump since Start: applied by the state
	// machine, rejected by it (or misrouted/unexpected), undecodable.
	Applied, Rejected, Undecodable uint64
	// SnapshotLoadDuration is how long Start spent checking the snapshot;
	// SnapshotSegments how many segments it holds; SnapshotError why it
	// was not used (nil if it was, or there was none).
	SnapshotLoadDuration time.Duration
	SnapshotSegments     int
	SnapshotError        error
	// SnapshotPending counts the snapshot's user partitions not decoded
	// into the cache yet (the restorer does it in the background; their
	// metadata partitions answer rlmm.ErrNotReady meanwhile).
	// SnapshotBuildDuration is the time from Start until none was left (0
	// until then); SnapshotBuildFailures counts user partitions whose state
	// could not be built, each making its metadata partition replay from 0.
	SnapshotPending       int
	SnapshotBuildDuration time.Duration
	SnapshotBuildFailures uint64
	// HistoryLost counts the events found deleted from the log (retention,
	// DeleteRecords) before this manager applied them; each gap is also
	// in Rejected (ReasonHistoryLost). SnapshotDropped counts the
	// metadata partitions whose snapshot state was dropped because the
	// snapshot was written for another log (a recreated topic: another
	// log id) or claimed more events than the log holds.
	HistoryLost, SnapshotDropped uint64
	// Skipped counts the events of user partitions this manager does not
	// host (read with their metadata partition, not decoded, not kept).
	// Passes counts the rebuild passes started (a metadata partition read
	// again from its start for user partitions hosted after it was
	// consumed) and Rebuilt the user partitions they rebuilt.
	Skipped, Passes, Rebuilt uint64
	// Tombstones counts the records with a null value skipped (not
	// counted in Rejected): a compacted metadata topic (KIP-1266) holds
	// them, and they have nothing to apply.
	Tombstones uint64
	// Hosted is the number of user partitions hosted here; CachedPartitions
	// the user partitions whose state the cache holds (hosted ones with
	// state, and those of a snapshot not consumed yet) and CachedSegments
	// their live segments.
	Hosted, CachedPartitions int
	CachedSegments           int64
	// WaitingReady counts the calls waiting now for their partition to be
	// ready (mutations, Syncs); Publishing the mutations now in Log.Publish.
	WaitingReady, Publishing int64
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

		SnapshotPending:       int(m.stats.restorePending.Load()),
		SnapshotBuildDuration: time.Duration(m.stats.buildDuration.Load()),
		SnapshotBuildFailures: m.stats.buildFailures.Load(),
		HistoryLost:           m.stats.historyLost.Load(),
		SnapshotDropped:       m.stats.snapshotDropped.Load(),
		Skipped:               m.stats.skipped.Load(),
		Passes:                m.stats.passes.Load(),
		Rebuilt:               m.stats.rebuilt.Load(),
		Tombstones:            m.stats.tombstones.Load(),
		Hosted:                m.keep.Load().hosted,
		WaitingReady:          m.inFlight.waitingReady.Load(),
		Publishing:            m.inFlight.publishing.Load(),
	}
	s.CachedPartitions, s.CachedSegments = m.inner.Holdings()
	m.applyMu.Lock()
	defer m.applyMu.Unlock()
	for i := range m.parts {
		p := &m.parts[i]
		if !p.assigned {
			continue
		}
		s.Partitions = append(s.Partitions, PartitionStats{
			Partition: int32(i), Assigned: true, Ready: p.status.Load()&statusMask == statusReady,
			Applied: p.next - 1, Target: p.target, HighWaterMark: p.highWater, LogStart: p.start,
			Kept: len(p.kept), Building: len(p.queued) + p.passSize(),
		})
	}
	return s
}

// Close stops the pump, the housekeeper and the restorer and closes the subscription,
// without writing a snapshot (see ShutdownAndFlush). Blocked mutations return
// rlmm.ErrClosed, and so do later calls. The event log is not closed. Close
// is idempotent.
func (m *Manager) Close() error {
	var err error
	m.closeOnce.Do(func() {
		err = m.stop()
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

// ShutdownAndFlush waits until the snapshot's state is restored (if a
// restore is under way), stops the pump, writes a final snapshot of
// everything applied (if SnapshotDir is set) and closes the manager. The
// snapshot error, if any, is returned; the manager is closed either way.
// If ctx ends before the restore, no snapshot is written (the previous one,
// still valid, stays).
func (m *Manager) ShutdownAndFlush(ctx context.Context) error {
	if m.closed.Load() {
		return fmt.Errorf("topicbased: shutdown: %w", rlmm.ErrClosed)
	}
	restoreErr := m.waitRestored(ctx)
	// Stop the goroutines first so the snapshot is the final state.
	m.closeOnce.Do(func() { _ = m.stop() })
	if m.cfg.SnapshotDir == "" {
		return nil
	}
	if restoreErr != nil {
		return fmt.Errorf("topicbased: shutdown: final snapshot not written: %w", restoreErr)
	}
	return m.writeSnapshot(ctx)
}

// Restored returns a channel closed once the snapshot's state is installed
// in the cache (at Start when there is no snapshot to decode, and also
// when some of its blocks could not be built: their metadata partitions
// replay from 0). Until then the restore decodes on every core.
func (m *Manager) Restored() <-chan struct{} { return m.restoreDone }

// waitRestored waits until the snapshot's state is installed, bounded by
// ctx.
func (m *Manager) waitRestored(ctx context.Context) error {
	started := time.Now()
	select {
	case <-m.restoreDone:
		return nil
	case <-m.closedCh:
		return fmt.Errorf("waiting for the snapshot's state to be restored: %w", rlmm.ErrClosed)
	case <-ctx.Done():
		return m.timeoutError(ctx, started, "waiting for the snapshot's state to be restored")
	}
}

package topicbased

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/eventlog"
	"github.com/rlmm-go/rlmm/internal/apply"
	"github.com/rlmm-go/rlmm/wire"
)

// pollRetryDelay is the pause after a failed Poll before the next one, so a
// broken log does not spin the pump.
const pollRetryDelay = 200 * time.Millisecond

// maxKeptResults bounds the capacity of the results slice the pump reuses
// from one batch to the next (a steady batch is small; a catch-up one is
// as large as a fetch).
const maxKeptResults = 4096

// controlRequest is an assignment change the pump executes between two
// Polls, so no record fetched under the old assignment is applied under the
// new one.
type controlRequest struct {
	// hosted, when not nil, is the new set of hosted user partitions.
	hosted map[rlmm.TopicIDPartition]struct{}
	add    []int32
	target []int64 // high-water mark of each add, observed before the request
	start  []int64 // log start offset of each add, observed after target
	remove []int32
	// restored is a metadata partition's snapshot state to install (from
	// the restorer).
	restored *restored
	// sampled are high-water marks of the metadata partitions sampledOf
	// (from the housekeeper).
	sampledOf []int32
	sampled   []int64
	// starts are log start offsets of the catching-up metadata partitions
	// startsOf (from the housekeeper).
	startsOf []int32
	starts   []int64
	done     chan error // buffered 1
}

// submit queues a request for the pump and interrupts a blocked Poll.
func (m *Manager) submit(r *controlRequest) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed.Load() {
		return rlmm.ErrClosed
	}
	m.controlQueue = append(m.controlQueue, r)
	if m.pollCancel != nil {
		m.pollCancel()
	}
	return nil
}

// batchResult is one handled record, for waking the mutation waiting for it.
type batchResult struct {
	partition int32
	offset    int64
	verdict   error
}

// pump is the only writer of the cache and of the partitions' offsets. It
// alternates between executing assignment requests and applying the
// records of one Poll, in log order per partition; the Poll itself runs on
// the read-ahead (readahead.go), which reads and decodes the next batch
// while this one is applied.
func (m *Manager) pump(ctx context.Context) {
	defer m.wg.Done()
	defer m.failAllWaiters()
	m.ahead = newReadAhead(m.sub, m.hostedGuess)
	defer m.ahead.stop()
	var results []batchResult
	for {
		m.mu.Lock()
		queue := m.controlQueue
		m.controlQueue = nil
		m.mu.Unlock()
		if len(queue) > 0 {
			// What was read under the old assignment is applied under it.
			m.quiet(-1)
			for len(m.held) > 0 {
				b := m.takeHeld()
				results = m.applyFetched(b, results)
				if m.afterPoll(ctx, b) {
					// Not executed: failAllWaiters answers them.
					m.mu.Lock()
					m.controlQueue = append(queue, m.controlQueue...)
					m.mu.Unlock()
					return
				}
			}
			for _, r := range queue {
				r.done <- m.executeControl(r)
			}
		}
		if ctx.Err() != nil {
			return
		}
		var b *fetchedBatch
		if len(m.held) > 0 {
			b = m.takeHeld()
		} else {
			m.startPoll(ctx)
			b = m.waitPoll()
			if len(b.records) > 0 && b.err == nil {
				// Read the next batch while this one is applied, and one
				// more while catching up (interrupted at once if a
				// control request is queued).
				m.startPoll(ctx)
				if len(b.records) >= catchUpBatch {
					m.startPoll(ctx)
				}
			}
		}
		results = m.applyFetched(b, results)
		if m.afterPoll(ctx, b) {
			return
		}
	}
}

// takeHeld removes and returns the oldest held batch. Pump.
func (m *Manager) takeHeld() *fetchedBatch {
	b := m.held[0]
	m.held[0] = nil
	m.held = m.held[1:]
	return b
}

// applyFetched applies b's records, recycles b and returns the results
// slice for the next batch.
func (m *Manager) applyFetched(b *fetchedBatch, results []batchResult) []batchResult {
	if len(b.records) > 0 {
		results = m.applyBatch(b, results[:0])
		if cap(results) > maxKeptResults {
			// A catch-up batch can hold hundreds of thousands of
			// records: its results are not kept for the manager's life.
			results = nil
		}
	}
	return results
}

// afterPoll handles the error of the Poll that read b (after its records
// were applied) and recycles b; true when the pump must stop.
func (m *Manager) afterPoll(ctx context.Context, b *fetchedBatch) bool {
	err, interrupted := b.err, b.interrupted
	m.recycle(b)
	switch {
	case err == nil:
		m.pollErr.Store(nil)
	case ctx.Err() != nil || errors.Is(err, rlmm.ErrClosed):
		return true
	case interrupted:
		// Interrupted for a control request, or by quiet.
	default:
		m.pollErr.Store(&err)
		m.logger.Warn("topicbased: poll of the event log failed; retrying", "error", err)
		select {
		case <-ctx.Done():
			return true
		case <-time.After(pollRetryDelay):
		}
	}
	return false
}

// applyBatch applies b's records under applyMu, then publishes the new
// offsets, readiness and verdicts under mu. b.at is when Poll returned
// them (kept for the mutations' splits when m.splits is set).
func (m *Manager) applyBatch(b *fetchedBatch, results []batchResult) []batchResult {
	records := b.records
	perPartition := map[int32]*counts{}
	// One keep function and one event for the whole batch, not one of each
	// per record: keep asks the record's metadata partition, set below.
	var (
		keepIn     *metaPartition
		keepOffset int64
		ev         wire.Event
	)
	keep := func(k wire.PartitionKey) bool { return keepIn.keeps(k, keepOffset) }
	m.applyMu.Lock()
	for i := range records {
		rec := &records[i]
		if rec.Partition < 0 || rec.Partition >= m.n {
			m.logger.Error("topicbased: event log returned a record of an unknown partition", "partition", rec.Partition)
			continue
		}
		if len(b.drop) > 0 && slices.Contains(b.drop, rec.Partition) {
			continue // delivered again from an earlier offset (quiet)
		}
		p := &m.parts[rec.Partition]
		if !p.assigned || p.loading {
			// Not ours (any more): the subscription's exact Remove/Add
			// makes this rare.
			continue
		}
		if pass := p.pass; pass != nil {
			if rec.Offset < pass.read {
				continue
			}
			if rec.Offset < p.next {
				m.applyPassRecord(rec, p, perPartition)
				continue
			}
			// The log start moved past next: what the pass still had to
			// read is gone.
			m.historyLost(rec.Partition, pass.read, p.next, "a rebuild pass found its records deleted")
			m.finishPass(rec.Partition)
		}
		if rec.Offset < p.next {
			continue // already applied
		}
		if rec.Offset > p.next {
			// The subscription delivers from the log start when the
			// records at p.next were deleted (eventlog's contract).
			m.skipToStart(rec.Partition, rec.Offset, "the log delivered a later offset than the next one expected")
		}
		c := perPartition[rec.Partition]
		if c == nil {
			c = &counts{first: rec.Offset}
			perPartition[rec.Partition] = c
		}
		keepIn, keepOffset = p, rec.Offset
		var res apply.Result
		if i < len(b.prepared) {
			res = apply.ApplyPrepared(m.inner, m.n, rec, keep, &b.prepared[i])
		} else {
			res = apply.LogRecord(m.inner, m.n, rec, keep, &ev)
		}
		verdict := res.Err
		switch res.Reason {
		case 0:
			c.applied++
			m.stats.applied.Add(1)
		case ReasonNotKept:
			m.stats.skipped.Add(1)
			verdict = errNotHosted
		case ReasonUndecodable:
			c.undecodable++
			m.stats.undecodable.Add(1)
		case ReasonTombstone:
			// Nothing to apply, and not an anomaly: a compacted topic
			// (KIP-1266) holds two per deleted segment. Counted only.
			m.stats.tombstones.Add(1)
			verdict = nil
			m.logger.Debug("topicbased: tombstone skipped", "partition", rec.Partition, "offset", rec.Offset, "key", string(rec.Key))
		default:
			c.rejected++
			m.stats.rejected.Add(1)
		}
		if res.Reason != 0 && res.Reason != ReasonNotKept && res.Reason != ReasonTombstone {
			m.recordRejected(rec, res.Reason, res.Err, p.status.Load()&statusMask == statusReady)
		}
		p.next = rec.Offset + 1
		p.highWater = max(p.highWater, p.next)
		results = append(results, batchResult{rec.Partition, rec.Offset, verdict})
	}
	m.flushHosting()
	m.version.Add(uint64(len(results)))
	now := time.Now()
	m.mu.Lock()
	if m.splits != nil {
		// Before the wake-ups: a woken mutation reads its batch's times.
		for mp, c := range perPartition {
			if p := &m.parts[mp]; len(p.tickets) > 0 {
				p.stampBatch(c.first, p.next-1, b.at, now, len(records))
			}
		}
	}
	for _, r := range results {
		p := &m.parts[r.partition]
		if w := p.waiters[r.offset]; w != nil {
			w.done <- r.verdict
			delete(p.waiters, r.offset)
		}
		if r.verdict != nil && len(p.tickets) > 0 {
			p.verdicts[r.offset] = r.verdict
		}
	}
	for mp := range perPartition {
		m.publishProgress(mp, now)
	}
	m.mu.Unlock()
	m.applyMu.Unlock()
	for mp, c := range perPartition {
		m.met.EventsConsumed(mp, c.applied, c.rejected, c.undecodable)
		p := &m.parts[mp]
		m.met.PartitionProgress(mp, p.applied, p.highWater)
	}
	return results
}

// publishProgress publishes mp's applied offset to the mutations and Syncs
// waiting for it and makes it ready once it reached its target. Caller
// holds applyMu and mu.
func (m *Manager) publishProgress(mp int32, now time.Time) {
	p := &m.parts[mp]
	p.applied = p.next - 1
	// Waiters below the applied offset can only be left by a gap.
	for off, w := range p.waiters {
		if off <= p.applied {
			w.done <- nil
			delete(p.waiters, off)
		}
	}
	p.syncs = answerSyncs(p.syncs, p.applied, nil)
	if p.status.Load()&statusMask == statusCatchingUp && p.next >= p.target {
		m.setStatus(p, statusReady)
		catchUp := now.Sub(p.addedAt)
		m.logger.Info("topicbased: metadata partition ready", "partition", mp,
			"applied", p.applied, "catch_up", catchUp)
		m.met.PartitionReadiness(mp, true, true, catchUp)
	}
}

// counts are one metadata partition's events of a batch, for the metrics;
// first is the offset of the first of them.
type counts struct {
	applied, rejected, undecodable int
	first                          int64
}

// errNotHosted is the verdict of an event of a user partition that is no
// longer hosted when the pump reads it (a mutation waiting for it learns
// that its event is in the log but not applied here).
var errNotHosted = fmt.Errorf("%w: the user partition stopped being hosted by this manager before its event was applied; the event is in the log", rlmm.ErrNotAssigned)

// applyPassRecord applies a record that a rebuild pass of p reads (below
// p.next): only events of the user partitions being rebuilt are applied;
// nobody waits for these offsets. Pump, under applyMu.
func (m *Manager) applyPassRecord(rec *eventlog.Record, p *metaPartition, perPartition map[int32]*counts) {
	pass := p.pass
	if rec.Offset > pass.read {
		m.historyLost(rec.Partition, pass.read, rec.Offset, "a rebuild pass was delivered a later offset than the next one expected")
	}
	res := apply.LogRecord(m.inner, m.n, rec, func(k wire.PartitionKey) bool {
		_, ok := pass.building[k]
		return ok
	}, nil)
	switch res.Reason {
	case 0:
		c := perPartition[rec.Partition]
		if c == nil {
			c = &counts{first: rec.Offset}
			perPartition[rec.Partition] = c
		}
		c.applied++
		m.stats.applied.Add(1)
	case ReasonNotKept:
		m.stats.skipped.Add(1)
	case ReasonUndecodable, ReasonMisrouted, ReasonUnexpected, ReasonTombstone:
		// Seen and reported when it was first read.
	default:
		// Rejected for a partition being rebuilt: expected (an update
		// whose segment expired with retention), as during any catch-up.
		m.recordRejected(rec, res.Reason, res.Err, false)
	}
	pass.read = rec.Offset + 1
	if pass.read >= p.next {
		m.finishPass(rec.Partition)
	}
}

// recordRejected logs a skipped event and keeps it in the bounded list.
// During catch-up a rejection is expected (an update whose segment expired
// with retention), so it is logged at debug level only.
func (m *Manager) recordRejected(rec *eventlog.Record, reason Reason, err error, ready bool) {
	level := m.logger.Warn
	if !ready && reason == ReasonRejected {
		level = m.logger.Debug
	}
	level("topicbased: event skipped", "partition", rec.Partition, "offset", rec.Offset, "reason", reason.String(), "error", err)
	m.keepRejected(RejectedEvent{Partition: rec.Partition, Offset: rec.Offset, Reason: reason, Err: err})
}

// keepRejected adds ev to the bounded list Rejected returns. Caller does
// not hold mu.
func (m *Manager) keepRejected(ev RejectedEvent) {
	limit := m.cfg.RejectedLimit
	if limit <= 0 {
		return
	}
	m.mu.Lock()
	if len(m.rejected) < limit {
		m.rejected = append(m.rejected, ev)
	} else {
		m.rejected[m.rejectedNext] = ev
		m.rejectedNext = (m.rejectedNext + 1) % limit
	}
	m.mu.Unlock()
}

// setStatus changes p's status, bumping its generation, and wakes whoever
// waits for a change. Caller holds mu (and applyMu).
func (m *Manager) setStatus(p *metaPartition, st uint64) {
	old := p.status.Load()
	p.status.Store((old>>2+1)<<2 | st)
	close(p.changed)
	p.changed = make(chan struct{})
	m.readinessChangedLocked()
}

// executeControl performs one request on the pump goroutine.
func (m *Manager) executeControl(r *controlRequest) error {
	var errs []error
	if r.hosted != nil {
		m.applyMu.Lock()
		m.setWanted(r.hosted)
		m.hostedKnown = true
		m.dropUnhostedHeld()
		m.applyMu.Unlock()
	}
	for _, mp := range r.remove {
		if err := m.removePartition(mp); err != nil {
			errs = append(errs, err)
		}
	}
	for i, mp := range r.add {
		if err := m.addPartition(mp, r.target[i], r.start[i]); err != nil {
			errs = append(errs, err)
		}
	}
	if r.restored != nil {
		if err := m.installRestored(r.restored); err != nil {
			m.logger.Error("topicbased: consume a restored metadata partition", "partition", r.restored.mp, "error", err)
			errs = append(errs, err)
		}
	}
	if r.hosted != nil {
		m.applyMu.Lock()
		for i := range m.parts {
			if p := &m.parts[i]; p.assigned && !p.loading {
				if err := m.reconcileKept(int32(i)); err != nil {
					errs = append(errs, err)
				}
			}
		}
		m.applyMu.Unlock()
	}
	m.applyMu.Lock()
	m.flushHosting()
	m.applyMu.Unlock()
	if len(r.sampledOf) > 0 {
		m.applySamples(r.sampledOf, r.sampled)
	}
	if len(r.startsOf) > 0 {
		m.applyStarts(r.startsOf, r.starts)
	}
	return errors.Join(errs...)
}

// addPartition starts consuming mp at the held state's next offset (the
// snapshot's committed + 1) or at 0, but not below the log start offset
// start, ready once target is reached; while
// the snapshot's state of mp is still being restored, it is marked
// assigned and catching up, and consumed once installRestored installs it.
func (m *Manager) addPartition(mp int32, target, start int64) error {
	m.applyMu.Lock()
	defer m.applyMu.Unlock()
	p := &m.parts[mp]
	if p.assigned {
		return nil
	}
	p.assigned = true
	m.markView(mp)
	p.target = target
	p.start = start
	p.highWater = target
	p.addedAt = time.Now()
	if p.loading {
		m.mu.Lock()
		m.setStatus(p, statusCatchingUp)
		m.mu.Unlock()
		m.logger.Info("topicbased: metadata partition assigned; its snapshot state is being restored", "partition", mp, "target", target)
		m.met.PartitionReadiness(mp, true, false, 0)
		return nil
	}
	return m.consume(mp)
}

// consume subscribes to assigned mp from its held state's next offset, or
// from 0, but not below the log start offset (the gap is reported: the
// snapshot's state is used up to where it holds), and publishes its status:
// ready at once when that reaches the target (also a partition whose
// records were all deleted). Caller holds applyMu.
func (m *Manager) consume(mp int32) error {
	p := &m.parts[mp]
	m.markView(mp)
	if p.held && p.next > p.target {
		// The snapshot claims events the log does not have: the log was
		// recreated (a topic deleted and created again under the same
		// name, its offsets back at 0) or truncated. Its state cannot be
		// trusted.
		m.logger.Warn("topicbased: snapshot dropped for a metadata partition: it claims more events than the log holds (topic recreated or truncated?); replaying the metadata partition from its log start",
			"partition", mp, "snapshot_next", p.next, "high_water_mark", p.target,
			"reason", fmt.Sprintf("the snapshot's committed offset %d is at or past the log's high-water mark %d", p.next-1, p.target))
		target, start := p.target, p.start
		m.dropHeld(mp)
		p.target, p.start = target, start
		m.stats.snapshotDropped.Add(1)
	}
	if !p.held {
		p.next = 0
		clear(p.kept)
	}
	why := "a replay from offset 0 (no snapshot state) found the log start offset above it"
	if p.held {
		why = "the snapshot's committed offset is below the log start offset"
	}
	m.skipToStart(mp, p.start, why)
	if err := m.sub.Add(mp, p.next); err != nil {
		// Not consumed: waiters and readers learn it as for a removal.
		m.markUnassigned(mp, "could not be consumed (offset %d)")
		return fmt.Errorf("topicbased: consume metadata partition %d from offset %d: %w", mp, p.next, err)
	}
	p.held = true
	p.highWater = max(p.highWater, p.target, p.next)
	ready := p.next >= p.target
	m.mu.Lock()
	p.applied = p.next - 1
	if ready {
		m.setStatus(p, statusReady)
	} else {
		m.setStatus(p, statusCatchingUp)
	}
	m.mu.Unlock()
	m.logger.Info("topicbased: metadata partition consumed", "partition", mp, "from_offset", p.next,
		"target", p.target, "ready", ready)
	var catchUp time.Duration
	if ready {
		catchUp = time.Since(p.addedAt) // the restore of its snapshot state, if it waited for it
	}
	m.met.PartitionReadiness(mp, true, ready, catchUp)
	m.met.PartitionProgress(mp, p.next-1, p.highWater)
	// The user partitions the snapshot held and no longer hosted are
	// dropped, the hosted ones it did not hold are rebuilt by a pass.
	return m.reconcileKept(mp)
}

// applySamples merges the housekeeper's high-water marks into the assigned
// partitions' and reports their progress.
func (m *Manager) applySamples(mps []int32, hw []int64) {
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

// removePartition stops consuming mp, drops its user partitions from the
// cache and forgets its offsets, so a later add replays it from 0 (the
// seed's bug was to keep the applied offset: a re-added partition looked
// ready mid-replay).
func (m *Manager) removePartition(mp int32) error {
	m.applyMu.Lock()
	defer m.applyMu.Unlock()
	p := &m.parts[mp]
	if !p.assigned {
		return nil
	}
	var err error
	if p.loading {
		// Never consumed; the restored state will not be wanted.
		p.loading = false
	} else {
		err = m.sub.Remove(mp)
	}
	// Readers see "unassigned" before the state goes away.
	m.markUnassigned(mp, "was unassigned before offset %d was applied; the event is in the log and will be applied wherever the partition is consumed")
	m.dropHeld(mp)
	m.logger.Info("topicbased: metadata partition unassigned", "partition", mp)
	m.met.PartitionReadiness(mp, false, false, 0)
	if err != nil {
		return fmt.Errorf("topicbased: stop consuming metadata partition %d: %w", mp, err)
	}
	return nil
}

// markUnassigned makes mp unassigned for readers and answers the mutations
// and Syncs waiting on it with rlmm.ErrNotAssigned; waitFmt says, with the
// waited offset, why. Caller holds applyMu.
func (m *Manager) markUnassigned(mp int32, waitFmt string) {
	p := &m.parts[mp]
	p.assigned = false
	m.markView(mp)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.setStatus(p, statusUnassigned)
	for off, w := range p.waiters {
		w.done <- mayBeRecorded(fmt.Errorf("%w: metadata partition %d "+waitFmt, rlmm.ErrNotAssigned, mp, off))
		delete(p.waiters, off)
	}
	clear(p.verdicts)
	p.syncs = answerSyncs(p.syncs, 1<<63-1, fmt.Errorf("%w: metadata partition %d stopped being consumed during Sync", rlmm.ErrNotAssigned, mp))
	p.applied = -1
}

// dropHeld removes every user partition of mp from the cache and resets its
// offsets. Caller holds applyMu.
func (m *Manager) dropHeld(mp int32) {
	for _, tp := range m.inner.Partitions() {
		if wire.MetadataPartition(tp, m.n) == mp {
			m.inner.DropPartition(tp)
		}
	}
	p := &m.parts[mp]
	p.held = false
	p.next = 0
	p.target = 0
	p.start = 0
	clear(p.kept)
	p.pass = nil
	p.queued = nil
	m.markView(mp)
	m.version.Add(1)
}

// failAllWaiters answers every waiting mutation with ErrClosed when the pump
// stops.
func (m *Manager) failAllWaiters() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := range m.parts {
		p := &m.parts[i]
		for off, w := range p.waiters {
			w.done <- mayBeRecorded(fmt.Errorf("topicbased: manager closed before metadata partition %d offset %d was applied; the event is in the log: %w",
				i, off, rlmm.ErrClosed))
			delete(p.waiters, off)
		}
		p.syncs = answerSyncs(p.syncs, 1<<63-1, fmt.Errorf("topicbased: sync of metadata partition %d: %w", i, rlmm.ErrClosed))
	}
	// Requests queued after the last round are answered too.
	for _, r := range m.controlQueue {
		r.done <- rlmm.ErrClosed
	}
	m.controlQueue = nil
}

// answerSyncs answers the Sync waiters whose offset is at most applied with
// err and returns the others.
func answerSyncs(syncs []syncWaiter, applied int64, err error) []syncWaiter {
	kept := syncs[:0]
	for _, w := range syncs {
		if w.offset <= applied {
			w.done <- err
		} else {
			kept = append(kept, w)
		}
	}
	return kept
}

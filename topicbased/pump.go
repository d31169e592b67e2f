package topicbased

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/eventlog"
	"github.com/rlmm-go/rlmm/wire"
)

// pollRetryDelay is the pause after a failed Poll before the next one, so a
// broken log does not spin the pump.
const pollRetryDelay = 200 * time.Millisecond

// controlRequest is an assignment change the pump executes between two
// Polls, so no record fetched under the old assignment is applied under the
// new one.
type controlRequest struct {
	add    []int32
	target []int64 // high-water mark of each add, observed before the request
	remove []int32
	// reset lists metadata partitions to drop and replay from offset 0
	// (a user partition's snapshot state could not be built).
	reset []int32
	done  chan error // buffered 1
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
// alternates between executing assignment requests and applying the records
// of one Poll, in log order per partition.
func (m *Manager) pump(ctx context.Context) {
	defer m.wg.Done()
	defer m.failAllWaiters()
	var results []batchResult
	for {
		m.mu.Lock()
		queue := m.controlQueue
		m.controlQueue = nil
		m.mu.Unlock()
		for _, r := range queue {
			r.done <- m.executeControl(r)
		}
		if ctx.Err() != nil {
			return
		}
		pollCtx, cancel := context.WithCancel(ctx)
		m.mu.Lock()
		pending := len(m.controlQueue) > 0
		m.pollCancel = cancel
		m.mu.Unlock()
		if pending {
			cancel()
		}
		records, err := m.sub.Poll(pollCtx)
		m.mu.Lock()
		m.pollCancel = nil
		m.mu.Unlock()
		cancel()
		if len(records) > 0 {
			results = m.applyBatch(records, results[:0])
		}
		switch {
		case err == nil:
		case ctx.Err() != nil || errors.Is(err, rlmm.ErrClosed):
			return
		case pollCtx.Err() != nil:
			// Interrupted for a control request.
		default:
			m.logger.Warn("topicbased: poll of the event log failed; retrying", "error", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(pollRetryDelay):
			}
		}
	}
}

// applyBatch applies records under applyMu, then publishes the new offsets,
// readiness and verdicts under mu.
func (m *Manager) applyBatch(records []eventlog.Record, results []batchResult) []batchResult {
	type counts struct{ applied, rejected, undecodable int }
	perPartition := map[int32]*counts{}
	// unbuilt holds the metadata partitions where a user partition's
	// snapshot state could not be built: their records wait for the replay
	// from 0 that the cache's failure report queued.
	var unbuilt map[int32]bool
	m.applyMu.Lock()
	for i := range records {
		rec := &records[i]
		if rec.Partition < 0 || rec.Partition >= m.n {
			m.logger.Error("topicbased: event log returned a record of an unknown partition", "partition", rec.Partition)
			continue
		}
		p := &m.parts[rec.Partition]
		if unbuilt[rec.Partition] || !p.assigned || rec.Offset < p.next {
			// Not ours (any more) or already applied: the subscription's
			// exact Remove/Add makes this rare, the offset check makes it safe.
			continue
		}
		if rec.Offset > p.next {
			m.logger.Warn("topicbased: gap in metadata partition (records expired by retention?)",
				"partition", rec.Partition, "expected", p.next, "got", rec.Offset)
		}
		c := perPartition[rec.Partition]
		if c == nil {
			c = &counts{}
			perPartition[rec.Partition] = c
		}
		reason, verdict := m.applyRecord(rec)
		if reason == "unbuilt" {
			// Neither applied nor skipped: p.next stays, so the waiter of
			// this offset is answered by the replay.
			if unbuilt == nil {
				unbuilt = map[int32]bool{}
			}
			unbuilt[rec.Partition] = true
			continue
		}
		switch reason {
		case "":
			c.applied++
			m.stats.applied.Add(1)
		case "undecodable":
			c.undecodable++
			m.stats.undecodable.Add(1)
		default:
			c.rejected++
			m.stats.rejected.Add(1)
		}
		if reason != "" {
			m.recordRejected(rec, reason, verdict, p.status.Load()&statusMask == statusReady)
		}
		p.next = rec.Offset + 1
		p.highWater = max(p.highWater, p.next)
		results = append(results, batchResult{rec.Partition, rec.Offset, verdict})
	}
	m.version.Add(uint64(len(results)))
	now := time.Now()
	m.mu.Lock()
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
	m.mu.Unlock()
	m.applyMu.Unlock()
	for mp, c := range perPartition {
		m.met.EventsConsumed(mp, c.applied, c.rejected, c.undecodable)
		p := &m.parts[mp]
		m.met.PartitionProgress(mp, p.applied, p.highWater)
	}
	return results
}

// applyRecord decodes and applies one record; reason is "" when the state
// machine accepted it, else the classification of RejectedEvent.Reason.
func (m *Manager) applyRecord(rec *eventlog.Record) (reason string, verdict error) {
	ev, err := wire.DecodeEvent(rec.Value)
	if err != nil {
		return "undecodable", fmt.Errorf("metadata partition %d offset %d: %w", rec.Partition, rec.Offset, err)
	}
	tp, ok := ev.TopicIDPartition()
	if !ok {
		return "unexpected", fmt.Errorf("%w: metadata partition %d offset %d: record of api key %d does not belong in the metadata topic",
			rlmm.ErrCorrupt, rec.Partition, rec.Offset, ev.Key)
	}
	if mp := wire.MetadataPartition(tp, m.n); mp != rec.Partition {
		return "misrouted", fmt.Errorf("%w: metadata partition %d offset %d: event of %s belongs in metadata partition %d",
			rlmm.ErrInvalidArgument, rec.Partition, rec.Offset, tp, mp)
	}
	ctx := context.Background()
	switch ev.Key {
	case wire.KeySegment:
		err = m.inner.AddSegment(ctx, ev.Segment)
	case wire.KeyUpdate:
		err = m.inner.UpdateSegment(ctx, ev.Update)
	case wire.KeyPartitionDelete:
		err = m.inner.PutPartitionDelete(ctx, ev.PartitionDelete)
	}
	switch {
	case errors.Is(err, rlmm.ErrCorrupt):
		// Only a partition whose snapshot state cannot be built answers so.
		return "unbuilt", err
	case err != nil:
		return "rejected", err
	}
	return "", nil
}

// recordRejected logs a skipped event and keeps it in the bounded list.
// During catch-up a rejection is expected (an update whose segment expired
// with retention), so it is logged at debug level only.
func (m *Manager) recordRejected(rec *eventlog.Record, reason string, err error, ready bool) {
	level := m.logger.Warn
	if !ready && reason == "rejected" {
		level = m.logger.Debug
	}
	level("topicbased: event skipped", "partition", rec.Partition, "offset", rec.Offset, "reason", reason, "error", err)
	limit := m.cfg.RejectedLimit
	if limit <= 0 {
		return
	}
	ev := RejectedEvent{Partition: rec.Partition, Offset: rec.Offset, Reason: reason, Err: err}
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
}

// executeControl performs one assignment request on the pump goroutine.
func (m *Manager) executeControl(r *controlRequest) error {
	var errs []error
	for _, mp := range r.remove {
		if err := m.removePartition(mp); err != nil {
			errs = append(errs, err)
		}
	}
	for i, mp := range r.add {
		if err := m.addPartition(mp, r.target[i]); err != nil {
			errs = append(errs, err)
		}
	}
	for _, mp := range r.reset {
		if err := m.replayFromStart(mp); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// replayFromStart drops mp's user partitions from the cache and, if mp is
// consumed, consumes it again from offset 0, ready once it is back where it
// was: the recovery when the snapshot's state of one of its partitions
// cannot be built. Mutations waiting for an offset keep waiting: the replay
// applies that offset again and answers them. An unassigned mp is only
// dropped, so that its next assignment replays it from 0.
func (m *Manager) replayFromStart(mp int32) error {
	m.applyMu.Lock()
	defer m.applyMu.Unlock()
	p := &m.parts[mp]
	if !p.assigned {
		m.dropHeld(mp)
		return nil
	}
	target := max(p.next, p.highWater, p.target)
	// Readers see "catching up" before the state goes away (a read that
	// began before finds the status changed and retries).
	m.mu.Lock()
	m.setStatus(p, statusCatchingUp)
	clear(p.verdicts)
	m.mu.Unlock()
	m.dropHeld(mp)
	// Remove then add again from 0 (dropHeld reset the offsets): the
	// subscription's exact semantics drop whatever it had fetched beyond.
	if err := m.sub.Remove(mp); err != nil {
		m.logger.Warn("topicbased: stop consuming metadata partition for its replay", "partition", mp, "error", err)
	}
	p.assigned = false
	m.logger.Warn("topicbased: replaying metadata partition from offset 0", "partition", mp, "target", target)
	if err := m.addPartitionLocked(mp, target); err != nil {
		// Not consumed any more: waiters and readers learn it as for a removal.
		m.markUnassigned(mp, "could not be consumed again after offset %d was published; the event is in the log")
		return err
	}
	return nil
}

// addPartition starts consuming mp at the held state's next offset (the
// snapshot's committed + 1) or at 0, ready once target is reached.
func (m *Manager) addPartition(mp int32, target int64) error {
	m.applyMu.Lock()
	defer m.applyMu.Unlock()
	return m.addPartitionLocked(mp, target)
}

// addPartitionLocked is addPartition with applyMu held.
func (m *Manager) addPartitionLocked(mp int32, target int64) error {
	p := &m.parts[mp]
	if p.assigned {
		return nil
	}
	if p.held && p.next > target {
		// The snapshot claims events the log does not have: the log was
		// recreated or truncated. Its state cannot be trusted.
		m.logger.Warn("topicbased: snapshot is ahead of the event log; replaying the metadata partition from 0",
			"partition", mp, "snapshot_next", p.next, "high_water_mark", target)
		m.dropHeld(mp)
	}
	if !p.held {
		p.next = 0
	}
	if err := m.sub.Add(mp, p.next); err != nil {
		return fmt.Errorf("topicbased: consume metadata partition %d from offset %d: %w", mp, p.next, err)
	}
	p.assigned, p.held = true, true
	p.target = target
	p.highWater = max(target, p.next)
	p.addedAt = time.Now()
	ready := p.next >= target
	m.mu.Lock()
	p.applied = p.next - 1
	if ready {
		m.setStatus(p, statusReady)
	} else {
		m.setStatus(p, statusCatchingUp)
	}
	m.mu.Unlock()
	m.logger.Info("topicbased: metadata partition assigned", "partition", mp, "from_offset", p.next,
		"target", target, "ready", ready)
	m.met.PartitionReadiness(mp, true, ready, 0)
	m.met.PartitionProgress(mp, p.next-1, p.highWater)
	return nil
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
	err := m.sub.Remove(mp)
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
	m.mu.Lock()
	defer m.mu.Unlock()
	m.setStatus(p, statusUnassigned)
	for off, w := range p.waiters {
		w.done <- fmt.Errorf("%w: metadata partition %d "+waitFmt, rlmm.ErrNotAssigned, mp, off)
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
			w.done <- fmt.Errorf("topicbased: manager closed before metadata partition %d offset %d was applied; the event is in the log: %w",
				i, off, rlmm.ErrClosed)
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

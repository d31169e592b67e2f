package topicbased

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/eventlog"
	"github.com/rlmm-go/rlmm/wire"
)

// AddSegment records a new segment (state COPY_SEGMENT_STARTED). It returns
// nil once the event is in the log and applied to this manager's cache, the
// state machine's error if the pump rejected it (a conflicting event got
// there first), or an error before publishing anything: ErrInvalidArgument,
// a transition the current state forbids, ErrNotAssigned for a user
// partition whose metadata partition is not consumed here. Waits are bounded
// by ctx and Config.ConsumeWait (rlmm.ErrTimeout). MayBeRecorded(err) tells
// an error after publishing (the event may still take effect) from one
// that recorded nothing.
func (m *Manager) AddSegment(ctx context.Context, md rlmm.SegmentMetadata) error {
	start := time.Now()
	err := m.addSegment(ctx, md)
	m.met.MutationDone(OpAddSegment, time.Since(start), err)
	return err
}

func (m *Manager) addSegment(ctx context.Context, md rlmm.SegmentMetadata) error {
	if err := md.Validate(); err != nil {
		return err
	}
	if md.State != rlmm.CopySegmentStarted {
		return fmt.Errorf("%w: segment %s: an added segment must be %s, not %s",
			rlmm.ErrInvalidArgument, md.ID, rlmm.CopySegmentStarted, md.State)
	}
	ev := wire.SegmentEvent(md)
	return m.mutate(ctx, OpAddSegment, md.ID.TopicIDPartition, &ev, func() error { return m.inner.CheckAddSegment(md) })
}

// UpdateSegment moves a segment to a new state. Same contract as AddSegment;
// an unknown segment fails with rlmm.ErrUnknownSegment before publishing.
func (m *Manager) UpdateSegment(ctx context.Context, u rlmm.SegmentUpdate) error {
	start := time.Now()
	err := m.updateSegment(ctx, u)
	m.met.MutationDone(OpUpdateSegment, time.Since(start), err)
	return err
}

func (m *Manager) updateSegment(ctx context.Context, u rlmm.SegmentUpdate) error {
	if err := u.Validate(); err != nil {
		return err
	}
	ev := wire.UpdateEvent(u)
	return m.mutate(ctx, OpUpdateSegment, u.ID.TopicIDPartition, &ev, func() error { return m.inner.CheckUpdateSegment(u) })
}

// PutPartitionDelete records a partition's deletion state. Same contract as
// AddSegment.
func (m *Manager) PutPartitionDelete(ctx context.Context, d rlmm.PartitionDelete) error {
	start := time.Now()
	err := m.putPartitionDelete(ctx, d)
	m.met.MutationDone(OpPartitionDelete, time.Since(start), err)
	return err
}

func (m *Manager) putPartitionDelete(ctx context.Context, d rlmm.PartitionDelete) error {
	if err := d.Validate(); err != nil {
		return err
	}
	ev := wire.PartitionDeleteEvent(d)
	return m.mutate(ctx, OpPartitionDelete, d.TopicIDPartition, &ev, func() error { return m.inner.CheckPartitionDelete(d) })
}

// mutate is the common path: gate, wait for readiness, check against the
// cache, encode, publish, wait for the pump's verdict on that offset.
func (m *Manager) mutate(ctx context.Context, op Op, tp rlmm.TopicIDPartition, ev *wire.Event, check func() error) error {
	if m.closed.Load() {
		return fmt.Errorf("topicbased: mutation of %s: %w (nothing was published)", tp, rlmm.ErrClosed)
	}
	mp := wire.MetadataPartition(tp, m.n)
	p := &m.parts[mp]
	started := time.Now()
	ctx, cancel := context.WithDeadlineCause(ctx, started.Add(m.cfg.ConsumeWait), consumeWaitExpired{m.cfg.ConsumeWait})
	defer cancel()

	// 1. The metadata partition must be consumed here, and caught up, so
	// that the check below sees the current state and the verdict can be
	// read back.
	// 2. Fail fast: a transition the current state forbids publishes
	// nothing. The cache may lag events other managers published, so a
	// failure is confirmed against everything in the log now: the refusal
	// then reflects a state the log really had during this call. One that
	// cannot be confirmed within the bound is a timeout (nothing published).
	if err := m.readyAndChecked(ctx, started, tp, mp, p, check); err != nil {
		return err
	}
	var clock mutationClock
	if m.splits != nil {
		clock.start = started
		clock.encoding = time.Now()
	}
	value, err := wire.AppendEvent(nil, ev)
	if err != nil {
		return fmt.Errorf("topicbased: encode event of %s: %w", tp, err)
	}
	// 3. Publish under a ticket, so the verdict is kept even if the pump
	// applies the event before Publish returns.
	t := &ticket{}
	m.mu.Lock()
	t.startApplied = p.applied
	p.tickets[t] = struct{}{}
	m.mu.Unlock()
	defer m.releaseTicket(p, t)
	if m.splits != nil {
		clock.publishing = time.Now()
	}
	offset, err := m.publish(ctx, mp, value)
	if m.splits != nil {
		clock.published = time.Now()
	}
	if err != nil {
		if m.closed.Load() {
			return mayBeRecorded(fmt.Errorf("topicbased: publish event of %s to metadata partition %d: %w while publishing (the event may still be recorded)", tp, mp, rlmm.ErrClosed))
		}
		if ctx.Err() != nil {
			return mayBeRecorded(m.timeoutError(ctx, started, fmt.Sprintf("publishing the event of %s to metadata partition %d (the event may still be recorded)", tp, mp)))
		}
		if refused, ok := errors.AsType[*eventlog.RefusedError](err); ok {
			// Not marked: the log says nothing was appended.
			return fmt.Errorf("topicbased: publish event of %s to metadata partition %d: %w", tp, mp, refused)
		}
		return mayBeRecorded(fmt.Errorf("topicbased: publish event of %s to metadata partition %d (it may or may not be in the log): %w", tp, mp, err))
	}
	// 4. Wait for the pump's verdict on exactly that offset.
	m.mu.Lock()
	if st := p.status.Load() & statusMask; st == statusUnassigned {
		m.mu.Unlock()
		return mayBeRecorded(fmt.Errorf("%w: metadata partition %d was unassigned after publishing offset %d; the event is in the log",
			rlmm.ErrNotAssigned, mp, offset))
	}
	if p.applied >= offset {
		verdict := p.verdicts[offset]
		var stamp batchStamp
		if m.splits != nil {
			stamp, _ = p.stampOf(offset)
		}
		m.mu.Unlock()
		if m.splits != nil {
			m.reportSplit(op, stamp, clock, time.Now())
		}
		return wrapVerdict(verdict, mp, offset)
	}
	w := &waiter{done: make(chan error, 1)}
	p.waiters[offset] = w
	m.mu.Unlock()
	select {
	case verdict := <-w.done:
		if m.splits != nil {
			woken := time.Now()
			m.mu.Lock()
			stamp, _ := p.stampOf(offset)
			m.mu.Unlock()
			m.reportSplit(op, stamp, clock, woken)
		}
		return wrapVerdict(verdict, mp, offset)
	case <-m.closedCh:
		// The pump answers its waiters when it stops; one registered after
		// that is answered here.
		select {
		case verdict := <-w.done:
			return wrapVerdict(verdict, mp, offset)
		default:
		}
		return mayBeRecorded(fmt.Errorf("topicbased: manager closed before metadata partition %d offset %d was applied; the event is in the log: %w",
			mp, offset, rlmm.ErrClosed))
	case <-ctx.Done():
		m.mu.Lock()
		if p.waiters[offset] == w {
			delete(p.waiters, offset)
		}
		m.mu.Unlock()
		// The pump may have answered just now.
		select {
		case verdict := <-w.done:
			return wrapVerdict(verdict, mp, offset)
		default:
		}
		return mayBeRecorded(m.timeoutError(ctx, started, fmt.Sprintf("waiting for metadata partition %d to apply offset %d (the event of %s is in the log and may still be recorded)", mp, offset, tp)))
	}
}

// readyAndChecked waits for mp's readiness, then runs check (confirmed
// against the log on failure).
func (m *Manager) readyAndChecked(ctx context.Context, started time.Time, tp rlmm.TopicIDPartition, mp int32, p *metaPartition, check func() error) error {
	if err := m.waitReady(ctx, started, tp, mp, p); err != nil {
		return err
	}
	err := check()
	if err == nil {
		return nil
	}
	if serr := m.syncTo(ctx, started, tp, mp, p); serr != nil {
		// Unconfirmed, the refusal may rest on a state the log left
		// before this call began (a cache that stopped while its log's
		// leader was frozen): answering it would be a stale read. The
		// caller learns that nothing was published and may try again.
		return fmt.Errorf("topicbased: %s refused by this manager's cache (%v), which could not be confirmed against the log; nothing was published: %w", tp, err, serr)
	}
	return check()
}

func wrapVerdict(verdict error, mp int32, offset int64) error {
	if verdict == nil {
		return nil
	}
	return fmt.Errorf("topicbased: event at metadata partition %d offset %d was not applied: %w", mp, offset, verdict)
}

// consumeWaitExpired is the cause of a context that Config.ConsumeWait
// ended (a mutation's or a Sync's); it is a context.DeadlineExceeded.
type consumeWaitExpired struct{ d time.Duration }

func (e consumeWaitExpired) Error() string { return fmt.Sprintf("ConsumeWait %s ran out", e.d) }

func (e consumeWaitExpired) Unwrap() error { return context.DeadlineExceeded }

// timeoutError says what timed out, after how long since started, and
// what bounded the wait: Config.ConsumeWait (a mutation's or a Sync's own
// bound), the caller's deadline, or the caller's cancellation. It wraps
// rlmm.ErrTimeout and the context's cause (context.DeadlineExceeded for
// both deadlines, context.Canceled for a cancellation).
func (m *Manager) timeoutError(ctx context.Context, started time.Time, what string) error {
	cause := context.Cause(ctx)
	waited := time.Since(started).Round(time.Millisecond)
	var cw consumeWaitExpired
	var bound string
	switch {
	case errors.As(cause, &cw):
		bound = fmt.Sprintf("bounded by Config.ConsumeWait %s", cw.d)
	case errors.Is(cause, context.DeadlineExceeded):
		bound = "bounded by the caller's context deadline"
	default:
		bound = "the caller's context ended"
	}
	if last := m.pollErr.Load(); last != nil {
		bound += fmt.Sprintf("; the event log's last read failed: %v", *last)
	}
	return fmt.Errorf("%w: %s: gave up after %s (%s): %w", rlmm.ErrTimeout, what, waited, bound, cause)
}

func (m *Manager) releaseTicket(p *metaPartition, t *ticket) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(p.tickets, t)
	if len(p.tickets) == 0 {
		clear(p.verdicts)
		return
	}
	// Keep the verdicts bounded under a constant stream of mutations: no
	// ticket can need an offset at or below the oldest ticket's start.
	if len(p.verdicts) > 1024 {
		low := int64(1<<63 - 1)
		for o := range p.tickets {
			low = min(low, o.startApplied)
		}
		for off := range p.verdicts {
			if off <= low {
				delete(p.verdicts, off)
			}
		}
	}
}

// Sync waits until this manager has applied every event of tp's metadata
// partition that was in the log when Sync was called (after waiting for
// readiness like a mutation). Reads after Sync reflect every mutation that
// completed, on any manager, before Sync was called: a linearizable read.
// Plain reads are local and may lag other managers' writes (as in Kafka).
func (m *Manager) Sync(ctx context.Context, tp rlmm.TopicIDPartition) error {
	if m.closed.Load() {
		return fmt.Errorf("topicbased: sync of %s: %w", tp, rlmm.ErrClosed)
	}
	mp := wire.MetadataPartition(tp, m.n)
	p := &m.parts[mp]
	started := time.Now()
	ctx, cancel := context.WithTimeoutCause(ctx, m.cfg.ConsumeWait, consumeWaitExpired{m.cfg.ConsumeWait})
	defer cancel()
	if err := m.waitReady(ctx, started, tp, mp, p); err != nil {
		return err
	}
	return m.syncTo(ctx, started, tp, mp, p)
}

// syncTo waits until mp has applied what its high-water mark is now.
func (m *Manager) syncTo(ctx context.Context, started time.Time, tp rlmm.TopicIDPartition, mp int32, p *metaPartition) error {
	hw, err := m.log.HighWaterMarks(ctx, []int32{mp})
	if err != nil {
		return fmt.Errorf("topicbased: sync of %s: high-water mark of metadata partition %d: %w", tp, mp, err)
	}
	w := syncWaiter{offset: hw[0] - 1, done: make(chan error, 1)}
	m.mu.Lock()
	if p.status.Load()&statusMask == statusUnassigned {
		m.mu.Unlock()
		return fmt.Errorf("%w: sync of %s: metadata partition %d is not consumed by this manager", rlmm.ErrNotAssigned, tp, mp)
	}
	if p.applied >= w.offset {
		m.mu.Unlock()
		return nil
	}
	p.syncs = append(p.syncs, w)
	m.mu.Unlock()
	select {
	case err := <-w.done:
		return err
	case <-m.closedCh:
		return fmt.Errorf("topicbased: sync of %s: %w", tp, rlmm.ErrClosed)
	case <-ctx.Done():
		m.mu.Lock()
		p.syncs = slices.DeleteFunc(p.syncs, func(s syncWaiter) bool { return s.done == w.done })
		m.mu.Unlock()
		return m.timeoutError(ctx, started, fmt.Sprintf("waiting for metadata partition %d to apply offset %d", mp, w.offset))
	}
}

// WaitReady blocks until tp is hosted here, its history built and its
// metadata partition caught up. It returns an error wrapping
// rlmm.ErrNotAssigned at once if tp is not hosted (or stops being),
// rlmm.ErrClosed if the manager closes, and one wrapping rlmm.ErrTimeout
// when ctx ends first.
func (m *Manager) WaitReady(ctx context.Context, tp rlmm.TopicIDPartition) error {
	if m.closed.Load() {
		return fmt.Errorf("topicbased: wait for %s: %w", tp, rlmm.ErrClosed)
	}
	mp := wire.MetadataPartition(tp, m.n)
	return m.waitReady(ctx, time.Now(), tp, mp, &m.parts[mp])
}

// waitReady returns nil once tp is ready, ErrNotAssigned at once if it is
// not hosted, and a timeout error if ctx ends first. It waits for the
// pump's notification, never by polling.
func (m *Manager) waitReady(ctx context.Context, started time.Time, tp rlmm.TopicIDPartition, mp int32, p *metaPartition) error {
	k := wire.KeyOf(tp)
	for {
		m.mu.Lock()
		st := p.status.Load() & statusMask
		e, hosted := m.keep.Load().entry(mp, k)
		changed := p.changed
		m.mu.Unlock()
		switch {
		case !hosted || st == statusUnassigned:
			return fmt.Errorf("%w: partition %s is not hosted by this manager (metadata partition %d); nothing was published",
				rlmm.ErrNotAssigned, tp, mp)
		case st == statusReady && e.state == keepReady:
			return nil
		}
		m.inFlight.waitingReady.Add(1)
		var ended error
		select {
		case <-changed:
		case <-m.closedCh:
			ended = fmt.Errorf("topicbased: %s: %w while waiting for metadata partition %d to catch up (nothing was published)", tp, rlmm.ErrClosed, mp)
		case <-ctx.Done():
			ended = m.timeoutError(ctx, started, fmt.Sprintf("waiting for metadata partition %d of %s to catch up (a mutation publishes nothing before)", mp, tp))
		}
		m.inFlight.waitingReady.Add(-1)
		if ended != nil {
			return ended
		}
	}
}

// OnPartitionLeadershipChanges adds the user partitions this broker now
// leads or follows to its hosted set: the manager consumes the metadata
// partitions that cover them and keeps the state of exactly the hosted
// user partitions. It returns once the pump has taken the change: the new
// metadata partitions are being consumed, and a user partition hosted
// after its metadata partition was consumed is being rebuilt (their
// readiness follows; see IsReady and ReadinessChanged).
func (m *Manager) OnPartitionLeadershipChanges(ctx context.Context, leaders, followers []rlmm.TopicIDPartition) error {
	m.mu.Lock()
	for _, tp := range leaders {
		m.hosted[tp] = struct{}{}
	}
	for _, tp := range followers {
		m.hosted[tp] = struct{}{}
	}
	m.mu.Unlock()
	return m.reconcile(ctx)
}

// OnStopPartitions removes user partitions from the hosted set: their
// state is dropped from the cache, and a metadata partition that no longer
// covers any hosted partition stops being consumed.
func (m *Manager) OnStopPartitions(ctx context.Context, partitions []rlmm.TopicIDPartition) error {
	m.mu.Lock()
	for _, tp := range partitions {
		delete(m.hosted, tp)
	}
	m.mu.Unlock()
	return m.reconcile(ctx)
}

// reconcile brings the consumed metadata partitions and the kept user
// partitions to the hosted set: the pump executes the difference to what
// earlier requests planned.
func (m *Manager) reconcile(ctx context.Context) error {
	if m.closed.Load() {
		return fmt.Errorf("topicbased: assignment change: %w", rlmm.ErrClosed)
	}
	m.assignMu.Lock()
	m.mu.Lock()
	hosted := maps.Clone(m.hosted)
	m.mu.Unlock()
	desired := map[int32]struct{}{}
	for tp := range hosted {
		desired[wire.MetadataPartition(tp, m.n)] = struct{}{}
	}
	r := &controlRequest{done: make(chan error, 1)}
	if !maps.Equal(hosted, m.plannedHosted) {
		r.hosted = hosted
	}
	for mp := range desired {
		if _, ok := m.planned[mp]; !ok {
			r.add = append(r.add, mp)
		}
	}
	for mp := range m.planned {
		if _, ok := desired[mp]; !ok {
			r.remove = append(r.remove, mp)
		}
	}
	slices.Sort(r.add)
	slices.Sort(r.remove)
	if len(r.add) == 0 && len(r.remove) == 0 && r.hosted == nil {
		m.assignMu.Unlock()
		return nil
	}
	if len(r.add) > 0 {
		// The readiness target: everything published before this call.
		hw, err := m.log.HighWaterMarks(ctx, r.add)
		if err != nil {
			m.assignMu.Unlock()
			return fmt.Errorf("topicbased: high-water marks of metadata partitions %v: %w", r.add, err)
		}
		r.target = hw
		// The log start, read after the target: a partition whose
		// records up to the target were all deleted is then ready at once.
		so, err := m.log.StartOffsets(ctx, r.add)
		if err != nil {
			m.assignMu.Unlock()
			return fmt.Errorf("topicbased: log start offsets of metadata partitions %v: %w", r.add, err)
		}
		r.start = so
	}
	if err := m.submit(r); err != nil {
		m.assignMu.Unlock()
		return fmt.Errorf("topicbased: assignment change: %w", err)
	}
	m.planned = desired
	m.plannedHosted = hosted
	m.assignMu.Unlock()
	select {
	case err := <-r.done:
		if err != nil {
			m.forgetFailedAdds(r.add)
		}
		return err
	case <-ctx.Done():
		return fmt.Errorf("%w: assignment change (add %v, remove %v) still queued for the pump: %w", rlmm.ErrTimeout, r.add, r.remove, ctx.Err())
	}
}

// forgetFailedAdds removes from the planned set the partitions of adds that
// the pump could not execute, so the next reconcile tries them again.
func (m *Manager) forgetFailedAdds(adds []int32) {
	m.assignMu.Lock()
	defer m.assignMu.Unlock()
	m.applyMu.Lock()
	defer m.applyMu.Unlock()
	for _, mp := range adds {
		if !m.parts[mp].assigned {
			delete(m.planned, mp)
		}
	}
}

// publish is Log.Publish with a context that Close also cancels, so a call
// blocked on a log that does not answer ends with the manager.
func (m *Manager) publish(ctx context.Context, mp int32, value []byte) (int64, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-m.closedCh:
			cancel()
		case <-ctx.Done():
		}
	}()
	m.inFlight.publishing.Add(1)
	defer m.inFlight.publishing.Add(-1)
	return m.log.Publish(ctx, mp, value)
}

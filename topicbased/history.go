package topicbased

import (
	"context"
	"fmt"
	"time"
)

// startCheckInterval is how often the housekeeper reads the log start
// offsets of the metadata partitions that are catching up: records deleted
// while one catches up (retention, DeleteRecords) could otherwise leave it
// waiting for offsets that will never be delivered.
const startCheckInterval = time.Second

// HistoryLostError says that events of a metadata partition that this
// manager had not applied are gone from the log: offsets [From, To) were
// deleted (retention or DeleteRecords moved the log start offset to To).
// The segments those events added or updated are unknown to the manager;
// what it holds is the snapshot's state (if any) up to From-1 and the log's
// events from To on. It is the Err of a RejectedEvent of ReasonHistoryLost.
type HistoryLostError struct {
	// Partition is the metadata partition.
	Partition int32
	// From is the first lost offset, To the first offset the log still
	// holds (the log start offset).
	From, To int64
}

// Error says "history lost between offsets From and To of metadata
// partition P" and what it means.
func (e *HistoryLostError) Error() string {
	return fmt.Sprintf("history lost between offsets %d and %d of metadata partition %d: the %d events in [%d, %d) were deleted from the log before this manager applied them (retention or DeleteRecords); segments they added or updated are unknown here",
		e.From, e.To, e.Partition, e.To-e.From, e.From, e.To)
}

// historyLost reports the gap [from, to) of metadata partition mp: a log
// line, the HistoryLost metric, an entry in Rejected and the Stats count.
// why says how it was found. Pump only, under applyMu (not mu).
func (m *Manager) historyLost(mp int32, from, to int64, why string) {
	if to <= from {
		return
	}
	err := &HistoryLostError{Partition: mp, From: from, To: to}
	m.stats.historyLost.Add(uint64(to - from))
	m.logger.Warn("topicbased: history lost", "partition", mp, "from", from, "to", to,
		"found", why, "error", err)
	m.met.HistoryLost(mp, from, to)
	m.keepRejected(RejectedEvent{Partition: mp, Offset: from, Reason: ReasonHistoryLost, Err: err})
}

// skipToStart moves mp's next offset up to the log start offset start,
// reporting the gap, when the records from next on were deleted. It
// returns whether it moved. Pump only, under applyMu.
func (m *Manager) skipToStart(mp int32, start int64, why string) bool {
	p := &m.parts[mp]
	p.start = max(p.start, start)
	if p.next >= p.start {
		return false
	}
	m.historyLost(mp, p.next, p.start, why)
	p.next = p.start
	return true
}

// sampleStartOffsets reads the log start offsets of the metadata
// partitions that are catching up (consumed, not waiting for their
// snapshot state) and queues them for the pump, which skips each to its
// start if the records it waits for were deleted.
func (m *Manager) sampleStartOffsets(ctx context.Context) {
	m.applyMu.Lock()
	var mps []int32
	var next []int64
	for i := range m.parts {
		p := &m.parts[i]
		if p.assigned && !p.loading && p.status.Load()&statusMask == statusCatchingUp {
			mps = append(mps, int32(i))
			next = append(next, p.next)
		}
	}
	m.applyMu.Unlock()
	if len(mps) == 0 {
		return
	}
	starts, err := m.log.StartOffsets(ctx, mps)
	if err != nil {
		m.logger.Debug("topicbased: reading log start offsets failed", "error", err)
		return
	}
	// Only a start past what the pump needs next is news; anything else
	// would interrupt its Poll for nothing.
	var passed []int32
	var at []int64
	for i, mp := range mps {
		if starts[i] > next[i] {
			passed = append(passed, mp)
			at = append(at, starts[i])
		}
	}
	if len(passed) == 0 {
		return
	}
	// Not waited for: the pump applies it between two polls (and checks
	// again that the partition still needs it).
	_ = m.submit(&controlRequest{startsOf: passed, starts: at, done: make(chan error, 1)})
}

// applyStarts handles sampled log start offsets on the pump: a catching-up
// partition whose next offset was deleted is restarted at the log start
// (the gap reported) and becomes ready if that reaches its target (an
// emptied partition: start = high-water mark).
func (m *Manager) applyStarts(mps []int32, starts []int64) {
	m.applyMu.Lock()
	defer m.applyMu.Unlock()
	for i, mp := range mps {
		p := &m.parts[mp]
		if !p.assigned || p.loading || p.status.Load()&statusMask != statusCatchingUp {
			continue
		}
		if !m.skipToStart(mp, starts[i], "the log start offset passed the partition while it caught up") {
			continue
		}
		// The subscription needs no new Add: below the log start it
		// delivers from the start (eventlog's contract), and applyBatch
		// skips what it fetched below p.next.
		p.highWater = max(p.highWater, p.next)
		m.version.Add(1)
		m.mu.Lock()
		m.publishProgress(mp, time.Now())
		m.mu.Unlock()
		m.met.PartitionProgress(mp, p.next-1, p.highWater)
	}
}

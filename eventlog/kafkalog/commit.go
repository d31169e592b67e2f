package kafkalog

import (
	"context"

	"github.com/twmb/franz-go/pkg/kgo"
)

// maxRoundRecords bounds the records one round of the committer produces:
// below kgo's MaxBufferedRecords (10,000), which a manually flushed
// producer refuses to exceed.
const maxRoundRecords = 4096

// pendingRecord is one Publish waiting for the committer.
type pendingRecord struct {
	ctx  context.Context
	rec  *kgo.Record
	done chan produced // buffered 1
}

// produced is a record's outcome.
type produced struct {
	offset int64
	err    error
}

// Round states (Log.round, under mu): who, if anyone, has a round of
// records in flight.
const (
	roundIdle      = iota // nothing in flight: a publisher alone sends at once
	roundPublisher        // a publisher sends its own record (the fast path)
	roundCommitter        // the committer sends what was queued meanwhile
)

// committer is the group commit of the producer (kgo.ManualFlushing): it
// takes every record published since the last round, hands them to kgo and
// flushes them, which sends one produce request per broker carrying a
// batch per partition, and waits for the answers before the next round.
// A publisher that finds nothing in flight and nothing queued sends its
// own record itself (roundPublisher), so a publisher alone pays no hop to
// the committer's goroutine; records published meanwhile queue for the
// committer's next round.
//
// Why not kgo's own flushing: with idempotence kgo keeps up to five produce
// requests in flight per broker and cuts a request as soon as one record
// is buffered, so 16 concurrent publishers got about 2 records per request
// (BenchmarkMutationSplit). A broker reads a connection's next request
// only after answering the one before (it mutes the connection meanwhile),
// so the extra requests in flight bought no parallelism at the broker:
// each cost its own request handling and, with acks=all, its own wait in
// the produce purgatory. One round in flight gives the same latency to a
// publisher alone (one request, sent at once) and lets concurrent ones
// share a request. The round ends with the broker's answer to every
// record of it, so the ordering and retries stay kgo's (idempotence on).
func (l *Log) committer() {
	defer close(l.committerDone)
	var round []pendingRecord
	for {
		select {
		case <-l.kick:
		case <-l.stop:
			l.failPending()
			return
		}
		l.mu.Lock()
		if l.round == roundPublisher {
			// That publisher hands over when its round ends.
			l.mu.Unlock()
			continue
		}
		l.round = roundCommitter
		for {
			n := min(len(l.pending), maxRoundRecords)
			round = append(round[:0], l.pending[:n]...)
			l.pending = l.pending[:copy(l.pending, l.pending[n:])]
			l.mu.Unlock()
			// Also ends a round a publisher handed over (its flush
			// stopped with its context): nothing is buffered otherwise.
			l.produceRound(round)
			clear(round) // drop the references to the records and contexts
			l.mu.Lock()
			if len(l.pending) == 0 {
				l.round = roundIdle
				break
			}
		}
		l.mu.Unlock()
	}
}

// publishAlone sends p's record at once when nothing is in flight or
// queued, and reports whether it did; otherwise (or once the log is
// closed) the caller queues it for the committer. Its round ends when the
// flush does; a flush that stopped with p's context hands the rest of the
// round to the committer, whose next flush waits for the record (kgo
// sends only while someone flushes).
func (l *Log) publishAlone(p pendingRecord) bool {
	l.mu.Lock()
	if l.closed || l.round != roundIdle || len(l.pending) > 0 {
		l.mu.Unlock()
		return false
	}
	l.round = roundPublisher
	l.mu.Unlock()
	done := p.done
	l.producer.Produce(p.ctx, p.rec, func(r *kgo.Record, err error) {
		done <- produced{r.Offset, err}
	})
	err := l.producer.Flush(p.ctx)
	l.mu.Lock()
	if err != nil || len(l.pending) > 0 {
		l.round = roundCommitter
		l.mu.Unlock()
		l.kickCommitter()
		return true
	}
	l.round = roundIdle
	l.mu.Unlock()
	return true
}

// kickCommitter wakes the committer (once, however many kick it).
func (l *Log) kickCommitter() {
	select {
	case l.kick <- struct{}{}:
	default: // kicked already
	}
}

// produceRound hands the records of one round to kgo and flushes them. A
// record whose caller gave up before the round is not produced: nobody
// waits for it and its fate was already reported as unknown.
func (l *Log) produceRound(round []pendingRecord) {
	for _, p := range round {
		if p.ctx.Err() != nil {
			continue
		}
		done := p.done
		l.producer.Produce(p.ctx, p.rec, func(r *kgo.Record, err error) {
			done <- produced{r.Offset, err}
		})
	}
	// Bounded by kgo: every record fails after RecordDeliveryTimeout, and
	// Close fails what is buffered, which ends the flush.
	_ = l.producer.Flush(context.Background())
}

// failPending answers the records still queued when the log closes.
func (l *Log) failPending() {
	l.mu.Lock()
	pending := l.pending
	l.pending = nil
	l.mu.Unlock()
	for _, p := range pending {
		p.done <- produced{err: kgo.ErrClientClosed}
	}
}

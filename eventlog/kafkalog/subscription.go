package kafkalog

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/eventlog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// subscription consumes partitions directly with its own kgo client.
//
// Exactness: kgo may return records fetched before an Add or Remove took
// effect (they can be on their way out of PollFetches while the assignment
// changes). So the subscription keeps its own view, under mu: for each
// consumed partition, the next offset Poll must deliver and the assignment
// epoch at which the partition was last (re)assigned. Poll notes the epoch
// before it calls PollFetches and filters the records under mu:
//   - a partition not consumed any more: dropped;
//   - a partition (re)assigned while the fetch was outstanding: only the
//     record at exactly the next offset is delivered. An earlier one is a
//     duplicate; a later one may be left over from the old position, so it
//     is dropped and the partition is re-seeked to the next offset, which
//     costs a fetch but cannot lose a record;
//   - a partition whose assignment did not change: records from the next
//     offset on are delivered, earlier ones dropped. A jump forward is
//     accepted here because it can only come from the current position:
//     the log start moved past the requested offset (retention), where
//     Kafka resets to the earliest offset.
type subscription struct {
	log    *Log
	client *kgo.Client

	mu     sync.Mutex
	epoch  uint64 // bumped by every assignment change
	parts  map[int32]*partState
	closed bool
	// reseeks counts re-seeks after a possibly stale jump (for tests and
	// debugging: it shows the exactness filter at work).
	reseeks int
}

type partState struct {
	next       int64  // offset of the next record Poll may deliver
	assignedAt uint64 // epoch of the latest Add (or re-seek) of the partition
}

var _ eventlog.Subscription = (*subscription)(nil)

func newSubscription(l *Log) (*subscription, error) {
	opts, err := l.cfg.clientOpts("consumer")
	if err != nil {
		return nil, err
	}
	opts = append(opts,
		kgo.WithHooks(l.hooks),
		// An empty direct assignment: partitions come and go with Add and
		// Remove; no group, nothing committed.
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{}),
		// Where the requested offset no longer exists (retention), start at
		// the earliest one rather than skip to the end. An offset past the
		// end (Kafka answers OFFSET_OUT_OF_RANGE) lands here too; Poll then
		// drops everything before the requested offset and so waits for it.
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		// Kafka's Java consumer default fetch.max.wait.ms (kgo's is 5 s).
		// New records end a waiting fetch at once either way.
		kgo.FetchMaxWait(500*time.Millisecond),
		// No incremental fetch sessions (KIP-227): every Add or Remove
		// stops kgo's consumer session, which drops the broker-side fetch
		// session anyway, so they would save little; and with them
		// franz-go v1.22.3's Close races (go test -race) between killing
		// the fetch session and a fetch loop that Close itself restarts.
		kgo.DisableFetchSessions(),
	)
	client, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("kafkalog: %w: %w", rlmm.ErrInvalidArgument, err)
	}
	return &subscription{log: l, client: client, parts: make(map[int32]*partState)}, nil
}

func (s *subscription) topic() string { return s.log.cfg.Topic }

// Add starts or restarts delivery of partition p at offset.
func (s *subscription) Add(p int32, offset int64) error {
	if err := s.log.checkPartition(p); err != nil {
		return err
	}
	if offset < 0 {
		return fmt.Errorf("kafkalog: %w: offset %d for %s-%d is negative", rlmm.ErrInvalidArgument, offset, s.topic(), p)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("kafkalog: add %s-%d: %w", s.topic(), p, rlmm.ErrClosed)
	}
	s.assignLocked(p, offset)
	return nil
}

// assignLocked points kgo's cursor of p at offset and records the new
// assignment epoch. The caller holds mu.
func (s *subscription) assignLocked(p int32, offset int64) {
	if _, ok := s.parts[p]; ok {
		// kgo keeps an existing cursor on a second add; removing first
		// also discards what kgo buffered for the old position.
		s.client.RemoveConsumePartitions(map[string][]int32{s.topic(): {p}})
	}
	s.epoch++
	s.parts[p] = &partState{next: offset, assignedAt: s.epoch}
	s.client.AddConsumePartitions(map[string]map[int32]kgo.Offset{s.topic(): {p: kgo.NewOffset().At(offset)}})
}

// Remove stops delivery of partition p.
func (s *subscription) Remove(p int32) error {
	if err := s.log.checkPartition(p); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("kafkalog: remove %s-%d: %w", s.topic(), p, rlmm.ErrClosed)
	}
	if _, ok := s.parts[p]; !ok {
		return nil
	}
	s.epoch++
	delete(s.parts, p)
	s.client.RemoveConsumePartitions(map[string][]int32{s.topic(): {p}})
	return nil
}

// Poll returns the next records of the consumed partitions, waiting for at
// least one.
func (s *subscription) Poll(ctx context.Context) ([]eventlog.Record, error) {
	for {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return nil, fmt.Errorf("kafkalog: poll %s: %w", s.topic(), rlmm.ErrClosed)
		}
		pollEpoch := s.epoch
		s.mu.Unlock()

		fetches := s.client.PollFetches(ctx)
		// Filter before looking at ctx: records kgo handed over are gone
		// from its buffer, so they must be delivered now or never
		// (dropping them would leave a hole that the next fetch skips).
		out, err := s.filter(fetches, pollEpoch)
		if len(out) > 0 {
			return out, nil
		}
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, fmt.Errorf("kafkalog: poll %s: %w", s.topic(), ctxErr)
		}
		if err != nil {
			return nil, err
		}
	}
}

// filter applies the exactness rules (see subscription) to one PollFetches
// result and returns the records to deliver, or the first error kgo
// reported when nothing can be delivered.
func (s *subscription) filter(fetches kgo.Fetches, pollEpoch uint64) ([]eventlog.Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, fmt.Errorf("kafkalog: poll %s: %w", s.topic(), rlmm.ErrClosed)
	}
	var firstErr error
	fetches.EachError(func(topic string, p int32, err error) {
		var kafkaErr *kerr.Error
		switch {
		case errors.Is(err, kgo.ErrClientClosed):
			err = fmt.Errorf("kafkalog: poll %s: %w", s.topic(), rlmm.ErrClosed)
		case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
			err = fmt.Errorf("kafkalog: poll %s: %w", s.topic(), err)
		case errors.As(err, &kafkaErr) && !kafkaErr.Retriable && s.parts[p] != nil:
			// Not something kgo will get past by retrying (authorization,
			// a deleted topic): the caller must hear of it.
			err = fmt.Errorf("kafkalog: fetch %s-%d: %w", topic, p, err)
		default:
			// Connection errors, a leader moving, data loss reports: kgo
			// retries these itself; they are only worth a log line.
			s.log.log.Warn("fetch error", "partition", p, "err", err)
			return
		}
		if firstErr == nil {
			firstErr = err
		}
	})
	var out []eventlog.Record
	var reseek []int32
	fetches.EachPartition(func(fp kgo.FetchTopicPartition) {
		st := s.parts[fp.Partition]
		if st == nil || fp.Topic != s.topic() {
			return
		}
		changed := st.assignedAt > pollEpoch
		for _, r := range fp.Records {
			switch {
			case r.Offset < st.next:
				continue // already delivered, or before the requested offset
			case r.Offset > st.next && changed:
				reseek = append(reseek, fp.Partition)
				return
			}
			// kgo slices values out of one fetch buffer; capping the
			// capacity keeps a receiver's append from writing over the
			// next record's bytes.
			v := r.Value[:len(r.Value):len(r.Value)]
			var k []byte
			if r.Key != nil {
				k = r.Key[:len(r.Key):len(r.Key)]
			}
			out = append(out, eventlog.Record{Partition: r.Partition, Offset: r.Offset, Value: v, Tombstone: r.Value == nil, Key: k})
			st.next = r.Offset + 1
		}
	})
	for _, p := range reseek {
		s.reseeks++
		s.log.log.Debug("re-seeking after a record past the expected offset", "partition", p, "offset", s.parts[p].next)
		s.assignLocked(p, s.parts[p].next)
	}
	return out, firstErr
}

// Close ends the subscription and closes its client.
func (s *subscription) Close() error {
	s.closeClient()
	s.log.forget(s)
	return nil
}

// closeClient marks the subscription closed and closes the kgo client,
// which wakes a blocked PollFetches.
func (s *subscription) closeClient() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	s.mu.Unlock()
	s.client.Close()
}

package cursor

import (
	"context"
	"fmt"
	"iter"
	"maps"
	"sync"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/eventlog"
)

// Set is one subscription of a log that reads its records in place: the
// consumed partitions and the next offset to deliver from each. It is the
// log's eventlog.Subscription. Create it with New; all methods are safe for
// concurrent use.
type Set struct {
	logName string              // error prefix: "memlog", "filelog"
	check   func(p int32) error // the log's partition-range check
	collect Collect             // reads the log at the set's positions

	mu      sync.Mutex
	next    map[int32]int64 // consumed partition -> next offset to deliver
	changed chan struct{}   // closed and replaced on Add, Remove and Close
	closed  bool
}

var _ eventlog.Subscription = (*Set)(nil)

// New returns an empty set of a log whose errors start with logName, whose
// partitions check accepts, and whose records collect reads.
func New(logName string, check func(p int32) error, collect Collect) *Set {
	return &Set{logName: logName, check: check, collect: collect, next: make(map[int32]int64), changed: make(chan struct{})}
}

// Add consumes partition p from offset on (replacing its position if p is
// already consumed).
func (s *Set) Add(p int32, offset int64) error {
	if err := s.check(p); err != nil {
		return err
	}
	if offset < 0 {
		return fmt.Errorf("%s: add partition %d at negative offset %d: %w", s.logName, p, offset, rlmm.ErrInvalidArgument)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("%s: add: subscription %w", s.logName, rlmm.ErrClosed)
	}
	s.next[p] = offset
	s.wakeLocked()
	return nil
}

// Remove stops consuming partition p; removing one not consumed is a no-op.
func (s *Set) Remove(p int32) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("%s: remove: subscription %w", s.logName, rlmm.ErrClosed)
	}
	delete(s.next, p)
	s.wakeLocked()
	return nil
}

// wakeLocked wakes a Poll waiting on the old set. The caller holds s.mu.
func (s *Set) wakeLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// Close ends the set: a waiting Poll and every later call return
// rlmm.ErrClosed. Close is idempotent.
func (s *Set) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.closed = true
		close(s.changed)
	}
	return nil
}

// Collect reads the available records of the consumed partitions, given as
// partition -> next offset. It runs under the Set's lock, so the positions
// cannot change meanwhile. It returns the records read, each partition's in
// offset order; with none it returns the channel its log closes on the next
// append (taken before reading, so an append after the read still wakes).
type Collect func(next iter.Seq2[int32, int64]) (recs []eventlog.Record, appended <-chan struct{}, err error)

// Poll calls the log's collect until it returns records or an error,
// advancing each partition past the last record delivered, and in between
// waits for an append, a change to the set, or ctx.
func (s *Set) Poll(ctx context.Context) ([]eventlog.Record, error) {
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		recs, changed, appended, err := s.collectOnce()
		if err != nil || len(recs) > 0 {
			return recs, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-changed:
		case <-appended:
		}
	}
}

// collectOnce runs s.collect under the lock and advances the positions past
// what it returns; with nothing returned it gives the channels to wait on.
func (s *Set) collectOnce() ([]eventlog.Record, <-chan struct{}, <-chan struct{}, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, nil, nil, fmt.Errorf("%s: poll: subscription %w", s.logName, rlmm.ErrClosed)
	}
	recs, appended, err := s.collect(maps.All(s.next))
	if err != nil {
		return nil, nil, nil, err
	}
	if len(recs) == 0 {
		return nil, s.changed, appended, nil
	}
	// Records of a partition come in offset order, so the last one of each
	// run sets its position; one map write per run, not per record.
	for i, r := range recs {
		if i+1 == len(recs) || recs[i+1].Partition != r.Partition {
			s.next[r.Partition] = r.Offset + 1
		}
	}
	return recs, nil, nil, nil
}

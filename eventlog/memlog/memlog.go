package memlog

import (
	"context"
	"fmt"
	"iter"
	"sync"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/eventlog"
	"github.com/rlmm-go/rlmm/eventlog/internal/cursor"
)

// maxPollRecords bounds the records one Poll returns, so a subscriber
// replaying a long partition applies it in digestible batches.
const maxPollRecords = 4096

// Log is an in-memory eventlog.Log. Create it with New; the zero value is not
// usable. All methods are safe for concurrent use.
type Log struct {
	partitions int32
	id         rlmm.Uuid // random, set by New

	mu       sync.Mutex
	records  [][][]byte    // records[p][offset]; nil below start[p]
	start    []int64       // log start offset per partition (DeleteRecordsBefore)
	appended chan struct{} // closed and replaced on every append and on Close
	closed   bool
}

var _ eventlog.Log = (*Log)(nil)

// New returns an empty log with the given number of partitions; a count
// below 1 is taken as 1.
func New(partitions int32) *Log {
	if partitions < 1 {
		partitions = 1
	}
	return &Log{
		partitions: partitions,
		id:         rlmm.RandomUuid(),
		records:    make([][][]byte, partitions),
		start:      make([]int64, partitions),
		appended:   make(chan struct{}),
	}
}

// Partitions returns the number of partitions.
func (l *Log) Partitions() int32 { return l.partitions }

// ID returns the random id New gave the log: two logs never share one.
func (l *Log) ID() rlmm.Uuid { return l.id }

func (l *Log) checkPartition(p int32) error {
	if p < 0 || p >= l.partitions {
		return fmt.Errorf("memlog: partition %d out of range [0, %d): %w", p, l.partitions, rlmm.ErrInvalidArgument)
	}
	return nil
}

// Publish appends a copy of value to partition and returns its offset.
func (l *Log) Publish(ctx context.Context, partition int32, value []byte) (int64, error) {
	if err := l.checkPartition(partition); err != nil {
		return 0, err
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	v := make([]byte, len(value))
	copy(v, value)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return 0, fmt.Errorf("memlog: publish: %w", rlmm.ErrClosed)
	}
	off := int64(len(l.records[partition]))
	l.records[partition] = append(l.records[partition], v)
	close(l.appended)
	l.appended = make(chan struct{})
	return off, nil
}

// HighWaterMarks returns the next offset of each given partition.
func (l *Log) HighWaterMarks(ctx context.Context, partitions []int32) ([]int64, error) {
	return l.offsets(ctx, "high-water marks", partitions, func(p int32) int64 { return int64(len(l.records[p])) })
}

// StartOffsets returns the log start offset of each given partition: 0
// unless DeleteRecordsBefore moved it.
func (l *Log) StartOffsets(ctx context.Context, partitions []int32) ([]int64, error) {
	return l.offsets(ctx, "start offsets", partitions, func(p int32) int64 { return l.start[p] })
}

// offsets checks the partitions, then reads one offset of each under mu.
func (l *Log) offsets(ctx context.Context, what string, partitions []int32, of func(p int32) int64) ([]int64, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for _, p := range partitions {
		if err := l.checkPartition(p); err != nil {
			return nil, err
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, fmt.Errorf("memlog: %s: %w", what, rlmm.ErrClosed)
	}
	out := make([]int64, len(partitions))
	for i, p := range partitions {
		out[i] = of(p)
	}
	return out, nil
}

// DeleteRecordsBefore deletes the records of partition below offset, as
// Kafka's retention or DeleteRecords does: the log start offset becomes
// offset (an offset past the high-water mark is an rlmm.ErrInvalidArgument;
// one below the current start changes nothing). Offsets of later records
// do not change. It is for tests of a log whose history is gone.
func (l *Log) DeleteRecordsBefore(ctx context.Context, partition int32, offset int64) error {
	if err := l.checkPartition(partition); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return fmt.Errorf("memlog: delete records: %w", rlmm.ErrClosed)
	}
	if hw := int64(len(l.records[partition])); offset < 0 || offset > hw {
		return fmt.Errorf("memlog: delete records of partition %d before offset %d: outside [0, %d]: %w", partition, offset, hw, rlmm.ErrInvalidArgument)
	}
	for o := l.start[partition]; o < offset; o++ {
		l.records[partition][o] = nil
	}
	l.start[partition] = max(l.start[partition], offset)
	return nil
}

// Subscribe returns a subscription that consumes no partition yet.
func (l *Log) Subscribe(ctx context.Context) (eventlog.Subscription, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, fmt.Errorf("memlog: subscribe: %w", rlmm.ErrClosed)
	}
	return cursor.New("memlog", l.checkPartition, l.collect), nil
}

// Close releases the log; blocked Polls return rlmm.ErrClosed. Records are
// dropped with the log. Close is idempotent.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.closed {
		l.closed = true
		close(l.appended)
	}
	return nil
}

// collect is the cursor.Collect of the log's subscriptions: it reads up to
// maxPollRecords available records straight from the log's slices at the
// subscription's next offsets, buffering nothing, so Add and Remove are
// exact by construction. With nothing available it returns the channel to
// wait on.
func (l *Log) collect(next iter.Seq2[int32, int64]) ([]eventlog.Record, <-chan struct{}, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, nil, fmt.Errorf("memlog: poll: log %w", rlmm.ErrClosed)
	}
	var recs []eventlog.Record
	var size int
	for p, from := range next {
		part := l.records[p]
		// Below the log start: deliver from the start (the gap shows in
		// the first offset delivered).
		for o := max(from, l.start[p]); o < int64(len(part)) && len(recs) < maxPollRecords; o++ {
			recs = append(recs, eventlog.Record{Partition: p, Offset: o, Value: part[o]})
			size += len(part[o])
		}
	}
	if len(recs) == 0 {
		return nil, l.appended, nil
	}
	// One allocation holds the receiver's copies; capped sub-slices keep an
	// append by the receiver from spilling into its neighbour.
	buf := make([]byte, 0, size)
	for i := range recs {
		start := len(buf)
		buf = append(buf, recs[i].Value...)
		recs[i].Value = buf[start:len(buf):len(buf)]
	}
	return recs, nil, nil
}

package topicbased

import (
	"context"
	"errors"
	"testing"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/eventlog"
)

// tombstoneLog delivers the record at (partition, offset) as a tombstone,
// as kafkalog delivers a record with a null value (the other logs never
// hold one).
type tombstoneLog struct {
	eventlog.Log
	partition int32
	offset    int64
}

func (l *tombstoneLog) Subscribe(ctx context.Context) (eventlog.Subscription, error) {
	s, err := l.Log.Subscribe(ctx)
	if err != nil {
		return nil, err
	}
	return &tombstoneSub{Subscription: s, l: l}, nil
}

type tombstoneSub struct {
	eventlog.Subscription
	l *tombstoneLog
}

func (s *tombstoneSub) Poll(ctx context.Context) ([]eventlog.Record, error) {
	recs, err := s.Subscription.Poll(ctx)
	for i := range recs {
		if recs[i].Partition == s.l.partition && recs[i].Offset == s.l.offset {
			recs[i].Value, recs[i].Tombstone = nil, true
		}
	}
	return recs, err
}

// A tombstone in the metadata topic (KIP-1266's compacted topic holds
// them) is skipped and counted, neither rejected nor listed, and the pump
// goes on (Kafka 4.3's own manager's consumer thread dies on one).
func TestTombstoneIsSkippedAndCounted(t *testing.T) {
	base := newLog(t, 3)
	tp := topicPartition("tomb", 1, 0)
	writer := startManager(t, Config{Log: base})
	assign(t, writer, tp)
	mp := writer.MetadataPartitionOf(tp)
	first := segment(tp, 1, 0, 99)
	addFinished(t, writer, first) // offsets 0 and 1
	m := startManager(t, Config{Log: &tombstoneLog{Log: base, partition: mp, offset: 1}})
	assign(t, m, tp)
	addFinished(t, m, segment(tp, 2, 100, 199))
	s := m.Stats()
	if s.Tombstones != 1 || s.Rejected != 0 {
		t.Errorf("tombstones %d, rejected %d; want 1 and 0", s.Tombstones, s.Rejected)
	}
	for _, r := range m.Rejected() {
		if r.Reason == ReasonTombstone {
			t.Errorf("Rejected lists the tombstone at %d/%d", r.Partition, r.Offset)
		}
	}
	// The tombstone took the place of first's finish: first stays started,
	// the later segment is served.
	if _, ok, err := m.SegmentForOffset(tp, 0, 150); !ok || err != nil {
		t.Errorf("lookup after the tombstone: %v, %v; want the second segment", ok, err)
	}
	if _, ok, err := m.SegmentForOffset(tp, 0, 50); ok || err != nil && !errors.Is(err, rlmm.ErrNotReady) {
		t.Errorf("lookup of the segment whose finish was the tombstone: %v, %v; want no finished segment", ok, err)
	}
}

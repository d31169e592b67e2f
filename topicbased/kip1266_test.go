package topicbased

import (
	"context"
	"encoding/hex"
	"strings"
	"sync"
	"testing"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/eventlog"
	"github.com/rlmm-go/rlmm/wire"
)

// keyedLog delivers its records as a KIP-1266 writer's metadata topic holds
// them: every record keyed with the key its value implies
// (wire.Event.RecordKey), and the records at the offsets of tombstones
// (whatever was published there) as tombstones with the given keys.
type keyedLog struct {
	eventlog.Log
	partition  int32
	mu         sync.Mutex
	tombstones map[int64]string
}

// tombstone makes the record at offset of the log's partition a tombstone
// of key.
func (l *keyedLog) tombstone(offset int64, key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.tombstones[offset] = key
}

func (l *keyedLog) tombstoneKey(partition int32, offset int64) (string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	key, ok := l.tombstones[offset]
	return key, ok && partition == l.partition
}

func (l *keyedLog) Subscribe(ctx context.Context) (eventlog.Subscription, error) {
	s, err := l.Log.Subscribe(ctx)
	if err != nil {
		return nil, err
	}
	return &keyedSub{Subscription: s, l: l}, nil
}

type keyedSub struct {
	eventlog.Subscription
	l *keyedLog
}

func (s *keyedSub) Poll(ctx context.Context) ([]eventlog.Record, error) {
	recs, err := s.Subscription.Poll(ctx)
	for i := range recs {
		r := &recs[i]
		if key, ok := s.l.tombstoneKey(r.Partition, r.Offset); ok {
			r.Value, r.Tombstone, r.Key = nil, true, []byte(key)
			continue
		}
		if ev, err := wire.DecodeEvent(r.Value); err == nil {
			if k, ok := ev.RecordKey(); ok {
				r.Key = []byte(k.String())
			}
		}
	}
	return recs, err
}

// v1Value writes e as record version 1 with the given top-level tagged
// fields (hex), from the spec's layout: version 1 is version 0 with the
// version byte 1 and tagged fields at the end of the record's own struct.
// It takes AppendEvent's version 0 bytes, whose last byte is that empty
// section when the event has no TxnIndexEmpty, and edits them; a decoder
// that read version 1 as version 0, or ignored the tags, fails the tests.
func v1Value(t testing.TB, e wire.Event, tags string) []byte {
	t.Helper()
	if e.Segment.TxnIndexEmpty {
		t.Fatal("v1Value: an event with TxnIndexEmpty does not end with an empty tag section")
	}
	b, err := wire.AppendEvent(nil, &e)
	if err != nil {
		t.Fatal(err)
	}
	if b[2] != 0 || b[len(b)-1] != 0 {
		t.Fatalf("v1Value: %x is not a version 0 record ending with an empty tag section", b)
	}
	b[2] = 1
	tb, err := hex.DecodeString(strings.ReplaceAll(tags, " ", ""))
	if err != nil {
		t.Fatal(err)
	}
	return append(b[:len(b)-1], tb...)
}

// publish appends value to partition p of l and returns its offset.
func publish(t testing.TB, l eventlog.Log, p int32, value []byte) int64 {
	t.Helper()
	o, err := l.Publish(testCtx(t), p, value)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// Records of KIP-1266 (version 1, keyed, with tombstones) in the metadata
// log are applied as version 0 ones by the pump, the keys ignored and the
// tombstones counted, not rejected; and a restart from a snapshot replays a
// tail of them the same way.
func TestKIP1266RecordsAreApplied(t *testing.T) {
	base := newLog(t, 3)
	tp := topicPartition("kip", 1, 0)
	mp := wire.MetadataPartition(tp, 3)
	kl := &keyedLog{Log: base, partition: mp, tombstones: map[int64]string{}}
	noTxn := func(m rlmm.SegmentMetadata) rlmm.SegmentMetadata { m.TxnIndexEmpty = false; return m }
	seg1, seg2, seg3 := noTxn(segment(tp, 1, 0, 99)), noTxn(segment(tp, 2, 100, 199)), noTxn(segment(tp, 3, 200, 299))
	const epochTag = "01 01 04 00000007"                                           // segment: BrokerLeaderEpoch 7
	updTags := func(end string) string { return "02 00 04 00000007 01 08 " + end } // update: epoch 7, EndOffset
	keyOf := func(m rlmm.SegmentMetadata, update bool) string {
		return wire.RecordKey{TopicIDPartition: tp, EndOffset: m.EndOffset, BrokerLeaderEpoch: 7, Update: update}.String()
	}
	v0 := func(e wire.Event) []byte {
		b, err := wire.AppendEvent(nil, &e)
		must(t, err)
		return b
	}
	// tombstoneNext publishes a placeholder the log delivers as a tombstone
	// of key (registered first, so a running manager never sees it as is).
	tombstoneNext := func(key string) {
		kl.tombstone(hwm(t, base, mp), key)
		publish(t, base, mp, []byte("replaced by a tombstone"))
	}
	publish(t, base, mp, v1Value(t, wire.SegmentEvent(seg1), epochTag))
	publish(t, base, mp, v1Value(t, wire.UpdateEvent(update(seg1, rlmm.CopySegmentFinished)), updTags("0000000000000063")))
	publish(t, base, mp, v1Value(t, wire.SegmentEvent(seg2), epochTag))
	publish(t, base, mp, v0(wire.UpdateEvent(update(seg2, rlmm.CopySegmentFinished)))) // a version 0 writer beside
	publish(t, base, mp, v1Value(t, wire.UpdateEvent(update(seg1, rlmm.DeleteSegmentStarted)), updTags("0000000000000063")))
	publish(t, base, mp, v1Value(t, wire.UpdateEvent(update(seg1, rlmm.DeleteSegmentFinished)), updTags("0000000000000063")))
	tombstoneNext(keyOf(seg1, true))
	tombstoneNext(keyOf(seg1, false))

	dir := t.TempDir()
	m := startManager(t, Config{Log: kl, SnapshotDir: dir, SnapshotInterval: -1})
	assign(t, m, tp)
	if got, ok, err := m.SegmentForOffset(tp, 0, 150); err != nil || !ok || got.ID != seg2.ID || got.State != rlmm.CopySegmentFinished {
		t.Errorf("offset 150: %v, %v, %v; want segment 2 finished", got, ok, err)
	}
	if segs, err := m.ListSegments(tp); err != nil || len(segs) != 1 {
		t.Errorf("ListSegments: %v, %v; want segment 2 alone (segment 1 deleted)", segs, err)
	}
	s := m.Stats()
	if s.Applied != 6 || s.Tombstones != 2 || s.Rejected != 0 || s.Undecodable != 0 {
		t.Errorf("applied %d, tombstones %d, rejected %d, undecodable %d; want 6, 2, 0, 0", s.Applied, s.Tombstones, s.Rejected, s.Undecodable)
	}
	if r := m.Rejected(); len(r) != 0 {
		t.Errorf("Rejected() = %v; want nothing (a tombstone is not an anomaly)", r)
	}

	must(t, m.WriteSnapshot(testCtx(t)))
	publish(t, base, mp, v1Value(t, wire.SegmentEvent(seg3), epochTag))
	publish(t, base, mp, v1Value(t, wire.UpdateEvent(update(seg3, rlmm.CopySegmentFinished)), updTags("000000000000012b")))
	tombstoneNext(keyOf(seg1, false))
	if err := m.Sync(testCtx(t), tp); err != nil {
		t.Fatal(err)
	}
	must(t, m.Close())

	m2 := startManager(t, Config{Log: kl, SnapshotDir: dir, SnapshotInterval: -1})
	if s := m2.Stats(); s.SnapshotError != nil || s.SnapshotSegments == 0 {
		t.Fatalf("snapshot not loaded: %+v", s)
	}
	assign(t, m2, tp)
	if got, ok, err := m2.SegmentForOffset(tp, 0, 250); err != nil || !ok || got.ID != seg3.ID {
		t.Errorf("after the restart, offset 250: %v, %v, %v; want segment 3", got, ok, err)
	}
	s = m2.Stats()
	if s.Applied != 2 || s.Tombstones != 1 || s.Rejected != 0 || s.Undecodable != 0 {
		t.Errorf("after the restart: applied %d, tombstones %d, rejected %d, undecodable %d; want the tail's 2, 1, 0, 0",
			s.Applied, s.Tombstones, s.Rejected, s.Undecodable)
	}
}

// What rlmm writes is record version 0 with a null key, as every released
// Kafka writes: every record a manager publishes for adds, updates and a
// partition delete, read back from the log.
func TestWritesRecordVersionZeroWithoutKey(t *testing.T) {
	l := newLog(t, 3)
	tp := topicPartition("v0", 1, 0)
	m := startManager(t, Config{Log: l})
	assign(t, m, tp)
	seg := segment(tp, 1, 0, 99)
	addFinished(t, m, seg)
	ctx := testCtx(t)
	must(t, m.UpdateSegment(ctx, update(seg, rlmm.DeleteSegmentStarted)))
	must(t, m.PutPartitionDelete(ctx, rlmm.PartitionDelete{TopicIDPartition: tp, State: rlmm.DeletePartitionMarked, EventTimestampMs: 1, BrokerID: 1}))
	mp := m.MetadataPartitionOf(tp)
	sub, err := l.Subscribe(ctx)
	must(t, err)
	defer sub.Close()
	must(t, sub.Add(mp, 0))
	var recs []eventlog.Record
	for len(recs) < 4 {
		got, err := sub.Poll(ctx)
		must(t, err)
		recs = append(recs, got...)
	}
	for _, r := range recs {
		if r.Key != nil || r.Tombstone {
			t.Errorf("offset %d: key %q, tombstone %v; want a null key and a value", r.Offset, r.Key, r.Tombstone)
		}
		if len(r.Value) < 3 || r.Value[0] != 1 || r.Value[2] != 0 {
			t.Errorf("offset %d: value %x; want frame version 1 and record version 0", r.Offset, r.Value)
		}
		if ev, err := wire.DecodeEvent(r.Value); err != nil || ev.Version != 0 || ev.UnknownTags != nil {
			t.Errorf("offset %d: %v, %v; want a version 0 event", r.Offset, ev.String(), err)
		}
	}
}

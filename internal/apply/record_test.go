package apply

import (
	"errors"
	"testing"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/eventlog"
	"github.com/rlmm-go/rlmm/memory"
	"github.com/rlmm-go/rlmm/wire"
)

// Record's rules, one row each: what is applied, skipped or refused, and
// that a partition not kept is skipped before its event is decoded. Each
// row also goes through Prepare and ApplyPrepared, with Prepare's guess
// decoding nothing and everything, into one Prepared reused row after row:
// the same decision, whatever was read ahead.
func TestRecordRules(t *testing.T) {
	const n = 5
	tp := rlmm.TopicIDPartition{TopicID: rlmm.UuidFromBits(1, 2), Topic: "rules", Partition: 3}
	home := wire.MetadataPartition(tp, n)
	seg := rlmm.SegmentMetadata{ID: rlmm.SegmentID{TopicIDPartition: tp, ID: rlmm.UuidFromBits(5, 5)},
		EndOffset: 9, LeaderEpochs: []rlmm.EpochStart{{Epoch: 0}}, SizeInBytes: 1, State: rlmm.CopySegmentStarted}
	ev := wire.SegmentEvent(seg)
	good, err := wire.AppendEvent(nil, &ev)
	if err != nil {
		t.Fatal(err)
	}
	// The partition reads cleanly, the rest does not.
	badTail := append([]byte(nil), good[:len(good)-3]...)
	upd := wire.UpdateEvent(rlmm.SegmentUpdate{ID: rlmm.SegmentID{TopicIDPartition: tp, ID: rlmm.UuidFromBits(9, 9)}, State: rlmm.CopySegmentFinished})
	unknown, err := wire.AppendEvent(nil, &upd)
	if err != nil {
		t.Fatal(err)
	}
	keepAll := func(wire.PartitionKey) bool { return true }
	keepNone := func(wire.PartitionKey) bool { return false }
	tests := []struct {
		name      string
		partition int32
		value     []byte
		keep      func(wire.PartitionKey) bool
		want      Reason
		sentinel  error
		applied   bool
	}{
		{"applied", home, good, keepAll, 0, nil, true},
		{"kept by nil", home, good, nil, 0, nil, true},
		{"not kept", home, good, keepNone, ReasonNotKept, nil, false},
		{"not kept, skipped before the decode", home, badTail, keepNone, ReasonNotKept, nil, false},
		{"kept, undecodable", home, badTail, keepAll, ReasonUndecodable, rlmm.ErrCorrupt, false},
		{"misrouted, kept", (home + 1) % n, good, keepAll, ReasonMisrouted, rlmm.ErrInvalidArgument, false},
		{"misrouted, not kept", (home + 1) % n, good, keepNone, ReasonMisrouted, rlmm.ErrInvalidArgument, false},
		{"garbage", home, []byte{0xde, 0xad}, keepAll, ReasonUndecodable, rlmm.ErrCorrupt, false},
		{"rejected", home, unknown, keepAll, ReasonRejected, rlmm.ErrUnknownSegment, false},
	}
	var reused Prepared
	paths := []struct {
		name  string
		apply func(cache *memory.Manager, partition int32, value []byte, keep func(wire.PartitionKey) bool) Result
	}{
		{"Record", func(cache *memory.Manager, partition int32, value []byte, keep func(wire.PartitionKey) bool) Result {
			return Record(cache, n, partition, 7, value, keep, nil)
		}},
		{"prepared without a decode", func(cache *memory.Manager, partition int32, value []byte, keep func(wire.PartitionKey) bool) Result {
			rec := &eventlog.Record{Partition: partition, Offset: 7, Value: value}
			Prepare(&reused, rec, keepNone)
			return ApplyPrepared(cache, n, rec, keep, &reused)
		}},
		{"prepared and decoded", func(cache *memory.Manager, partition int32, value []byte, keep func(wire.PartitionKey) bool) Result {
			rec := &eventlog.Record{Partition: partition, Offset: 7, Value: value}
			Prepare(&reused, rec, keepAll)
			return ApplyPrepared(cache, n, rec, keep, &reused)
		}},
	}
	for _, path := range paths {
		for _, tc := range tests {
			t.Run(path.name+"/"+tc.name, func(t *testing.T) {
				cache := memory.New()
				res := path.apply(cache, tc.partition, tc.value, tc.keep)
				checkRule(t, cache, tp, res, tc.want, tc.sentinel, tc.applied)
			})
		}
	}
}

// checkRule fails t unless res is the rule's outcome: reason want, an error
// wrapping sentinel (none when nil), and the segment applied or not.
func checkRule(t *testing.T, cache *memory.Manager, tp rlmm.TopicIDPartition, res Result, want Reason, sentinel error, applied bool) {
	t.Helper()
	if res.Reason != want {
		t.Fatalf("reason %v, want %v (%v)", res.Reason, want, res.Err)
	}
	if sentinel != nil && !errors.Is(res.Err, sentinel) {
		t.Fatalf("error %v, want one wrapping %v", res.Err, sentinel)
	}
	if sentinel == nil && res.Err != nil {
		t.Fatalf("error %v, want none", res.Err)
	}
	list, _ := cache.ListSegments(tp)
	if got := len(list) == 1; got != applied {
		t.Fatalf("applied %v, want %v", got, applied)
	}
}

// A tombstone is named as one and never decoded; LogRecord hands every
// other record to Record.
func TestLogRecordNamesTombstones(t *testing.T) {
	cache := memory.New()
	res := LogRecord(cache, 5, &eventlog.Record{Partition: 2, Offset: 9, Tombstone: true}, nil, nil)
	if res.Reason != ReasonTombstone || res.Err == nil || res.Reason.String() != "tombstone" {
		t.Errorf("tombstone: %v, %v; want ReasonTombstone with an error naming it", res.Reason, res.Err)
	}
	res = LogRecord(cache, 5, &eventlog.Record{Partition: 2, Offset: 10, Value: []byte{}}, nil, nil)
	if res.Reason != ReasonUndecodable {
		t.Errorf("an empty value: %v; want undecodable, not a tombstone", res.Reason)
	}
	var p Prepared
	tomb := &eventlog.Record{Partition: 2, Offset: 11, Tombstone: true}
	Prepare(&p, tomb, func(wire.PartitionKey) bool { return true })
	if res := ApplyPrepared(cache, 5, tomb, nil, &p); res.Reason != ReasonTombstone || res.Err == nil {
		t.Errorf("a prepared tombstone: %v, %v; want ReasonTombstone with an error naming it", res.Reason, res.Err)
	}
}

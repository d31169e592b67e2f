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
// that a partition not kept is skipped before its event is decoded.
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
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cache := memory.New()
			res := Record(cache, n, tc.partition, 7, tc.value, tc.keep, nil)
			if res.Reason != tc.want {
				t.Fatalf("reason %v, want %v (%v)", res.Reason, tc.want, res.Err)
			}
			if tc.sentinel != nil && !errors.Is(res.Err, tc.sentinel) {
				t.Fatalf("error %v, want one wrapping %v", res.Err, tc.sentinel)
			}
			if tc.sentinel == nil && res.Err != nil {
				t.Fatalf("error %v, want none", res.Err)
			}
			list, _ := cache.ListSegments(tp)
			if applied := len(list) == 1; applied != tc.applied {
				t.Fatalf("applied %v, want %v", applied, tc.applied)
			}
		})
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
}

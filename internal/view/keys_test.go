package view

import (
	"slices"
	"testing"
	"time"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/eventlog"
	"github.com/rlmm-go/rlmm/wire"
)

// keyedRecord is a record of a KIP-1266 topic for the key tests: its key
// (nil: none) and its event (nil: a tombstone), its value written as
// record version 1 with a broker leader epoch when v1 is set.
type keyedRecord struct {
	key []byte
	ev  *wire.Event
	v1  *int32
}

// keyOf is the KIP-1266 key of segment n of testTP (end offset end, broker
// leader epoch 7), with ":UPDATE" when update is set.
func keyOf(end int64, update bool) []byte {
	return []byte(wire.RecordKey{TopicIDPartition: testTP, EndOffset: end, BrokerLeaderEpoch: 7, Update: update}.String())
}

// v1Segment writes segment event e as record version 1 with BrokerLeaderEpoch
// ble: version 0's bytes with the version byte 1 and the record's last
// (empty) tagged-field section replaced by tag 1 (4 bytes).
func v1Segment(t *testing.T, e wire.Event, ble int32) []byte {
	t.Helper()
	b := encode(t, e)
	if b[len(b)-1] != 0 {
		t.Fatalf("%x does not end with an empty tagged-field section", b)
	}
	b[2] = 1
	return append(b[:len(b)-1], 1, 1, 4, byte(ble>>24), byte(ble>>16), byte(ble>>8), byte(ble))
}

// The keys a KIP-1266 writer gives records are checked against their
// records, and the keys whose compaction would drop a live segment's
// history are found: two segments under one key (its last record another
// segment's), a tombstone as the last record of a live segment's key.
func TestRecordKeys(t *testing.T) {
	fin := rlmm.CopySegmentFinished
	add := func(n, start, end int64) *wire.Event {
		e := wire.SegmentEvent(seg(n, start, end, rlmm.CopySegmentStarted, 1))
		return &e
	}
	upd := func(n int64, st rlmm.SegmentState) *wire.Event { e := update(n, st, 2); return &e }
	epoch := func(v int32) *int32 { return &v }
	tests := []struct {
		name    string
		records []keyedRecord
		want    []Kind
		// segments are the ids the key anomaly names.
		segments []int64
	}{
		{name: "a segment's lifecycle with its tombstones is clean", records: []keyedRecord{
			{key: keyOf(99, false), ev: add(1, 0, 99)},
			{key: keyOf(99, true), ev: upd(1, fin)},
			{key: keyOf(99, true), ev: upd(1, rlmm.DeleteSegmentStarted)},
			{key: keyOf(99, true), ev: upd(1, rlmm.DeleteSegmentFinished)},
			{key: keyOf(99, true)},
			{key: keyOf(99, false)},
		}},
		{name: "two live segments share a key", records: []keyedRecord{
			{key: keyOf(99, false), ev: add(1, 0, 99)},
			{key: keyOf(99, true), ev: upd(1, fin)},
			{key: keyOf(99, false), ev: add(2, 50, 99)},
			{key: keyOf(99, true), ev: upd(2, fin)},
		}, want: []Kind{SharedRecordKey, SharedRecordKey, Overlap}, segments: []int64{1, 2}},
		{name: "a deleted segment's key reused by the next upload is clean", records: []keyedRecord{
			{key: keyOf(99, false), ev: add(1, 0, 99)},
			{key: keyOf(99, true), ev: upd(1, fin)},
			{key: keyOf(99, true), ev: upd(1, rlmm.DeleteSegmentStarted)},
			{key: keyOf(99, true), ev: upd(1, rlmm.DeleteSegmentFinished)},
			{key: keyOf(99, false), ev: add(2, 0, 99)},
			{key: keyOf(99, true), ev: upd(2, fin)},
		}},
		{name: "a live segment's key tombstoned", records: []keyedRecord{
			{key: keyOf(99, false), ev: add(1, 0, 99)},
			{key: keyOf(99, true), ev: upd(1, fin)},
			{key: keyOf(99, false)},
		}, want: []Kind{TombstonedLiveSegment}, segments: []int64{1}},
		{name: "a tombstone followed by a record of its key is clean", records: []keyedRecord{
			{key: keyOf(99, false)},
			{key: keyOf(99, false), ev: add(1, 0, 99)},
			{key: keyOf(99, true), ev: upd(1, fin)},
		}},
		{name: "a tombstone without a key", records: []keyedRecord{{}}, want: []Kind{TombstoneRecord}},
		{name: "a tombstone whose key is not a KIP-1266 key", records: []keyedRecord{{key: []byte("k")}}, want: []Kind{TombstoneRecord}},
		{name: "a key that does not parse", records: []keyedRecord{
			{key: []byte("nope"), ev: add(1, 0, 99)},
		}, want: []Kind{RecordKeyMismatch}},
		{name: "a key of another end offset", records: []keyedRecord{
			{key: keyOf(98, false), ev: add(1, 0, 99)},
		}, want: []Kind{RecordKeyMismatch}},
		{name: "an update keyed without :UPDATE", records: []keyedRecord{
			{key: keyOf(99, false), ev: add(1, 0, 99)},
			{key: keyOf(99, false), ev: upd(1, fin)},
		}, want: []Kind{RecordKeyMismatch}},
		{name: "version 1 with the key's broker leader epoch", records: []keyedRecord{
			{key: keyOf(99, false), ev: add(1, 0, 99), v1: epoch(7)},
		}},
		{name: "version 1 with another broker leader epoch than the key's", records: []keyedRecord{
			{key: keyOf(99, false), ev: add(1, 0, 99), v1: epoch(8)},
		}, want: []Kind{RecordKeyMismatch}},
		{name: "unkeyed records (what released Kafka and rlmm write) are not followed", records: []keyedRecord{
			{ev: add(1, 0, 99)}, {ev: upd(1, fin)}, {ev: add(2, 0, 99)}, {ev: upd(2, fin)},
		}, want: []Kind{Overlap}},
	}
	home := wire.MetadataPartition(testTP, metadataPartitions)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := NewBuilder(metadataPartitions)
			tombstones := 0
			for i, r := range tt.records {
				rec := eventlog.Record{Partition: home, Offset: int64(i), Key: r.key}
				switch {
				case r.ev == nil:
					rec.Tombstone = true
					tombstones++
				case r.v1 != nil:
					rec.Value = v1Segment(t, *r.ev, *r.v1)
				default:
					rec.Value = encode(t, *r.ev)
				}
				if _, err := b.Apply(rec); err != nil {
					t.Fatalf("record %d: %v", i, err)
				}
			}
			got := b.Anomalies(b.NewestEventMs(), time.Hour)
			mustEqualKinds(t, got, tt.want...)
			if c := b.Counts(); c.Tombstones != int64(tombstones) || c.Rejected != 0 || c.Undecodable != 0 {
				t.Errorf("counts %+v; want %d tombstones, nothing rejected or undecodable", c, tombstones)
			}
			for _, a := range got {
				switch a.Kind {
				case SharedRecordKey, TombstonedLiveSegment:
					if a.Warning || a.Record == nil || a.TopicIDPartition != testTP.String() {
						t.Errorf("%+v: want a failure naming the key's last record and %s", a, testTP)
					}
					var want []string
					for _, n := range tt.segments {
						want = append(want, segID(n).ID.String())
					}
					if !slices.Equal(a.SegmentIDs, want) {
						t.Errorf("%s names segments %v, want %v", a.Kind, a.SegmentIDs, want)
					}
				case RecordKeyMismatch, TombstoneRecord:
					if !a.Warning {
						t.Errorf("%+v: want a warning", a)
					}
				}
			}
		})
	}
}

// A misrouted event is returned decoded (inspect --events prints it), not
// as a zero event, though it is not applied.
func TestApplyReturnsMisroutedEvent(t *testing.T) {
	b := NewBuilder(metadataPartitions)
	other := (wire.MetadataPartition(testTP, metadataPartitions) + 1) % metadataPartitions
	want := wire.SegmentEvent(seg(1, 0, 99, rlmm.CopySegmentStarted, 1))
	got, err := b.Apply(eventlog.Record{Partition: other, Offset: 0, Value: encode(t, want)})
	if err != nil || !got.Equal(&want) {
		t.Errorf("Apply of a misrouted event = %s, %v; want %s", got.String(), err, want.String())
	}
	if c := b.Counts(); c.Misrouted != 1 || c.Segments != 0 {
		t.Errorf("counts %+v; want 1 misrouted, not applied", c)
	}
}

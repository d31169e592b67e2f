package view

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/eventlog"
	"github.com/rlmm-go/rlmm/eventlog/memlog"
	"github.com/rlmm-go/rlmm/wire"
)

func TestBuilderStreamRules(t *testing.T) {
	fin, started := rlmm.CopySegmentFinished, rlmm.CopySegmentStarted
	home := wire.MetadataPartition(testTP, metadataPartitions)
	other := (home + 1) % metadataPartitions
	// input is one record: an event, or raw bytes when ev is nil, in a partition.
	type input struct {
		ev        *wire.Event
		raw       []byte
		partition int32
	}
	ev := func(e wire.Event) input { return input{ev: &e, partition: home} }
	add := func(m rlmm.SegmentMetadata) input { return ev(wire.SegmentEvent(m)) }
	tests := []struct {
		name     string
		inputs   []input
		want     []Kind
		warnings int
		rejected int64
		live     int
	}{
		{name: "a clean lifecycle", inputs: []input{add(seg(1, 0, 99, started, 1)), ev(update(1, fin, 2)),
			ev(update(1, rlmm.DeleteSegmentStarted, 3)), ev(update(1, rlmm.DeleteSegmentFinished, 4))}, live: 0},
		{name: "garbage bytes are undecodable", inputs: []input{{raw: []byte("not a metadata record"), partition: 2}},
			want: []Kind{UndecodableRecord}},
		{name: "an empty record is undecodable", inputs: []input{{raw: []byte{}, partition: 0}}, want: []Kind{UndecodableRecord}},
		{name: "an invalid transition is rejected and changes nothing", inputs: []input{add(seg(1, 0, 99, started, 1)),
			ev(update(1, fin, 2)), ev(update(1, rlmm.DeleteSegmentFinished, 3))},
			want: []Kind{RejectedEvent}, rejected: 1, live: 1},
		{name: "an update of an unknown segment is rejected", inputs: []input{ev(update(9, fin, 2))},
			want: []Kind{RejectedEvent}, rejected: 1},
		{name: "an add of a finished segment id again is rejected", inputs: []input{add(seg(1, 0, 99, started, 1)),
			ev(update(1, fin, 2)), add(seg(1, 0, 99, started, 3))}, want: []Kind{RejectedEvent}, rejected: 1, live: 1},
		// Reported and not applied: no broker reads it (the pump's own rule,
		// through the same internal/apply.Record).
		{name: "an event in the wrong metadata partition", inputs: []input{{ev: ptr(wire.SegmentEvent(seg(1, 0, 99, started, 1))), partition: other}},
			want: []Kind{MisroutedEvent}, live: 0},
		{name: "metadata failing Sanity is a warning", inputs: []input{
			add(seg(1, 0, 99, started, 1, rlmm.EpochStart{Epoch: 0, StartOffset: 5}))},
			want: []Kind{SanityWarning}, warnings: 1, live: 1},
		{name: "partition delete in order", inputs: []input{ev(partitionDelete(rlmm.DeletePartitionMarked)),
			ev(partitionDelete(rlmm.DeletePartitionStarted)), ev(partitionDelete(rlmm.DeletePartitionFinished))}},
		{name: "partition delete skipping MARKED is a warning", inputs: []input{ev(partitionDelete(rlmm.DeletePartitionStarted))},
			want: []Kind{PartitionDeleteOrder}, warnings: 1},
		{name: "partition delete going back is a warning", inputs: []input{ev(partitionDelete(rlmm.DeletePartitionMarked)),
			ev(partitionDelete(rlmm.DeletePartitionStarted)), ev(partitionDelete(rlmm.DeletePartitionMarked))},
			want: []Kind{PartitionDeleteOrder}, warnings: 1},
		{name: "a snapshot record in the topic is a warning", inputs: []input{{ev: ptr(wire.Event{Key: wire.KeySnapshot,
			Segment: rlmm.SegmentMetadata{ID: segID(3), StartOffset: 0, EndOffset: 9, LeaderEpochs: []rlmm.EpochStart{{Epoch: 0, StartOffset: 0}}}}), partition: 1}},
			want: []Kind{SnapshotRecord}, warnings: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := NewBuilder(metadataPartitions)
			for i, in := range tc.inputs {
				value := in.raw
				if in.ev != nil {
					value = encode(t, *in.ev)
				}
				b.Apply(eventlog.Record{Partition: in.partition, Offset: int64(i), Value: value})
			}
			got := b.StreamAnomalies()
			mustEqualKinds(t, got, tc.want...)
			warnings := 0
			for _, a := range got {
				if a.Warning {
					warnings++
				}
				if a.Record == nil {
					t.Fatalf("stream anomaly %v names no record", a)
				}
			}
			if warnings != tc.warnings || b.Counts().Rejected != tc.rejected {
				t.Fatalf("warnings %d, rejected %d; want %d, %d (%v)", warnings, b.Counts().Rejected, tc.warnings, tc.rejected, got)
			}
			if n := len(b.Segments(testTP)); n != tc.live {
				t.Fatalf("%d live segments, want %d", n, tc.live)
			}
			if b.Counts().Records != int64(len(tc.inputs)) {
				t.Fatalf("counted %d records, want %d", b.Counts().Records, len(tc.inputs))
			}
		})
	}
}

func TestBuilderRejectedEventNamesRecordAndSegment(t *testing.T) {
	b := NewBuilder(metadataPartitions)
	home := wire.MetadataPartition(testTP, metadataPartitions)
	b.Apply(eventlog.Record{Partition: home, Offset: 41, Value: encode(t, update(7, rlmm.CopySegmentFinished, 1))})
	got := b.StreamAnomalies()
	mustEqualKinds(t, got, RejectedEvent)
	a := got[0]
	if a.Record == nil || a.Record.Partition != home || a.Record.Offset != 41 || len(a.SegmentIDs) != 1 ||
		a.SegmentIDs[0] != segID(7).ID.String() || a.TopicIDPartition != testTP.String() {
		t.Fatalf("anomaly %+v does not name partition %d offset 41 and segment %s", a, home, segID(7).ID)
	}
}

func TestBuilderSummaryAndAnomalies(t *testing.T) {
	b := NewBuilder(metadataPartitions)
	home := wire.MetadataPartition(testTP, metadataPartitions)
	const hour = int64(time.Hour / time.Millisecond)
	events := []wire.Event{
		wire.SegmentEvent(seg(1, 0, 99, rlmm.CopySegmentStarted, 0)), update(1, rlmm.CopySegmentFinished, 1),
		wire.SegmentEvent(seg(2, 100, 249, rlmm.CopySegmentStarted, 2, rlmm.EpochStart{Epoch: 0, StartOffset: 100}, rlmm.EpochStart{Epoch: 2, StartOffset: 200})),
		update(2, rlmm.CopySegmentFinished, 3),
		wire.SegmentEvent(seg(3, 250, 299, rlmm.CopySegmentStarted, 4, rlmm.EpochStart{Epoch: 2, StartOffset: 250})),
		wire.SegmentEvent(seg(4, 400, 499, rlmm.CopySegmentStarted, 5, rlmm.EpochStart{Epoch: 2, StartOffset: 400})),
		update(4, rlmm.CopySegmentFinished, 6),
		partitionDelete(rlmm.DeletePartitionMarked),
		// A late event moves the reference time two hours on.
		update(4, rlmm.DeleteSegmentStarted, 2*hour),
	}
	for i, e := range events {
		b.Apply(eventlog.Record{Partition: home, Offset: int64(i), Value: encode(t, e)})
	}
	if got := b.Partitions(); len(got) != 1 || got[0] != testTP {
		t.Fatalf("Partitions() = %v, want [%s]", got, testTP)
	}
	s := b.Summary(testTP)
	want := map[string]int{"COPY_SEGMENT_FINISHED": 2, "COPY_SEGMENT_STARTED": 1, "DELETE_SEGMENT_STARTED": 1}
	if len(s.SegmentsByState) != len(want) || s.SegmentsByState["COPY_SEGMENT_FINISHED"] != 2 ||
		s.SegmentsByState["COPY_SEGMENT_STARTED"] != 1 || s.SegmentsByState["DELETE_SEGMENT_STARTED"] != 1 {
		t.Fatalf("SegmentsByState = %v, want %v", s.SegmentsByState, want)
	}
	if s.RemoteBytes != 400 || s.StartOffset != 0 || s.EndOffset != 249 || s.DeleteState != "DELETE_PARTITION_MARKED" || s.MetadataPartition != home {
		t.Fatalf("summary %+v", s)
	}
	if len(s.Epochs) != 2 || s.Epochs[0] != (EpochSummary{0, 199}) || s.Epochs[1].Epoch != 2 || s.Epochs[1].HighestOffset < 249 {
		t.Fatalf("epochs %v, want 0:199 and 2:>=249", s.Epochs)
	}
	if b.NewestEventMs() != 2*hour {
		t.Fatalf("NewestEventMs = %d, want %d", b.NewestEventMs(), 2*hour)
	}
	// Segment 3 (copy started at 4 ms) is stuck two hours later; segment 4's
	// delete has just started; there is a gap between 2 and 4 in epoch 2 only
	// while 4 is finished, and it no longer is.
	got := b.Anomalies(b.NewestEventMs(), time.Hour)
	mustEqualKinds(t, got, StuckCopy)
	if got[0].SegmentIDs[0] != segID(3).ID.String() {
		t.Fatalf("stuck copy names %v, want segment 3", got[0].SegmentIDs)
	}
}

func TestReadLogStopsAtTheHighWaterMarksSampledAtStart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	log := memlog.New(3)
	defer log.Close()
	for i := range 10 {
		if _, err := log.Publish(ctx, int32(i%2), []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
	}
	var total int64 = -1
	var seen []eventlog.Record
	n, err := ReadLog(ctx, log, func(p Plan) { total = p.Total }, func(r eventlog.Record) error {
		seen = append(seen, r)
		if len(seen) == 1 {
			// Appended after the start: not read.
			if _, err := log.Publish(ctx, 0, []byte{99}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if total != 10 || n != 10 || len(seen) != 10 {
		t.Fatalf("total %d, read %d, seen %d; want 10 each", total, n, len(seen))
	}
	for p := range int32(2) {
		var offs []int64
		for _, r := range seen {
			if r.Partition == p {
				offs = append(offs, r.Offset)
			}
		}
		if !slices.Equal(offs, []int64{0, 1, 2, 3, 4}) {
			t.Fatalf("partition %d offsets %v, want 0..4 in order", p, offs)
		}
	}
}

func TestReadLogOfAnEmptyLog(t *testing.T) {
	log := memlog.New(2)
	defer log.Close()
	n, err := ReadLog(context.Background(), log, nil, func(eventlog.Record) error {
		t.Fatal("no record expected")
		return nil
	})
	if err != nil || n != 0 {
		t.Fatalf("ReadLog = %d, %v; want 0, nil", n, err)
	}
}

// A tombstone (a record with a null value) is a warning naming it, counted,
// never "undecodable".
func TestBuilderNamesTombstones(t *testing.T) {
	b := NewBuilder(metadataPartitions)
	if _, err := b.Apply(eventlog.Record{Partition: 1, Offset: 4, Tombstone: true}); err != nil {
		t.Fatalf("a tombstone is not a decode error: %v", err)
	}
	got := b.StreamAnomalies()
	mustEqualKinds(t, got, TombstoneRecord)
	if !got[0].Warning || got[0].Record == nil || got[0].Record.Offset != 4 {
		t.Errorf("anomaly %+v; want a warning naming offset 4", got[0])
	}
	if c := b.Counts(); c.Tombstones != 1 || c.Undecodable != 0 {
		t.Errorf("counts %+v; want 1 tombstone, 0 undecodable", c)
	}
}

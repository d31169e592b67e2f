package rebuild

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/eventlog"
	"github.com/rlmm-go/rlmm/eventlog/memlog"
	"github.com/rlmm-go/rlmm/internal/view"
	"github.com/rlmm-go/rlmm/rebuild/rebuildtest"
	"github.com/rlmm-go/rlmm/scrub/layout"
	"github.com/rlmm-go/rlmm/scrub/scrubtest"
	"github.com/rlmm-go/rlmm/scrub/store"
	"github.com/rlmm-go/rlmm/wire"
)

const metadataPartitions = 7

func realisticLocal(t *testing.T, f *scrubtest.Fixture, root string) {
	t.Helper()
	if err := rebuildtest.WriteLocal(f, root); err != nil {
		t.Fatal(err)
	}
}

func write(t *testing.T, root, key string, b []byte) {
	t.Helper()
	path := filepath.Join(root, filepath.FromSlash(key))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func scan(t *testing.T, l layout.Layout, root, topic string) *Found {
	t.Helper()
	d, err := store.NewDir(root)
	if err != nil {
		t.Fatal(err)
	}
	f, err := Scan(context.Background(), ScanOptions{Layout: l, Store: d, Opener: DirOpener{Root: root}, Topic: topic})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func known(t *testing.T, log eventlog.Log) *Known {
	t.Helper()
	k, err := ReadKnown(context.Background(), log)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// finished reads log into a view and returns every live segment by id.
func finished(t *testing.T, log eventlog.Log) map[rlmm.Uuid]rlmm.SegmentMetadata {
	t.Helper()
	b := view.NewBuilder(log.Partitions())
	_, err := view.ReadLog(context.Background(), log, nil, func(rec eventlog.Record) error {
		if _, err := b.Apply(rec); err != nil {
			t.Errorf("metadata partition %d offset %d: %v", rec.Partition, rec.Offset, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if a := b.StreamAnomalies(); len(a) > 0 {
		t.Errorf("the view reports anomalies: %+v", a)
	}
	out := map[rlmm.Uuid]rlmm.SegmentMetadata{}
	for _, tp := range b.Partitions() {
		for _, m := range b.Segments(tp) {
			out[m.ID.ID] = m
		}
	}
	return out
}

// TestPlanLocal: LocalTieredStorage's files of 12 segments, a metadata log
// that names some of them in every state, a partition deleted, one
// segment with an index missing and one with a truncated log. The plan
// publishes STARTED and FINISHED for exactly the unknown complete segments,
// each to its partition's metadata partition, with the metadata the
// broker had recorded (but broker id and event time, the rebuild's);
// applied, the metadata log holds them finished, and a second plan is
// empty.
func TestPlanLocal(t *testing.T) {
	l, err := layout.New(layout.LocalName, layout.Options{})
	if err != nil {
		t.Fatal(err)
	}
	f := scrubtest.New(scrubtest.Options{Layout: l, Topics: 2, PartitionsPerTopic: 2, SegmentsPerPartition: 3})
	root := t.TempDir()
	realisticLocal(t, f, root)
	// The metadata log still names three segments (one in each state but
	// STARTED, which the last test covers), and partition 1 of topic 1 was
	// deleted.
	ctx := context.Background()
	log := memlog.New(metadataPartitions)
	defer log.Close()
	knownSegs := []*scrubtest.Segment{f.Segments[0], f.Segments[4], f.Segments[7]}
	f.Segments[4].Meta.State = rlmm.DeleteSegmentStarted
	f.Segments[7].Meta.State = rlmm.DeleteSegmentFinished
	if err := f.Publish(ctx, log, knownSegs...); err != nil {
		t.Fatal(err)
	}
	deletedTP := f.Partitions[3]
	del := wire.PartitionDeleteEvent(rlmm.PartitionDelete{TopicIDPartition: deletedTP, State: rlmm.DeletePartitionMarked, BrokerID: 1, EventTimestampMs: 5})
	b, err := wire.AppendEvent(nil, &del)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := log.Publish(ctx, wire.MetadataPartition(deletedTP, metadataPartitions), b); err != nil {
		t.Fatal(err)
	}
	// Segment 1 lost its offset index; segment 2's log is cut in its second batch.
	incomplete, truncated := f.Segments[1], f.Segments[2]
	if err := os.Remove(filepath.Join(root, filepath.FromSlash(l.Key(incomplete.TP, &incomplete.Meta, layout.LocalIndex)))); err != nil {
		t.Fatal(err)
	}
	truncKey := l.Key(truncated.TP, &truncated.Meta, layout.LocalLog)
	if err := os.Truncate(filepath.Join(root, filepath.FromSlash(truncKey)), 61+16*7+30); err != nil {
		t.Fatal(err)
	}

	found := scan(t, l, root, "")
	now := time.Now().UnixMilli()
	opts := PlanOptions{BrokerID: -1, EventTimestampMs: now, MetadataPartitions: metadataPartitions}
	plan := MakePlan(found, known(t, log), opts)

	want := map[rlmm.Uuid]*scrubtest.Segment{}
	for _, s := range f.Segments {
		if s.TP != deletedTP && !slices.Contains(knownSegs, s) && s != incomplete && s != truncated {
			want[s.Meta.ID.ID] = s
		}
	}
	if len(plan.Steps) != len(want) || plan.Summary.Events != 2*len(want) {
		t.Fatalf("plan of %d steps, %d events; want %d steps: %+v", len(plan.Steps), plan.Summary.Events, len(want), plan.Summary)
	}
	for _, st := range plan.Steps {
		s := want[st.Meta.ID.ID]
		if s == nil {
			t.Fatalf("planned segment %s, not one to rebuild", st.SegmentID)
		}
		w := s.Meta
		w.BrokerID, w.EventTimestampMs, w.State = -1, now, rlmm.CopySegmentFinished
		if !st.Meta.Equal(&w) {
			t.Errorf("rebuilt %v\n   want %v", st.Meta, w)
		}
		if st.MetadataPartition != wire.MetadataPartition(s.TP, metadataPartitions) {
			t.Errorf("segment %s to metadata partition %d", st.SegmentID, st.MetadataPartition)
		}
		if !slices.Equal(st.Events, []string{"COPY_SEGMENT_STARTED", "COPY_SEGMENT_FINISHED"}) || st.Resume || len(st.Warnings) > 0 {
			t.Errorf("step %+v", st)
		}
	}
	var reasons []string
	for _, sk := range plan.Skipped {
		reasons = append(reasons, sk.Reason+" "+sk.State)
	}
	slices.Sort(reasons)
	wantReasons := []string{"known COPY_SEGMENT_FINISHED", "known DELETE_SEGMENT_FINISHED", "known DELETE_SEGMENT_STARTED",
		"partition_deleted DELETE_PARTITION_MARKED", "partition_deleted DELETE_PARTITION_MARKED", "partition_deleted DELETE_PARTITION_MARKED"}
	if !slices.Equal(reasons, wantReasons) {
		t.Errorf("skipped %v, want %v", reasons, wantReasons)
	}
	if len(plan.Problems) != 2 {
		t.Fatalf("problems %+v, want the incomplete and the truncated segment", plan.Problems)
	}
	for _, p := range plan.Problems {
		switch p.SegmentID {
		case incomplete.Meta.ID.ID.String():
			if !strings.Contains(p.Detail, "incomplete: no .index object") {
				t.Errorf("incomplete: %s", p.Detail)
			}
		case truncated.Meta.ID.ID.String():
			if !strings.Contains(p.Detail, truncKey+": byte 173: truncated batch") {
				t.Errorf("truncated: %s", p.Detail)
			}
		default:
			t.Errorf("problem %+v", p)
		}
	}

	var published []Published
	n, err := Apply(ctx, log, plan, func(p Published) { published = append(published, p) })
	if err != nil || n != plan.Summary.Events || len(published) != n {
		t.Fatalf("Apply: %d events, %d reported, %v", n, len(published), err)
	}
	for i, p := range published {
		if p.MetadataPartition != p.Step.MetadataPartition || (i%2 == 0) != (p.Event == "COPY_SEGMENT_STARTED") {
			t.Errorf("published %d: %+v", i, p)
		}
	}
	live := finished(t, log)
	for id, s := range want {
		got, ok := live[id]
		w := s.Meta
		w.BrokerID, w.EventTimestampMs, w.State = -1, now, rlmm.CopySegmentFinished
		if !ok || !got.Equal(&w) {
			t.Errorf("after Apply the log holds %v\n                      want %v", got, w)
		}
	}
	again := MakePlan(scan(t, l, root, ""), known(t, log), opts)
	if len(again.Steps) != 0 || again.Summary.Known != len(want)+3 {
		t.Errorf("second plan: %+v", again.Summary)
	}
	// --topic keeps one topic.
	one := scan(t, l, root, f.Partitions[0].Topic)
	for _, s := range one.Segments {
		if s.Meta.ID.TopicIDPartition.Topic != f.Partitions[0].Topic {
			t.Errorf("topic filter kept %v", s.Meta.ID)
		}
	}
	if len(one.Segments) != 4 { // 6, less the incomplete and the truncated
		t.Errorf("topic %s: %d segments", f.Partitions[0].Topic, len(one.Segments))
	}
}

// TestPlanResume: a rebuild interrupted between a segment's STARTED and
// FINISHED leaves it COPY_SEGMENT_STARTED by broker -1; the next plan
// publishes its FINISHED only. A copy a broker started is left alone.
func TestPlanResume(t *testing.T) {
	l, _ := layout.New(layout.LocalName, layout.Options{})
	f := scrubtest.New(scrubtest.Options{Layout: l, Topics: 1, PartitionsPerTopic: 1, SegmentsPerPartition: 2})
	root := t.TempDir()
	realisticLocal(t, f, root)
	ctx := context.Background()
	log := memlog.New(metadataPartitions)
	defer log.Close()
	opts := PlanOptions{BrokerID: -1, EventTimestampMs: 42, MetadataPartitions: metadataPartitions}
	plan := MakePlan(scan(t, l, root, ""), known(t, log), opts)
	// Publish the first event only (the rebuild stops there).
	cut := *plan
	cut.Steps = []Step{plan.Steps[0]}
	cut.Steps[0].encoded = cut.Steps[0].encoded[:1]
	if _, err := Apply(ctx, log, &cut, nil); err != nil {
		t.Fatal(err)
	}
	// The second segment: a copy broker 3 started.
	add := f.Segments[1].Meta
	add.State, add.BrokerID = rlmm.CopySegmentStarted, 3
	ev := wire.SegmentEvent(add)
	b, _ := wire.AppendEvent(nil, &ev)
	if _, err := log.Publish(ctx, wire.MetadataPartition(f.Segments[1].TP, metadataPartitions), b); err != nil {
		t.Fatal(err)
	}
	plan = MakePlan(scan(t, l, root, ""), known(t, log), opts)
	if len(plan.Steps) != 1 || !plan.Steps[0].Resume || !slices.Equal(plan.Steps[0].Events, []string{"COPY_SEGMENT_FINISHED"}) ||
		plan.Steps[0].Meta.ID != f.Segments[0].Meta.ID {
		t.Fatalf("plan %+v", plan.Steps)
	}
	if len(plan.Skipped) != 1 || plan.Skipped[0].State != "COPY_SEGMENT_STARTED" {
		t.Fatalf("skipped %+v", plan.Skipped)
	}
	if _, err := Apply(ctx, log, plan, nil); err != nil {
		t.Fatal(err)
	}
	if live := finished(t, log); live[f.Segments[0].Meta.ID.ID].State != rlmm.CopySegmentFinished {
		t.Fatalf("after resuming: %v", live[f.Segments[0].Meta.ID.ID])
	}
	// Another broker id (a second rebuild with --broker-id -2) does not
	// finish the first one's copy... and nobody finishes a broker's.
	opts.BrokerID = -2
	if p := MakePlan(scan(t, l, root, ""), known(t, log), opts); len(p.Steps) != 0 {
		t.Fatalf("plan %+v", p.Steps)
	}
	// Apply refuses a log of another partition count.
	other := memlog.New(3)
	defer other.Close()
	if _, err := Apply(ctx, other, plan, nil); err == nil || !strings.Contains(err.Error(), "7 partitions, this one has 3") {
		t.Fatalf("Apply to 3 partitions: %v", err)
	}
}

// TestPlanAiven: Aiven's objects of 6 segments under a prefix, their
// manifests recording the metadata; the plan rebuilds it exactly (size from
// the chunk index, not the compressed log's), and a manifest without
// metadata, or one naming another segment, is a problem.
func TestPlanAiven(t *testing.T) {
	l, err := layout.New(layout.AivenName, layout.Options{Prefix: "tiered/"})
	if err != nil {
		t.Fatal(err)
	}
	f := scrubtest.New(scrubtest.Options{Layout: l, Topics: 1, PartitionsPerTopic: 2, SegmentsPerPartition: 3})
	root := t.TempDir()
	for i, s := range f.Segments {
		s.Meta.MaxTimestampMs += int64(i) * 1000
		s.Meta.TxnIndexEmpty = i%2 == 0
		s.Meta.LeaderEpochs = append(s.Meta.LeaderEpochs, rlmm.EpochStart{Epoch: 4, StartOffset: s.Meta.StartOffset + 50})
		for _, o := range s.Objects {
			content := scrubtest.Content(o.Size)
			if strings.HasSuffix(o.Key, ".rsm-manifest") {
				content = aivenManifest(&s.Meta, int64(s.Meta.SizeInBytes))
				switch i {
				case 4:
					content = []byte(`{"version":"1","chunkIndex":{"originalFileSize":5},"segmentIndexes":{},"compression":false}`)
				case 5:
					other := f.Segments[0].Meta
					content = aivenManifest(&other, 1)
				}
			}
			write(t, root, o.Key, content)
		}
	}
	write(t, root, "tiered/README", []byte("not a segment"))
	log := memlog.New(metadataPartitions)
	defer log.Close()
	found := scan(t, l, root, "")
	if found.Ignored != 1 {
		t.Errorf("ignored %d keys, want the README", found.Ignored)
	}
	plan := MakePlan(found, known(t, log), PlanOptions{BrokerID: -1, EventTimestampMs: 9, MetadataPartitions: metadataPartitions})
	if len(plan.Steps) != 4 || len(plan.Problems) != 2 {
		t.Fatalf("%d steps, problems %+v", len(plan.Steps), plan.Problems)
	}
	for i, st := range plan.Steps {
		w := f.Segments[i].Meta
		w.BrokerID, w.EventTimestampMs, w.State = -1, 9, rlmm.CopySegmentFinished
		if !st.Meta.Equal(&w) {
			t.Errorf("rebuilt %v\n   want %v", st.Meta, w)
		}
	}
	if !strings.Contains(plan.Problems[0].Detail, "no remoteLogSegmentMetadata") ||
		!strings.Contains(plan.Problems[1].Detail, "the manifest names segment "+f.Segments[0].Meta.ID.ID.String()) {
		t.Errorf("problems %+v", plan.Problems)
	}
	if _, err := Apply(context.Background(), log, plan, nil); err != nil {
		t.Fatal(err)
	}
	if live := finished(t, log); len(live) != 4 {
		t.Errorf("%d live segments after Apply", len(live))
	}
}

// TestKnownOddRecords: a tombstone and an undecodable record are counted,
// not taken for segments, and the plan warns that a segment only an
// undecodable record names looks unknown.
func TestKnownOddRecords(t *testing.T) {
	k := NewKnown()
	k.Observe(eventlog.Record{Partition: 2, Offset: 5, Tombstone: true})
	k.Observe(eventlog.Record{Partition: 3, Offset: 9, Value: []byte{0, 1, 2}})
	k.Observe(eventlog.Record{Partition: 3, Offset: 10, Value: nil})
	if k.Records != 3 || k.Tombstones != 1 || k.Undecodable != 2 || k.Segments() != 0 ||
		!strings.HasPrefix(k.FirstUndecodable, "metadata partition 3 offset 9: ") {
		t.Fatalf("known %+v", k)
	}
	p := MakePlan(&Found{}, k, PlanOptions{BrokerID: -1, MetadataPartitions: 5})
	if len(p.Warnings) != 1 || !strings.Contains(p.Warnings[0], "2 records of the metadata log could not be decoded (the first at metadata partition 3 offset 9") {
		t.Fatalf("warnings %q", p.Warnings)
	}
}

// TestKnownReadsKIP1266Records: a keyed record of version 1 (KIP-1266)
// names its segment as one of version 0 does, and its keyed tombstone is
// counted, not taken for a segment.
func TestKnownReadsKIP1266Records(t *testing.T) {
	tp := rlmm.TopicIDPartition{TopicID: rlmm.UuidFromBits(3, 4), Topic: "t", Partition: 0}
	m := rlmm.SegmentMetadata{ID: rlmm.SegmentID{TopicIDPartition: tp, ID: rlmm.UuidFromBits(5, 6)}, EndOffset: 9,
		LeaderEpochs: []rlmm.EpochStart{{Epoch: 0, StartOffset: 0}}, SizeInBytes: 1, State: rlmm.CopySegmentStarted}
	ev := wire.SegmentEvent(m)
	v0, err := wire.AppendEvent(nil, &ev)
	if err != nil {
		t.Fatal(err)
	}
	// Version 1: the version byte 1, and the record's own tagged fields
	// (empty in version 0's last byte) BrokerLeaderEpoch 2 (tag 1).
	v1 := append(append([]byte{}, v0[:len(v0)-1]...), 1, 1, 4, 0, 0, 0, 2)
	v1[2] = 1
	key := []byte("AAAAAAAAAAMAAAAAAAAABA:t:0:9:2")
	k := NewKnown()
	k.Observe(eventlog.Record{Partition: 0, Offset: 0, Value: v1, Key: key})
	k.Observe(eventlog.Record{Partition: 0, Offset: 1, Tombstone: true, Key: key})
	if k.Records != 2 || k.Undecodable != 0 || k.Tombstones != 1 || k.Segments() != 1 {
		t.Fatalf("known %+v; want the version 1 segment and one tombstone", k)
	}
}

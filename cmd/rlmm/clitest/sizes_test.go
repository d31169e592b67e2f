package clitest

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/eventlog/filelog"
	"github.com/rlmm-go/rlmm/wire"
)

// inspect --sizes sums what remote storage holds per topic and partition
// (segments not DELETE_SEGMENT_FINISHED), names the oldest remote offset
// and data, and prices it per GiB-month; its flags are refused where they
// mean nothing.
func TestInspectSizes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "log")
	l, err := filelog.Open(dir, filelog.Options{Partitions: 6})
	if err != nil {
		t.Fatal(err)
	}
	_ = l.Close()
	a0 := rlmm.TopicIDPartition{TopicID: rlmm.UuidFromBits(1, 1), Topic: "alpha", Partition: 0}
	a1 := rlmm.TopicIDPartition{TopicID: rlmm.UuidFromBits(1, 1), Topic: "alpha", Partition: 1}
	b0 := rlmm.TopicIDPartition{TopicID: rlmm.UuidFromBits(2, 2), Topic: "beta", Partition: 0}
	var recs []planted
	add := func(md rlmm.SegmentMetadata, states ...rlmm.SegmentState) {
		recs = append(recs, eventRecord(t, wire.SegmentEvent(md), 6))
		for _, s := range states {
			recs = append(recs, eventRecord(t, wire.UpdateEvent(rlmm.SegmentUpdate{ID: md.ID, State: s, EventTimestampMs: 1}), 6))
		}
	}
	fin := rlmm.CopySegmentFinished
	add(newSegment(a0, 100, 199, 5000), fin)
	add(newSegment(a0, 200, 299, 6000), fin)
	add(newSegment(a0, 0, 99, 4000), fin, rlmm.DeleteSegmentStarted, rlmm.DeleteSegmentFinished) // gone
	add(newSegment(a1, 50, 149, 3000), fin)
	add(newSegment(a1, 150, 249, 7000)) // being copied: occupies storage, not the oldest data
	add(newSegment(b0, 10, 19, 9000), fin)
	publish(t, dir, recs)

	args := []string{"inspect", "--dir", dir, "--sizes", "--by-partition", "--price-per-gb-month", "524288", "--json", "-q"}
	r := run(t, t.TempDir(), args...)
	mustCode(t, r, 0, args...)
	var doc struct {
		Total struct {
			Partitions, Segments int
			RemoteBytes          int64
			OldestTimestampMs    int64
			MonthlyCost          float64
		}
		Rows []struct {
			Topic                string
			Partition            int32
			Partitions, Segments int
			RemoteBytes          int64
			OldestOffset         int64
			OldestTimestampMs    int64
			MonthlyCost          float64
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("inspect --sizes --json: %v\n%s", err, r.stdout)
	}
	type row struct {
		topic          string
		partition      int32
		parts, segs    int
		bytes, off, ts int64
	}
	want := []row{
		{"alpha", -1, 2, 4, 4000, 50, 3000},
		{"alpha", 0, 1, 2, 2000, 100, 5000},
		{"alpha", 1, 1, 2, 2000, 50, 3000},
		{"beta", -1, 1, 1, 1000, 10, 9000},
		{"beta", 0, 1, 1, 1000, 10, 9000},
	}
	if len(doc.Rows) != len(want) {
		t.Fatalf("%d rows, want %d:\n%s", len(doc.Rows), len(want), r.stdout)
	}
	for i, w := range want {
		g := doc.Rows[i]
		got := row{g.Topic, g.Partition, g.Partitions, g.Segments, g.RemoteBytes, g.OldestOffset, g.OldestTimestampMs}
		if got != w {
			t.Errorf("row %d: %+v, want %+v", i, got, w)
		}
		// 2^19 per GiB-month: the estimate is the bytes / 2^11, exactly.
		if wantCost := float64(w.bytes) / 2048; g.MonthlyCost != wantCost {
			t.Errorf("row %d: monthly cost %v, want %v", i, g.MonthlyCost, wantCost)
		}
	}
	if doc.Total.Partitions != 3 || doc.Total.Segments != 5 || doc.Total.RemoteBytes != 5000 || doc.Total.OldestTimestampMs != 3000 {
		t.Errorf("total %+v; want 3 partitions, 5 segments, 5000 bytes, oldest data at 3000", doc.Total)
	}

	text := run(t, t.TempDir(), "inspect", "--dir", dir, "--sizes", "-q")
	mustCode(t, text, 0)
	if !strings.Contains(text.stdout, "alpha") || !strings.Contains(text.stdout, "(all)") || strings.Contains(text.stdout, "PER MONTH") {
		t.Errorf("text view without a price:\n%s", text.stdout)
	}
	for _, bad := range [][]string{
		{"inspect", "--dir", dir, "--by-partition"},
		{"inspect", "--dir", dir, "--sizes", "--price-per-gb-month", "-1"},
		{"inspect", "--dir", dir, "--sizes", "--price-per-gb-month", "NaN"},
		{"inspect", "--dir", dir, "--sizes", "--segments"},
	} {
		r := run(t, t.TempDir(), bad...)
		mustCode(t, r, 2, bad...)
		if !strings.Contains(r.stderr, "--") {
			t.Errorf("rlmm %v: %q names no flag", bad, r.stderr)
		}
	}
}

package clitest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/wire"
)

func TestSimulateSmallWritesAJSONReport(t *testing.T) {
	_, rep := simulate(t)
	if !rep.OK || len(rep.Differences) != 0 || rep.Rejected != 0 {
		t.Fatalf("simulation not clean: ok %v, differences %v, rejected %d", rep.OK, rep.Differences, rep.Rejected)
	}
	if rep.Partitions != 12 || rep.Brokers != 3 || rep.MetadataPartitions != 6 {
		t.Fatalf("sizes %d partitions, %d brokers, %d metadata partitions; want 12, 3, 6", rep.Partitions, rep.Brokers, rep.MetadataPartitions)
	}
	if rep.Events < rep.Mutations || rep.Mutations == 0 || rep.MutationLatency.Count != rep.Mutations {
		t.Fatalf("events %d, mutations %d, latency samples %d", rep.Events, rep.Mutations, rep.MutationLatency.Count)
	}
	if rep.MutationsPerSec <= 0 || rep.LookupsPerSec <= 0 || rep.Lookups == 0 {
		t.Fatalf("rates missing: %.0f mutations/s, %d lookups at %.0f/s", rep.MutationsPerSec, rep.Lookups, rep.LookupsPerSec)
	}
	l := rep.MutationLatency
	if !(0 < l.P50Us && l.P50Us <= l.P99Us && l.P99Us <= l.MaxUs) {
		t.Fatalf("mutation latency percentiles out of order: %+v", l)
	}
	if rep.Restart.EventsTotal == 0 || rep.Restart.EventsReplayed >= rep.Restart.EventsTotal || rep.Restart.DurationMs <= 0 {
		t.Fatalf("restart %+v: want a partial replay of a non-empty log", rep.Restart)
	}
	if rep.SegmentsCopied == 0 || rep.LiveSegments == 0 || rep.HeapBytesPerSeg <= 0 {
		t.Fatalf("copied %d, live %d, heap per segment %.0f", rep.SegmentsCopied, rep.LiveSegments, rep.HeapBytesPerSeg)
	}
	for _, sub := range []string{"log", "brokers/broker-0"} {
		if st, err := os.Stat(filepath.Join(rep.RunDir, sub)); err != nil || !st.IsDir() {
			t.Fatalf("run directory %s lacks %s: %v", rep.RunDir, sub, err)
		}
	}
}

func TestSimulateTextReportAndSecondRun(t *testing.T) {
	work := t.TempDir()
	args := []string{"simulate", "--partitions", "6", "--rounds", "3", "--records-per-segment", "20", "--metadata-partitions", "3", "--quiet"}
	for range 2 { // the second run gets a new run directory beside the first
		r := run(t, work, args...)
		mustCode(t, r, 0, args...)
		for _, want := range []string{"OK: every broker's view matches the model", "mutations", "lookups", "restart", "rejected     0", "rlmm verify --dir"} {
			if !strings.Contains(r.stdout, want) {
				t.Fatalf("report lacks %q:\n%s", want, r.stdout)
			}
		}
	}
	runs, _ := filepath.Glob(filepath.Join(work, "rlmm-data", "run-*"))
	if len(runs) != 2 {
		t.Fatalf("want two run directories, got %v", runs)
	}
}

func TestInspectAndVerifyASimulatedRun(t *testing.T) {
	work, rep := simulate(t)
	args := []string{"inspect", "--json", "--segments", "--quiet"} // default --dir: the newest run in ./rlmm-data
	r := run(t, work, args...)
	mustCode(t, r, 0, args...)
	var doc struct {
		Counts struct {
			Records     int64 `json:"records"`
			Undecodable int64 `json:"undecodable"`
			Rejected    int64 `json:"rejected"`
		} `json:"counts"`
		Partitions []struct {
			Topic       string `json:"topic"`
			DeleteState string `json:"partitionDeleteState"`
			Segments    []struct {
				State string `json:"state"`
			} `json:"segments"`
		} `json:"partitions"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("inspect --json: %v\n%s", err, r.stdout)
	}
	if doc.Counts.Records != rep.Events || doc.Counts.Undecodable != 0 || doc.Counts.Rejected != 0 {
		t.Fatalf("inspect counts %+v, simulate wrote %d events", doc.Counts, rep.Events)
	}
	if len(doc.Partitions) != rep.Partitions {
		t.Fatalf("inspect shows %d partitions, simulate had %d", len(doc.Partitions), rep.Partitions)
	}
	var live int64
	deleted := 0
	for _, p := range doc.Partitions {
		live += int64(len(p.Segments))
		if p.DeleteState == rlmm.DeletePartitionFinished.String() {
			deleted++
			if len(p.Segments) != 0 {
				t.Fatalf("deleted partition of %s still lists %d segments", p.Topic, len(p.Segments))
			}
		}
	}
	if live != rep.LiveSegments || deleted == 0 {
		t.Fatalf("inspect lists %d live segments and %d deleted partitions; simulate ended with %d live segments", live, deleted, rep.LiveSegments)
	}

	args = []string{"inspect", "--dir", rep.RunDir, "--events", "--topic", "topic-0", "--partition", "0", "--quiet"}
	r = run(t, work, args...)
	mustCode(t, r, 0, args...)
	if !strings.Contains(r.stdout, "partition: ") || !strings.Contains(r.stdout, "value: RemoteLogSegmentMetadata{") ||
		strings.Contains(r.stdout, ":topic-1-") {
		t.Fatalf("inspect --events --topic topic-0 printed:\n%s", r.stdout)
	}

	args = []string{"verify", "--dir", filepath.Join(rep.RunDir, "log"), "--quiet"}
	r = run(t, work, args...)
	mustCode(t, r, 0, args...)
	if !strings.Contains(r.stdout, "OK: no anomalies") {
		t.Fatalf("verify printed:\n%s", r.stdout)
	}
}

func TestVerifyFindsPlantedAnomalies(t *testing.T) {
	work, rep := simulate(t)
	logDir := filepath.Join(rep.RunDir, "log")
	now := time.Now().UnixMilli()
	tp := rlmm.TopicIDPartition{TopicID: rlmm.RandomUuid(), Topic: "planted", Partition: 0}
	finished := newSegment(tp, 0, 99, now-3*time.Hour.Milliseconds())
	stuck := newSegment(tp, 100, 199, now-3*time.Hour.Milliseconds())
	toFinished := rlmm.SegmentUpdate{ID: finished.ID, EventTimestampMs: finished.EventTimestampMs + 1, State: rlmm.CopySegmentFinished, BrokerID: 7}
	// FINISHED straight to DELETE_SEGMENT_FINISHED skips DELETE_SEGMENT_STARTED.
	invalid := rlmm.SegmentUpdate{ID: finished.ID, EventTimestampMs: finished.EventTimestampMs + 2, State: rlmm.DeleteSegmentFinished, BrokerID: 7}
	records := []planted{
		eventRecord(t, wire.SegmentEvent(finished), rep.MetadataPartitions),
		eventRecord(t, wire.UpdateEvent(toFinished), rep.MetadataPartitions),
		eventRecord(t, wire.UpdateEvent(invalid), rep.MetadataPartitions),
		{partition: 1, value: []byte("this is not a metadata record")},
		eventRecord(t, wire.SegmentEvent(stuck), rep.MetadataPartitions),
	}
	offsets := publish(t, logDir, records)

	args := []string{"verify", "--dir", logDir, "--json", "--quiet"}
	r := run(t, work, args...)
	mustCode(t, r, 1, args...)
	var doc struct {
		OK           bool `json:"ok"`
		AnomalyCount int  `json:"anomalyCount"`
		Anomalies    []struct {
			Kind       string   `json:"kind"`
			Warning    bool     `json:"warning"`
			SegmentIDs []string `json:"segmentIds"`
			Record     *struct {
				Partition int32 `json:"metadataPartition"`
				Offset    int64 `json:"offset"`
			} `json:"record"`
		} `json:"anomalies"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("verify --json: %v\n%s", err, r.stdout)
	}
	if doc.OK || doc.AnomalyCount != 3 {
		t.Fatalf("verify found %d anomalies (ok %v), want the 3 planted:\n%s", doc.AnomalyCount, doc.OK, r.stdout)
	}
	found := map[string]bool{}
	for _, a := range doc.Anomalies {
		switch a.Kind {
		case "stuck_copy":
			found[a.Kind] = len(a.SegmentIDs) == 1 && a.SegmentIDs[0] == stuck.ID.ID.String()
		case "rejected_event":
			found[a.Kind] = a.Record != nil && a.Record.Partition == records[2].partition && a.Record.Offset == offsets[2] &&
				len(a.SegmentIDs) == 1 && a.SegmentIDs[0] == finished.ID.ID.String()
		case "undecodable_record":
			found[a.Kind] = a.Record != nil && a.Record.Partition == 1 && a.Record.Offset == offsets[3]
		}
	}
	for _, kind := range []string{"stuck_copy", "rejected_event", "undecodable_record"} {
		if !found[kind] {
			t.Fatalf("verify did not report the planted %s correctly:\n%s", kind, r.stdout)
		}
	}

	args = []string{"verify", "--dir", logDir, "--quiet"}
	r = run(t, work, args...)
	mustCode(t, r, 1, args...)
	if !strings.Contains(r.stdout, "segments to clean up") || !strings.Contains(r.stdout, stuck.ID.ID.String()) ||
		!strings.Contains(r.stderr, "3 anomalies") {
		t.Fatalf("verify text output lacks the cleanup list or summary:\nstdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	}
	// A longer threshold leaves the copy alone: only the two record anomalies remain.
	args = []string{"verify", "--dir", logDir, "--stuck-after", "24h", "--json", "--quiet"}
	r = run(t, work, args...)
	mustCode(t, r, 1, args...)
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || doc.AnomalyCount != 2 {
		t.Fatalf("verify --stuck-after 24h: %d anomalies (%v), want 2:\n%s", doc.AnomalyCount, err, r.stdout)
	}
}

func TestBadInputExitsTwoWithAClearMessage(t *testing.T) {
	work := t.TempDir()
	notALog := filepath.Join(work, "not-a-log")
	if err := os.MkdirAll(notALog, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(notALog, "notes.txt"), []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(notALog, "notes.txt")
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"missing directory", []string{"inspect", "--dir", filepath.Join(work, "nope")}, []string{"no directory", "nope"}},
		{"missing default directory", []string{"verify"}, []string{"no directory rlmm-data"}},
		{"not an rlmm log", []string{"verify", "--dir", notALog}, []string{"not an rlmm log", "notes.txt"}},
		{"a file, not a directory", []string{"inspect", "--dir", file}, []string{"not a directory"}},
		{"bad duration", []string{"verify", "--dir", notALog, "--stuck-after", "soon"}, []string{"--stuck-after", "--help"}},
		{"negative threshold", []string{"verify", "--dir", notALog, "--stuck-after", "-1h"}, []string{"--stuck-after", "must be positive"}},
		{"bad reference", []string{"verify", "--stuck-reference", "yesterday"}, []string{"--stuck-reference", "log or now"}},
		{"unknown flag", []string{"inspect", "--colour"}, []string{"unknown flag", "--colour"}},
		{"too few brokers", []string{"simulate", "--brokers", "1", "--dir", filepath.Join(work, "sim")}, []string{"--brokers 1"}},
		{"non-numeric size", []string{"simulate", "--partitions", "many"}, []string{"--partitions"}},
		{"simulate into a foreign directory", []string{"simulate", "--dir", notALog}, []string{"not empty", "notes.txt"}},
		{"both --dir and --kafka", []string{"inspect", "--dir", notALog, "--kafka", "127.0.0.1:1"}, []string{"either --dir or --kafka"}},
		{"unreachable Kafka", []string{"verify", "--kafka", "127.0.0.1:1"}, []string{"127.0.0.1:1", "10s"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, work, tc.args...)
			mustCode(t, r, 2, tc.args...)
			for _, w := range tc.want {
				if !strings.Contains(r.stderr, w) {
					t.Fatalf("rlmm %v: stderr lacks %q:\n%s", tc.args, w, r.stderr)
				}
			}
			if strings.Contains(r.stderr, "goroutine ") || strings.Contains(r.stderr, "panic") {
				t.Fatalf("rlmm %v printed a stack trace:\n%s", tc.args, r.stderr)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(work, "sim")); err == nil {
		t.Fatalf("simulate with bad flags created its data directory")
	}
}

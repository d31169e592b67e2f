package clitest

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestInspectAndVerifyAfterDeleteRecords runs simulate on the real broker,
// deletes the records of one metadata partition entirely and half of
// another (DeleteRecords), and checks that inspect and verify read from the
// log start, finish without waiting out --timeout, say where each history
// starts, and report the events of segments added before it as unknown
// segments (warnings), not as failures.
func TestInspectAndVerifyAfterDeleteRecords(t *testing.T) {
	addr := realBootstrap(t)
	work := t.TempDir()
	topic := "rlmm-clitest-history-" + time.Now().UTC().Format("150405.000000")
	args := []string{"simulate", "--kafka", addr, "--kafka-topic", topic, "--partitions", "6", "--rounds", "3",
		"--records-per-segment", "20", "--metadata-partitions", "3", "--concurrency", "6", "--json", "--quiet"}
	r := run(t, work, args...)
	mustCode(t, r, 0, args...)
	adm := kafkaAdmin(t, addr)
	t.Cleanup(func() { _, _ = adm.DeleteTopic(context.Background(), topic) })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	end := func(p int32) int64 { o, _ := ends.Lookup(topic, p); return o.Offset }
	if end(0) < 4 || end(1) < 1 {
		t.Fatalf("simulate left too few records to delete: %d and %d", end(0), end(1))
	}
	half := end(0) / 2
	deleteRecordsBefore(t, adm, topic, 0, half)
	deleteRecordsBefore(t, adm, topic, 1, end(1))

	// --timeout 1m: a partition with no record left must not be waited for
	// (the read would end with exit status 2 after a minute).
	args = []string{"inspect", "--kafka", addr, "--kafka-topic", topic, "--json", "--quiet", "--timeout", "1m"}
	r = run(t, work, args...)
	mustCode(t, r, 0, args...)
	var doc struct {
		Counts struct {
			Records int64 `json:"records"`
		} `json:"counts"`
		HistoryStarts []struct {
			MetadataPartition int32 `json:"metadataPartition"`
			LogStartOffset    int64 `json:"logStartOffset"`
			HighWaterMark     int64 `json:"highWaterMark"`
		} `json:"historyStarts"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("inspect --json: %v\n%s", err, r.stdout)
	}
	if want := end(0) - half + end(2); doc.Counts.Records != want {
		t.Errorf("inspect read %d records, want the %d left after the log starts", doc.Counts.Records, want)
	}
	if len(doc.HistoryStarts) != 2 || doc.HistoryStarts[0].MetadataPartition != 0 || doc.HistoryStarts[0].LogStartOffset != half ||
		doc.HistoryStarts[1].MetadataPartition != 1 || doc.HistoryStarts[1].LogStartOffset != end(1) || doc.HistoryStarts[1].HighWaterMark != end(1) {
		t.Fatalf("historyStarts %+v, want partition 0 from %d and partition 1 from %d (all deleted)", doc.HistoryStarts, half, end(1))
	}

	args = []string{"inspect", "--kafka", addr, "--kafka-topic", topic, "--quiet", "--timeout", "1m"}
	r = run(t, work, args...)
	mustCode(t, r, 0, args...)
	for _, want := range []string{"history before offset", "of metadata partition 0 is gone", "of metadata partition 1 is gone (every record of it was deleted)", "unknown segments"} {
		if !strings.Contains(r.stdout, want) {
			t.Fatalf("inspect text lacks %q:\n%s", want, r.stdout)
		}
	}

	args = []string{"verify", "--kafka", addr, "--kafka-topic", topic, "--json", "--quiet", "--timeout", "1m"}
	r = run(t, work, args...)
	var ver struct {
		OK        bool `json:"ok"`
		Anomalies []struct {
			Kind    string `json:"kind"`
			Warning bool   `json:"warning"`
		} `json:"anomalies"`
		HistoryStarts []json.RawMessage `json:"historyStarts"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &ver); err != nil {
		t.Fatalf("verify --json: %v\n%s", err, r.stdout)
	}
	kinds := map[string]int{}
	for _, a := range ver.Anomalies {
		kinds[a.Kind]++
		if !a.Warning {
			t.Errorf("verify reports a failure after DeleteRecords: %+v\n%s", a, r.stdout)
		}
	}
	mustCode(t, r, 0, args...)
	if kinds["history_lost"] != 2 || kinds["unknown_segment"] == 0 || len(ver.HistoryStarts) != 2 {
		t.Fatalf("verify: anomaly kinds %v and %d history starts; want 2 history_lost, some unknown_segment, 2 starts", kinds, len(ver.HistoryStarts))
	}
	t.Logf("after DeleteRecords: %d history_lost, %d unknown_segment warnings, 0 failures", kinds["history_lost"], kinds["unknown_segment"])
}

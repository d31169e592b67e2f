package clitest

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
)

// TestSimulateInspectVerifyOverKafka runs the commands against franz-go's
// in-process Kafka (kfake): simulate creates a fresh topic, inspect and
// verify read it back through --kafka.
func TestSimulateInspectVerifyOverKafka(t *testing.T) {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatalf("starting kfake: %v", err)
	}
	defer cluster.Close()
	addr := strings.Join(cluster.ListenAddrs(), ",")
	work := t.TempDir()
	args := []string{"simulate", "--kafka", addr, "--partitions", "6", "--rounds", "3", "--records-per-segment", "20",
		"--metadata-partitions", "4", "--concurrency", "6", "--json", "--quiet"}
	r := run(t, work, args...)
	mustCode(t, r, 0, args...)
	var rep struct {
		simulateReport
		Log string `json:"log"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("simulate --json: %v\n%s", err, r.stdout)
	}
	if !rep.OK || rep.MetadataPartitions != 4 || !strings.Contains(rep.Log, "Kafka topic rlmm-simulate-") {
		t.Fatalf("simulate over Kafka: ok %v, %d metadata partitions, log %q", rep.OK, rep.MetadataPartitions, rep.Log)
	}
	topic := strings.Fields(strings.TrimPrefix(rep.Log, "Kafka topic "))[0]

	args = []string{"inspect", "--kafka", addr, "--kafka-topic", topic, "--json", "--quiet"}
	r = run(t, work, args...)
	mustCode(t, r, 0, args...)
	var doc struct {
		Counts struct {
			Records int64 `json:"records"`
		} `json:"counts"`
		Partitions []json.RawMessage `json:"partitions"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("inspect --kafka --json: %v\n%s", err, r.stdout)
	}
	if doc.Counts.Records != rep.Events || len(doc.Partitions) != rep.Partitions {
		t.Fatalf("inspect --kafka read %d records and %d partitions; simulate wrote %d events over %d partitions",
			doc.Counts.Records, len(doc.Partitions), rep.Events, rep.Partitions)
	}

	args = []string{"verify", "--kafka", addr, "--kafka-topic", topic, "--quiet"}
	r = run(t, work, args...)
	mustCode(t, r, 0, args...)

	// simulate never writes into a topic that holds records.
	args = []string{"simulate", "--kafka", addr, "--kafka-topic", topic, "--quiet"}
	r = run(t, work, args...)
	mustCode(t, r, 2, args...)
	if !strings.Contains(r.stderr, "already holds records") {
		t.Fatalf("simulate into a used topic: %s", r.stderr)
	}

	// Read-only tools never create the topic.
	args = []string{"verify", "--kafka", addr, "--kafka-topic", "no-such-topic", "--quiet"}
	r = run(t, work, args...)
	mustCode(t, r, 2, args...)
	if !strings.Contains(r.stderr, "no topic no-such-topic") {
		t.Fatalf("verify of a missing topic: %s", r.stderr)
	}
}

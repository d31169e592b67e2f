package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/eventlog/kafkalog"
	"github.com/rlmm-go/rlmm/scrub"
	"github.com/rlmm-go/rlmm/scrub/layout"
	"github.com/rlmm-go/rlmm/scrub/scrubtest"
	"github.com/rlmm-go/rlmm/wire"
)

// envRemoteDir is LocalTieredStorage's directory (rsm.config.dir) of the
// tiered-storage broker at RLMM_KAFKA_BOOTSTRAP, as the broker branch's
// scripts/kafka.sh prints it (KAFKA_VERSION=4.3.1 KAFKA_TIERED=1).
const envRemoteDir = "RLMM_KAFKA_REMOTE_DIR"

// TestScrubLocalTieredBroker runs a real tiering run on a Kafka 4.3.1
// broker with LocalTieredStorage (whatever its RLMM: Kafka's own or
// rlmm's plugin), finds `rlmm scrub --layout local` clean, then plants each
// kind of finding in its remote directory and metadata topic, checks each is
// reported exactly, and that --delete-orphans removes only the planted
// orphan. It needs RLMM_KAFKA_BOOTSTRAP and RLMM_KAFKA_REMOTE_DIR:
//
//	KAFKA_VERSION=4.3.1 KAFKA_TIERED=1 scripts/kafka.sh start DIR
//
// prints both; without them the test skips, saying so.
func TestScrubLocalTieredBroker(t *testing.T) {
	bootstrap, remote := os.Getenv("RLMM_KAFKA_BOOTSTRAP"), os.Getenv(envRemoteDir)
	if bootstrap == "" || remote == "" {
		t.Skipf("needs a tiered-storage broker: RLMM_KAFKA_BOOTSTRAP=%q %s=%q (KAFKA_VERSION=4.3.1 KAFKA_TIERED=1 scripts/kafka.sh start DIR prints both)",
			bootstrap, envRemoteDir, remote)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(bootstrap, ",")...), kgo.ProducerBatchMaxBytes(1<<20), kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	topic := fmt.Sprintf("scrub-%d", time.Now().UnixNano())
	configs := map[string]*string{}
	for k, v := range map[string]string{"remote.storage.enable": "true", "segment.bytes": strconv.Itoa(1 << 20),
		"local.retention.bytes": "1", "local.retention.ms": "1000", "file.delete.delay.ms": "100"} {
		configs[k] = &v
	}
	created, err := adm.CreateTopic(ctx, 1, 1, configs, topic)
	if err == nil {
		err = created.Err
	}
	if err != nil {
		t.Fatalf("creating tiered topic %s: %v", topic, err)
	}
	tp := rlmm.TopicIDPartition{TopicID: rlmm.Uuid(created.ID), Topic: topic, Partition: 0}

	// About 5 MiB in 1 MiB segments, uncompressed: four rolled segments get
	// copied.
	for i := 0; i < 5000; i += 500 {
		var recs []*kgo.Record
		for j := 0; j < 500; j++ {
			v := make([]byte, 1000)
			_, _ = rand.Read(v)
			recs = append(recs, &kgo.Record{Topic: topic, Value: v})
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("producing: %v", err)
		}
	}
	args := []string{"--kafka", bootstrap, "--layout", "local", "--remote-dir", remote}
	partitionOf := func(doc scrubJSON) *scrub.PartitionReport {
		for i := range doc.Partitions {
			if doc.Partitions[i].TopicIDPartition == tp.String() {
				return &doc.Partitions[i]
			}
		}
		return nil
	}
	// Clean once the rolled segments are copied and no copy is in flight;
	// partitions of other topics of this broker may hold findings of their
	// own tests, so only this topic's partition is judged.
	var doc scrubJSON
	var errOut string
	deadline := time.Now().Add(4 * time.Minute)
	for {
		var status int
		doc, errOut, status = scrubRun(t, args...)
		if status == exitCouldNotRun {
			t.Fatalf("scrub could not run:\n%s", errOut)
		}
		live := liveSegments(t, bootstrap, tp)
		if p := partitionOf(doc); p == nil && len(live) >= 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no clean tiering run of %s within 4 minutes: %d live segments, findings %+v", tp, len(live), partitionOf(doc))
		}
		time.Sleep(time.Second)
	}
	live := liveSegments(t, bootstrap, tp)
	l, _ := layout.New(layout.LocalName, layout.Options{})
	dir := filepath.Join(remote, "kafka-tiered-storage", l.PartitionDir(tp))
	for _, m := range live {
		for k := range layout.Kind(len(l.Kinds())) {
			st, err := os.Stat(filepath.Join(remote, "kafka-tiered-storage", l.Key(tp, &m, k)))
			if k == layout.LocalTxnIndex {
				continue
			}
			if err != nil {
				t.Fatalf("the broker's own file: %v", err)
			}
			if k == layout.LocalLog && st.Size() != int64(m.SizeInBytes) {
				t.Fatalf("%s: %d bytes, SizeInBytes %d: the local layout's size rule does not hold", st.Name(), st.Size(), m.SizeInBytes)
			}
		}
	}
	t.Logf("clean: %d segments of %s copied by the broker into %s", len(live), tp, dir)

	// Plant one finding of each kind; the started copy is recorded in the
	// metadata topic as a broker whose copy then died would have.
	plant, err := scrubtest.PlantLocal(remote, tp, live)
	if err != nil {
		t.Fatal(err)
	}
	publishStarted(ctx, t, bootstrap, plant.Started)
	doc, errOut, _ = scrubRun(t, args...)
	for _, problem := range plant.Check(partitionOf(doc)) {
		t.Error(problem)
	}
	if t.Failed() {
		t.Fatalf("scrub output:\n%s", errOut)
	}

	// The broker may hold other tests' partitions: only this partition's
	// files are judged, and whatever went elsewhere must have been a
	// deletable orphan of the report.
	before, err := plant.Files()
	if err != nil {
		t.Fatal(err)
	}
	doc, errOut, _ = scrubRun(t, append(args, "--delete-orphans", "--older-than", "1h", "--yes")...)
	if doc.Deletion == nil || doc.Deletion.Result == nil || doc.Deletion.Result.Failed != 0 {
		t.Fatalf("delete: %+v\n%s", doc.Deletion, errOut)
	}
	deletable := map[string]bool{}
	for _, o := range doc.Deletion.Planned {
		deletable[o.Key] = !o.Protected && o.Reason == scrub.ReasonNotInMetadata
	}
	after, err := plant.Files()
	if err != nil {
		t.Fatal(err)
	}
	var gone []string
	for _, k := range before {
		if slices.Contains(after, k) {
			continue
		}
		if strings.HasPrefix(k, l.PartitionDir(tp)+"/") {
			gone = append(gone, k)
		} else if !deletable[k] {
			t.Errorf("deleted %s, not a deletable orphan of the report", k)
		}
	}
	if !slices.Equal(gone, []string{plant.StrayKey}) {
		t.Errorf("deleted %v in %s, want only the planted orphan %s", gone, l.PartitionDir(tp), plant.StrayKey)
	}
}

// liveSegments reads the metadata topic as scrub does (materialize) and
// returns tp's segments in COPY_SEGMENT_FINISHED, by start offset.
func liveSegments(t *testing.T, bootstrap string, tp rlmm.TopicIDPartition) []rlmm.SegmentMetadata {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := kafkalog.Config{BootstrapServers: strings.Split(bootstrap, ","), Topic: kafkalog.DefaultTopic, SkipTopicCreation: true}
	lg, err := kafkalog.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer lg.Close()
	b, err := materialize(ctx, &source{log: lg, name: "metadata"}, time.Minute, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	var live []rlmm.SegmentMetadata
	for _, m := range b.Segments(tp) {
		if m.State == rlmm.CopySegmentFinished {
			live = append(live, m)
		}
	}
	return live
}

// publishStarted writes a COPY_SEGMENT_STARTED event for m into the metadata
// topic, as a broker whose copy then died would have.
func publishStarted(ctx context.Context, t *testing.T, bootstrap string, m rlmm.SegmentMetadata) {
	t.Helper()
	lg, err := kafkalog.Open(ctx, kafkalog.Config{BootstrapServers: strings.Split(bootstrap, ","), Topic: kafkalog.DefaultTopic, SkipTopicCreation: true})
	if err != nil {
		t.Fatal(err)
	}
	defer lg.Close()
	ev := wire.SegmentEvent(m)
	b, err := wire.AppendEvent(nil, &ev)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lg.Publish(ctx, wire.MetadataPartition(m.ID.TopicIDPartition, lg.Partitions()), b); err != nil {
		t.Fatal(err)
	}
}

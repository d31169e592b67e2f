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
	value := make([]byte, 1000)
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

	// Plant: one log deleted, one truncated, one index deleted, a stray file
	// (an id the metadata never saw), a copy left COPY_SEGMENT_STARTED with
	// its files.
	keyOf := func(m *rlmm.SegmentMetadata, k layout.Kind) string { return l.Key(tp, m, k) }
	path := func(key string) string { return filepath.Join(remote, "kafka-tiered-storage", filepath.FromSlash(key)) }
	lost, truncated, partial := live[0], live[1], live[2]
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Remove(path(keyOf(&lost, layout.LocalLog))))
	must(os.Truncate(path(keyOf(&truncated, layout.LocalLog)), 1000))
	must(os.Remove(path(keyOf(&partial, layout.LocalTimeIndex))))
	old := time.Now().Add(-2 * time.Hour)
	stray := rlmm.SegmentMetadata{ID: rlmm.SegmentID{TopicIDPartition: tp, ID: rlmm.RandomUuid()}, StartOffset: 999_999}
	strayKey := keyOf(&stray, layout.LocalLog)
	must(os.WriteFile(path(strayKey), value, 0o644))
	must(os.Chtimes(path(strayKey), old, old))
	started := rlmm.SegmentMetadata{ID: rlmm.SegmentID{TopicIDPartition: tp, ID: rlmm.RandomUuid()}, StartOffset: 1_000_000,
		EndOffset: 1_000_099, MaxTimestampMs: time.Now().UnixMilli(), BrokerID: 1, EventTimestampMs: time.Now().UnixMilli(),
		LeaderEpochs: []rlmm.EpochStart{{Epoch: 0, StartOffset: 1_000_000}}, SizeInBytes: 1000, State: rlmm.CopySegmentStarted, TxnIndexEmpty: true}
	var startedKeys []string
	for k := range layout.LocalTxnIndex {
		key := keyOf(&started, k)
		startedKeys = append(startedKeys, key)
		must(os.WriteFile(path(key), value, 0o644))
		must(os.Chtimes(path(key), old, old))
	}
	slices.Sort(startedKeys)
	publishStarted(ctx, t, bootstrap, started)

	doc, errOut, _ = scrubRun(t, args...)
	p := partitionOf(doc)
	if p == nil {
		t.Fatalf("planted findings not reported:\n%s", errOut)
	}
	if len(p.Missing) != 1 || p.Missing[0].SegmentID != lost.ID.ID.String() || p.Missing[0].Keys[0] != keyOf(&lost, layout.LocalLog) {
		t.Errorf("missing = %+v, want segment %s", p.Missing, lost.ID.ID)
	}
	want := []scrub.Mismatch{
		{Kind: scrub.MismatchPartial, SegmentID: partial.ID.ID.String(), MissingKeys: []string{keyOf(&partial, layout.LocalTimeIndex)}},
		{Kind: scrub.MismatchSize, SegmentID: truncated.ID.ID.String(), Key: keyOf(&truncated, layout.LocalLog), Expected: int64(truncated.SizeInBytes), Actual: 1000},
	}
	got := slices.Clone(p.Mismatches)
	slices.SortFunc(got, func(a, b scrub.Mismatch) int { return strings.Compare(a.Kind, b.Kind) })
	if len(got) != 2 || !mismatchEqual(got[0], want[0]) || !mismatchEqual(got[1], want[1]) {
		t.Errorf("mismatches = %+v\nwant %+v", got, want)
	}
	var deletable, protected []string
	for _, o := range p.Orphans {
		switch {
		case o.Reason == scrub.ReasonNotInMetadata:
			deletable = append(deletable, o.Key)
		case o.Reason == scrub.ReasonCopyStarted && o.Protected:
			protected = append(protected, o.Key)
		default:
			t.Errorf("unexpected orphan %+v", o)
		}
	}
	slices.Sort(protected)
	if !slices.Equal(deletable, []string{strayKey}) || !slices.Equal(protected, startedKeys) {
		t.Errorf("orphans: deletable %v (want [%s]), copy_started %v (want %v)", deletable, strayKey, protected, startedKeys)
	}

	before := listTree(t, filepath.Join(remote, "kafka-tiered-storage"))
	doc, errOut, _ = scrubRun(t, append(args, "--delete-orphans", "--older-than", "1h", "--yes")...)
	if doc.Deletion == nil || doc.Deletion.Result == nil || doc.Deletion.Result.Deleted != 1 {
		t.Fatalf("delete: %+v\n%s", doc.Deletion, errOut)
	}
	after := listTree(t, filepath.Join(remote, "kafka-tiered-storage"))
	var gone []string
	for _, k := range before {
		if !slices.Contains(after, k) {
			gone = append(gone, k)
		}
	}
	if !slices.Equal(gone, []string{strayKey}) {
		t.Errorf("deleted %v, want only the planted orphan %s", gone, strayKey)
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

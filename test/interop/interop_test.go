package interop

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/eventlog/kafkalog"
	"github.com/rlmm-go/rlmm/wire"
)

// Kafka's manager writes a workload with its own `workload` subcommand; a
// fresh Kafka manager, rlmm's topic-based manager over kafkalog and the
// in-memory model all see the same partitions, segments, highest offsets and
// lookups.
func TestJavaWritesRlmmReads(t *testing.T) {
	bootstrap := requireInterop(t)
	w := newWorkload(t, "java-writes")
	w.standard(t, 1)
	tps := w.tps(4)

	spec := filepath.Join(t.TempDir(), "workload.json")
	b, err := json.Marshal(w.events)
	must(t, err)
	must(t, os.WriteFile(spec, b, 0o644))
	var res struct {
		Errors  []json.RawMessage `json:"errors"`
		Events  int               `json:"events"`
		Applied int               `json:"applied"`
	}
	runDriver(t, &res, "workload", "--bootstrap", bootstrap, "--metadata-partitions", fmt.Sprint(metadataPartitions),
		"--broker-id", "1", "--topic-id", w.topicID.String(), "--topic", w.topic, "--partitions", "4", "--spec", spec)
	if len(res.Errors) > 0 || res.Applied != len(w.events) {
		t.Fatalf("Kafka's manager applied %d of %d events; errors: %s", res.Applied, len(w.events), res.Errors)
	}

	srv := javaServe(t, bootstrap)
	srv.leadership(t, nil, w.readable(tps))
	t.Cleanup(func() { _ = srv.call(map[string]any{"op": "stopPartitions", "partitions": tpStrings(tps)}, nil) })
	want := rlmmDump(t, memoryReader(w.model), tps)
	javaView := srv.dump(t, tps)
	sameView(t, "the model and Kafka's view of what Kafka wrote", want, javaView)

	m := startRlmm(t, openLog(t, bootstrap))
	rlmmLeadership(t, m, nil, tps)
	sameView(t, "Kafka's and rlmm's views of what Kafka wrote", javaView, rlmmDump(t, topicbasedReader(m), tps))
	n := spotChecks(t, srv, m, w, tps)
	t.Logf("%d events written by Kafka's manager: views equal, %d lookups equal", len(w.events), n)
}

// rlmm's topic-based manager writes the same kind of workload; Kafka's
// manager reads it and sees what rlmm and the model see.
func TestRlmmWritesJavaReads(t *testing.T) {
	bootstrap := requireInterop(t)
	w := newWorkload(t, "rlmm-writes")
	w.standard(t, 2)
	tps := w.tps(4)

	m := startRlmm(t, openLog(t, bootstrap))
	rlmmLeadership(t, m, tps, nil)
	ctx := testCtx(t)
	for i, ev := range w.events {
		if err := applyTo(ctx, m, ev); err != nil {
			t.Fatalf("rlmm event %d (%s): %v", i, ev.String(), err)
		}
	}
	want := rlmmDump(t, memoryReader(w.model), tps)
	sameView(t, "the model and rlmm's view of what rlmm wrote", want, rlmmDump(t, topicbasedReader(m), tps))

	srv := javaServe(t, bootstrap)
	srv.leadership(t, nil, w.readable(tps))
	t.Cleanup(func() { _ = srv.call(map[string]any{"op": "stopPartitions", "partitions": tpStrings(tps)}, nil) })
	eventually(t, "the model and Kafka's view of what rlmm wrote", func() string { return want }, func() string { return srv.dump(t, tps) })
	n := spotChecks(t, srv, m, w, tps)
	t.Logf("%d events written by rlmm: Kafka's view equal, %d lookups equal", len(w.events), n)
}

// Leadership of a partition moves from a Kafka broker to an rlmm one and
// back: each continues the other's segments (finishes the copy in progress,
// deletes old segments, adds its own), and after each move both managers
// converge on the same view, the model's.
func TestLeadershipMovesBetweenJavaAndRlmm(t *testing.T) {
	bootstrap := requireInterop(t)
	w := newWorkload(t, "mixed")
	tp := w.tp(0)
	tps := []rlmm.TopicIDPartition{tp}
	srv := javaServe(t, bootstrap)
	m := startRlmm(t, openLog(t, bootstrap))
	ctx := testCtx(t)

	viaJava := func(from int) {
		for _, ev := range w.events[from:] {
			srv.apply(t, ev)
		}
	}
	viaRlmm := func(from int) {
		for i, ev := range w.events[from:] {
			if err := applyTo(ctx, m, ev); err != nil {
				t.Fatalf("rlmm event %d (%s): %v", from+i, ev.String(), err)
			}
		}
	}
	converge := func(phase string) string {
		want := rlmmDump(t, memoryReader(w.model), tps)
		eventually(t, phase+": Kafka's view and the model", func() string { return want }, func() string { return srv.dump(t, tps) })
		eventually(t, phase+": rlmm's view and the model", func() string { return want },
			func() string { return rlmmDump(t, topicbasedReader(m), tps) })
		return want
	}

	// Phase 1: a Kafka broker leads; rlmm follows.
	srv.leadership(t, tps, nil)
	t.Cleanup(func() { _ = srv.call(map[string]any{"op": "stopPartitions", "partitions": tpStrings(tps)}, nil) })
	rlmmLeadership(t, m, nil, tps)
	from := len(w.events)
	j1 := w.add(t, tp, 0, 99, nil, 1, 0, 0)
	w.update(t, j1, rlmm.CopySegmentFinished, nil, 1)
	j2 := w.add(t, tp, 100, 199, []byte("java"), 1, 0, 100)
	w.update(t, j2, rlmm.CopySegmentFinished, []byte("java-done"), 1)
	j3 := w.add(t, tp, 200, 299, nil, 1, 0, 200, 1, 250)
	viaJava(from)
	converge("Kafka leads")

	// Phase 2: leadership moves to rlmm, which finishes Kafka's copy in
	// progress, deletes Kafka's oldest segment and copies its own.
	srv.leadership(t, nil, tps)
	rlmmLeadership(t, m, tps, nil)
	from = len(w.events)
	w.update(t, j3, rlmm.CopySegmentFinished, nil, 2)
	w.update(t, j1, rlmm.DeleteSegmentStarted, nil, 2)
	w.update(t, j1, rlmm.DeleteSegmentFinished, nil, 2)
	r1 := w.add(t, tp, 300, 399, []byte{}, 2, 1, 300, 2, 350)
	w.update(t, r1, rlmm.CopySegmentFinished, []byte{}, 2)
	r2 := w.add(t, tp, 400, 499, nil, 2, 2, 400)
	viaRlmm(from)
	converge("rlmm leads")

	// Phase 3: back to Kafka, which finishes rlmm's copy, starts deleting
	// its own old segment and copies a new one.
	must(t, m.OnPartitionLeadershipChanges(ctx, nil, tps))
	srv.leadership(t, tps, nil)
	from = len(w.events)
	w.update(t, r2, rlmm.CopySegmentFinished, []byte{9}, 1)
	w.update(t, j2, rlmm.DeleteSegmentStarted, nil, 1)
	j4 := w.add(t, tp, 500, 599, nil, 1, 3, 500)
	w.update(t, j4, rlmm.CopySegmentFinished, nil, 1)
	viaJava(from)
	final := converge("Kafka leads again")

	sameView(t, "Kafka's and rlmm's final views", srv.dump(t, tps), rlmmDump(t, topicbasedReader(m), tps))
	n := spotChecks(t, srv, m, w, tps)
	t.Logf("3 leadership phases, %d events: converged (%d bytes of view), %d lookups equal", len(w.events), len(final), n)
}

// inspectDoc is the part of `rlmm inspect --json` compared with Kafka's dump.
type inspectDoc struct {
	Partitions []struct {
		TopicID         string         `json:"topicId"`
		Topic           string         `json:"topic"`
		Partition       int32          `json:"partition"`
		SegmentsByState map[string]int `json:"segmentsByState"`
		RemoteBytes     int64          `json:"remoteBytes"`
		StartOffset     int64          `json:"startOffset"`
		EndOffset       int64          `json:"endOffset"`
		Epochs          []struct {
			Epoch         int32 `json:"leaderEpoch"`
			HighestOffset int64 `json:"highestOffset"`
		} `json:"leaderEpochs"`
	} `json:"partitions"`
}

// verifyDoc is the part of `rlmm verify --json` the test reads.
type verifyDoc struct {
	OK           bool `json:"ok"`
	AnomalyCount int  `json:"anomalyCount"`
	Anomalies    []struct {
		Kind    string `json:"kind"`
		Warning bool   `json:"warning"`
		Record  *struct {
			Partition int32 `json:"metadataPartition"`
			Offset    int64 `json:"offset"`
		} `json:"record"`
		Detail string `json:"detail"`
	} `json:"anomalies"`
}

// summary is what inspect should print for one partition, computed from
// Kafka's dump.
type summary struct {
	byState    map[string]int
	bytes      int64
	start, end int64
	epochs     map[int32]int64
}

func summarize(t *testing.T, dump string) map[string]summary {
	t.Helper()
	var parts []struct {
		TopicIDPartition      dumpTP        `json:"topicIdPartition"`
		Found                 bool          `json:"found"`
		Segments              []wire.Event  `json:"segments"`
		HighestOffsetForEpoch []dumpHighest `json:"highestOffsetForEpoch"`
	}
	must(t, json.Unmarshal([]byte(dump), &parts))
	out := map[string]summary{}
	for _, p := range parts {
		if !p.Found {
			continue
		}
		s := summary{byState: map[string]int{}, start: -1, end: -1, epochs: map[int32]int64{}}
		for _, ev := range p.Segments {
			seg := ev.Segment
			s.byState[seg.State.String()]++
			s.bytes += int64(seg.SizeInBytes)
			if seg.State == rlmm.CopySegmentFinished {
				if s.start < 0 || seg.StartOffset < s.start {
					s.start = seg.StartOffset
				}
				s.end = max(s.end, seg.EndOffset)
			}
		}
		for _, h := range p.HighestOffsetForEpoch {
			if h.Offset != nil {
				s.epochs[h.Epoch] = *h.Offset
			}
		}
		out[fmt.Sprintf("%s:%s-%d", p.TopicIDPartition.TopicID, p.TopicIDPartition.Topic, p.TopicIDPartition.Partition)] = s
	}
	return out
}

// rlmm inspect and verify read the topic Kafka's manager wrote: inspect's
// numbers are Kafka's, verify finds nothing wrong; a garbage record planted
// in a copy of the topic makes verify exit 1 naming it.
func TestInspectAndVerifyJavaTopic(t *testing.T) {
	bootstrap := requireInterop(t)
	w := newWorkload(t, "inspect")
	w.standard(t, 3)
	tps := w.tps(4)
	srv := javaServe(t, bootstrap)
	srv.leadership(t, tps, nil)
	t.Cleanup(func() { _ = srv.call(map[string]any{"op": "stopPartitions", "partitions": tpStrings(tps)}, nil) })
	for _, ev := range w.events {
		srv.apply(t, ev)
	}
	javaView := srv.dump(t, tps)
	sameView(t, "the model and Kafka's view", rlmmDump(t, memoryReader(w.model), tps), javaView)
	want := summarize(t, javaView)

	out, code := runRlmm(t, "inspect", "--kafka", bootstrap, "--kafka-partitions", fmt.Sprint(metadataPartitions),
		"--topic", w.topic, "--json", "--quiet")
	if code != 0 {
		t.Fatalf("rlmm inspect exited %d:\n%s", code, out)
	}
	var doc inspectDoc
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("inspect --json: %v\n%s", err, out)
	}
	seen := 0
	for _, p := range doc.Partitions {
		key := fmt.Sprintf("%s:%s-%d", p.TopicID, p.Topic, p.Partition)
		ws, ok := want[key]
		if !ok {
			// Kafka forgets a partition whose deletion finished; inspect
			// may still name it, but with nothing in it.
			if len(p.SegmentsByState) != 0 || p.RemoteBytes != 0 {
				t.Errorf("inspect shows %s with segments %v, Kafka has none", key, p.SegmentsByState)
			}
			continue
		}
		seen++
		got := summary{byState: p.SegmentsByState, bytes: p.RemoteBytes, start: p.StartOffset, end: p.EndOffset, epochs: map[int32]int64{}}
		for _, e := range p.Epochs {
			got.epochs[e.Epoch] = e.HighestOffset
		}
		if fmt.Sprint(got) != fmt.Sprint(ws) {
			t.Errorf("inspect %s = %+v; Kafka's dump gives %+v", key, got, ws)
		}
	}
	if seen != len(want) {
		t.Errorf("inspect shows %d of the %d partitions Kafka knows:\n%s", seen, len(want), out)
	}

	// The whole shared topic holds only clean workloads: nothing to report.
	// Segments still copying are old news on a broker reused across runs,
	// hence --stuck-after at its limit, a year.
	verifyArgs := []string{"verify", "--kafka", bootstrap, "--kafka-partitions", fmt.Sprint(metadataPartitions),
		"--stuck-after", "8760h", "--json", "--quiet"}
	out, code = runRlmm(t, verifyArgs...)
	var clean verifyDoc
	if err := json.Unmarshal([]byte(out), &clean); err != nil {
		t.Fatalf("verify --json: %v\n%s", err, out)
	}
	if code != 0 || !clean.OK {
		t.Fatalf("rlmm verify on the topic Kafka wrote exited %d:\n%s", code, out)
	}

	// A garbage record, planted in a copy (Kafka's consumers on the shared
	// topic would choke on it).
	copyTopic, mp, offset := copyWithGarbage(t, bootstrap, w.tp(0))
	out, code = runRlmm(t, append(verifyArgs, "--kafka-topic", copyTopic)...)
	var bad verifyDoc
	if err := json.Unmarshal([]byte(out), &bad); err != nil {
		t.Fatalf("verify --json: %v\n%s", err, out)
	}
	if code != 1 || bad.OK || bad.AnomalyCount != 1 {
		t.Fatalf("rlmm verify with one garbage record exited %d with %d anomalies; want 1 and 1:\n%s", code, bad.AnomalyCount, out)
	}
	named := false
	for _, a := range bad.Anomalies {
		if a.Kind == "undecodable_record" && a.Record != nil && a.Record.Partition == mp && a.Record.Offset == offset {
			named = true
		}
	}
	if !named {
		t.Fatalf("verify does not name the garbage record at metadata partition %d offset %d:\n%s", mp, offset, out)
	}
}

// copyWithGarbage copies every record of __remote_log_metadata into a new
// topic (same partitions, same offsets) and appends one record that is not
// a metadata event to tp's metadata partition; it returns the topic and the
// garbage record's position.
func copyWithGarbage(t *testing.T, bootstrap string, tp rlmm.TopicIDPartition) (string, int32, int64) {
	t.Helper()
	ctx := testCtx(t)
	src := openLog(t, bootstrap)
	topic := fmt.Sprintf("rlmm-interop-copy-%d", time.Now().UnixNano())
	dst, err := kafkalog.Open(ctx, kafkalog.Config{BootstrapServers: []string{bootstrap}, Topic: topic,
		NumPartitions: metadataPartitions, ReplicationFactor: 1, ConnectTimeout: 30 * time.Second})
	must(t, err)
	t.Cleanup(func() { _ = dst.Close() })

	parts := make([]int32, metadataPartitions)
	for i := range parts {
		parts[i] = int32(i)
	}
	hwms, err := src.HighWaterMarks(ctx, parts)
	must(t, err)
	sub, err := src.Subscribe(ctx)
	must(t, err)
	defer func() { _ = sub.Close() }()
	remaining := 0
	for p, h := range hwms {
		if h > 0 {
			must(t, sub.Add(int32(p), 0))
			remaining++
		}
	}
	for remaining > 0 {
		recs, err := sub.Poll(ctx)
		must(t, err)
		for _, r := range recs {
			if r.Offset >= hwms[r.Partition] {
				continue
			}
			off, err := dst.Publish(ctx, r.Partition, r.Value)
			must(t, err)
			if off != r.Offset {
				t.Fatalf("copy of metadata partition %d: offset %d became %d", r.Partition, r.Offset, off)
			}
			if r.Offset == hwms[r.Partition]-1 {
				must(t, sub.Remove(r.Partition))
				remaining--
			}
		}
	}
	mp := wire.MetadataPartition(tp, metadataPartitions)
	offset, err := dst.Publish(ctx, mp, []byte("this is not a remote log metadata record"))
	must(t, err)
	return topic, mp, offset
}

package fault

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/rpc/brokerframe/frametest"
	"github.com/rlmm-go/rlmm/rpc/rlmmpb"
	"github.com/rlmm-go/rlmm/topicbased"
)

// TestDeposedLeaderCannotStartDeletions is the soak's deposed-leader
// failure made deterministic. A partition's leader is cut off from the other
// brokers (faultnet.Partition cuts its broker, not its sidecar's links to
// them); once the cluster has elected another leader, the test asks the
// deposed broker's sidecar, as that broker's RemoteLogManager would while
// it still believes it leads, to start deleting the remote segment at the
// log start. The leader fence must refuse it (NOT_LEADER, nothing recorded,
// counted in the sidecar's rlmm_leader_fence_refusals_total):
// published, it would leave the segment DELETE_SEGMENT_STARTED, which Kafka's
// real leader neither finds in lookups nor moves its log start past, and a reader at
// the log start would get OffsetOutOfRange. After the heal the segment is
// still finished in the metadata topic and a reader at offset 0 gets its
// records.
func TestDeposedLeaderCannotStartDeletions(t *testing.T) {
	fc := requireClusterFaults(t)
	adm := theCluster.admin(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*testTimeout)
	defer cancel()

	// A tiered topic that keeps every segment: only the deposed leader could
	// start deleting one.
	topic := "fence." + uniqueTopic(t)
	cfg := topicConfig()
	keep := "-1"
	cfg["retention.ms"] = &keep
	created, err := adm.CreateTopic(ctx, 1, 3, cfg, topic)
	must(t, err)
	must(t, created.Err)
	waitFullISR(t, adm, topic)
	tp := rlmm.TopicIDPartition{TopicID: rlmm.Uuid(created.ID), Topic: topic, Partition: 0}
	produceSegments(ctx, t, topic, 3<<20)

	// The segment at the log start, as the cluster's own metadata topic has
	// it, read by a manager of the test's.
	md, err := describe(ctx, adm, "__remote_log_metadata")
	must(t, err)
	m := startManager(t, topicbased.Config{Log: openLog(t, theCluster, "__remote_log_metadata", int32(len(md)), nil), ConsumeWait: testTimeout})
	assign(t, m, tp)
	first := waitFinishedAt(ctx, t, m, tp, 0)

	parts, err := describe(ctx, adm, topic)
	must(t, err)
	deposed := parts[0].leader
	sock, err := sidecarSocket(fc.sidecarPid(int(deposed)))
	must(t, err)
	refusals := func() float64 {
		ms, err := fc.scrape(ctx, int(deposed))
		must(t, err)
		return ms["rlmm_leader_fence_refusals_total"]
	}
	refused0 := refusals()
	must(t, fc.net.Partition(int(deposed)))
	healed := false
	heal := func() {
		if !healed {
			healed = true
			must(t, fc.net.Heal())
		}
	}
	t.Cleanup(heal)
	moved, ok := leadersMovedWithin(adm, topic, deposed, time.Minute)
	if !ok {
		t.Fatalf("%s kept node %d as leader for %s after node %d was partitioned from the others", topic, deposed, moved, deposed)
	}
	t.Logf("node %d partitioned from the others; %s had another leader %s later", deposed, topic, moved.Round(time.Millisecond))

	zombie := frametest.New(t, frametest.Dialer("unix", sock, nil), nil)
	_, err = zombie.Call(ctx, rlmmpb.Purpose_PURPOSE_MUTATE, &rlmmpb.BrokerRequest{TimeoutMs: 30_000, Call: &rlmmpb.BrokerRequest_UpdateSegment{
		UpdateSegment: &rlmmpb.UpdateSegmentRequest{Update: &rlmmpb.SegmentUpdate{
			TopicIdPartition: frametest.TopicIDPartition(tp),
			SegmentId:        frametest.UUID(first.ID.ID),
			EventTimestampMs: time.Now().UnixMilli(),
			State:            rlmmpb.SegmentState_DELETE_SEGMENT_STARTED,
			BrokerId:         deposed,
		}}}})
	var refusal *frametest.Error
	switch {
	case err == nil:
		t.Errorf("node %d's sidecar published its deposed broker's start of deleting %s's segment at the log start; want a NOT_LEADER refusal", deposed, topic)
	case !errors.As(err, &refusal) || refusal.Kind() != rlmmpb.ErrorKind_NOT_LEADER:
		t.Errorf("node %d's sidecar, asked by its deposed broker to start deleting %s's segment at the log start: %v, want a NOT_LEADER refusal", deposed, topic, err)
	default:
		if refusal.BrokerError.GetMayBeRecorded() {
			t.Errorf("the refusal says the deletion may be recorded: %v", refusal)
		}
		if !strings.Contains(refusal.BrokerError.GetMessage(), "leader") {
			t.Errorf("the refusal does not say why (the leader): %v", refusal)
		}
		t.Logf("the deposed node %d's deletion start refused: %v", deposed, refusal)
		if got := refusals(); got <= refused0 {
			t.Errorf("node %d's sidecar counts %v refusals (rlmm_leader_fence_refusals_total), %v before: the refusal was not counted", deposed, got, refused0)
		}
	}
	heal()

	must(t, m.Sync(ctx, tp))
	segs, err := m.ListSegments(tp)
	must(t, err)
	for _, s := range segs {
		if s.ID == first.ID && s.State != rlmm.CopySegmentFinished {
			t.Errorf("segment %s at the log start is %s in the metadata topic after the heal, want %s", s.ID.ID, s.State, rlmm.CopySegmentFinished)
		}
	}
	readFromLogStart(ctx, t, topic)
	waitFullISR(t, adm, topic) // the node is back for the tests after this one
}

// produceSegments writes about n bytes to partition 0 of topic, acks=all,
// so that 1 MiB segments roll and tier.
func produceSegments(ctx context.Context, t *testing.T, topic string, n int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(theCluster.bootstrap...), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchMaxBytes(256<<10))
	must(t, err)
	defer cl.Close()
	value := bytes.Repeat([]byte("f"), 8<<10)
	for range n / len(value) {
		cl.Produce(ctx, &kgo.Record{Partition: 0, Value: value}, nil)
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatalf("producing to %s: %v", topic, err)
	}
	results := cl.ProduceSync(ctx, &kgo.Record{Partition: 0, Value: value})
	must(t, results.FirstErr())
}

// waitFinishedAt waits until m, synced, has a COPY_SEGMENT_FINISHED segment
// of tp starting at offset start.
func waitFinishedAt(ctx context.Context, t *testing.T, m *topicbased.Manager, tp rlmm.TopicIDPartition, start int64) rlmm.SegmentMetadata {
	t.Helper()
	for {
		must(t, m.Sync(ctx, tp))
		segs, err := m.ListSegments(tp)
		must(t, err)
		for _, s := range segs {
			if s.StartOffset == start && s.State == rlmm.CopySegmentFinished {
				return s
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no finished remote segment of %s starts at %d: %v", tp, start, segs)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// readFromLogStart reads partition 0 of topic from offset 0 with
// auto.offset.reset=none: its first record, or the test fails.
func readFromLogStart(ctx context.Context, t *testing.T, topic string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(theCluster.bootstrap...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(0)}}),
		kgo.ConsumeResetOffset(kgo.NoResetOffset()), kgo.FetchMaxWait(500*time.Millisecond))
	must(t, err)
	defer cl.Close()
	rctx, cancel := context.WithTimeout(ctx, testTimeout)
	defer cancel()
	for {
		fs := cl.PollFetches(rctx)
		for _, e := range fs.Errors() {
			if errors.Is(e.Err, context.DeadlineExceeded) {
				t.Fatalf("no record of %s-0 read from offset 0 within %s", topic, testTimeout)
			}
			t.Fatalf("reading %s-0 from offset 0 (the log start): %v", topic, e.Err)
		}
		if recs := fs.Records(); len(recs) > 0 {
			if recs[0].Offset != 0 {
				t.Fatalf("the first record read from %s-0 at offset 0 is at offset %d", topic, recs[0].Offset)
			}
			return
		}
	}
}

// sidecarSocket is the Unix socket the sidecar of pid serves (its
// --socket argument).
func sidecarSocket(pid int) (string, error) {
	if pid == 0 {
		return "", errors.New("the node runs no sidecar")
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return "", err
	}
	args := strings.Split(string(b), "\x00")
	for i, a := range args {
		if a == "--socket" && i+1 < len(args) {
			return args[i+1], nil
		}
	}
	return "", fmt.Errorf("sidecar %d has no --socket: %q", pid, args)
}

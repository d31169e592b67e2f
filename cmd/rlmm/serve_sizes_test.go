package main

import (
	"context"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/rpc/brokerframe/frametest"
	"github.com/rlmm-go/rlmm/rpc/rlmmpb"
)

// copySegment has the broker's RLMM publish one segment of size bytes whose
// largest record timestamp is maxTs: COPY_SEGMENT_STARTED, then
// COPY_SEGMENT_FINISHED unless finish is false.
func copySegment(t *testing.T, c *frametest.Client, tp rlmm.TopicIDPartition, start int64, size int32, maxTs int64, finish bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), serveTestTimeout)
	defer cancel()
	ptp := frametest.TopicIDPartition(tp)
	seg := rlmm.RandomUuid()
	id := frametest.UUID(seg)
	if _, err := c.AddSegment(ctx, &rlmmpb.AddSegmentRequest{Segment: &rlmmpb.SegmentMetadata{
		TopicIdPartition: ptp, SegmentId: id, StartOffset: start, EndOffset: start + 49, BrokerId: 1, MaxTimestampMs: maxTs,
		LeaderEpochs: []*rlmmpb.EpochStart{{Epoch: 0, StartOffset: start}}, SegmentSizeInBytes: size,
		State: rlmmpb.SegmentState_COPY_SEGMENT_STARTED,
	}}); err != nil {
		t.Fatalf("AddSegment: %v", err)
	}
	if !finish {
		return
	}
	if _, err := c.UpdateSegment(ctx, &rlmmpb.UpdateSegmentRequest{Update: &rlmmpb.SegmentUpdate{
		TopicIdPartition: ptp, SegmentId: id, State: rlmmpb.SegmentState_COPY_SEGMENT_FINISHED, BrokerId: 1,
	}}); err != nil {
		t.Fatalf("UpdateSegment: %v", err)
	}
}

// TestServeRemoteSizeGauges publishes segments of four topics through a
// real rlmm serve and scrapes its /metrics: the two largest topics (and the
// three largest partitions) have their own series with exact values, the
// rest is summed under _other; a segment still being copied counts in the
// bytes but not in the oldest offset; a partition not hosted is left out.
func TestServeRemoteSizeGauges(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
	dir := shortTemp(t)
	ready := filepath.Join(dir, "ready")
	p := startServe(t, "--dir", filepath.Join(dir, "log"), "--snapshot-dir", filepath.Join(dir, "snap"), "--socket", filepath.Join(dir, "s.sock"),
		"--ready-file", ready, "--metrics-listen", "127.0.0.1:0", "--kafka-partitions", "4",
		"--metrics-topics-limit", "2", "--metrics-partitions-limit", "3", "--metrics-sizes-max-age", "0")
	info := waitFile(t, ready, p.done, &p.stderr)
	c := rpcClient(t, filepath.Join(dir, "s.sock"))
	topic := func(name string, part int32) rlmm.TopicIDPartition {
		return rlmm.TopicIDPartition{TopicID: rlmm.UuidFromBits(int64(name[0]), 7), Topic: name, Partition: part}
	}
	big0, big1, mid, small, tiny, away := topic("big", 0), topic("big", 1), topic("mid", 0), topic("small", 0), topic("tiny", 0), topic("away", 0)
	ctx, cancel := context.WithTimeout(context.Background(), serveTestTimeout)
	defer cancel()
	var leaders []*rlmmpb.TopicIdPartition
	for _, tp := range []rlmm.TopicIDPartition{big0, big1, mid, small, tiny, away} {
		leaders = append(leaders, frametest.TopicIDPartition(tp))
	}
	if _, err := c.OnPartitionLeadershipChanges(ctx, &rlmmpb.LeadershipChangesRequest{Leaders: leaders}); err != nil {
		t.Fatal(err)
	}
	for _, l := range leaders {
		waitReady(t, ctx, c, l)
	}
	copySegment(t, c, big0, 0, 1000, 1_700_000_000_000, true)
	copySegment(t, c, big0, 100, 500, 1_700_000_100_000, true)
	copySegment(t, c, big1, 50, 700, 1_699_999_000_000, true)
	copySegment(t, c, big1, 150, 300, 1_600_000_000_000, false) // in flight: bytes, not oldest
	copySegment(t, c, mid, 10, 900, 1_700_000_200_000, true)
	copySegment(t, c, small, 20, 100, 1_650_000_000_000, true)
	copySegment(t, c, tiny, 30, 50, 1_660_000_000_000, true)
	copySegment(t, c, away, 0, 4000, 1_500_000_000_000, true)
	// away's leadership moves to another broker: its partition is no longer
	// hosted here, and not counted.
	if _, err := c.OnPartitionLeadershipChanges(ctx, &rlmmpb.LeadershipChangesRequest{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.OnStopPartitions(ctx, &rlmmpb.StopPartitionsRequest{Partitions: []*rlmmpb.TopicIdPartition{frametest.TopicIDPartition(away)}}); err != nil {
		t.Fatal(err)
	}

	got := scrapeMetrics(t, "http://"+info["metrics"]+"/metrics")
	want := map[string]float64{
		`rlmm_remote_bytes{topic="big"}`:                                                    2500,
		`rlmm_remote_segments{topic="big"}`:                                                 4,
		`rlmm_remote_partitions{topic="big"}`:                                               2,
		`rlmm_remote_oldest_offset{topic="big"}`:                                            0,
		`rlmm_remote_oldest_timestamp_seconds{topic="big"}`:                                 1_699_999_000,
		`rlmm_remote_bytes{topic="mid"}`:                                                    900,
		`rlmm_remote_segments{topic="mid"}`:                                                 1,
		`rlmm_remote_partitions{topic="mid"}`:                                               1,
		`rlmm_remote_oldest_offset{topic="mid"}`:                                            10,
		`rlmm_remote_oldest_timestamp_seconds{topic="mid"}`:                                 1_700_000_200,
		`rlmm_remote_bytes{topic="_other"}`:                                                 150,
		`rlmm_remote_segments{topic="_other"}`:                                              2,
		`rlmm_remote_partitions{topic="_other"}`:                                            2,
		`rlmm_remote_oldest_timestamp_seconds{topic="_other"}`:                              1_650_000_000,
		`rlmm_remote_partition_bytes{partition="0",topic="big"}`:                            1500,
		`rlmm_remote_partition_segments{partition="0",topic="big"}`:                         2,
		`rlmm_remote_partition_oldest_offset{partition="0",topic="big"}`:                    0,
		`rlmm_remote_partition_oldest_timestamp_seconds{partition="0",topic="big"}`:         1_700_000_000,
		`rlmm_remote_partition_bytes{partition="1",topic="big"}`:                            1000,
		`rlmm_remote_partition_segments{partition="1",topic="big"}`:                         2,
		`rlmm_remote_partition_oldest_offset{partition="1",topic="big"}`:                    50,
		`rlmm_remote_partition_oldest_timestamp_seconds{partition="1",topic="big"}`:         1_699_999_000,
		`rlmm_remote_partition_bytes{partition="0",topic="mid"}`:                            900,
		`rlmm_remote_partition_segments{partition="0",topic="mid"}`:                         1,
		`rlmm_remote_partition_oldest_offset{partition="0",topic="mid"}`:                    10,
		`rlmm_remote_partition_oldest_timestamp_seconds{partition="0",topic="mid"}`:         1_700_000_200,
		`rlmm_remote_partition_bytes{partition="_other",topic="_other"}`:                    150,
		`rlmm_remote_partition_segments{partition="_other",topic="_other"}`:                 2,
		`rlmm_remote_partition_oldest_timestamp_seconds{partition="_other",topic="_other"}`: 1_650_000_000,
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s = %v (present %v), want %v", k, g, ok, v)
		}
	}
	// No other series of the size gauges: not away's, not small's or
	// tiny's own, no oldest offset for _other.
	for k := range got {
		if _, ok := want[k]; !ok && len(k) > len("rlmm_remote_") && k[:len("rlmm_remote_")] == "rlmm_remote_" && k != "rlmm_remote_size_compute_seconds" {
			t.Errorf("unexpected series %s = %v", k, got[k])
		}
	}
	if _, ok := got["rlmm_remote_size_compute_seconds"]; !ok {
		t.Error("no rlmm_remote_size_compute_seconds")
	}
	if code := p.stop(t); code != 0 {
		t.Fatalf("exit %d after stop:\n%s", code, p.stderr.String())
	}
}

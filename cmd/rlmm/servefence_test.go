package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/rpc/brokerframe/frametest"
	"github.com/rlmm-go/rlmm/rpc/rlmmpb"
)

// TestServeFencesADeposedLeader: rlmm serve --broker-id over a 3-broker
// kfake whose leader of payments-1 is another broker refuses the broker's
// COPY_SEGMENT_STARTED (NOT_LEADER, nothing recorded, naming the partition,
// the leader and this broker); once the cluster moves the leadership to
// this broker the next copy goes through at once.
func TestServeFencesADeposedLeader(t *testing.T) {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.SeedTopics(3, "payments"))
	if err != nil {
		t.Fatalf("starting kfake: %v", err)
	}
	defer cluster.Close()
	leader := cluster.LeaderFor("payments", 1)
	self := (leader + 1) % 3
	dir := shortTemp(t)
	props := writeServeProperties(t, dir, strings.Join(cluster.ListenAddrs(), ","))
	socket, ready := filepath.Join(dir, "s.sock"), filepath.Join(dir, "ready")
	p := startServe(t, "--properties", props, "--kafka-topic", "rlmm-fence-test", "--log-dir", filepath.Join(dir, "kafka-logs"),
		"--socket", socket, "--ready-file", ready, "--broker-id", fmt.Sprint(self))
	waitFile(t, ready, p.done, &p.stderr)
	c := rpcClient(t, socket)
	ctx, cancel := context.WithTimeout(context.Background(), serveTestTimeout)
	defer cancel()
	tp := rlmm.TopicIDPartition{TopicID: rlmm.RandomUuid(), Topic: "payments", Partition: 1}
	ptp := frametest.TopicIDPartition(tp)
	if _, err := c.OnPartitionLeadershipChanges(ctx, &rlmmpb.LeadershipChangesRequest{Leaders: []*rlmmpb.TopicIdPartition{ptp}}); err != nil {
		t.Fatalf("OnPartitionLeadershipChanges: %v", err)
	}
	waitReady(t, ctx, c, ptp)
	seg := rlmm.RandomUuid()
	add := &rlmmpb.AddSegmentRequest{Segment: &rlmmpb.SegmentMetadata{
		TopicIdPartition: ptp, SegmentId: frametest.UUID(seg),
		StartOffset: 0, EndOffset: 99, BrokerId: self, LeaderEpochs: []*rlmmpb.EpochStart{{Epoch: 0, StartOffset: 0}}, SegmentSizeInBytes: 100,
		State: rlmmpb.SegmentState_COPY_SEGMENT_STARTED,
	}}
	_, err = c.AddSegment(ctx, add)
	var fe *frametest.Error
	if !errors.As(err, &fe) || fe.Kind() != rlmmpb.ErrorKind_NOT_LEADER || fe.BrokerError.GetMayBeRecorded() {
		t.Fatalf("the add of broker %d (kfake's leader of payments-1 is %d): %v, want NOT_LEADER, not recorded", self, leader, err)
	}
	for _, want := range []string{rlmm.ErrNotLeader.Error(), tp.String(), fmt.Sprintf("broker %d", leader), fmt.Sprintf("this broker %d", self)} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal %q does not name %q", err, want)
		}
	}

	if err := cluster.MoveTopicPartition("payments", 1, self); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AddSegment(ctx, add); err != nil {
		t.Fatalf("the add once broker %d leads: %v", self, err)
	}
	if code := p.stop(t); code != 0 {
		t.Fatalf("exit %d:\n%s", code, p.stderr.String())
	}
}

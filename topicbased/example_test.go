package topicbased_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/eventlog/memlog"
	"github.com/rlmm-go/rlmm/topicbased"
)

// A broker's life with the topic-based manager: start over a log, host
// partitions, copy a segment, read it back, shut down with a snapshot.
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "rlmm-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer func() { _ = os.RemoveAll(dir) }()
	events := memlog.New(50) // filelog.Open or kafkalog.Open in production
	defer func() { _ = events.Close() }()

	m, err := topicbased.Start(ctx, topicbased.Config{Log: events, SnapshotDir: dir})
	if err != nil {
		log.Fatal(err)
	}
	tp := rlmm.TopicIDPartition{TopicID: rlmm.UuidFromBits(1, 2), Topic: "orders", Partition: 3}
	if err := m.OnPartitionLeadershipChanges(ctx, []rlmm.TopicIDPartition{tp}, nil); err != nil {
		log.Fatal(err)
	}
	if err := m.WaitReady(ctx, tp); err != nil {
		log.Fatal(err)
	}

	seg := rlmm.SegmentMetadata{
		ID:          rlmm.SegmentID{TopicIDPartition: tp, ID: rlmm.UuidFromBits(7, 7)},
		StartOffset: 0, EndOffset: 99, LeaderEpochs: []rlmm.EpochStart{{Epoch: 0, StartOffset: 0}},
		SizeInBytes: 1 << 20, State: rlmm.CopySegmentStarted,
	}
	if err := m.AddSegment(ctx, seg); err != nil {
		log.Fatal(err)
	}
	err = m.UpdateSegment(ctx, rlmm.SegmentUpdate{ID: seg.ID, State: rlmm.CopySegmentFinished, BrokerID: 1})
	if err != nil {
		log.Fatal(err)
	}
	found, ok, err := m.SegmentForOffset(tp, 0, 42)
	fmt.Println(ok, err, found.State, found.StartOffset, found.EndOffset)
	fmt.Println("metadata partition", m.MetadataPartitionOf(tp), "of", m.MetadataPartitionCount())

	// An invalid transition fails before anything is published.
	err = m.UpdateSegment(ctx, rlmm.SegmentUpdate{ID: seg.ID, State: rlmm.DeleteSegmentFinished})
	fmt.Println(err != nil)

	if err := m.ShutdownAndFlush(ctx); err != nil {
		log.Fatal(err)
	}
	// Output:
	// true <nil> COPY_SEGMENT_FINISHED 0 99
	// metadata partition 15 of 50
	// true
}

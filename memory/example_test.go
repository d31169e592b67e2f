package memory_test

import (
	"context"
	"fmt"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/memory"
)

// A broker copies two segments of a partition; the second is a re-upload of
// part of the first after a leader change. Fetches find the newest copy
// where both hold the offset, and the older one elsewhere.
func Example() {
	ctx := context.Background()
	m := memory.New()
	defer m.Close()

	tp := rlmm.TopicIDPartition{TopicID: rlmm.UuidFromBits(1, 2), Topic: "orders", Partition: 3}
	copySegment := func(id int64, start, end int64) {
		md := rlmm.SegmentMetadata{
			ID:          rlmm.SegmentID{TopicIDPartition: tp, ID: rlmm.UuidFromBits(0, id)},
			StartOffset: start, EndOffset: end, MaxTimestampMs: -1, BrokerID: 1,
			LeaderEpochs: []rlmm.EpochStart{{Epoch: 0, StartOffset: start}},
			SizeInBytes:  1024, State: rlmm.CopySegmentStarted,
		}
		if err := m.AddSegment(ctx, md); err != nil {
			fmt.Println(err)
		}
		if err := m.UpdateSegment(ctx, rlmm.SegmentUpdate{ID: md.ID, State: rlmm.CopySegmentFinished, BrokerID: 1}); err != nil {
			fmt.Println(err)
		}
	}
	copySegment(1, 0, 100)
	copySegment(2, 50, 80)

	for _, offset := range []int64{60, 90, 101} {
		md, ok, err := m.SegmentForOffset(tp, 0, offset)
		if err != nil {
			fmt.Println(err)
		}
		if ok {
			fmt.Printf("offset %d: segment %s [%d, %d]\n", offset, md.ID.ID, md.StartOffset, md.EndOffset)
		} else {
			fmt.Printf("offset %d: not in remote storage\n", offset)
		}
	}
	high, _, _ := m.HighestOffsetForEpoch(tp, 0)
	fmt.Println("highest offset of epoch 0:", high)

	// A finished segment is delete-started before it can be delete-finished.
	err := m.UpdateSegment(ctx, rlmm.SegmentUpdate{ID: rlmm.SegmentID{TopicIDPartition: tp, ID: rlmm.UuidFromBits(0, 1)}, State: rlmm.DeleteSegmentFinished})
	fmt.Println(err)
	// Output:
	// offset 60: segment AAAAAAAAAAAAAAAAAAAAAg [50, 80]
	// offset 90: segment AAAAAAAAAAAAAAAAAAAAAQ [0, 100]
	// offset 101: not in remote storage
	// highest offset of epoch 0: 100
	// invalid state transition: segment RemoteLogSegmentId{topicIdPartition=AAAAAAAAAAEAAAAAAAAAAg:orders-3, id=AAAAAAAAAAAAAAAAAAAAAQ} cannot go from COPY_SEGMENT_FINISHED to DELETE_SEGMENT_FINISHED
}

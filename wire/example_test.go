package wire_test

import (
	"fmt"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/wire"
)

// Encode a new segment's record, decode it back, and find the metadata
// partition it belongs in (of Kafka's default 50).
func Example() {
	tp := rlmm.TopicIDPartition{TopicID: rlmm.UuidFromBits(1, 2), Topic: "foo", Partition: 3}
	e := wire.SegmentEvent(rlmm.SegmentMetadata{
		ID:          rlmm.SegmentID{TopicIDPartition: tp, ID: rlmm.UuidFromBits(3, 4)},
		StartOffset: 0, EndOffset: 99, BrokerID: 1, MaxTimestampMs: 1000, EventTimestampMs: 2000,
		LeaderEpochs: []rlmm.EpochStart{{Epoch: 0, StartOffset: 0}}, SizeInBytes: 1024,
		State: rlmm.CopySegmentStarted,
	})

	value, err := wire.AppendEvent(nil, &e)
	if err != nil {
		panic(err)
	}
	fmt.Printf("%d bytes: %x...\n", len(value), value[:8])

	back, err := wire.DecodeEvent(value)
	if err != nil {
		panic(err)
	}
	fmt.Println(back.Key, back.Segment.ID.TopicIDPartition, back.Segment.State)

	p := wire.MetadataPartition(tp, 50)
	fmt.Print(string(wire.AppendText(nil, p, 0, &back)))
	// Output:
	// 102 bytes: 01000004666f6f00...
	// RemoteLogSegmentMetadataRecord AAAAAAAAAAEAAAAAAAAAAg:foo-3 COPY_SEGMENT_STARTED
	// partition: 15, offset: 0, value: RemoteLogSegmentMetadata{remoteLogSegmentId=RemoteLogSegmentId{topicIdPartition=AAAAAAAAAAEAAAAAAAAAAg:foo-3, id=AAAAAAAAAAMAAAAAAAAABA}, startOffset=0, endOffset=99, brokerId=1, maxTimestampMs=1000, eventTimestampMs=2000, segmentLeaderEpochs={0=0}, segmentSizeInBytes=1024, customMetadata=Optional.empty, state=COPY_SEGMENT_STARTED, txnIdxEmpty=false}
}

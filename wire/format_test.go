package wire

import (
	"math/rand/v2"
	"testing"

	"github.com/rlmm-go/rlmm"
)

// TestText checks the formatter line and the toString forms of every record
// type, written out from Kafka 4.4's classes (kafka-rlmm.md 3 and 6.10).
func TestText(t *testing.T) {
	multi := basicSegment()
	multi.EndOffset = 100
	multi.MaxTimestampMs = -1
	multi.EventTimestampMs = 123
	multi.LeaderEpochs = []rlmm.EpochStart{{Epoch: 0, StartOffset: 0}, {Epoch: 1, StartOffset: 20}, {Epoch: 2, StartOffset: 80}}
	multi.CustomMetadata = make([]byte, 10)
	snap := basicSegment()
	snap.ID = rlmm.SegmentID{ID: segID.ID}
	snap.State = rlmm.CopySegmentFinished
	snap.TxnIndexEmpty = true
	const seg = "RemoteLogSegmentId{topicIdPartition=AAAAAAAAAAEAAAAAAAAAAg:foo-3, id=AAAAAAAAAAMAAAAAAAAABA}"
	tests := []struct {
		name      string
		event     Event
		partition int32
		offset    int64
		want      string
	}{
		{"segment (the formatter test's values)", SegmentEvent(multi), 0, 0,
			"partition: 0, offset: 0, value: RemoteLogSegmentMetadata{remoteLogSegmentId=" + seg +
				", startOffset=0, endOffset=100, brokerId=1, maxTimestampMs=-1, eventTimestampMs=123, segmentLeaderEpochs={0=0, 1=20, 2=80}, segmentSizeInBytes=1024, customMetadata=Optional[CustomMetadata{10 bytes}], state=COPY_SEGMENT_STARTED, txnIdxEmpty=false}\n"},
		{"update", UpdateEvent(rlmm.SegmentUpdate{ID: segID, EventTimestampMs: 3000, State: rlmm.CopySegmentFinished, BrokerID: 2}), 15, 1234567,
			"partition: 15, offset: 1234567, value: RemoteLogSegmentMetadataUpdate{remoteLogSegmentId=" + seg +
				", customMetadata=Optional.empty, state=COPY_SEGMENT_FINISHED, eventTimestampMs=3000, brokerId=2}\n"},
		{"partition delete", PartitionDeleteEvent(rlmm.PartitionDelete{TopicIDPartition: fooTP, State: rlmm.DeletePartitionMarked, EventTimestampMs: 4000, BrokerID: 5}), 49, 0,
			"partition: 49, offset: 0, value: RemotePartitionDeleteMetadata{topicPartition=AAAAAAAAAAEAAAAAAAAAAg:foo-3, state=DELETE_PARTITION_MARKED, eventTimestampMs=4000, brokerId=5}\n"},
		{"snapshot", Event{Key: KeySnapshot, Segment: snap}, 1, 2,
			"partition: 1, offset: 2, value: RemoteLogSegmentMetadataSnapshot{segmentId=AAAAAAAAAAMAAAAAAAAABA, startOffset=0, endOffset=99, maxTimestampMs=1000, segmentLeaderEpochs={0=0}, segmentSizeInBytes=1024, customMetadata=Optional.empty, state=COPY_SEGMENT_FINISHED, txnIdxEmpty=true}\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := string(AppendText([]byte("> "), tc.partition, tc.offset, &tc.event))
			if got != "> "+tc.want {
				t.Errorf("AppendText\n got %q\nwant %q", got, "> "+tc.want)
			}
		})
	}
	unknown := Event{Key: 9}
	if s := unknown.String(); s != "Event{key=APIKey(9)}" {
		t.Errorf("unknown key prints %q", s)
	}
}

// TestTopicIDPartition checks which events name a user partition.
func TestTopicIDPartition(t *testing.T) {
	snap := Event{Key: KeySnapshot, Segment: basicSegment()}
	tests := []struct {
		event Event
		ok    bool
	}{
		{SegmentEvent(basicSegment()), true},
		{UpdateEvent(rlmm.SegmentUpdate{ID: segID}), true},
		{PartitionDeleteEvent(rlmm.PartitionDelete{TopicIDPartition: fooTP}), true},
		{snap, false},
		{Event{Key: 7}, false},
	}
	for _, tc := range tests {
		tp, ok := tc.event.TopicIDPartition()
		if ok != tc.ok || (ok && tp != fooTP) || (!ok && tp != (rlmm.TopicIDPartition{})) {
			t.Errorf("%s: TopicIDPartition() = %v, %v", tc.event.Key, tp, ok)
		}
	}
}

// TestTextMatchesString holds AppendText's allocation-free value part equal
// to the root package's String methods (the reference) on random events,
// undefined states included.
func TestTextMatchesString(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for i := 0; i < 3000; i++ {
		e := randomEvent(r)
		if i%10 == 0 {
			e.Segment.State, e.Update.State, e.PartitionDelete.State = 9, -3, 4
		}
		var want string
		switch e.Key {
		case KeySegment:
			want = e.Segment.String()
		case KeyUpdate:
			want = e.Update.String()
		case KeyPartitionDelete:
			want = e.PartitionDelete.String()
		default:
			want = e.String()
		}
		got := string(AppendText(nil, 7, 8, &e))
		if got != "partition: 7, offset: 8, value: "+want+"\n" {
			t.Fatalf("AppendText\n got %q\nwant %q", got, want)
		}
		if e.String() != want {
			t.Fatalf("String\n got %q\nwant %q", e.String(), want)
		}
	}
}

package wire

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/rlmm-go/rlmm"
)

// TestJSONForm checks the exact JSON of each type against the schema's
// examples (field names, order, Uuid text, states by name, custom metadata).
func TestJSONForm(t *testing.T) {
	snap := basicSegment()
	snap.ID = rlmm.SegmentID{ID: segID.ID}
	snap.State = rlmm.CopySegmentFinished
	const sid = `{"topicIdPartition":{"topicId":"AAAAAAAAAAEAAAAAAAAAAg","topic":"foo","partition":3},"id":"AAAAAAAAAAMAAAAAAAAABA"}`
	tests := []struct {
		event Event
		want  string
	}{
		{SegmentEvent(basicSegment()),
			`{"type":"RemoteLogSegmentMetadata","remoteLogSegmentId":` + sid + `,"startOffset":0,"endOffset":99,"brokerId":1,"maxTimestampMs":1000,"eventTimestampMs":2000,"segmentLeaderEpochs":[{"epoch":0,"startOffset":0}],"segmentSizeInBytes":1024,"customMetadata":null,"state":"COPY_SEGMENT_STARTED","txnIdxEmpty":false}`},
		{UpdateEvent(rlmm.SegmentUpdate{ID: segID, EventTimestampMs: 3000, CustomMetadata: []byte{10, 11, 12}, State: rlmm.CopySegmentFinished, BrokerID: 2}),
			`{"type":"RemoteLogSegmentMetadataUpdate","remoteLogSegmentId":` + sid + `,"customMetadata":"CgsM","state":"COPY_SEGMENT_FINISHED","eventTimestampMs":3000,"brokerId":2}`},
		{UpdateEvent(rlmm.SegmentUpdate{ID: segID, EventTimestampMs: 3000, CustomMetadata: []byte{}, State: rlmm.DeleteSegmentStarted, BrokerID: 2}),
			`{"type":"RemoteLogSegmentMetadataUpdate","remoteLogSegmentId":` + sid + `,"customMetadata":"","state":"DELETE_SEGMENT_STARTED","eventTimestampMs":3000,"brokerId":2}`},
		{PartitionDeleteEvent(rlmm.PartitionDelete{TopicIDPartition: fooTP, State: rlmm.DeletePartitionMarked, EventTimestampMs: 4000, BrokerID: 5}),
			`{"type":"RemotePartitionDeleteMetadata","topicIdPartition":{"topicId":"AAAAAAAAAAEAAAAAAAAAAg","topic":"foo","partition":3},"state":"DELETE_PARTITION_MARKED","eventTimestampMs":4000,"brokerId":5}`},
		{Event{Key: KeySnapshot, Segment: snap},
			`{"type":"RemoteLogSegmentMetadataSnapshot","segmentId":"AAAAAAAAAAMAAAAAAAAABA","startOffset":0,"endOffset":99,"brokerId":1,"maxTimestampMs":1000,"eventTimestampMs":2000,"segmentLeaderEpochs":[{"epoch":0,"startOffset":0}],"segmentSizeInBytes":1024,"customMetadata":null,"state":"COPY_SEGMENT_FINISHED","txnIdxEmpty":false}`},
	}
	for _, tc := range tests {
		t.Run(tc.event.Key.String(), func(t *testing.T) {
			got, err := json.Marshal(tc.event)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("MarshalJSON\n got %s\nwant %s", got, tc.want)
			}
			var back Event
			if err := json.Unmarshal([]byte(tc.want), &back); err != nil {
				t.Fatalf("UnmarshalJSON: %v", err)
			}
			if !back.Equal(&tc.event) {
				t.Errorf("UnmarshalJSON\n got %s\nwant %s", back.String(), tc.event.String())
			}
		})
	}
}

// TestJSONRoundTrip: random events survive MarshalJSON then UnmarshalJSON,
// including int64 extremes and absent/empty custom metadata.
func TestJSONRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for i := 0; i < 2000; i++ {
		e := randomEvent(r)
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatalf("MarshalJSON(%s): %v", e.String(), err)
		}
		var back Event
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("UnmarshalJSON(%s): %v", b, err)
		}
		if !back.Equal(&e) {
			t.Fatalf("JSON round trip of %s\n gave %s", e.String(), back.String())
		}
	}
}

// TestJSONErrors: what is not the schema is refused with ErrInvalidArgument.
func TestJSONErrors(t *testing.T) {
	tests := []string{
		`{"type":"Nope"}`,
		`{}`,
		`[]`,
		`{"type":"RemotePartitionDeleteMetadata","topicIdPartition":{"topicId":"AAAAAAAAAAEAAAAAAAAAAg","topic":"foo","partition":3},"state":"DELETE_PARTITION_GONE","eventTimestampMs":4000,"brokerId":5}`,
		`{"type":"RemotePartitionDeleteMetadata","extra":1}`,
		`{"type":"RemoteLogSegmentMetadataUpdate","remoteLogSegmentId":{"topicIdPartition":{"topicId":"short","topic":"foo","partition":3},"id":"AAAAAAAAAAMAAAAAAAAABA"},"state":"COPY_SEGMENT_FINISHED"}`,
		`{"type":"RemoteLogSegmentMetadata","state":"FINISHED"}`,
		`{"type":"RemoteLogSegmentMetadataSnapshot","state":"x"}`,
		`{"type":"RemoteLogSegmentMetadata","startOffset":9223372036854775808}`,
	}
	for _, in := range tests {
		var e Event
		err := json.Unmarshal([]byte(in), &e)
		if err == nil {
			t.Errorf("UnmarshalJSON(%s) accepted it: %s", in, e.String())
			continue
		}
		if !errors.Is(err, rlmm.ErrInvalidArgument) {
			t.Errorf("UnmarshalJSON(%s): %v does not wrap ErrInvalidArgument", in, err)
		}
	}
	if _, err := json.Marshal(Event{Key: 5}); err == nil {
		t.Error("MarshalJSON of an unknown key succeeded")
	}
}

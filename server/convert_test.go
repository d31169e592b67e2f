package server

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/rpc/rlmmpb"
)

// TestConversionRoundTrip checks that a segment survives rlmm -> proto ->
// wire -> proto -> rlmm exactly, custom metadata absent, empty and present.
func TestConversionRoundTrip(t *testing.T) {
	for _, custom := range [][]byte{nil, {}, {9, 8, 7}} {
		md := segment(newTP(), 42)
		md.CustomMetadata = custom
		md.State = rlmm.DeleteSegmentStarted
		md.TxnIndexEmpty = true
		b, err := proto.Marshal(segmentToProto(&md))
		if err != nil {
			t.Fatal(err)
		}
		var back rlmmpb.SegmentMetadata
		if err := proto.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		got, err := segmentFromProto(&back)
		if err != nil {
			t.Fatal(err)
		}
		if !got.Equal(&md) || (got.CustomMetadata == nil) != (custom == nil) {
			t.Fatalf("custom %v: got %v\nwant %v", custom, got, md)
		}
	}
	// Uuid bits: Java's signed longs travel as fixed64.
	u := rlmm.UuidFromBits(-1, -2)
	if got := uuidFromProto(uuidToProto(u)); got != u {
		t.Fatalf("uuid %v came back as %v", u, got)
	}
}

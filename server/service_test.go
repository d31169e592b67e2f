package server

import (
	"errors"
	"io"
	"os"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/rpc/rlmmpb"
)

// listAll reads a streamed list and returns the segments and the number of
// batches.
func listAll(t *testing.T, f *fixture, req *rlmmpb.ListSegmentsRequest) ([]rlmm.SegmentMetadata, int) {
	t.Helper()
	stream, err := f.client.ListSegments(testCtx(t), req)
	if err != nil {
		t.Fatal(err)
	}
	var out []rlmm.SegmentMetadata
	batches := 0
	for {
		b, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return out, batches
		}
		if err != nil {
			t.Fatalf("ListSegments: %v", err)
		}
		batches++
		for _, s := range b.Segments {
			md, err := segmentFromProto(s)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, md)
		}
	}
}

func TestEveryRPC(t *testing.T) {
	f := newFixture(t, fixtureOpts{batchSize: 3})
	ctx := testCtx(t)
	tp := newTP()
	f.assign(t, tp)
	ptp := tpToProto(tp)

	// Seven segments, back to back, finished; one more started only, with
	// a transaction index.
	var want []rlmm.SegmentMetadata
	for i := range 7 {
		md := segment(tp, int64(i)*100)
		f.addAndFinish(t, md)
		md.State = rlmm.CopySegmentFinished
		md.EventTimestampMs++
		md.CustomMetadata = nil // the update carries none, and replaces it
		want = append(want, md)
	}
	started := segment(tp, 700)
	started.TxnIndexEmpty = false
	if _, err := f.client.AddSegment(ctx, &rlmmpb.AddSegmentRequest{Segment: segmentToProto(&started)}); err != nil {
		t.Fatal(err)
	}
	// The manager holds exactly what the RPC recorded.
	direct, err := f.mgr.ListSegments(tp)
	if err != nil || len(direct) != 8 {
		t.Fatalf("manager lists %d segments (%v), want 8", len(direct), err)
	}

	t.Run("SegmentForOffset", func(t *testing.T) {
		r, err := f.client.SegmentForOffset(ctx, &rlmmpb.SegmentForOffsetRequest{TopicIdPartition: ptp, LeaderEpoch: 1, Offset: 360})
		if err != nil {
			t.Fatal(err)
		}
		if !r.Found {
			t.Fatal("offset 360 in epoch 1: not found")
		}
		got, err := segmentFromProto(r.Segment)
		if err != nil {
			t.Fatal(err)
		}
		if !got.Equal(&want[3]) {
			t.Fatalf("got %v\nwant %v", got, want[3])
		}
		r, err = f.client.SegmentForOffset(ctx, &rlmmpb.SegmentForOffsetRequest{TopicIdPartition: ptp, LeaderEpoch: 1, Offset: 5000})
		if err != nil || r.Found {
			t.Fatalf("offset 5000: found=%v err=%v, want a miss", r.GetFound(), err)
		}
	})
	t.Run("HighestOffsetForEpoch", func(t *testing.T) {
		r, err := f.client.HighestOffsetForEpoch(ctx, &rlmmpb.HighestOffsetForEpochRequest{TopicIdPartition: ptp, LeaderEpoch: 1})
		if err != nil || !r.Found || r.Offset != 699 {
			t.Fatalf("epoch 1: %v %v, want found 699", r, err)
		}
		r, err = f.client.HighestOffsetForEpoch(ctx, &rlmmpb.HighestOffsetForEpochRequest{TopicIdPartition: ptp, LeaderEpoch: 9})
		if err != nil || r.Found {
			t.Fatalf("epoch 9: %v %v, want a miss", r, err)
		}
	})
	t.Run("ListSegments", func(t *testing.T) {
		got, batches := listAll(t, f, &rlmmpb.ListSegmentsRequest{TopicIdPartition: ptp})
		if len(got) != 8 || batches != 3 {
			t.Fatalf("%d segments in %d batches, want 8 in 3", len(got), batches)
		}
		for i := range got {
			if !got[i].Equal(&direct[i]) {
				t.Fatalf("segment %d: got %v\nwant %v", i, got[i], direct[i])
			}
		}
		epoch := int32(0)
		got, _ = listAll(t, f, &rlmmpb.ListSegmentsRequest{TopicIdPartition: ptp, LeaderEpoch: &epoch})
		wantEpoch, _ := f.mgr.ListSegmentsForEpoch(tp, 0)
		if len(got) != len(wantEpoch) || len(got) == 0 {
			t.Fatalf("epoch 0: %d segments, want %d", len(got), len(wantEpoch))
		}
		// A partition not hosted is refused, never an empty list.
		stream, err := f.client.ListSegments(ctx, &rlmmpb.ListSegmentsRequest{TopicIdPartition: tpToProto(f.tpElsewhere(tp))})
		if err == nil {
			_, err = stream.Recv()
		}
		if st, info := errorInfo(t, err); st.Code() != codes.FailedPrecondition || info.GetKind() != rlmmpb.ErrorKind_NOT_ASSIGNED {
			t.Fatalf("unhosted partition: %v, want FAILED_PRECONDITION with NOT_ASSIGNED", err)
		}
	})
	t.Run("RemoteLogSize", func(t *testing.T) {
		r, err := f.client.RemoteLogSize(ctx, &rlmmpb.RemoteLogSizeRequest{TopicIdPartition: ptp, LeaderEpoch: 0})
		wantSize, _ := f.mgr.RemoteLogSize(tp, 0)
		if err != nil || r.SizeInBytes != wantSize || wantSize == 0 {
			t.Fatalf("size %v %v, want %d", r, err, wantSize)
		}
	})
	t.Run("NextSegmentWithTxnIndex", func(t *testing.T) {
		r, err := f.client.NextSegmentWithTxnIndex(ctx, &rlmmpb.NextSegmentWithTxnIndexRequest{TopicIdPartition: ptp, LeaderEpoch: 0, Offset: 120})
		wantMd, wantOK, _ := f.mgr.NextSegmentWithTxnIndex(tp, 0, 120)
		if err != nil || r.Found != wantOK || !wantOK {
			t.Fatalf("got %v %v, want found=%v", r, err, wantOK)
		}
		got, _ := segmentFromProto(r.Segment)
		if !got.Equal(&wantMd) {
			t.Fatalf("got %v\nwant %v", got, wantMd)
		}
	})
	t.Run("ServerInfo", func(t *testing.T) {
		r, err := f.client.ServerInfo(ctx, &rlmmpb.ServerInfoRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if r.ApiVersion != APIVersion || APIVersion < 1 {
			t.Fatalf("api_version %d, want APIVersion %d (at least 1)", r.ApiVersion, APIVersion)
		}
		if r.StartedUnixMs != processStarted.UnixMilli() || r.StartedUnixMs <= 0 {
			t.Fatalf("started_unix_ms %d, want this process's %d", r.StartedUnixMs, processStarted.UnixMilli())
		}
		want := &rlmmpb.ServerInfoReply{Version: "test", BrokerId: 7, MetadataPartitions: metadataPartitions, Log: "memlog",
			Pid: int64(os.Getpid()), ApiVersion: APIVersion, StartedUnixMs: processStarted.UnixMilli()}
		if !proto.Equal(r, want) {
			t.Fatalf("got %v, want %v", r, want)
		}
	})
	t.Run("PutPartitionDelete", func(t *testing.T) {
		for _, st := range []rlmmpb.PartitionDeleteState{rlmmpb.PartitionDeleteState_DELETE_PARTITION_MARKED,
			rlmmpb.PartitionDeleteState_DELETE_PARTITION_STARTED, rlmmpb.PartitionDeleteState_DELETE_PARTITION_FINISHED} {
			if _, err := f.client.PutPartitionDelete(ctx, &rlmmpb.PutPartitionDeleteRequest{Delete: &rlmmpb.PartitionDelete{
				TopicIdPartition: ptp, State: st, EventTimestampMs: 5, BrokerId: 7}}); err != nil {
				t.Fatalf("%s: %v", st, err)
			}
		}
		if got, _ := listAll(t, f, &rlmmpb.ListSegmentsRequest{TopicIdPartition: ptp}); len(got) != 0 {
			t.Fatalf("after DELETE_PARTITION_FINISHED: %d segments listed", len(got))
		}
	})
	t.Run("OnStopPartitions", func(t *testing.T) {
		if _, err := f.client.OnStopPartitions(ctx, &rlmmpb.StopPartitionsRequest{Partitions: []*rlmmpb.TopicIdPartition{ptp}}); err != nil {
			t.Fatal(err)
		}
		r, err := f.client.IsReady(ctx, &rlmmpb.IsReadyRequest{TopicIdPartition: ptp})
		if err != nil || r.Ready {
			t.Fatalf("after stop: ready=%v err=%v, want not ready", r.GetReady(), err)
		}
	})
}

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

// A streamed list's batches stay within maxBatchBytes (a larger message
// takes a 1 MiB buffer of grpc-go's pool) as well as the batch size, and
// carry every segment in order.
func TestListSegmentsBatchesBoundedInBytes(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	tp := newTP()
	f.assign(t, tp)
	const count = 700 // with the default 512 per batch, more than 32 KiB
	for i := range count {
		f.addAndFinish(t, segment(tp, int64(i)*100))
	}
	stream, err := f.client.ListSegments(testCtx(t), &rlmmpb.ListSegmentsRequest{TopicIdPartition: tpToProto(tp)})
	if err != nil {
		t.Fatal(err)
	}
	var got []*rlmmpb.SegmentMetadata
	batches := 0
	for {
		b, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("ListSegments: %v", err)
		}
		batches++
		if size := proto.Size(b); size > maxBatchBytes || len(b.Segments) > DefaultBatchSize {
			t.Fatalf("batch %d: %d segments in %d bytes, want at most %d and %d", batches, len(b.Segments), size, DefaultBatchSize, maxBatchBytes)
		}
		got = append(got, b.Segments...)
	}
	if len(got) != count {
		t.Fatalf("%d segments listed, want %d", len(got), count)
	}
	if perSegment := proto.Size(got[0]) + 2; batches < count*perSegment/maxBatchBytes {
		t.Fatalf("%d batches of %d-byte segments: the byte bound did not split them", batches, perSegment)
	}
	for i, s := range got {
		if s.GetStartOffset() != int64(i)*100 {
			t.Fatalf("segment %d starts at %d, want %d", i, s.GetStartOffset(), int64(i)*100)
		}
	}
}

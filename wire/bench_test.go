package wire

import (
	"runtime"
	"testing"

	"github.com/rlmm-go/rlmm"
	"golang.org/x/sys/unix"
)

// threadCPU returns the CPU time this OS thread has used. The shared 2-core
// machine runs other work too, so wall-clock ns/op overstates cost when it
// is busy; cpu-ns/op (this thread's CPU time per operation, which leaves out
// background GC workers) is reported beside it.
func threadCPU(b *testing.B) int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		b.Fatalf("clock_gettime: %v", err)
	}
	return ts.Nano()
}

// loop runs op b.N times (b.Loop) and reports cpu-ns/op.
func loop(b *testing.B, op func()) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.ReportAllocs()
	start := threadCPU(b)
	n := 0
	for b.Loop() {
		op()
		n++
	}
	b.ReportMetric(float64(threadCPU(b)-start)/float64(n), "cpu-ns/op")
}

// typicalSegment is what a broker adds for each copied segment: a real
// topic name, two leader epochs, no custom metadata yet.
func typicalSegment() Event {
	tp := rlmm.TopicIDPartition{TopicID: rlmm.UuidFromBits(0x1234567890, -0x1234567890), Topic: "orders.eu-west-1", Partition: 17}
	return SegmentEvent(rlmm.SegmentMetadata{
		ID: rlmm.SegmentID{TopicIDPartition: tp, ID: rlmm.UuidFromBits(77, 88)}, StartOffset: 1_000_000, EndOffset: 1_099_999,
		MaxTimestampMs: 1_764_000_000_000, BrokerID: 3, EventTimestampMs: 1_764_000_000_123,
		LeaderEpochs: []rlmm.EpochStart{{Epoch: 11, StartOffset: 1_000_000}, {Epoch: 12, StartOffset: 1_050_000}},
		SizeInBytes:  1 << 30, State: rlmm.CopySegmentStarted,
	})
}

func typicalUpdate() Event {
	s := typicalSegment()
	return UpdateEvent(rlmm.SegmentUpdate{ID: s.Segment.ID, EventTimestampMs: 1_764_000_000_999,
		CustomMetadata: []byte("plugin:bucket/key"), State: rlmm.CopySegmentFinished, BrokerID: 3})
}

func benchDecode(b *testing.B, e Event) {
	buf, err := AppendEvent(nil, &e)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(buf)))
	loop(b, func() {
		if _, err := DecodeEvent(buf); err != nil {
			b.Fatal(err)
		}
	})
}

func benchEncode(b *testing.B, e Event) {
	buf := make([]byte, 0, 512)
	loop(b, func() {
		var err error
		buf, err = AppendEvent(buf[:0], &e)
		if err != nil {
			b.Fatal(err)
		}
	})
	b.SetBytes(int64(len(buf)))
}

// BenchmarkDecodeSegment: target at most 300 ns and 3 allocations.
func BenchmarkDecodeSegment(b *testing.B) { benchDecode(b, typicalSegment()) }

// BenchmarkDecodeUpdate decodes the update that finishes the copy.
func BenchmarkDecodeUpdate(b *testing.B) { benchDecode(b, typicalUpdate()) }

// BenchmarkAppendSegment: target at most 150 ns and 0 allocations.
func BenchmarkAppendSegment(b *testing.B) { benchEncode(b, typicalSegment()) }

// BenchmarkAppendUpdate encodes the update that finishes the copy.
func BenchmarkAppendUpdate(b *testing.B) { benchEncode(b, typicalUpdate()) }

// BenchmarkMetadataPartition: target at most 30 ns.
func BenchmarkMetadataPartition(b *testing.B) {
	tp := typicalSegment().Segment.ID.TopicIDPartition
	var sink int32
	loop(b, func() {
		tp.Partition++
		sink += MetadataPartition(tp, 50)
	})
	if sink == -1 {
		b.Log(sink)
	}
}

// BenchmarkAppendText formats one formatter line into a reused buffer.
func BenchmarkAppendText(b *testing.B) {
	e := typicalSegment()
	buf := make([]byte, 0, 1024)
	loop(b, func() {
		buf = AppendText(buf[:0], 15, 123456, &e)
	})
}

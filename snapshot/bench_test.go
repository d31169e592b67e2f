package snapshot

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/memory"
)

// BenchmarkDecodeBuild decodes one block of 1,000 finished single-epoch
// segments into a memory.PartitionBuilder and finishes it, as a restart
// does on each core: the CPU a restore spends per segment, without the
// file's reads, the pump or the other core. With custom metadata (one
// byte, as an RSM that names its objects there gives every segment) and
// without.
func BenchmarkDecodeBuild(b *testing.B) {
	const perBlock = 1000
	for _, custom := range []bool{false, true} {
		b.Run(fmt.Sprintf("custom=%v", custom), func(b *testing.B) {
			tp := topicPartition("bench", 9, 0)
			ps := memory.PartitionState{TopicIDPartition: tp}
			for k := range int64(perBlock) {
				md := segment(tp, uint64(k), k*100, k*100+99, k/100, k*100)
				md.State = rlmm.CopySegmentFinished
				if custom {
					md.CustomMetadata = []byte{byte(k)}
				}
				ps.Segments = append(ps.Segments, md)
			}
			data := encode(b, &file{head: Head{Partitions: 1, Committed: []int64{0}}, states: []memory.PartitionState{ps}})
			r, err := Open(bytes.NewReader(data), int64(len(data)))
			must(b, err)
			blk := r.Blocks()[0]
			block, err := r.ReadBlockUnchecked(0, nil)
			must(b, err)
			b.SetBytes(int64(len(block)))
			b.ReportAllocs()
			for b.Loop() {
				var pb *memory.PartitionBuilder
				err := DecodeBlock(block, blk, func(tp rlmm.TopicIDPartition, z memory.BuildSizes) (Sink, error) {
					pb = memory.NewPartitionBuilder(tp, z)
					return pb, nil
				})
				must(b, err)
				must(b, pb.Finish())
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*perBlock), "ns/segment")
		})
	}
}

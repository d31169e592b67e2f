package wire

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/rlmm-go/rlmm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestMetadataPartitionVectors is the table of kafka-rlmm.md 7.4, verified
// with Kafka's own partitioner.
func TestMetadataPartitionVectors(t *testing.T) {
	bp9, err := rlmm.ParseUuid("Bp9TDduJRGa9Q5rlvCJOxg")
	if err != nil {
		t.Fatal(err)
	}
	if bp9.MostSignificantBits() != 477191404507448422 || bp9.LeastSignificantBits() != -4808829665607004474 {
		t.Fatalf("Bp9TDduJRGa9Q5rlvCJOxg parsed to (%d, %d)", bp9.MostSignificantBits(), bp9.LeastSignificantBits())
	}
	tests := []struct {
		id         rlmm.Uuid
		partition  int32
		hash       uint32 // Objects.hash, 0 when the document does not give it
		murmur     int32  // murmur2 of its bytes, 0 when not given
		partitions int32
		want       int32
	}{
		{rlmm.UuidFromBits(1, 2), 3, 31747, 1392720365, 50, 15},
		{rlmm.UuidFromBits(1, 2), 3, 31747, 1392720365, 5, 0},
		{rlmm.UuidFromBits(1, 2), 3, 31747, 1392720365, 3, 2},
		{rlmm.UuidFromBits(1, 2), 5, 31749, -1473663757, 50, 41},
		{rlmm.UuidFromBits(-1, -2), 7, 30759, 324980546, 50, 46},
		{bp9, 0, 0, 0, 50, 47},
		{bp9, 1, 0, 0, 50, 37},
		{bp9, 2, 0, 0, 50, 12},
		{bp9, 3, 0, 0, 50, 24},
		{bp9, 0, 0, 0, 5, 2},
		{bp9, 1, 0, 0, 5, 2},
		{bp9, 2, 0, 0, 5, 2},
		{bp9, 3, 0, 0, 5, 4},
	}
	for _, tc := range tests {
		h := javaObjectsHash(tc.id.LeastSignificantBits(), tc.id.MostSignificantBits(), tc.partition)
		if tc.hash != 0 && h != tc.hash {
			t.Errorf("Objects.hash(%s, %d) = %d, want %d", tc.id, tc.partition, h, tc.hash)
		}
		if tc.murmur != 0 && int32(murmur2Int32BE(h)) != tc.murmur {
			t.Errorf("murmur2(%08x) = %d, want %d", h, int32(murmur2Int32BE(h)), tc.murmur)
		}
		tp := rlmm.TopicIDPartition{TopicID: tc.id, Topic: "ignored", Partition: tc.partition}
		if got := MetadataPartition(tp, tc.partitions); got != tc.want {
			t.Errorf("MetadataPartition(%s, %d) = %d, want %d", tp, tc.partitions, got, tc.want)
		}
	}
}

// TestMetadataPartitionIgnoresTopicName: Kafka hashes only id and partition.
func TestMetadataPartitionIgnoresTopicName(t *testing.T) {
	a := rlmm.TopicIDPartition{TopicID: rlmm.UuidFromBits(1, 2), Topic: "a", Partition: 3}
	b := a
	b.Topic = "a-completely-different-name"
	if MetadataPartition(a, 50) != MetadataPartition(b, 50) {
		t.Error("the topic name changed the metadata partition")
	}
}

// TestMetadataPartitionRange checks the result is always in [0, partitions)
// and -1 for a partition count below 1.
func TestMetadataPartitionRange(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 10000; i++ {
		tp := rlmm.TopicIDPartition{TopicID: rlmm.UuidFromBits(int64(r.Uint64()), int64(r.Uint64())), Partition: int32(r.Uint32())}
		n := 1 + r.Int32N(1000)
		if p := MetadataPartition(tp, n); p < 0 || p >= n {
			t.Fatalf("MetadataPartition(%s, %d) = %d", tp, n, p)
		}
	}
	for _, n := range []int32{0, -1, -50} {
		if p := MetadataPartition(rlmm.TopicIDPartition{}, n); p != -1 {
			t.Errorf("MetadataPartition with %d partitions = %d, want -1", n, p)
		}
	}
}

// TestMurmur2 checks the 4-byte special case against the general murmur2,
// and the general one against franz-go's Kafka-compatible key partitioner
// (an independent implementation of Kafka's murmur2) on every length.
func TestMurmur2(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var b4 [4]byte
	for i := 0; i < 10000; i++ {
		v := r.Uint32()
		binary.BigEndian.PutUint32(b4[:], v)
		if got, want := murmur2Int32BE(v), murmur2(b4[:]); got != want {
			t.Fatalf("murmur2Int32BE(%08x) = %08x, general murmur2 %08x", v, got, want)
		}
	}
	// kgo maps a key to int(murmur2(key) & 0x7fffffff) % n; with n = 2^31-1
	// that is the masked hash itself except for one value.
	part := kgo.StickyKeyPartitioner(nil).ForTopic("t")
	const n = 1<<31 - 1
	for l := 0; l < 40; l++ {
		key := make([]byte, l)
		for i := range key {
			key[i] = byte(r.Uint32())
		}
		want := part.Partition(&kgo.Record{Key: key}, n)
		if got := int(murmur2(key)&0x7fffffff) % n; got != want {
			t.Errorf("murmur2 of %d bytes %x: masked %d, franz-go %d", l, key, got, want)
		}
	}
}

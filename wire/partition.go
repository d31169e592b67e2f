package wire

import (
	"math/bits"

	"github.com/rlmm-go/rlmm"
)

// MetadataPartition returns the __remote_log_metadata partition that holds
// the events of user partition tp when the topic has the given number of
// partitions, exactly as Kafka's RemoteLogMetadataTopicPartitioner computes
// it: Java's Objects.hash(lsb, msb, partition) of the topic id and partition
// (the topic name is not hashed), as 4 big-endian bytes, through Kafka's
// murmur2, sign bit masked (not abs), modulo partitions. partitions must be
// at least 1; for a smaller value the result is -1.
func MetadataPartition(tp rlmm.TopicIDPartition, partitions int32) int32 {
	return metadataPartitionOf(&tp.TopicID, tp.Partition, partitions)
}

// metadataPartitionOf is the partitioner's one rule, for MetadataPartition
// and MetadataPartitionOfKey.
func metadataPartitionOf(id *rlmm.Uuid, partition, partitions int32) int32 {
	if partitions < 1 {
		return -1
	}
	h := javaObjectsHash(id.LeastSignificantBits(), id.MostSignificantBits(), partition)
	m := murmur2Int32BE(h)
	// Both are non-negative: an unsigned division is the same and cheaper.
	return int32((m & 0x7fffffff) % uint32(partitions))
}

// javaObjectsHash is Java's Objects.hash(Long lsb, Long msb, Integer p) in
// wrapping int32 arithmetic: Long.hashCode is the xor of the two halves.
func javaObjectsHash(lsb, msb int64, partition int32) uint32 {
	longHash := func(x int64) uint32 { return uint32(uint64(x) ^ uint64(x)>>32) }
	h := uint32(1)
	h = 31*h + longHash(lsb)
	h = 31*h + longHash(msb)
	h = 31*h + uint32(partition)
	return h
}

// Kafka's murmur2 constants (Utils.murmur2).
const (
	murmurSeed = 0x9747b28c
	murmurM    = 0x5bd1e995
	murmurR    = 24
)

// murmur2Int32BE is murmur2 of the 4 big-endian bytes of v, without a slice:
// the single block is read little-endian, hence the byte swap.
func murmur2Int32BE(v uint32) uint32 {
	h := uint32(murmurSeed ^ 4)
	k := bits.ReverseBytes32(v)
	k *= murmurM
	k ^= k >> murmurR
	k *= murmurM
	h *= murmurM
	h ^= k
	h ^= h >> 13
	h *= murmurM
	h ^= h >> 15
	return h
}

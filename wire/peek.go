package wire

import "github.com/rlmm-go/rlmm"

// PartitionKey is a user partition as the partitioner and a routing table
// see it: the topic id and the partition number, without the topic name
// (Kafka's partitioner hashes only these, and a key without a string is
// built from a record's bytes without allocating).
type PartitionKey struct {
	TopicID   rlmm.Uuid
	Partition int32
}

// KeyOf returns tp's PartitionKey.
func KeyOf(tp rlmm.TopicIDPartition) PartitionKey {
	return PartitionKey{TopicID: tp.TopicID, Partition: tp.Partition}
}

// MetadataPartitionOfKey is MetadataPartition for a PartitionKey.
func MetadataPartitionOfKey(k PartitionKey, partitions int32) int32 {
	return metadataPartitionOf(&k.TopicID, k.Partition, partitions)
}

// PeekPartition reads a record value's api key and, for the three event
// kinds that name one, the user partition, without decoding the rest of the
// record (the topic name is skipped, not copied): a manager that keeps only
// some user partitions routes a record with it before paying for a full
// decode. ok is false for a snapshot record (api key 3), which names no
// partition. The frame and the bytes read are checked as DecodeEvent checks
// them, and a failure is the same *DecodeError; a value that peeks cleanly
// may still fail DecodeEvent further on.
func PeekPartition(b []byte) (key APIKey, k PartitionKey, ok bool, err error) {
	r := reader{b: b, record: "record frame"}
	key = r.frame()
	if r.err != nil {
		return 0, k, false, r.err
	}
	if key == KeySnapshot {
		return key, k, false, nil
	}
	// Segment, update and partition delete records all start with the
	// TopicIdPartition struct: a compact string (the name), the topic id
	// and the partition.
	r.compactStringBytes("TopicIdPartition.Name")
	if p := r.fixed(20, topicIDAndPartition); p != nil {
		k.TopicID = rlmm.Uuid(p[:16])
		k.Partition = be32(p[16:])
	}
	if r.err != nil {
		return 0, PartitionKey{}, false, r.err
	}
	return key, k, true, nil
}

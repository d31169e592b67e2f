package frametest

import (
	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/rpc/rlmmpb"
)

// UUID is u as the frames carry it, for a test's requests.
func UUID(u rlmm.Uuid) *rlmmpb.Uuid {
	return &rlmmpb.Uuid{MostSignificantBits: uint64(u.MostSignificantBits()), LeastSignificantBits: uint64(u.LeastSignificantBits())}
}

// TopicIDPartition is tp as the frames carry it, for a test's requests.
func TopicIDPartition(tp rlmm.TopicIDPartition) *rlmmpb.TopicIdPartition {
	return &rlmmpb.TopicIdPartition{TopicId: UUID(tp.TopicID), Topic: tp.Topic, Partition: tp.Partition}
}

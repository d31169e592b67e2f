package kafkatest

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ListOffset returns the offset ListOffsets gives for partition of topic at
// ts, a timestamp or a special one: -1 latest, -2 earliest (the log start,
// remote included), -4 earliest local (KIP-405), -5 latest tiered
// (KIP-1005). The tests and brokerbench read tiering's progress with it.
func ListOffset(ctx context.Context, cl *kgo.Client, topic string, partition int32, ts int64) (int64, error) {
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition = partition
	rp.Timestamp = ts
	rp.CurrentLeaderEpoch = -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return -1, err
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return -1, fmt.Errorf("ListOffsets(%d) of %s answered %d topics", ts, topic, len(resp.Topics))
	}
	p := resp.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
		return -1, err
	}
	return p.Offset, nil
}

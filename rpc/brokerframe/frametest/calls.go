package frametest

import (
	"context"

	"github.com/rlmm-go/rlmm/rpc/rlmmpb"
)

// done makes a mutating call on p's connection and returns its MutationReply.
func (fc *Client) done(ctx context.Context, p rlmmpb.Purpose, req *rlmmpb.BrokerRequest) (*rlmmpb.MutationReply, error) {
	rs, err := fc.Call(ctx, p, req)
	if err != nil {
		return nil, err
	}
	return rs[0].GetDone(), nil
}

// AddSegment is Kafka's addRemoteLogSegmentMetadata, on the mutate connection.
func (fc *Client) AddSegment(ctx context.Context, q *rlmmpb.AddSegmentRequest) (*rlmmpb.MutationReply, error) {
	return fc.done(ctx, rlmmpb.Purpose_PURPOSE_MUTATE, &rlmmpb.BrokerRequest{Call: &rlmmpb.BrokerRequest_AddSegment{AddSegment: q}})
}

// UpdateSegment is Kafka's updateRemoteLogSegmentMetadata, on the mutate connection.
func (fc *Client) UpdateSegment(ctx context.Context, q *rlmmpb.UpdateSegmentRequest) (*rlmmpb.MutationReply, error) {
	return fc.done(ctx, rlmmpb.Purpose_PURPOSE_MUTATE, &rlmmpb.BrokerRequest{Call: &rlmmpb.BrokerRequest_UpdateSegment{UpdateSegment: q}})
}

// OnPartitionLeadershipChanges is Kafka's call of that name, on the assign connection.
func (fc *Client) OnPartitionLeadershipChanges(ctx context.Context, q *rlmmpb.LeadershipChangesRequest) (*rlmmpb.MutationReply, error) {
	return fc.done(ctx, rlmmpb.Purpose_PURPOSE_ASSIGN, &rlmmpb.BrokerRequest{Call: &rlmmpb.BrokerRequest_LeadershipChanges{LeadershipChanges: q}})
}

// OnStopPartitions is Kafka's call of that name, on the assign connection.
func (fc *Client) OnStopPartitions(ctx context.Context, q *rlmmpb.StopPartitionsRequest) (*rlmmpb.MutationReply, error) {
	return fc.done(ctx, rlmmpb.Purpose_PURPOSE_ASSIGN, &rlmmpb.BrokerRequest{Call: &rlmmpb.BrokerRequest_StopPartitions{StopPartitions: q}})
}

// SegmentForOffset is Kafka's remoteLogSegmentMetadata, on the lookup connection.
func (fc *Client) SegmentForOffset(ctx context.Context, q *rlmmpb.SegmentForOffsetRequest) (*rlmmpb.SegmentReply, error) {
	rs, err := fc.Call(ctx, rlmmpb.Purpose_PURPOSE_LOOKUP, &rlmmpb.BrokerRequest{Call: &rlmmpb.BrokerRequest_SegmentForOffset{SegmentForOffset: q}})
	if err != nil {
		return nil, err
	}
	return rs[0].GetSegment(), nil
}

// ListSegments is Kafka's listRemoteLogSegments, on the read connection:
// the segments of all its replies.
func (fc *Client) ListSegments(ctx context.Context, q *rlmmpb.ListSegmentsRequest) ([]*rlmmpb.SegmentMetadata, error) {
	rs, err := fc.Call(ctx, rlmmpb.Purpose_PURPOSE_READ, &rlmmpb.BrokerRequest{Call: &rlmmpb.BrokerRequest_ListSegments{ListSegments: q}})
	if err != nil {
		return nil, err
	}
	var out []*rlmmpb.SegmentMetadata
	for _, r := range rs {
		out = append(out, r.GetSegments().GetSegments()...)
	}
	return out, nil
}

// ServerInfo is the server's description, on the read connection.
func (fc *Client) ServerInfo(ctx context.Context) (*rlmmpb.ServerInfoReply, error) {
	rs, err := fc.Call(ctx, rlmmpb.Purpose_PURPOSE_READ, &rlmmpb.BrokerRequest{Call: &rlmmpb.BrokerRequest_ServerInfo{ServerInfo: &rlmmpb.ServerInfoRequest{}}})
	if err != nil {
		return nil, err
	}
	return rs[0].GetServerInfo(), nil
}

// Ready says whether reads of ptp are served: a lookup that is not
// refused NOT_READY.
func (fc *Client) Ready(ctx context.Context, ptp *rlmmpb.TopicIdPartition) (bool, error) {
	_, err := fc.SegmentForOffset(ctx, &rlmmpb.SegmentForOffsetRequest{TopicIdPartition: ptp})
	if Kind(err) == rlmmpb.ErrorKind_NOT_READY {
		return false, nil
	}
	return err == nil, err
}

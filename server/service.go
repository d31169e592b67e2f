package server

import (
	"context"
	"fmt"
	"os"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/rpc/rlmmpb"
	"github.com/rlmm-go/rlmm/topicbased"
)

// service implements every RPC of rlmm.v1.RemoteLogMetadata over the
// Server's manager.
type service struct {
	rlmmpb.UnimplementedRemoteLogMetadataServer
	s *Server
}

var _ rlmmpb.RemoteLogMetadataServer = (*service)(nil)

// errStarting is what a read answers before the manager is up.
func errStarting() error {
	return notPublished{fmt.Errorf("%w: rlmm serve is starting (opening the metadata log, loading the snapshot)", rlmm.ErrNotReady)}
}

// reader returns the manager for a read, which never waits: before the
// manager is up it answers rlmm.ErrNotReady (retriable).
func (v *service) reader() (*topicbased.Manager, error) {
	if m := v.s.mgr.Load(); m != nil {
		return m, nil
	}
	return nil, errStarting()
}

// AddSegment records a new segment (COPY_SEGMENT_STARTED), returning when
// the manager's mutation returns, with its verdict.
func (v *service) AddSegment(ctx context.Context, req *rlmmpb.AddSegmentRequest) (*rlmmpb.MutationReply, error) {
	return mutate(ctx, v, func() (rlmm.SegmentMetadata, error) { return segmentFromProto(req.GetSegment()) },
		(*topicbased.Manager).AddSegment)
}

// UpdateSegment moves a segment to a new state.
func (v *service) UpdateSegment(ctx context.Context, req *rlmmpb.UpdateSegmentRequest) (*rlmmpb.MutationReply, error) {
	return mutate(ctx, v, func() (rlmm.SegmentUpdate, error) { return updateFromProto(req.GetUpdate()) },
		(*topicbased.Manager).UpdateSegment)
}

// PutPartitionDelete records a partition's deletion state.
func (v *service) PutPartitionDelete(ctx context.Context, req *rlmmpb.PutPartitionDeleteRequest) (*rlmmpb.MutationReply, error) {
	return mutate(ctx, v, func() (rlmm.PartitionDelete, error) { return deleteFromProto(req.GetDelete()) },
		(*topicbased.Manager).PutPartitionDelete)
}

// mutate is the path of every gRPC mutation: applyMutation, its failure
// as the call's status.
func mutate[T any](ctx context.Context, v *service, decode func() (T, error),
	apply func(*topicbased.Manager, context.Context, T) error) (*rlmmpb.MutationReply, error) {
	if err := applyMutation(ctx, v.s, decode, apply); err != nil {
		return nil, toStatus(err, true)
	}
	return &rlmmpb.MutationReply{}, nil
}

// applyMutation is the path of every mutation, gRPC's and the framed
// socket's: decode the request, wait for the manager within ctx, apply.
func applyMutation[T any](ctx context.Context, s *Server, decode func() (T, error),
	apply func(*topicbased.Manager, context.Context, T) error) error {
	arg, err := decode()
	if err != nil {
		return err
	}
	m, err := s.waitManager(ctx)
	if err != nil {
		return err
	}
	return apply(m, ctx, arg)
}

// SegmentForOffset is the fetch path's lookup.
func (v *service) SegmentForOffset(_ context.Context, req *rlmmpb.SegmentForOffsetRequest) (*rlmmpb.SegmentReply, error) {
	return v.findSegment(req.GetTopicIdPartition(), req.LeaderEpoch, req.Offset, (*topicbased.Manager).SegmentForOffset)
}

// findSegment is the path of the two lookups by (epoch, offset): decode
// the partition, read, and answer found or not.
func (v *service) findSegment(ptp *rlmmpb.TopicIdPartition, epoch int32, offset int64,
	find func(*topicbased.Manager, rlmm.TopicIDPartition, int32, int64) (rlmm.SegmentMetadata, bool, error)) (*rlmmpb.SegmentReply, error) {
	tp, err := tpFromProto(ptp, "topic_id_partition")
	if err != nil {
		return nil, toStatus(err, false)
	}
	m, err := v.reader()
	if err != nil {
		return nil, toStatus(err, false)
	}
	md, ok, err := find(m, tp, epoch, offset)
	if err != nil {
		return nil, toStatus(err, false)
	}
	if !ok {
		return &rlmmpb.SegmentReply{}, nil
	}
	return &rlmmpb.SegmentReply{Found: true, Segment: segmentToProto(&md)}, nil
}

// HighestOffsetForEpoch returns the highest offset copied for an epoch.
func (v *service) HighestOffsetForEpoch(_ context.Context, req *rlmmpb.HighestOffsetForEpochRequest) (*rlmmpb.HighestOffsetForEpochReply, error) {
	tp, err := tpFromProto(req.GetTopicIdPartition(), "topic_id_partition")
	if err != nil {
		return nil, toStatus(err, false)
	}
	m, err := v.reader()
	if err != nil {
		return nil, toStatus(err, false)
	}
	off, ok, err := m.HighestOffsetForEpoch(tp, req.LeaderEpoch)
	if err != nil {
		return nil, toStatus(err, false)
	}
	return &rlmmpb.HighestOffsetForEpochReply{Found: ok, Offset: off}, nil
}

// ListSegments streams a partition's segments (or one epoch's) in batches
// of at most Config.BatchSize segments and maxBatchBytes encoded bytes, in
// the manager's order.
func (v *service) ListSegments(req *rlmmpb.ListSegmentsRequest, stream rlmmpb.RemoteLogMetadata_ListSegmentsServer) error {
	tp, err := tpFromProto(req.GetTopicIdPartition(), "topic_id_partition")
	if err != nil {
		return toStatus(err, false)
	}
	m, err := v.reader()
	if err != nil {
		return toStatus(err, false)
	}
	var segs []rlmm.SegmentMetadata
	if req.LeaderEpoch != nil {
		segs, err = m.ListSegmentsForEpoch(tp, *req.LeaderEpoch)
	} else {
		segs, err = m.ListSegments(tp)
	}
	if err != nil {
		return toStatus(err, false)
	}
	n := v.s.cfg.BatchSize
	batch := &rlmmpb.SegmentBatch{Segments: make([]*rlmmpb.SegmentMetadata, 0, min(n, len(segs)))}
	size := 0
	for i := range segs {
		seg := segmentToProto(&segs[i])
		// The field's tag, its length and the segment's bytes.
		grow := 1 + protowire.SizeBytes(proto.Size(seg))
		if len(batch.Segments) > 0 && (len(batch.Segments) == n || size+grow > maxBatchBytes) {
			if err := stream.Send(batch); err != nil {
				return err // the stream's own status (the client went away)
			}
			batch = &rlmmpb.SegmentBatch{Segments: make([]*rlmmpb.SegmentMetadata, 0, min(n, len(segs)-i))}
			size = 0
		}
		batch.Segments = append(batch.Segments, seg)
		size += grow
	}
	if len(batch.Segments) > 0 {
		return stream.Send(batch)
	}
	return nil
}

// maxBatchBytes bounds the encoded size of one SegmentBatch. grpc-go
// marshals a message into a buffer of the next size its pool keeps (256 B,
// 4, 16 and 32 KiB, then 1 MiB) and keeps returned buffers in a sync.Pool
// across a collection: batches just over 32 KiB each took a 1 MiB buffer,
// and the broker's periodic lists of every leader partition left 2 to 7 MiB
// of them in a sidecar's live heap of 10 (docs/bench/broker.md, the
// memory rows). One segment larger than this still goes, alone.
const maxBatchBytes = 32<<10 - 64

// RemoteLogSize sums the sizes of an epoch's segments.
func (v *service) RemoteLogSize(_ context.Context, req *rlmmpb.RemoteLogSizeRequest) (*rlmmpb.RemoteLogSizeReply, error) {
	tp, err := tpFromProto(req.GetTopicIdPartition(), "topic_id_partition")
	if err != nil {
		return nil, toStatus(err, false)
	}
	m, err := v.reader()
	if err != nil {
		return nil, toStatus(err, false)
	}
	size, err := m.RemoteLogSize(tp, req.LeaderEpoch)
	if err != nil {
		return nil, toStatus(err, false)
	}
	return &rlmmpb.RemoteLogSizeReply{SizeInBytes: size}, nil
}

// NextSegmentWithTxnIndex returns the first finished segment at or after
// an offset that has a transaction index.
func (v *service) NextSegmentWithTxnIndex(_ context.Context, req *rlmmpb.NextSegmentWithTxnIndexRequest) (*rlmmpb.SegmentReply, error) {
	return v.findSegment(req.GetTopicIdPartition(), req.LeaderEpoch, req.Offset, (*topicbased.Manager).NextSegmentWithTxnIndex)
}

// IsReady reports whether a partition's metadata is assigned and caught up
// (false while the server starts).
func (v *service) IsReady(_ context.Context, req *rlmmpb.IsReadyRequest) (*rlmmpb.IsReadyReply, error) {
	tp, err := tpFromProto(req.GetTopicIdPartition(), "topic_id_partition")
	if err != nil {
		return nil, toStatus(err, false)
	}
	m := v.s.mgr.Load()
	return &rlmmpb.IsReadyReply{Ready: m != nil && m.IsReady(tp)}, nil
}

// OnPartitionLeadershipChanges passes the broker's leaders and followers
// to the manager (waiting, within the call's deadline, for it to be up).
func (v *service) OnPartitionLeadershipChanges(ctx context.Context, req *rlmmpb.LeadershipChangesRequest) (*rlmmpb.AssignmentReply, error) {
	if err := v.s.leadershipChanges(ctx, req); err != nil {
		return nil, toStatus(err, false)
	}
	return &rlmmpb.AssignmentReply{}, nil
}

// leadershipChanges is the path of a leadership change, gRPC's and the
// framed socket's: recorded in the hosted set (persisted) and acknowledged
// then, handed to the manager too when it is up (SetManager hands it the
// set when it comes up).
func (s *Server) leadershipChanges(ctx context.Context, req *rlmmpb.LeadershipChangesRequest) error {
	leaders, err := tpsFromProto(req.GetLeaders(), "leaders")
	if err != nil {
		return err
	}
	followers, err := tpsFromProto(req.GetFollowers(), "followers")
	if err != nil {
		return err
	}
	return s.assignment(ctx, append(leaders, followers...), nil, func(m *topicbased.Manager) error {
		return m.OnPartitionLeadershipChanges(ctx, leaders, followers)
	})
}

// assignment applies a change to the hosted set and to the manager when it
// is up, in the order changes arrive, and acknowledges it (returns nil) once
// the set is written (see Hosted).
func (s *Server) assignment(ctx context.Context, add, remove []rlmm.TopicIDPartition, apply func(*topicbased.Manager) error) error {
	s.assignMu.Lock()
	defer s.assignMu.Unlock()
	s.cfg.Hosted.update(add, remove)
	if m := s.mgr.Load(); m != nil {
		if err := apply(m); err != nil {
			return err
		}
	}
	if err := s.cfg.Hosted.save(); err != nil {
		s.logger.Warn("server: an assignment change is served but not acknowledged: the hosted set could not be written; the plugin sends the change again", "error", err)
		return fmt.Errorf("%w: the assignment change is applied, but not acknowledged until the hosted set is written: %w", rlmm.ErrNotReady, err)
	}
	return nil
}

// OnStopPartitions tells the manager the broker no longer hosts partitions.
func (v *service) OnStopPartitions(ctx context.Context, req *rlmmpb.StopPartitionsRequest) (*rlmmpb.AssignmentReply, error) {
	if err := v.s.stopPartitions(ctx, req); err != nil {
		return nil, toStatus(err, false)
	}
	return &rlmmpb.AssignmentReply{}, nil
}

// stopPartitions is the path of a stop, gRPC's and the framed socket's:
// recorded as leadershipChanges records a change.
func (s *Server) stopPartitions(ctx context.Context, req *rlmmpb.StopPartitionsRequest) error {
	parts, err := tpsFromProto(req.GetPartitions(), "partitions")
	if err != nil {
		return err
	}
	return s.assignment(ctx, nil, parts, func(m *topicbased.Manager) error {
		return m.OnStopPartitions(ctx, parts)
	})
}

// apiVersion is the api_version ServerInfo states.
func (c *Config) apiVersion() int32 {
	if c.APIVersion != 0 {
		return c.APIVersion
	}
	return APIVersion
}

// framedSocket is the path of the framed lookup socket served, or "".
func (s *Server) framedSocket() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lookupSocket
}

// ServerInfo describes this server; it answers while the server starts.
func (v *service) ServerInfo(context.Context, *rlmmpb.ServerInfoRequest) (*rlmmpb.ServerInfoReply, error) {
	c := &v.s.cfg
	return &rlmmpb.ServerInfoReply{
		Version:            c.Version,
		BrokerId:           c.BrokerID,
		MetadataPartitions: c.MetadataPartitions,
		Log:                c.LogDescription,
		Pid:                int64(os.Getpid()),
		ApiVersion:         c.apiVersion(),
		StartedUnixMs:      processStarted.UnixMilli(),
		LookupSocket:       v.s.framedSocket(),
	}, nil
}

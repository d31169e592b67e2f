package server

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/rpc/rlmmpb"
	"github.com/rlmm-go/rlmm/topicbased"
)

// service is what every framed connection answers with: the Server's
// manager for reads, mutations that wait for it, the assignment, and
// ServerInfo.
type service struct {
	s *Server
}

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

// applyMutation is the path of every mutation: decode the request, wait
// for the manager within ctx, apply. With sync (a request that waited in
// the socket, see staleAfter) the manager first applies every event its
// partition's metadata partition holds (Manager.Sync) on tpOf(arg), so the
// mutation's check meets the log as it is, not a cache behind it by the
// wait. When fenced(arg) says so (a copy's or a deletion's start), the
// server's LeaderFence is asked first, and a refusal publishes nothing.
func applyMutation[T any](ctx context.Context, s *Server, decode func() (T, error), tpOf func(T) rlmm.TopicIDPartition,
	sync bool, fenced func(T) bool, apply func(*topicbased.Manager, context.Context, T) error) error {
	arg, err := decode()
	if err != nil {
		return err
	}
	m, err := s.waitManager(ctx)
	if err != nil {
		return err
	}
	if fenced != nil && fenced(arg) {
		if err := s.checkLeader(ctx, tpOf(arg)); err != nil {
			// The broker only sees a retriable error in its task's log; an
			// operator looking at rlmm's own log sees the zombie here.
			if errors.Is(err, rlmm.ErrNotLeader) {
				s.logger.Warn("server: a segment mutation of a broker the cluster does not name leader was refused", "partition", tpOf(arg), "error", err)
			}
			return notPublished{err}
		}
	}
	if sync {
		if err := m.Sync(ctx, tpOf(arg)); err != nil {
			return fmt.Errorf("server: a mutation that waited in the socket could not catch up with the log first; nothing published: %w", err)
		}
	}
	return apply(m, ctx, arg)
}

// leadershipChanges is the path of a leadership change: recorded in the hosted set (persisted) and acknowledged
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
	// The broker's first change since it started (broker_start) names all it
	// hosts: what else the set holds, restored from a predecessor's file,
	// moved away while the broker was down, and no stop will come for it.
	return s.assignment(ctx, append(leaders, followers...), nil, req.GetBrokerStart(), func(m *topicbased.Manager, dropped []rlmm.TopicIDPartition) error {
		if len(dropped) > 0 {
			s.logger.Info("server: the broker's first leadership change since it started drops the hosted partitions it does not name",
				"partitions", len(dropped))
			if err := m.OnStopPartitions(ctx, dropped); err != nil {
				return err
			}
		}
		return m.OnPartitionLeadershipChanges(ctx, leaders, followers)
	})
}

// assignment applies a change to the hosted set and to the manager when it
// is up, in the order changes arrive, and acknowledges it (returns nil) once
// the set is written (see Hosted). With replace, remove is every partition
// of the set that add does not name. apply gets remove.
func (s *Server) assignment(ctx context.Context, add, remove []rlmm.TopicIDPartition, replace bool,
	apply func(*topicbased.Manager, []rlmm.TopicIDPartition) error) error {
	s.assignMu.Lock()
	defer s.assignMu.Unlock()
	if replace {
		remove = s.cfg.Hosted.notIn(add)
	}
	s.cfg.Hosted.update(add, remove)
	if m := s.mgr.Load(); m != nil {
		if err := apply(m, remove); err != nil {
			return err
		}
	}
	if err := s.cfg.Hosted.save(); err != nil {
		s.logger.Warn("server: an assignment change is served but not acknowledged: the hosted set could not be written; the plugin sends the change again", "error", err)
		return fmt.Errorf("%w: the assignment change is applied, but not acknowledged until the hosted set is written: %w", rlmm.ErrNotReady, err)
	}
	return nil
}

// stopPartitions is the path of a stop: recorded as leadershipChanges
// records a change.
func (s *Server) stopPartitions(ctx context.Context, req *rlmmpb.StopPartitionsRequest) error {
	parts, err := tpsFromProto(req.GetPartitions(), "partitions")
	if err != nil {
		return err
	}
	return s.assignment(ctx, nil, parts, false, func(m *topicbased.Manager, _ []rlmm.TopicIDPartition) error {
		return m.OnStopPartitions(ctx, parts)
	})
}

// apiVersion is the api_version ServerInfo states.
func (c *Config) apiVersion() int32 {
	if c.testAPIVersion != 0 {
		return c.testAPIVersion
	}
	return APIVersion
}

// serverInfo describes this server; it answers while the server starts.
func (v *service) serverInfo() *rlmmpb.ServerInfoReply {
	c := &v.s.cfg
	return &rlmmpb.ServerInfoReply{
		Version:            c.Version,
		BrokerId:           c.BrokerID,
		MetadataPartitions: c.MetadataPartitions,
		Log:                c.LogDescription,
		Pid:                int64(os.Getpid()),
		ApiVersion:         c.apiVersion(),
		StartedUnixMs:      processStarted.UnixMilli(),
	}
}

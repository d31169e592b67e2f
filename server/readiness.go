package server

import (
	"context"
	"fmt"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/rpc/rlmmpb"
	"github.com/rlmm-go/rlmm/topicbased"
)

// watchReadiness pushes the readiness of every hosted user partition to a
// watch connection (PURPOSE_WATCH), so that the plugin answers the broker's
// isReady from memory instead of with a call per partition on the
// broker's tiering threads. Each update is handed to push, whose error
// ends it.
//
// The first update goes out at once: empty while the manager is not up (no
// partition is hosted, none is ready), then the manager's HostedReadiness.
// After that it waits for the manager's ReadinessChanged and sends the list
// as it is then. Changes that come while it sends, or close together, are
// coalesced: the list is read after the wait, not once per change, and a
// list equal to the one sent last is not sent again. It returns when ctx
// ends or the server stops (rlmm.ErrClosed).
func (v *service) watchReadiness(ctx context.Context, push func(*rlmmpb.ReadinessUpdate) error) error {
	var last map[rlmm.TopicIDPartition]bool
	send := func(list []topicbased.PartitionReadiness) error {
		now := make(map[rlmm.TopicIDPartition]bool, len(list))
		for _, p := range list {
			now[p.TopicIDPartition] = p.Ready
		}
		if last != nil && sameReadiness(last, now) {
			return nil
		}
		u := &rlmmpb.ReadinessUpdate{Partitions: make([]*rlmmpb.PartitionReadiness, len(list))}
		for i, p := range list {
			u.Partitions[i] = &rlmmpb.PartitionReadiness{TopicIdPartition: tpToProto(p.TopicIDPartition), Ready: p.Ready}
		}
		if err := push(u); err != nil {
			return err // the client went away
		}
		last = now
		return nil
	}

	m := v.s.mgr.Load()
	if m == nil {
		if err := send(nil); err != nil {
			return err
		}
		select {
		case <-v.s.up:
			m = v.s.mgr.Load()
		case <-ctx.Done():
			return ctx.Err()
		case <-v.s.stopping:
			return watchStopped()
		}
	}
	for {
		// Take the channel before reading: a change after the read closes it.
		changed := m.ReadinessChanged()
		if err := send(m.HostedReadiness()); err != nil {
			return err
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		case <-v.s.stopping:
			return watchStopped()
		}
	}
}

func watchStopped() error {
	return fmt.Errorf("rlmm serve is stopping; the readiness watch ends: %w", rlmm.ErrClosed)
}

// sameReadiness reports whether two readiness maps are equal.
func sameReadiness(a, b map[rlmm.TopicIDPartition]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k, r := range a {
		if s, ok := b[k]; !ok || s != r {
			return false
		}
	}
	return true
}

package server

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/rpc/rlmmpb"
	"github.com/rlmm-go/rlmm/wire"
)

// readinessOf turns an update into a map by partition.
func readinessOf(t *testing.T, u *rlmmpb.ReadinessUpdate) map[rlmm.TopicIDPartition]bool {
	t.Helper()
	out := map[rlmm.TopicIDPartition]bool{}
	for _, p := range u.Partitions {
		tp, err := tpFromProto(p.TopicIdPartition, "topic_id_partition")
		if err != nil {
			t.Fatalf("update names a bad partition: %v", err)
		}
		out[tp] = p.Ready
	}
	return out
}

// recvUntil receives updates until one satisfies ok (each must be a new
// state: the server never repeats the update before) and returns it.
func recvUntil(t *testing.T, s rlmmpb.RemoteLogMetadata_WatchReadinessClient, what string,
	ok func(map[rlmm.TopicIDPartition]bool) bool, prev map[rlmm.TopicIDPartition]bool) map[rlmm.TopicIDPartition]bool {
	t.Helper()
	for {
		u, err := s.Recv()
		if err != nil {
			t.Fatalf("waiting for an update with %s: %v", what, err)
		}
		got := readinessOf(t, u)
		if prev != nil && equalReadiness(prev, got) {
			t.Fatalf("an update repeated the one before it: %v", got)
		}
		if ok(got) {
			return got
		}
		prev = got
	}
}

func equalReadiness(a, b map[rlmm.TopicIDPartition]bool) bool {
	return sameReadiness(a, b)
}

// TestWatchReadiness: the stream answers at once (empty while the manager
// is not up), then pushes the hosted partitions as they are assigned,
// become ready and are stopped; a client's cancel ends its handler
// (TestMain's goleak).
func TestWatchReadiness(t *testing.T) {
	f := newFixture(t, fixtureOpts{noManager: true})
	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel()
	s, err := f.client.WatchReadiness(ctx, &rlmmpb.WatchReadinessRequest{})
	if err != nil {
		t.Fatal(err)
	}
	first, err := s.Recv()
	if err != nil {
		t.Fatalf("first update while starting: %v", err)
	}
	if len(first.Partitions) != 0 {
		t.Fatalf("first update while starting lists %v, want none", first.Partitions)
	}

	f.startManager(t)
	a, b := newTP(), newTP()
	f.assign(t, a, b)
	got := recvUntil(t, s, "a and b ready", func(m map[rlmm.TopicIDPartition]bool) bool {
		return m[a] && m[b]
	}, map[rlmm.TopicIDPartition]bool{})
	if len(got) != 2 {
		t.Fatalf("after assigning a and b: %v, want exactly those two", got)
	}

	if _, err := f.client.OnStopPartitions(testCtx(t), &rlmmpb.StopPartitionsRequest{
		Partitions: []*rlmmpb.TopicIdPartition{tpToProto(a)}}); err != nil {
		t.Fatal(err)
	}
	got = recvUntil(t, s, "a gone", func(m map[rlmm.TopicIDPartition]bool) bool {
		_, hosted := m[a]
		return !hosted
	}, got)
	if len(got) != 1 || !got[b] {
		t.Fatalf("after stopping a: %v, want only b, ready", got)
	}

	// A second watcher gets the state as it is now, at once.
	s2, err := f.client.WatchReadiness(ctx, &rlmmpb.WatchReadinessRequest{})
	if err != nil {
		t.Fatal(err)
	}
	u, err := s2.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if now := readinessOf(t, u); !equalReadiness(now, got) {
		t.Fatalf("a new watcher's first update: %v, want %v", now, got)
	}

	cancel()
	if _, err := s.Recv(); status.Code(err) != codes.Canceled {
		t.Fatalf("after the client's cancel: %v, want CANCELED", err)
	}
}

// TestStopEndsWatchReadiness: Stop ends an open readiness stream with
// UNAVAILABLE (CLOSED) instead of waiting for its client.
func TestStopEndsWatchReadiness(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	s, err := f.client.WatchReadiness(testCtx(t), &rlmmpb.WatchReadinessRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Recv(); err != nil {
		t.Fatal(err)
	}
	f.srv.Stop(testCtx(t))
	_, err = s.Recv()
	st := status.Convert(err)
	if st.Code() != codes.Unavailable || !strings.Contains(st.Message(), "stopping") {
		t.Fatalf("after Stop: %v, want UNAVAILABLE saying the server stops", err)
	}
	if _, info := errorInfo(t, err); info.Kind != rlmmpb.ErrorKind_CLOSED {
		t.Fatalf("after Stop: kind %v, want CLOSED", info.Kind)
	}
}

// TestStatsCollector: /metrics has the hosted and cached partition gauges,
// the cached segments gauge and the skipped events counter, following the manager's Stats (zero
// before it is up).
func TestStatsCollector(t *testing.T) {
	f := newFixture(t, fixtureOpts{noManager: true})
	ops := httptest.NewServer(f.srv.OpsHandler(f.reg))
	defer ops.Close()
	if v := gathered(t, ops.URL, "rlmm_hosted_partitions"); v != 0 {
		t.Fatalf("rlmm_hosted_partitions before the manager is up: %v, want 0", v)
	}
	f.startManager(t)
	tp := newTP()
	f.assign(t, tp)
	f.addAndFinish(t, segment(tp, 0))
	// An event of another user partition of the same metadata partition,
	// not hosted here: read with it and skipped.
	other := newTP()
	for f.mgr.MetadataPartitionOf(other) != f.mgr.MetadataPartitionOf(tp) {
		other = newTP()
	}
	ev := wire.SegmentEvent(segment(other, 0))
	b, err := wire.AppendEvent(nil, &ev)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.log.Publish(testCtx(t), f.mgr.MetadataPartitionOf(other), b); err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	for f.mgr.Stats().Skipped == 0 {
		select {
		case <-ctx.Done():
			t.Fatalf("the event of a partition not hosted was never skipped: %+v", f.mgr.Stats())
		case <-time.After(time.Millisecond):
		}
	}
	if v := gathered(t, ops.URL, "rlmm_hosted_partitions"); v != 1 {
		t.Errorf("rlmm_hosted_partitions: %v, want 1", v)
	}
	if v := gathered(t, ops.URL, "rlmm_cached_partitions"); v != 1 {
		t.Errorf("rlmm_cached_partitions: %v, want 1", v)
	}
	if v := gathered(t, ops.URL, "rlmm_cached_segments"); v != 1 {
		t.Errorf("rlmm_cached_segments: %v, want 1 (the hosted partition's one segment, not the other's)", v)
	}
	if v := gathered(t, ops.URL, "rlmm_events_skipped_total"); v != 1 {
		t.Errorf("rlmm_events_skipped_total: %v, want 1 (Stats().Skipped %d)", v, f.mgr.Stats().Skipped)
	}
	for _, name := range []string{"rlmm_rebuild_passes_total", "rlmm_rebuilt_partitions_total"} {
		gathered(t, ops.URL, name)
	}
	if v := gathered(t, ops.URL, "rlmm_tombstones_total"); v != 0 {
		t.Errorf("rlmm_tombstones_total: %v, want 0 (no tombstone in the log)", v)
	}
}

// gathered returns the value of the one series of family name on the
// /metrics of the operations endpoint at url.
func gathered(t *testing.T, url, name string) float64 {
	t.Helper()
	code, body := get(t, url+"/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d %s", code, body)
	}
	var found []string
	for line := range strings.Lines(body) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+" "); ok {
			found = append(found, v)
		}
	}
	if len(found) != 1 {
		t.Fatalf("/metrics has %d series of %s (%q), want 1", len(found), name, found)
	}
	v, err := strconv.ParseFloat(found[0], 64)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return v
}

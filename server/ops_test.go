package server

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rlmm-go/rlmm/eventlog/memlog"
	"github.com/rlmm-go/rlmm/rpc/rlmmpb"
	"github.com/rlmm-go/rlmm/wire"
)

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// TestMetrics: after mutations, a snapshot and a restart from it, /metrics
// carries a family for every method of topicbased.Metrics.
func TestMetrics(t *testing.T) {
	ml := memlog.New(metadataPartitions)
	t.Cleanup(func() { ml.Close() })
	snap := shortDir(t)
	first := newFixture(t, fixtureOpts{log: ml, snapDir: snap})
	tp := newTP()
	first.assign(t, tp)
	for i := range 3 {
		first.addAndFinish(t, segment(tp, int64(i)*100))
	}
	bad := finish(segment(tp, 900)) // unknown: a failed mutation
	if _, err := first.client.UpdateSegment(testCtx(t), bad); err == nil {
		t.Fatal("update of an unknown segment succeeded")
	}
	if err := first.mgr.ShutdownAndFlush(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(first.srv.OpsHandler(first.reg))
	defer hs.Close()
	_, body := get(t, hs.URL+"/metrics")
	for _, want := range []string{
		`rlmm_events_applied_total{partition="`,
		`rlmm_partition_applied_offset{partition="`,
		`rlmm_partition_high_water_mark{partition="`,
		`rlmm_partition_lag{partition="`,
		`rlmm_partition_assigned{partition="`,
		`rlmm_partition_ready{partition="`,
		`rlmm_mutation_duration_seconds_bucket{op="AddSegment",result="ok"`,
		`rlmm_mutation_duration_seconds_count{op="UpdateSegment",result="UNKNOWN_SEGMENT"} 1`,
		// Three adds and three finishes published; the refused update did not.
		`rlmm_mutation_phase_seconds_count{phase="publish"} 6`,
		`rlmm_mutation_phase_seconds_count{phase="wake"} 6`,
		`rlmm_snapshot_writes_total{result="ok"} 1`,
		`rlmm_snapshot_write_duration_seconds_count 1`,
		`rlmm_snapshot_bytes `,
		`rlmm_snapshot_load_seconds `,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}

	// A restart from the snapshot reports the load and the build.
	second := newFixture(t, fixtureOpts{log: ml, snapDir: snap})
	second.assign(t, tp)
	hs2 := httptest.NewServer(second.srv.OpsHandler(second.reg))
	defer hs2.Close()
	ctx := testCtx(t)
	for {
		_, body = get(t, hs2.URL+"/metrics")
		if strings.Contains(body, "rlmm_snapshot_build_seconds ") && strings.Contains(body, "rlmm_snapshot_load_segments 3") {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the restart's snapshot metrics never appeared:\n%s", body)
		case <-time.After(5 * time.Millisecond):
		}
	}
	for _, want := range []string{"rlmm_snapshot_load_failed 0", "rlmm_snapshot_build_failures 0"} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// TestHealthAndReadiness: /readyz is 503 while starting and while an
// assigned metadata partition catches up, 200 once it is caught up;
// /healthz is 200 until the manager closes.
func TestHealthAndReadiness(t *testing.T) {
	ml := memlog.New(metadataPartitions)
	t.Cleanup(func() { ml.Close() })
	// Events to catch up with.
	seed := newFixture(t, fixtureOpts{log: ml})
	tp := newTP()
	seed.assign(t, tp)
	seed.addAndFinish(t, segment(tp, 0))
	seed.mgr.Close()

	f := newFixture(t, fixtureOpts{log: ml, noManager: true})
	hs := httptest.NewServer(f.srv.OpsHandler(f.reg))
	defer hs.Close()
	if code, body := get(t, hs.URL+"/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "starting") {
		t.Fatalf("/readyz while starting: %d %q, want 503 starting", code, body)
	}
	if code, _ := get(t, hs.URL+"/healthz"); code != http.StatusOK {
		t.Fatalf("/healthz while starting: %d", code)
	}
	f.gate.hold()
	f.startManager(t)
	if _, err := f.client.OnPartitionLeadershipChanges(testCtx(t), &rlmmpb.LeadershipChangesRequest{
		Leaders: []*rlmmpb.TopicIdPartition{tpToProto(tp)}}); err != nil {
		t.Fatal(err)
	}
	mp := f.mgr.MetadataPartitionOf(tp)
	code, body := get(t, hs.URL+"/readyz")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, fmt.Sprintf("catching up: %d (applied", mp)) {
		t.Fatalf("/readyz while catching up: %d %q, want 503 naming metadata partition %d", code, body, mp)
	}
	// Reads of the partition answer NOT_READY meanwhile.
	_, err := f.client.SegmentForOffset(testCtx(t), &rlmmpb.SegmentForOffsetRequest{TopicIdPartition: tpToProto(tp)})
	if info := errorInfo(t, err); info.Kind != rlmmpb.ErrorKind_NOT_READY {
		t.Fatalf("read while catching up: %s", info.Kind)
	}
	f.gate.release()
	f.assign(t, tp)
	if code, body := get(t, hs.URL+"/readyz"); code != http.StatusOK || !strings.Contains(body, "ready") {
		t.Fatalf("/readyz caught up: %d %q", code, body)
	}
	f.mgr.Close()
	if code, _ := get(t, hs.URL+"/healthz"); code != http.StatusServiceUnavailable {
		t.Fatalf("/healthz after close: %d, want 503", code)
	}
	if code, _ := get(t, hs.URL+"/readyz"); code != http.StatusServiceUnavailable {
		t.Fatalf("/readyz after close: %d, want 503", code)
	}
}

// TestHistoryLostMetric: topicbased's HistoryLost report counts the gap and
// the events in it, per metadata partition.
func TestHistoryLostMetric(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	m.HistoryLost(2, 5, 9)
	m.HistoryLost(2, 0, 1)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range families {
		for _, s := range f.GetMetric() {
			if len(s.GetLabel()) == 1 && s.GetLabel()[0].GetValue() == "2" && s.GetCounter() != nil {
				got[f.GetName()] = s.GetCounter().GetValue()
			}
		}
	}
	if got["rlmm_history_lost_events_total"] != 5 || got["rlmm_history_lost_gaps_total"] != 2 {
		t.Errorf("history lost counters of partition 2 = %v; want 5 events in 2 gaps", got)
	}
}

// /metrics answers uncompressed even to a scraper that offers gzip: the
// compressor promhttp would pool between scrapes costs more heap than a
// small sidecar's page is worth compressing.
func TestMetricsUncompressed(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	hs := httptest.NewServer(f.srv.OpsHandler(f.reg))
	defer hs.Close()
	req, err := http.NewRequest(http.MethodGet, hs.URL+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept-Encoding", "gzip")
	// A transport of its own with compression off, so the response comes
	// back as sent (http.Transport would otherwise gunzip it silently).
	resp, err := (&http.Transport{DisableCompression: true}).RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if enc := resp.Header.Get("Content-Encoding"); enc != "" {
		t.Fatalf("/metrics came back with Content-Encoding %q, want none", enc)
	}
	if !strings.Contains(string(body), "rlmm_") {
		t.Fatalf("/metrics body is not the plain text exposition:\n%.200s", body)
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

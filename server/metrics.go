package server

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rlmm-go/rlmm/topicbased"
)

// Metrics is topicbased.Metrics in Prometheus form (every method of the
// interface has its metric families). Create it with NewMetrics and pass it
// as topicbased.Config.Metrics. Metric names start with "rlmm_"; per
// metadata partition series carry the label partition.
type Metrics struct {
	applied, rejected, undecodable *prometheus.CounterVec

	appliedOffset, highWater, lag *prometheus.GaugeVec
	assigned, ready, catchUp      *prometheus.GaugeVec

	mutation *prometheus.HistogramVec
	// phases are rlmm_mutation_phase_seconds by phase, resolved once
	// (six observations per mutation; MutationSplit).
	phases [6]prometheus.Observer

	snapWrite         prometheus.Histogram
	snapWrites        *prometheus.CounterVec
	snapBytes         prometheus.Gauge
	snapLoad          prometheus.Gauge
	snapLoadSegments  prometheus.Gauge
	snapLoadFailed    prometheus.Gauge
	snapBuild         prometheus.Gauge
	snapBuildFailures prometheus.Gauge

	historyLost, historyGaps *prometheus.CounterVec
}

var (
	_ topicbased.Metrics      = (*Metrics)(nil)
	_ topicbased.SplitMetrics = (*Metrics)(nil)
)

// phaseNames are the label values of rlmm_mutation_phase_seconds, in the
// order of Metrics.phases and topicbased.MutationSplit's fields.
var phaseNames = [6]string{"ready", "encode", "publish", "fetch", "apply", "wake"}

// NewMetrics creates the metric families and registers them with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	part := []string{"partition"}
	counter := func(name, help string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, part)
	}
	gauge := func(name, help string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, part)
	}
	one := func(name, help string) prometheus.Gauge {
		return prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
	}
	m := &Metrics{
		applied:       counter("rlmm_events_applied_total", "Events of a metadata partition applied by the state machine."),
		rejected:      counter("rlmm_events_rejected_total", "Events of a metadata partition skipped: a forbidden transition, an unknown segment, a misrouted or unexpected record."),
		undecodable:   counter("rlmm_events_undecodable_total", "Records of a metadata partition that could not be decoded (skipped)."),
		appliedOffset: gauge("rlmm_partition_applied_offset", "Last applied offset of a metadata partition (-1 for none)."),
		highWater:     gauge("rlmm_partition_high_water_mark", "Highest high-water mark known for a metadata partition."),
		lag:           gauge("rlmm_partition_lag", "Events of a metadata partition in the log and not applied yet (high-water mark - applied offset - 1)."),
		assigned:      gauge("rlmm_partition_assigned", "1 while a metadata partition is consumed by this server."),
		ready:         gauge("rlmm_partition_ready", "1 while a metadata partition is assigned and caught up."),
		catchUp:       gauge("rlmm_partition_catch_up_seconds", "Time from assignment to ready of a metadata partition's last catch-up."),
		mutation: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "rlmm_mutation_duration_seconds",
			Help:    "Latency of a mutation from call to return, by op (AddSegment, UpdateSegment, PutPartitionDelete) and result (ok or the error kind).",
			Buckets: prometheus.ExponentialBuckets(50e-6, 2, 18), // 50 µs .. 6.5 s
		}, []string{"op", "result"}),
		snapWrite: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "rlmm_snapshot_write_duration_seconds",
			Help:    "Duration of a snapshot write.",
			Buckets: prometheus.ExponentialBuckets(1e-3, 2, 14), // 1 ms .. 8 s
		}),
		snapWrites:        prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rlmm_snapshot_writes_total", Help: "Snapshot writes by result (ok, failed)."}, []string{"result"}),
		snapBytes:         one("rlmm_snapshot_bytes", "Size of the last snapshot written."),
		snapLoad:          one("rlmm_snapshot_load_seconds", "Time the start spent loading the snapshot."),
		snapLoadSegments:  one("rlmm_snapshot_load_segments", "Segments the start loaded from the snapshot."),
		snapLoadFailed:    one("rlmm_snapshot_load_failed", "1 if the snapshot found at start could not be used (full replay)."),
		snapBuild:         one("rlmm_snapshot_build_seconds", "Time from start until every partition the snapshot installed was built."),
		snapBuildFailures: one("rlmm_snapshot_build_failures", "Partitions of the snapshot that could not be built (each replays its metadata partition)."),
		historyLost:       counter("rlmm_history_lost_events_total", "Events of a metadata partition deleted from the log (retention, DeleteRecords) before this server applied them."),
		historyGaps:       counter("rlmm_history_lost_gaps_total", "Gaps of deleted events found in a metadata partition (each one logged and kept among the rejected events as history_lost)."),
	}
	phase := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "rlmm_mutation_phase_seconds",
		Help: "Where a mutation's time went, by phase: ready (readiness and the check against the cache), encode, publish (Log.Publish until acknowledged), " +
			"fetch (the pump's fetch of the record back, after the acknowledgement), apply (the pump's batch), wake (the mutation running again).",
		Buckets: prometheus.ExponentialBuckets(1e-6, 2, 24), // 1 µs .. 8 s
	}, []string{"phase"})
	for i, name := range phaseNames {
		m.phases[i] = phase.WithLabelValues(name)
	}
	reg.MustRegister(phase)
	reg.MustRegister(m.applied, m.rejected, m.undecodable, m.appliedOffset, m.highWater, m.lag,
		m.assigned, m.ready, m.catchUp, m.mutation, m.snapWrite, m.snapWrites, m.snapBytes,
		m.snapLoad, m.snapLoadSegments, m.snapLoadFailed, m.snapBuild, m.snapBuildFailures,
		m.historyLost, m.historyGaps)
	return m
}

func label(p int32) string { return strconv.FormatInt(int64(p), 10) }

func boolGauge(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// EventsConsumed counts a batch's applied, rejected and undecodable events.
func (m *Metrics) EventsConsumed(partition int32, applied, rejected, undecodable int) {
	l := label(partition)
	if applied > 0 {
		m.applied.WithLabelValues(l).Add(float64(applied))
	}
	if rejected > 0 {
		m.rejected.WithLabelValues(l).Add(float64(rejected))
	}
	if undecodable > 0 {
		m.undecodable.WithLabelValues(l).Add(float64(undecodable))
	}
}

// PartitionProgress sets the applied offset, high-water mark and lag.
func (m *Metrics) PartitionProgress(partition int32, appliedOffset, highWaterMark int64) {
	l := label(partition)
	m.appliedOffset.WithLabelValues(l).Set(float64(appliedOffset))
	m.highWater.WithLabelValues(l).Set(float64(highWaterMark))
	m.lag.WithLabelValues(l).Set(float64(max(0, highWaterMark-appliedOffset-1)))
}

// PartitionReadiness sets the assignment and readiness gauges.
func (m *Metrics) PartitionReadiness(partition int32, assigned, ready bool, catchUp time.Duration) {
	l := label(partition)
	m.assigned.WithLabelValues(l).Set(boolGauge(assigned))
	m.ready.WithLabelValues(l).Set(boolGauge(ready))
	if ready && catchUp > 0 {
		m.catchUp.WithLabelValues(l).Set(catchUp.Seconds())
	}
}

// MutationDone observes a mutation's latency by op and result.
func (m *Metrics) MutationDone(op topicbased.Op, latency time.Duration, err error) {
	result := "ok"
	if err != nil {
		kind := classify(err)
		result = kind.String()
	}
	m.mutation.WithLabelValues(op.String(), result).Observe(latency.Seconds())
}

// MutationSplit observes a mutation's phases.
func (m *Metrics) MutationSplit(_ topicbased.Op, s topicbased.MutationSplit) {
	for i, d := range [6]time.Duration{s.Ready, s.Encode, s.Publish, s.Fetch, s.Apply, s.Wake} {
		m.phases[i].Observe(d.Seconds())
	}
}

// SnapshotWritten observes a snapshot write.
func (m *Metrics) SnapshotWritten(duration time.Duration, bytes int64, err error) {
	if err != nil {
		m.snapWrites.WithLabelValues("failed").Inc()
		return
	}
	m.snapWrites.WithLabelValues("ok").Inc()
	m.snapWrite.Observe(duration.Seconds())
	m.snapBytes.Set(float64(bytes))
}

// SnapshotLoaded sets the load time and segment count of the start.
func (m *Metrics) SnapshotLoaded(duration time.Duration, segments int, err error) {
	m.snapLoad.Set(duration.Seconds())
	m.snapLoadSegments.Set(float64(segments))
	m.snapLoadFailed.Set(boolGauge(err != nil))
}

// SnapshotBuilt sets the build time and failure count of the snapshot's
// partitions.
func (m *Metrics) SnapshotBuilt(sinceStart time.Duration, failures uint64) {
	m.snapBuild.Set(sinceStart.Seconds())
	m.snapBuildFailures.Set(float64(failures))
}

// HistoryLost counts a gap of deleted events and the events in it.
func (m *Metrics) HistoryLost(partition int32, from, to int64) {
	l := label(partition)
	m.historyGaps.WithLabelValues(l).Inc()
	if to > from {
		m.historyLost.WithLabelValues(l).Add(float64(to - from))
	}
}

// statsCollector is what the manager's Stats count about the user
// partitions it keeps, read at every scrape (all zero until the manager is
// up), served by OpsHandler next to the gatherer it is given:
//
//   - rlmm_hosted_partitions: user partitions this server hosts (given to
//     OnPartitionLeadershipChanges, not stopped);
//   - rlmm_cached_partitions: user partitions whose state its cache holds
//     (the hosted ones with state, and a snapshot's not consumed yet), and
//     rlmm_cached_segments their live segments (not yet
//     DELETE_SEGMENT_FINISHED): with the per-partition remote size gauges,
//     what a broker's cache holds can be compared with what it hosts;
//   - rlmm_events_skipped_total: events of user partitions it does not host,
//     read with their metadata partition and dropped undecoded;
//   - rlmm_rebuild_passes_total, rlmm_rebuilt_partitions_total: passes
//     reading a metadata partition again from its start for user
//     partitions hosted after it was consumed, and the partitions rebuilt;
//   - rlmm_tombstones_total: records with a null value read and skipped (a
//     metadata topic compacted as KIP-1266 proposes holds two per deleted
//     segment; nothing to apply);
//   - rlmm_hosted_set_write_failures_total: writes of the hosted set that
//     failed (a full or read-only disk): changes wait to be acknowledged.
//
// With several brokers, each one's server shows only its own partitions.
type statsCollector struct{ s *Server }

var (
	descHosted  = prometheus.NewDesc("rlmm_hosted_partitions", "User partitions this server hosts (assigned by its broker and not stopped).", nil, nil)
	descCached  = prometheus.NewDesc("rlmm_cached_partitions", "User partitions whose state the cache holds (hosted ones with state, and a snapshot's not consumed yet).", nil, nil)
	descCachedS = prometheus.NewDesc("rlmm_cached_segments", "Live segments (not yet DELETE_SEGMENT_FINISHED) of the user partitions the cache holds.", nil, nil)
	descSkipped = prometheus.NewDesc("rlmm_events_skipped_total", "Events of user partitions this server does not host: read with their metadata partition, not decoded, not kept.", nil, nil)
	descPasses  = prometheus.NewDesc("rlmm_rebuild_passes_total", "Rebuild passes started: a metadata partition read again from its start for user partitions hosted after it was consumed.", nil, nil)
	descRebuilt = prometheus.NewDesc("rlmm_rebuilt_partitions_total", "User partitions the rebuild passes rebuilt.", nil, nil)
	descHostedW = prometheus.NewDesc("rlmm_hosted_set_write_failures_total", "Writes of the hosted set (hosted.pb beside the snapshot) that failed; the assignment change waits to be acknowledged until a write succeeds.", nil, nil)
	descTombs   = prometheus.NewDesc("rlmm_tombstones_total", "Records with a null value (tombstones of a compacted metadata topic, KIP-1266) read and skipped: nothing to apply.", nil, nil)
)

func (c statsCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descHosted
	ch <- descCached
	ch <- descCachedS
	ch <- descSkipped
	ch <- descPasses
	ch <- descRebuilt
	ch <- descTombs
	ch <- descHostedW
}

func (c statsCollector) Collect(ch chan<- prometheus.Metric) {
	var st topicbased.Stats
	if m := c.s.mgr.Load(); m != nil {
		st = m.Stats()
	}
	ch <- prometheus.MustNewConstMetric(descHosted, prometheus.GaugeValue, float64(st.Hosted))
	ch <- prometheus.MustNewConstMetric(descCached, prometheus.GaugeValue, float64(st.CachedPartitions))
	ch <- prometheus.MustNewConstMetric(descCachedS, prometheus.GaugeValue, float64(st.CachedSegments))
	ch <- prometheus.MustNewConstMetric(descSkipped, prometheus.CounterValue, float64(st.Skipped))
	ch <- prometheus.MustNewConstMetric(descPasses, prometheus.CounterValue, float64(st.Passes))
	ch <- prometheus.MustNewConstMetric(descRebuilt, prometheus.CounterValue, float64(st.Rebuilt))
	ch <- prometheus.MustNewConstMetric(descTombs, prometheus.CounterValue, float64(st.Tombstones))
	ch <- prometheus.MustNewConstMetric(descHostedW, prometheus.CounterValue, float64(c.s.cfg.Hosted.Failures()))
}

package server

import (
	"cmp"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rlmm-go/rlmm/internal/view"
)

// SizeMetrics bounds the remote size gauges (Config.Sizes).
type SizeMetrics struct {
	// TopicsLimit is how many topics get their own topic label: the
	// largest by remote bytes; the others are summed under topic="_other".
	// 0 turns the per-topic gauges off (the totals stay).
	TopicsLimit int
	// PartitionsLimit is the same for the per-partition gauges, off at 0.
	PartitionsLimit int
	// MaxAge is how long a computation serves scrapes before the next
	// scrape computes again (0: every scrape computes).
	MaxAge time.Duration
}

// DefaultTopicsLimit is the default SizeMetrics.TopicsLimit.
const DefaultTopicsLimit = 100

// otherLabel is the label of the rows summed past a limit.
const otherLabel = "_other"

// The remote size gauges: per topic (and partition when asked), of the
// partitions this server hosts and has caught up, computed by
// view.SizesOf (the rule of inspect --sizes).
var (
	topicLabels    = []string{"topic"}
	partLabels     = []string{"topic", "partition"}
	descTopicBytes = prometheus.NewDesc("rlmm_remote_bytes", "Remote bytes of a topic's hosted partitions: the sizes of its segments not yet DELETE_SEGMENT_FINISHED (as inspect --sizes). topic=\"_other\" sums the topics past --metrics-topics-limit.", topicLabels, nil)
	descTopicSegs  = prometheus.NewDesc("rlmm_remote_segments", "Remote segments (not yet DELETE_SEGMENT_FINISHED) of a topic's hosted partitions.", topicLabels, nil)
	descTopicParts = prometheus.NewDesc("rlmm_remote_partitions", "Hosted partitions of a topic with remote segments.", topicLabels, nil)
	descTopicOff   = prometheus.NewDesc("rlmm_remote_oldest_offset", "Lowest start offset of a COPY_SEGMENT_FINISHED segment of a topic's hosted partitions (its partitions' lowest; not exported for _other, nor when none is finished).", topicLabels, nil)
	descTopicTs    = prometheus.NewDesc("rlmm_remote_oldest_timestamp_seconds", "Oldest remote data of a topic: the lowest largest-record-timestamp of its COPY_SEGMENT_FINISHED segments (the newest record of the oldest segment), in seconds since the epoch.", topicLabels, nil)
	descPartBytes  = prometheus.NewDesc("rlmm_remote_partition_bytes", "Remote bytes of a hosted partition (--metrics-partitions-limit largest; the rest summed under topic=\"_other\", partition=\"_other\").", partLabels, nil)
	descPartSegs   = prometheus.NewDesc("rlmm_remote_partition_segments", "Remote segments of a hosted partition.", partLabels, nil)
	descPartOff    = prometheus.NewDesc("rlmm_remote_partition_oldest_offset", "Lowest start offset of a COPY_SEGMENT_FINISHED segment of a hosted partition.", partLabels, nil)
	descPartTs     = prometheus.NewDesc("rlmm_remote_partition_oldest_timestamp_seconds", "Lowest largest-record-timestamp of a hosted partition's COPY_SEGMENT_FINISHED segments, in seconds since the epoch.", partLabels, nil)
	descSizeTook   = prometheus.NewDesc("rlmm_remote_size_compute_seconds", "Time the last computation of the remote size gauges took (a scan of the hosted partitions' segments in memory).", nil, nil)
)

// sizeCollector exports the remote size gauges, computing them at a scrape
// when the last computation is older than MaxAge.
type sizeCollector struct {
	s   *Server
	cfg SizeMetrics

	mu   sync.Mutex
	at   time.Time
	took time.Duration
	rows []view.Size
}

func (c *sizeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descTopicBytes, descTopicSegs, descTopicParts, descTopicOff, descTopicTs,
		descPartBytes, descPartSegs, descPartOff, descPartTs, descSizeTook} {
		ch <- d
	}
}

func (c *sizeCollector) Collect(ch chan<- prometheus.Metric) {
	rows, took := c.sizes()
	topics, parts := splitRows(rows)
	for _, r := range limitRows(topics, c.cfg.TopicsLimit) {
		l := []string{r.Topic}
		ch <- prometheus.MustNewConstMetric(descTopicBytes, prometheus.GaugeValue, float64(r.RemoteBytes), l...)
		ch <- prometheus.MustNewConstMetric(descTopicSegs, prometheus.GaugeValue, float64(r.Segments), l...)
		ch <- prometheus.MustNewConstMetric(descTopicParts, prometheus.GaugeValue, float64(r.Partitions), l...)
		oldest(ch, descTopicOff, descTopicTs, r, l)
	}
	for _, r := range limitRows(parts, c.cfg.PartitionsLimit) {
		l := []string{r.Topic, otherLabel}
		if r.Partition >= 0 {
			l[1] = strconv.FormatInt(int64(r.Partition), 10)
		}
		ch <- prometheus.MustNewConstMetric(descPartBytes, prometheus.GaugeValue, float64(r.RemoteBytes), l...)
		ch <- prometheus.MustNewConstMetric(descPartSegs, prometheus.GaugeValue, float64(r.Segments), l...)
		oldest(ch, descPartOff, descPartTs, r, l)
	}
	ch <- prometheus.MustNewConstMetric(descSizeTook, prometheus.GaugeValue, took.Seconds())
}

// oldest exports a row's oldest offset and timestamp when it has them.
func oldest(ch chan<- prometheus.Metric, off, ts *prometheus.Desc, r view.Size, l []string) {
	if r.OldestOffset >= 0 && r.Topic != otherLabel {
		ch <- prometheus.MustNewConstMetric(off, prometheus.GaugeValue, float64(r.OldestOffset), l...)
	}
	if r.OldestTimestampMs >= 0 {
		ch <- prometheus.MustNewConstMetric(ts, prometheus.GaugeValue, float64(r.OldestTimestampMs)/1000, l...)
	}
}

// sizes returns the rows of the last computation, computing them again
// when they are older than MaxAge (nil before the manager is up).
func (c *sizeCollector) sizes() ([]view.Size, time.Duration) {
	m := c.s.mgr.Load()
	if m == nil {
		return nil, 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.at.IsZero() && time.Since(c.at) < c.cfg.MaxAge {
		return c.rows, c.took
	}
	start := time.Now()
	c.rows = view.SizesOf(m.UserPartitions(), m, c.cfg.PartitionsLimit > 0, 0)
	c.at = time.Now()
	c.took = c.at.Sub(start)
	return c.rows, c.took
}

// splitRows parts the rows of view.SizesOf into topic rows and partition
// rows, merging the rows of one label (a topic deleted and created again
// has two ids and one name).
func splitRows(rows []view.Size) (topics, parts []view.Size) {
	type key struct {
		topic     string
		partition int32
	}
	at := map[key]int{}
	for _, r := range rows {
		list := &topics
		if r.Partition >= 0 {
			list = &parts
		}
		k := key{r.Topic, r.Partition}
		if i, ok := at[k]; ok {
			(*list)[i] = merge((*list)[i], r)
			(*list)[i].OldestOffset = -1 // offsets of two topics do not compare
			continue
		}
		at[k] = len(*list)
		*list = append(*list, r)
	}
	return topics, parts
}

// limitRows keeps the n rows with the most remote bytes (ties by topic,
// then partition) and sums the others into one row labelled _other; n <= 0
// keeps none.
func limitRows(rows []view.Size, n int) []view.Size {
	if n <= 0 {
		return nil
	}
	if len(rows) <= n {
		return rows
	}
	sorted := slices.Clone(rows)
	slices.SortFunc(sorted, func(a, b view.Size) int {
		return cmp.Or(cmp.Compare(b.RemoteBytes, a.RemoteBytes), cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	other := view.Size{Topic: otherLabel, Partition: -1, OldestOffset: -1, OldestTimestampMs: -1}
	for _, r := range sorted[n:] {
		other = merge(other, r)
	}
	other.OldestOffset = -1
	return append(sorted[:n:n], other)
}

// merge adds b's counts to a; the oldest timestamp is the lower.
func merge(a, b view.Size) view.Size {
	a.Partitions += b.Partitions
	a.Segments += b.Segments
	a.RemoteBytes += b.RemoteBytes
	if b.OldestTimestampMs >= 0 && (a.OldestTimestampMs < 0 || b.OldestTimestampMs < a.OldestTimestampMs) {
		a.OldestTimestampMs = b.OldestTimestampMs
	}
	return a
}

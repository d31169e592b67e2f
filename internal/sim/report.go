package sim

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// Latency summarizes a set of durations, in microseconds.
type Latency struct {
	Count int64   `json:"count"`
	P50Us float64 `json:"p50Us"`
	P99Us float64 `json:"p99Us"`
	MaxUs float64 `json:"maxUs"`
}

// summarize sorts ds in place and returns its percentiles.
func summarize(ds []time.Duration) Latency {
	if len(ds) == 0 {
		return Latency{}
	}
	slices.Sort(ds)
	at := func(q float64) float64 {
		i := int(q * float64(len(ds)-1))
		return float64(ds[i]) / float64(time.Microsecond)
	}
	return Latency{Count: int64(len(ds)), P50Us: at(0.50), P99Us: at(0.99), MaxUs: at(1)}
}

// Restart describes the broker that was stopped and restarted.
type Restart struct {
	Broker int32 `json:"broker"`
	// DurationMs is the time from Start to every hosted partition ready.
	DurationMs float64 `json:"durationMs"`
	// EventsReplayed is how many events the restarted broker applied from
	// the log after loading its snapshot; EventsTotal is the log's size then.
	EventsReplayed int64 `json:"eventsReplayed"`
	EventsTotal    int64 `json:"eventsTotal"`
	// SnapshotSegments is the number of segments loaded from the snapshot.
	SnapshotSegments int `json:"snapshotSegments"`
}

// Holding is one broker's hosted share of the cluster beside what its
// manager's cache holds: a broker keeps the state of the partitions it
// hosts and nothing else, so the two agree.
type Holding struct {
	Broker int32 `json:"broker"`
	// HostedPartitions and HostedSegments: the partitions the broker leads
	// or follows (deleted ones excluded) and their live segments in the
	// model.
	HostedPartitions int   `json:"hostedPartitions"`
	HostedSegments   int64 `json:"hostedSegments"`
	// CachedPartitions and CachedSegments: the user partitions with state
	// in the broker's cache and their live segments.
	CachedPartitions int   `json:"cachedPartitions"`
	CachedSegments   int64 `json:"cachedSegments"`
}

// Report is the outcome of a simulation.
type Report struct {
	Seed               int64   `json:"seed"`
	Brokers            int     `json:"brokers"`
	Topics             int     `json:"topics"`
	Partitions         int     `json:"partitions"`
	Rounds             int     `json:"rounds"`
	MetadataPartitions int32   `json:"metadataPartitions"`
	DurationSec        float64 `json:"durationSec"`

	// Events is the number of records in the metadata log at the end.
	Events int64 `json:"events"`
	// Mutations counts successful AddSegment, UpdateSegment and
	// PutPartitionDelete calls; MutationsPerSec divides them by the time
	// spent in rounds (mutations run concurrently).
	Mutations       int64   `json:"mutations"`
	MutationsPerSec float64 `json:"mutationsPerSec"`
	MutationLatency Latency `json:"mutationLatency"`
	// Lookups counts SegmentForOffset calls on leaders and followers.
	Lookups         int64   `json:"lookups"`
	LookupsPerSec   float64 `json:"lookupsPerSec"`
	LookupLatency   Latency `json:"lookupLatency"`
	NotReadyRetries int64   `json:"notReadyRetries"`
	// LookupErrors counts reads of the final lookup burst that returned an
	// error (ErrNotReady ones are also in NotReadyRetries; any other is a
	// difference too).
	LookupErrors int64 `json:"lookupErrors"`
	// StaleFollowerReads counts follower reads that missed a segment the
	// leader had already finished (the follower had not applied it yet).
	StaleFollowerReads int64 `json:"staleFollowerReads"`

	SegmentsCopied     int64  `json:"segmentsCopied"`
	CopiesFailed       int64  `json:"copiesFailed"`
	SegmentsRetired    int64  `json:"segmentsRetired"`
	MultiEpochSegments int64  `json:"multiEpochSegments"`
	LeaderMoves        int64  `json:"leaderMoves"`
	DeletedTopic       string `json:"deletedTopic"`
	LiveSegments       int64  `json:"liveSegments"`

	Restart Restart `json:"restart"`
	// Holdings says, per live broker, what it hosts and what its cache
	// holds (the restarted broker's included).
	Holdings []Holding `json:"holdings"`
	// HeapBytesPerSegment is the heap released by closing the broker
	// holding the most segments, divided by the segments its cache held
	// (runtime.MemStats after GC).
	HeapBytesPerSegment float64 `json:"heapBytesPerSegment"`
	// Rejected is the number of events the brokers' state machines
	// rejected while applying the log (0 expected).
	Rejected int64 `json:"rejected"`

	// Differences lists every disagreement between a broker and the model;
	// OK is true when there is none and nothing was rejected.
	Differences []string `json:"differences"`
	OK          bool     `json:"ok"`
}

// WriteText prints the report for people.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	status := "OK: every broker's view matches the model"
	if !r.OK {
		status = fmt.Sprintf("FAILED: %d differences, %d rejected events", len(r.Differences), r.Rejected)
	}
	fmt.Fprintf(&b, "rlmm simulate: %s\n", status)
	fmt.Fprintf(&b, "  cluster      %d brokers, %d topics, %d partitions, %d metadata partitions, %d rounds, seed %d, %.1f s\n",
		r.Brokers, r.Topics, r.Partitions, r.MetadataPartitions, r.Rounds, r.Seed, r.DurationSec)
	fmt.Fprintf(&b, "  events       %d in the log; segments copied %d (%d multi-epoch), failed copies %d, retired %d, live %d\n",
		r.Events, r.SegmentsCopied, r.MultiEpochSegments, r.CopiesFailed, r.SegmentsRetired, r.LiveSegments)
	fmt.Fprintf(&b, "  cluster ops  %d leadership moves, topic %s deleted, broker %d restarted\n",
		r.LeaderMoves, r.DeletedTopic, r.Restart.Broker)
	fmt.Fprintf(&b, "  mutations    %d at %.0f/s; latency p50 %s, p99 %s, max %s\n",
		r.Mutations, r.MutationsPerSec, us(r.MutationLatency.P50Us), us(r.MutationLatency.P99Us), us(r.MutationLatency.MaxUs))
	fmt.Fprintf(&b, "  lookups      %d at %.0f/s; latency p50 %s, p99 %s, max %s; %d not-ready retries, %d stale follower reads, %d errors in the final burst\n",
		r.Lookups, r.LookupsPerSec, us(r.LookupLatency.P50Us), us(r.LookupLatency.P99Us), us(r.LookupLatency.MaxUs),
		r.NotReadyRetries, r.StaleFollowerReads, r.LookupErrors)
	pct := 0.0
	if r.Restart.EventsTotal > 0 {
		pct = 100 * float64(r.Restart.EventsReplayed) / float64(r.Restart.EventsTotal)
	}
	fmt.Fprintf(&b, "  restart      broker %d ready in %.1f ms; replayed %d of %d events (%.1f%%) after loading %d segments from its snapshot\n",
		r.Restart.Broker, r.Restart.DurationMs, r.Restart.EventsReplayed, r.Restart.EventsTotal, pct, r.Restart.SnapshotSegments)
	for _, h := range r.Holdings {
		restarted := ""
		if h.Broker == r.Restart.Broker {
			restarted = " (restarted)"
		}
		fmt.Fprintf(&b, "  broker %-5d hosts %d partitions with %d segments (%s of the live ones), holds %d partitions with %d segments (%s)%s\n",
			h.Broker, h.HostedPartitions, h.HostedSegments, percent(h.HostedSegments, r.LiveSegments),
			h.CachedPartitions, h.CachedSegments, percent(h.CachedSegments, r.LiveSegments), restarted)
	}
	fmt.Fprintf(&b, "  memory       %.0f heap bytes per live segment in a broker's cache\n", r.HeapBytesPerSegment)
	fmt.Fprintf(&b, "  rejected     %d events (0 expected)\n", r.Rejected)
	for _, d := range r.Differences {
		fmt.Fprintf(&b, "  DIFFERENCE   %s\n", d)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// percent prints part of whole as a percentage.
func percent(part, whole int64) string {
	if whole == 0 {
		return "0%"
	}
	return fmt.Sprintf("%.1f%%", 100*float64(part)/float64(whole))
}

// us prints microseconds with a readable unit.
func us(v float64) string {
	switch {
	case v >= 1000:
		return fmt.Sprintf("%.2f ms", v/1000)
	case v >= 1:
		return fmt.Sprintf("%.1f µs", v)
	}
	return fmt.Sprintf("%.0f ns", v*1000)
}

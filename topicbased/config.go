package topicbased

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/eventlog"
	"github.com/rlmm-go/rlmm/memory"
)

// Defaults of Config.
const (
	// DefaultConsumeWait is Kafka's remote.log.metadata.consume.wait.ms
	// default: how long a mutation waits for its event to be applied.
	DefaultConsumeWait = 2 * time.Minute
	// DefaultSnapshotInterval is how often the housekeeper checks whether
	// the cache advanced and writes a new snapshot if it did.
	DefaultSnapshotInterval = time.Minute
	// DefaultRejectedLimit is how many rejected events Rejected keeps.
	DefaultRejectedLimit = 1000
	// DefaultLagInterval is how often the high-water marks of the consumed
	// metadata partitions are sampled for the lag metric (only when
	// Config.Metrics is set).
	DefaultLagInterval = 10 * time.Second
)

// Config configures Start. Only Log is required.
type Config struct {
	// Log is the event log (the __remote_log_metadata topic or a stand-in).
	// The manager does not close it: the caller owns it and closes it after
	// the manager.
	Log eventlog.Log
	// SnapshotDir is the directory of the snapshot file; "" disables
	// snapshots (every restart replays the consumed metadata partitions).
	SnapshotDir string
	// SnapshotInterval is the period of the housekeeper's snapshots; 0 means
	// DefaultSnapshotInterval, a negative value disables periodic snapshots
	// (ShutdownAndFlush and WriteSnapshot still write one).
	SnapshotInterval time.Duration
	// ConsumeWait bounds every wait of a mutation (for readiness and for its
	// event to be applied); 0 means DefaultConsumeWait. Kafka's
	// remote.log.metadata.consume.wait.ms.
	ConsumeWait time.Duration
	// Logger receives the manager's logs; nil discards them.
	Logger *slog.Logger
	// Metrics receives counters and gauges; nil records nothing.
	Metrics Metrics
	// RejectedLimit bounds the list of rejected events kept for Rejected;
	// 0 means DefaultRejectedLimit, a negative value keeps none.
	RejectedLimit int
	// LagInterval is the period at which high-water marks are sampled for
	// Metrics.PartitionProgress; 0 means DefaultLagInterval, negative
	// disables sampling (lag is then measured against the high-water mark
	// seen at assignment and the offsets consumed since).
	LagInterval time.Duration
	// MemoryOptions are passed to memory.New for the inner cache.
	MemoryOptions []memory.Option
}

func (c *Config) withDefaults() (Config, error) {
	out := *c
	if out.Log == nil {
		return out, fmt.Errorf("%w: topicbased.Config.Log is nil", rlmm.ErrInvalidArgument)
	}
	if n := out.Log.Partitions(); n <= 0 {
		return out, fmt.Errorf("%w: event log has %d partitions", rlmm.ErrInvalidArgument, n)
	}
	if out.ConsumeWait < 0 {
		return out, fmt.Errorf("%w: ConsumeWait %s is negative", rlmm.ErrInvalidArgument, out.ConsumeWait)
	}
	if out.ConsumeWait == 0 {
		out.ConsumeWait = DefaultConsumeWait
	}
	if out.SnapshotInterval == 0 {
		out.SnapshotInterval = DefaultSnapshotInterval
	}
	if out.RejectedLimit == 0 {
		out.RejectedLimit = DefaultRejectedLimit
	}
	if out.LagInterval == 0 {
		out.LagInterval = DefaultLagInterval
	}
	if out.Logger == nil {
		out.Logger = slog.New(slog.DiscardHandler)
	}
	if out.Metrics == nil {
		out.Metrics = NopMetrics{}
	}
	return out, nil
}

// Op names a mutation for Metrics.
type Op int

// The mutations.
const (
	OpAddSegment Op = iota
	OpUpdateSegment
	OpPartitionDelete
)

// String returns the method name of the mutation.
func (o Op) String() string {
	switch o {
	case OpAddSegment:
		return "AddSegment"
	case OpUpdateSegment:
		return "UpdateSegment"
	case OpPartitionDelete:
		return "PutPartitionDelete"
	}
	return fmt.Sprintf("Op(%d)", int(o))
}

// Metrics receives what a broker operator watches. Hook it to Prometheus,
// expvar or anything else; embed NopMetrics to implement only a part.
// Methods are called from the manager's goroutines and from callers of its
// mutations, concurrently, and must not block.
type Metrics interface {
	// EventsConsumed counts the events of one metadata partition the pump
	// handled in one batch: applied (accepted by the state machine),
	// rejected (a transition it forbids, an unknown segment, a misrouted or
	// unexpected record) and undecodable.
	EventsConsumed(partition int32, applied, rejected, undecodable int)
	// PartitionProgress reports a metadata partition's last applied offset
	// (-1 for none) and the highest high-water mark known for it; the lag is
	// highWaterMark - appliedOffset - 1.
	PartitionProgress(partition int32, appliedOffset, highWaterMark int64)
	// PartitionReadiness reports a metadata partition's assignment and
	// readiness whenever they change; catchUp is the time from assignment
	// to ready (0 unless ready just became true).
	PartitionReadiness(partition int32, assigned, ready bool, catchUp time.Duration)
	// MutationDone reports one mutation's latency (from call to return)
	// and its result.
	MutationDone(op Op, latency time.Duration, err error)
	// SnapshotWritten reports one snapshot write: its duration, file size
	// and result.
	SnapshotWritten(duration time.Duration, bytes int64, err error)
	// SnapshotLoaded reports the snapshot check of Start: its duration, the
	// number of segments the snapshot holds and the reason it was not used
	// (nil if it was used or there was none). Start checks the file's
	// header and index; its blocks are decoded into the cache afterwards,
	// in the background, each checked as it is decoded (SnapshotBuilt).
	SnapshotLoaded(duration time.Duration, segments int, err error)
	// SnapshotBuilt reports the end of the background decoding of a
	// checked snapshot into the cache: the time since Start, and how many
	// user partitions could not be built (each made its metadata partition
	// replay from offset 0). Not reported if the manager closes first.
	SnapshotBuilt(sinceStart time.Duration, failures uint64)
	// HistoryLost reports events of a metadata partition deleted from the
	// log (retention, DeleteRecords) before this manager applied them:
	// offsets [from, to) are gone, to being the log start offset. The same
	// gap is logged and kept in Rejected (ReasonHistoryLost).
	HistoryLost(partition int32, from, to int64)
}

// NopMetrics implements Metrics by doing nothing. Embed it in a partial
// implementation.
type NopMetrics struct{}

// EventsConsumed does nothing.
func (NopMetrics) EventsConsumed(int32, int, int, int) {}

// PartitionProgress does nothing.
func (NopMetrics) PartitionProgress(int32, int64, int64) {}

// PartitionReadiness does nothing.
func (NopMetrics) PartitionReadiness(int32, bool, bool, time.Duration) {}

// SnapshotBuilt does nothing.
func (NopMetrics) SnapshotBuilt(time.Duration, uint64) {}

// MutationDone does nothing.
func (NopMetrics) MutationDone(Op, time.Duration, error) {}

// SnapshotWritten does nothing.
func (NopMetrics) SnapshotWritten(time.Duration, int64, error) {}

// SnapshotLoaded does nothing.
func (NopMetrics) SnapshotLoaded(time.Duration, int, error) {}

// HistoryLost does nothing.
func (NopMetrics) HistoryLost(int32, int64, int64) {}

package sim

import (
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/eventlog"
)

// Config sizes and drives a simulation. Zero values take the defaults of
// Defaults; Log and WorkDir are required.
type Config struct {
	// Log is the shared event log of all brokers. Run does not close it.
	Log eventlog.Log
	// WorkDir holds one snapshot directory per broker (broker-<id>).
	WorkDir string
	// Brokers is the number of simulated brokers (broker ids 0..Brokers-1).
	Brokers int
	// Topics is the number of topics; Partitions is the total number of
	// user partitions, spread evenly over the topics.
	Topics     int
	Partitions int
	// ReplicationFactor is the replicas per partition (a leader and
	// followers), at most Brokers.
	ReplicationFactor int
	// Rounds is how many segments every partition rolls and copies.
	Rounds int
	// RecordsPerSegment is the mean number of records in a segment.
	RecordsPerSegment int
	// Retain is how many finished segments retention keeps per partition.
	Retain int
	// CopyFailureRate is the probability that a segment copy fails and is
	// cleaned up before a retry.
	CopyFailureRate float64
	// LeaderMoveRate is the probability per partition and round that
	// leadership moves to another replica with a leader-epoch bump.
	LeaderMoveRate float64
	// LookupsPerRound is the number of fetch-path reads per partition and
	// round, spread over its leader and followers.
	LookupsPerRound int
	// Concurrency bounds the partitions worked on at once.
	Concurrency int
	// Seed makes the run reproducible.
	Seed int64
	// SnapshotInterval is the brokers' periodic snapshot interval.
	SnapshotInterval time.Duration
	// ConsumeWait bounds each mutation's wait (topicbased.Config.ConsumeWait).
	ConsumeWait time.Duration
	// SettleTimeout bounds each wait for a broker to catch up (readiness,
	// a new leader seeing the latest state, the final comparison).
	SettleTimeout time.Duration
	// Logger receives the brokers' logs; nil discards them.
	Logger *slog.Logger
	// Progress, if set, is called after each unit of work with the units
	// done and the total, and a short phase name. Calls are serialized.
	Progress func(done, total int64, phase string)
}

// Defaults returns the default sizes: a few hundred partitions over three
// brokers and three topics, sized to finish in seconds on a small machine.
func Defaults() Config {
	return Config{
		Brokers:           3,
		Topics:            3,
		Partitions:        300,
		ReplicationFactor: 2,
		Rounds:            30,
		RecordsPerSegment: 1000,
		Retain:            5,
		CopyFailureRate:   0.05,
		LeaderMoveRate:    0.1,
		LookupsPerRound:   8,
		Concurrency:       48,
		Seed:              1,
		SnapshotInterval:  5 * time.Second,
		ConsumeWait:       30 * time.Second,
		SettleTimeout:     30 * time.Second,
	}
}

// filled returns c with zero fields set to their defaults.
func (c Config) filled() Config {
	d := Defaults()
	for _, f := range []struct {
		v   *int
		def int
	}{{&c.Brokers, d.Brokers}, {&c.Topics, d.Topics}, {&c.Partitions, d.Partitions}, {&c.Rounds, d.Rounds},
		{&c.RecordsPerSegment, d.RecordsPerSegment}, {&c.Retain, d.Retain}, {&c.Concurrency, d.Concurrency}} {
		if *f.v == 0 {
			*f.v = f.def
		}
	}
	if c.ReplicationFactor == 0 {
		c.ReplicationFactor = min(d.ReplicationFactor, c.Brokers)
	}
	if c.SnapshotInterval == 0 {
		c.SnapshotInterval = d.SnapshotInterval
	}
	if c.ConsumeWait == 0 {
		c.ConsumeWait = d.ConsumeWait
	}
	if c.SettleTimeout == 0 {
		c.SettleTimeout = d.SettleTimeout
	}
	return c
}

// withDefaults fills zero fields and validates the result.
func (c Config) withDefaults() (Config, error) {
	c = c.filled()
	switch {
	case c.Log == nil:
		return c, fmt.Errorf("%w: no event log", rlmm.ErrInvalidArgument)
	case c.WorkDir == "":
		return c, fmt.Errorf("%w: no work directory for the brokers' snapshots", rlmm.ErrInvalidArgument)
	}
	return c, c.Validate()
}

// Limits of the sizes Validate accepts. They are far above what a run on
// one machine needs, and low enough that the brokers' caches, the model and
// the log of a run inside them fit in a few GiB of memory and disk.
const (
	MaxBrokers           = 100
	MaxTopics            = 10_000
	MaxPartitions        = 1_000_000
	MaxReplicationFactor = 10
	MaxRounds            = 1_000_000
	MaxRecordsPerSegment = 1_000_000_000
	MaxRetain            = 10_000
	MaxLookupsPerRound   = 10_000
	MaxConcurrency       = 10_000
	// MaxLiveSegments bounds Partitions × Retain × ReplicationFactor: the
	// finished segments the brokers' caches hold at once. Measured: 200,000
	// (2,000 partitions, retain 50) ran in 266 MB of resident memory, so
	// the limit needs about 2.7 GB.
	MaxLiveSegments = 2_000_000
	// MaxSegmentCopies bounds Partitions × Rounds: every copy writes its
	// events (copy started and finished, later delete started and
	// finished). Measured: 91,352 copies wrote 248,373 events in 22 MB of
	// embedded log in 55 s, so the limit is about 2.4 GB and 100 minutes.
	MaxSegmentCopies = 10_000_000
)

// Validate checks the sizes and rates (not Log and WorkDir), naming the
// command-line flag of a bad value; zero values count as their defaults.
// The error wraps rlmm.ErrInvalidArgument.
func (c Config) Validate() error { return c.filled().ValidateAsGiven() }

// ValidateAsGiven is Validate without the defaults: a zero size is refused
// like any other value out of range. The command line uses it, where every
// flag has its default already and a 0 is what the user typed.
func (c Config) ValidateAsGiven() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{rlmm.ErrInvalidArgument}, args...)...)
	}
	outside := func(flag string, v, lo, hi int, why string) error {
		if why != "" {
			why = " (" + why + ")"
		}
		return bad("--%s %d: must be between %d and %d%s", flag, v, lo, hi, why)
	}
	switch {
	case c.Brokers < 2 || c.Brokers > MaxBrokers:
		return outside("brokers", c.Brokers, 2, MaxBrokers, "one is restarted while the others carry on")
	case c.Topics < 2 || c.Topics > MaxTopics:
		return outside("topics", c.Topics, 2, MaxTopics, "one is deleted")
	case c.Partitions < c.Topics || c.Partitions > MaxPartitions:
		return outside("partitions", c.Partitions, c.Topics, MaxPartitions, fmt.Sprintf("at least one per topic, %d topics", c.Topics))
	case c.ReplicationFactor < 2 || c.ReplicationFactor > min(c.Brokers, MaxReplicationFactor):
		return outside("replication-factor", c.ReplicationFactor, 2, min(c.Brokers, MaxReplicationFactor),
			fmt.Sprintf("at most --brokers, %d, and %d", c.Brokers, MaxReplicationFactor))
	case c.Rounds < 3 || c.Rounds > MaxRounds:
		return outside("rounds", c.Rounds, 3, MaxRounds, "stop, delete and restart happen between rounds")
	case c.RecordsPerSegment < 2 || c.RecordsPerSegment > MaxRecordsPerSegment:
		return outside("records-per-segment", c.RecordsPerSegment, 2, MaxRecordsPerSegment, "")
	case c.Retain < 1 || c.Retain > MaxRetain:
		return outside("retain", c.Retain, 1, MaxRetain, "")
	case math.IsNaN(c.CopyFailureRate) || c.CopyFailureRate < 0 || c.CopyFailureRate >= 1:
		return bad("--copy-failure-rate %g: must be in [0, 1)", c.CopyFailureRate)
	case math.IsNaN(c.LeaderMoveRate) || c.LeaderMoveRate < 0 || c.LeaderMoveRate > 1:
		return bad("--leader-move-rate %g: must be in [0, 1]", c.LeaderMoveRate)
	case c.LookupsPerRound < 0 || c.LookupsPerRound > MaxLookupsPerRound:
		return outside("lookups", c.LookupsPerRound, 0, MaxLookupsPerRound, "")
	case c.Concurrency < 1 || c.Concurrency > MaxConcurrency:
		return outside("concurrency", c.Concurrency, 1, MaxConcurrency, "")
	case c.SettleTimeout < 0 || c.ConsumeWait < 0 || c.SnapshotInterval < 0:
		return bad("timeouts must not be negative")
	}
	// The products, in int64: each factor is bounded above, so they cannot
	// overflow.
	if live := int64(c.Partitions) * int64(c.Retain) * int64(c.ReplicationFactor); live > MaxLiveSegments {
		return bad("--partitions %d × --retain %d × --replication-factor %d = %d segments held by the brokers at once: at most %d",
			c.Partitions, c.Retain, c.ReplicationFactor, live, MaxLiveSegments)
	}
	if copies := int64(c.Partitions) * int64(c.Rounds); copies > MaxSegmentCopies {
		return bad("--partitions %d × --rounds %d = %d segment copies: at most %d",
			c.Partitions, c.Rounds, copies, MaxSegmentCopies)
	}
	return nil
}

package sim

import (
	"fmt"
	"log/slog"
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

// Validate checks the sizes and rates (not Log and WorkDir), naming the
// command-line flag of a bad value; zero values count as their defaults.
// The error wraps rlmm.ErrInvalidArgument.
func (c Config) Validate() error {
	c = c.filled()
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{rlmm.ErrInvalidArgument}, args...)...)
	}
	switch {
	case c.Brokers < 2:
		return bad("--brokers %d: need at least 2 (one is restarted while the others carry on)", c.Brokers)
	case c.Topics < 2:
		return bad("--topics %d: need at least 2 (one is deleted)", c.Topics)
	case c.Partitions < c.Topics:
		return bad("--partitions %d: need at least one per topic (%d topics)", c.Partitions, c.Topics)
	case c.ReplicationFactor < 2 || c.ReplicationFactor > c.Brokers:
		return bad("--replication-factor %d: must be between 2 and --brokers (%d)", c.ReplicationFactor, c.Brokers)
	case c.Rounds < 3:
		return bad("--rounds %d: need at least 3 (stop, delete and restart happen between rounds)", c.Rounds)
	case c.RecordsPerSegment < 2:
		return bad("--records-per-segment %d: need at least 2", c.RecordsPerSegment)
	case c.Retain < 1:
		return bad("--retain %d: must be at least 1", c.Retain)
	case c.CopyFailureRate < 0 || c.CopyFailureRate >= 1:
		return bad("--copy-failure-rate %g: must be in [0, 1)", c.CopyFailureRate)
	case c.LeaderMoveRate < 0 || c.LeaderMoveRate > 1:
		return bad("--leader-move-rate %g: must be in [0, 1]", c.LeaderMoveRate)
	case c.LookupsPerRound < 0:
		return bad("--lookups %d: must not be negative", c.LookupsPerRound)
	case c.Concurrency < 1:
		return bad("--concurrency %d: must be at least 1", c.Concurrency)
	case c.SettleTimeout < 0 || c.ConsumeWait < 0:
		return bad("timeouts must not be negative")
	}
	return nil
}

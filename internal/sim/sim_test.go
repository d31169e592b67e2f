package sim

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/rlmm-go/rlmm"
)

func TestRunSmallClusterMatchesModel(t *testing.T) {
	c := smallConfig(t, 7)
	rep := run(t, c)
	var text strings.Builder
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + text.String())
	if !rep.OK || len(rep.Differences) > 0 || rep.Rejected != 0 {
		t.Fatalf("simulation failed: %d differences %v, %d rejected", len(rep.Differences), rep.Differences, rep.Rejected)
	}
	if rep.Partitions != c.Partitions || rep.Brokers != c.Brokers || rep.Rounds != c.Rounds {
		t.Fatalf("report sizes %d/%d/%d, want %d/%d/%d", rep.Partitions, rep.Brokers, rep.Rounds, c.Partitions, c.Brokers, c.Rounds)
	}
	// Every partition copies one segment per round while alive; the deleted
	// topic's partitions stop half way.
	if rep.SegmentsCopied < int64(c.Partitions*c.Rounds/2) || rep.CopiesFailed == 0 || rep.SegmentsRetired == 0 {
		t.Fatalf("workload too thin: copied %d, failed %d, retired %d", rep.SegmentsCopied, rep.CopiesFailed, rep.SegmentsRetired)
	}
	if rep.LeaderMoves == 0 || rep.MultiEpochSegments == 0 {
		t.Fatalf("no leadership moves (%d) or multi-epoch segments (%d)", rep.LeaderMoves, rep.MultiEpochSegments)
	}
	if rep.Restart.EventsTotal == 0 || rep.Restart.EventsReplayed >= rep.Restart.EventsTotal || rep.Restart.SnapshotSegments == 0 {
		t.Fatalf("restart did not resume from a snapshot: %+v", rep.Restart)
	}
	if rep.Events < rep.Mutations || rep.Lookups == 0 || rep.MutationLatency.Count != rep.Mutations {
		t.Fatalf("counts inconsistent: events %d, mutations %d (latency samples %d), lookups %d",
			rep.Events, rep.Mutations, rep.MutationLatency.Count, rep.Lookups)
	}
}

func TestRunIsReproducible(t *testing.T) {
	a := run(t, smallConfig(t, 3))
	b := run(t, smallConfig(t, 3))
	if a.Events != b.Events || a.SegmentsCopied != b.SegmentsCopied || a.CopiesFailed != b.CopiesFailed ||
		a.LeaderMoves != b.LeaderMoves || a.MultiEpochSegments != b.MultiEpochSegments || a.LiveSegments != b.LiveSegments {
		t.Fatalf("same seed, different workloads:\n%+v\n%+v", a, b)
	}
}

func TestConfigRejectsBadSizes(t *testing.T) {
	tests := []struct {
		name   string
		change func(*Config)
	}{
		{"one broker", func(c *Config) { c.Brokers = 1 }},
		{"one topic", func(c *Config) { c.Topics = 1 }},
		{"fewer partitions than topics", func(c *Config) { c.Partitions = 2 }},
		{"replication above brokers", func(c *Config) { c.ReplicationFactor = 4 }},
		{"too few rounds", func(c *Config) { c.Rounds = 2 }},
		{"failure rate of one", func(c *Config) { c.CopyFailureRate = 1 }},
		{"negative lookups", func(c *Config) { c.LookupsPerRound = -1 }},
		{"no log", func(c *Config) { c.Log = nil }},
		{"more partitions than the limit", func(c *Config) { c.Partitions = MaxPartitions + 1 }},
		{"records per segment that overflow offsets", func(c *Config) { c.RecordsPerSegment = 1<<63 - 1 }},
		{"a failure rate that is not a number", func(c *Config) { c.CopyFailureRate = math.NaN() }},
		{"more live segments than the limit", func(c *Config) { c.Partitions, c.Retain = 300_000, 5 }},
		{"more segment copies than the limit", func(c *Config) { c.Partitions, c.Rounds = 100_000, 101 }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := smallConfig(t, 1)
			tc.change(&c)
			if _, err := c.withDefaults(); !errors.Is(err, rlmm.ErrInvalidArgument) {
				t.Fatalf("withDefaults() error = %v, want ErrInvalidArgument", err)
			}
		})
	}
}

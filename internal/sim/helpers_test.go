package sim

import (
	"context"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/rlmm-go/rlmm/eventlog/memlog"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// smallConfig returns a configuration small enough for -race tests, over
// an in-memory log that the test closes.
func smallConfig(t *testing.T, seed int64) Config {
	t.Helper()
	log := memlog.New(8)
	t.Cleanup(func() { _ = log.Close() })
	c := Defaults()
	c.Log = log
	c.WorkDir = t.TempDir()
	c.Partitions = 24
	c.Rounds = 6
	c.RecordsPerSegment = 100
	c.Retain = 2
	c.CopyFailureRate = 0.2
	c.LeaderMoveRate = 0.3
	c.LookupsPerRound = 4
	c.Concurrency = 8
	c.Seed = seed
	c.SnapshotInterval = 50 * time.Millisecond
	return c
}

// run runs a simulation and fails the test on an error.
func run(t *testing.T, c Config) *Report {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rep, err := Run(ctx, c)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return rep
}

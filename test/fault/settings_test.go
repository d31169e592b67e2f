package fault

import (
	"testing"
	"time"

	"github.com/rlmm-go/rlmm/topicbased"
)

// Settings of the fault tests' managers and mutators.
const (
	// metaPartitions is the metadata topic's partition count: enough for
	// every node to lead several.
	metaPartitions = 9
	// mutators is the number of concurrent mutators beside a kill
	// (mutatorCheck).
	mutators = 16
	// pauseMutators is the number of mutators beside a freeze.
	pauseMutators = 8
	// faultConsumeWait is the managers' ConsumeWait: short, so that calls
	// caught by a broker death end within the test.
	faultConsumeWait = 12 * time.Second
	// shortCallTimeout is the ctx timeout of every other mutator's calls.
	shortCallTimeout = 6 * time.Second
	// downFor is how long a killed node stays down: past the controller's
	// broker.session.timeout.ms (9 s), so its partitions get new leaders.
	downFor = 14 * time.Second
	// boundSlack is how far past its bound (ctx or ConsumeWait) a call may
	// return on this loaded two-core machine: it must not hang, it may be
	// late by scheduling.
	boundSlack = 3 * time.Second
)

// callTimeouts gives even mutators a ctx deadline and leaves odd ones to
// ConsumeWait, so both bounds are exercised.
func callTimeouts(i int) time.Duration {
	if i%2 == 0 {
		return shortCallTimeout
	}
	return 0
}

// closeWithin closes m and fails the test if Close takes longer than d.
func closeWithin(t *testing.T, m *topicbased.Manager, d time.Duration) {
	t.Helper()
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- m.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Close: %v", err)
		}
		t.Logf("Close returned in %s", time.Since(start).Round(time.Millisecond))
	case <-time.After(d):
		t.Fatalf("Close did not return within %s", d)
	}
}

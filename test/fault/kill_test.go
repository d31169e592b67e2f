package fault

import (
	"testing"
	"time"

	"github.com/rlmm-go/rlmm/topicbased"
)

// Settings of the broker-death tests.
const (
	// metaPartitions is the metadata topic's partition count: enough for
	// every node to lead several.
	metaPartitions = 9
	// mutators is the number of concurrent mutators of the kill test.
	mutators = 16
	// faultConsumeWait is the managers' ConsumeWait: short, so that calls
	// caught by a broker death end within the test.
	faultConsumeWait = 12 * time.Second
	// shortCallTimeout is the ctx timeout of every other mutator's calls.
	shortCallTimeout = 6 * time.Second
	// kills is how many times the kill test kills a node.
	kills = 3
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

// TestKillLeaderLosesNothing: 16 mutators add and finish segments through one
// manager while the node leading most metadata partitions is killed with -9,
// left down until its partitions moved, and restarted, several times.
func TestKillLeaderLosesNothing(t *testing.T) {
	c := requireCluster(t)
	checkNoLeak(t)
	adm := c.admin(t)
	topic := uniqueTopic(t)
	l := openLog(t, c, topic, metaPartitions, testLogger(t))
	checkTopicSettings(t, adm, topic)
	m := startManager(t, topicbased.Config{Log: l, ConsumeWait: faultConsumeWait, Logger: testLogger(t)})
	tps := userPartitions(t, metaPartitions, mutators)
	assign(t, m, tps...)

	w := newWorkload(m, tps, faultConsumeWait, callTimeouts)
	w.start()
	time.Sleep(3 * time.Second)
	for k := range kills {
		catchUp := waitFullISR(t, adm, topic)
		node, led := mostLeader(t, adm, topic)
		killed := time.Now()
		c.kill(t, node)
		moved := waitLeadersOff(t, adm, topic, node)
		time.Sleep(time.Until(killed.Add(downFor)))
		restarted := time.Now()
		c.restart(t, node)
		back := time.Since(restarted)
		onMoved := w.ackedOn(led, killed, time.Now())
		t.Logf("kill %d: node %d (leader of metadata partitions %v; the ISR was full %s after the previous step) killed -9; its partitions had new leaders after %s; "+
			"%d mutations acknowledged on them before it answered again (%s after its restart)",
			k+1, node, led, catchUp.Round(time.Millisecond), moved.Round(time.Millisecond), onMoved, back.Round(time.Millisecond))
		if onMoved == 0 {
			t.Errorf("kill %d: no mutation on the partitions node %d led was acknowledged while it was down: the manager did not follow the new leaders", k+1, node)
		}
		time.Sleep(2 * time.Second)
	}
	waitFullISR(t, adm, topic)
	time.Sleep(2 * time.Second)
	w.endAndCheck(t, c, m, topic)
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

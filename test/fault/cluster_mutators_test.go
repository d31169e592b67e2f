package fault

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/topicbased"
)

// mutatorCheck goes with TestFaultsAlone's phases that freeze (SIGSTOP) or
// kill (-9, then restart) the broker leading most of the linearizability
// managers' metadata topic. Beside the phase's own load it runs the
// single-manager workload of mutators_test.go through manager 1 (8
// mutators for a freeze, 16 for a kill, each on a user partition of its
// own, half bounded by a context deadline and half by ConsumeWait) and
// checks what it promises:
//   - no call returns later than boundSlack past its bound (the frozen
//     leader answers nothing: the connection stays open, nothing refuses);
//   - every failed call says whether its event may still be recorded;
//   - no read after an acknowledgement misses it;
//   - a fresh manager's replay of the topic shows every acknowledged
//     mutation;
//   - the manager follows the new leaders: mutations on the metadata
//     partitions the broker led are acknowledged while a killed broker is
//     down, and once a frozen one continues;
//   - after a kill, both managers and a fresh replay agree on the
//     linearizability clients' partitions.
type mutatorCheck struct {
	kind faultKind
	adm  *kadm.Client
	node int32   // the broker frozen or killed
	led  []int32 // the metadata partitions it led
	wl   *workload

	faultAt, healedAt time.Time
	moved             chan string // how soon the node's partitions had new leaders
}

// pickNode returns the broker leading most of the managers' metadata
// topic, once every replica is in sync.
func (m *mutatorCheck) pickNode(t *testing.T, w *clusterLoad) int {
	t.Helper()
	m.adm = theCluster.admin(t)
	checkTopicSettings(t, m.adm, w.linTopic)
	waitFullISR(t, m.adm, w.linTopic)
	m.node, m.led = mostLeader(t, m.adm, w.linTopic)
	return int(m.node)
}

// start hosts the mutators' partitions on manager 1 and starts them.
func (m *mutatorCheck) start(t *testing.T, w *clusterLoad) {
	t.Helper()
	n := pauseMutators
	if m.kind == faultBrokerKilled {
		n = mutators
	}
	tps := userPartitions(t, metaPartitions, n)
	assign(t, w.managers[0], tps...)
	m.wl = newWorkload(w.managers[0], tps, faultConsumeWait, callTimeouts)
	m.wl.start()
}

// injected notes the time and watches the node's partitions get new
// leaders (for the log: a frozen node may keep them when the freeze ends
// first).
func (m *mutatorCheck) injected(_ *testing.T, w *clusterLoad) {
	m.faultAt = time.Now()
	m.moved = make(chan string, 1)
	go func() {
		if after, ok := leadersMovedWithin(m.adm, w.linTopic, m.node, aloneHold[m.kind]); ok {
			m.moved <- fmt.Sprintf("its partitions had new leaders %s after", after.Round(time.Millisecond))
		} else {
			m.moved <- "its partitions kept it as leader through"
		}
	}()
}

func (m *mutatorCheck) healed(*testing.T, *clusterLoad) { m.healedAt = time.Now() }

// check stops the mutators and checks their promises; lin is the phase's
// linearizability run, already finished.
func (m *mutatorCheck) check(t *testing.T, w *clusterLoad, lin *linRun) {
	t.Helper()
	m.wl.halt()
	now := time.Now()
	moved := "the fault was not injected:"
	if m.moved != nil {
		moved = <-m.moved
	}
	switch m.kind {
	case faultBrokerKilled:
		down := m.wl.ackedOn(m.led, m.faultAt, m.healedAt)
		t.Logf("node %d (leader of metadata partitions %v) killed -9 (%s the kill) and restarted %s later: %d mutations on those partitions acknowledged meanwhile",
			m.node, m.led, moved, m.healedAt.Sub(m.faultAt).Round(time.Millisecond), down)
		if down == 0 {
			t.Errorf("no mutation on the partitions node %d led was acknowledged while it was down: the manager did not follow the new leaders", m.node)
		}
	case faultBrokerFrozen:
		during := m.wl.ackedOn(m.led, m.faultAt, m.healedAt)
		after := m.wl.ackedOn(m.led, m.healedAt, now)
		t.Logf("node %d (leader of metadata partitions %v) frozen %s (%s SIGSTOP): %d mutations on those partitions acknowledged while it was, %d in the %s after SIGCONT",
			m.node, m.led, m.healedAt.Sub(m.faultAt).Round(time.Millisecond), moved, during, after, now.Sub(m.healedAt).Round(time.Second))
		if after == 0 {
			t.Errorf("no mutation on the frozen node's former partitions was acknowledged after it continued")
		}
	}
	m.wl.report(t, boundSlack)
	lost, checked := m.wl.lost(t, theCluster, w.linTopic, metaPartitions)
	t.Logf("replay by a fresh manager: %d acknowledged segments checked, %d lost", checked, len(lost))
	for _, s := range lost {
		t.Errorf("lost: %s", s)
	}
	if m.kind != faultBrokerKilled {
		return
	}
	views := []map[rlmm.TopicIDPartition][]rlmm.SegmentMetadata{syncedView(t, w.managers[0], lin.tps), syncedView(t, w.managers[1], lin.tps)}
	l := openLog(t, theCluster, w.linTopic, metaPartitions, nil)
	fresh := startManager(t, topicbased.Config{Log: l, ConsumeWait: testTimeout})
	assign(t, fresh, lin.tps...)
	views = append(views, syncedView(t, fresh, lin.tps))
	closeWithin(t, fresh, 30*time.Second)
	for i, name := range []string{"manager 2", "a fresh manager"} {
		if err := sameViews(views[i+1], views[0]); err != nil {
			t.Errorf("%s and manager 1 differ on the linearizability clients' partitions: %v", name, err)
		}
	}
}

package fault

import (
	"fmt"
	"testing"
	"time"

	"github.com/rlmm-go/rlmm/topicbased"
)

// pauseFor is how long TestPausedLeaderBounded keeps a node stopped: longer
// than franz-go's produce request timeout (10 s) plus its read-deadline
// overhead (10 s), than ConsumeWait (12 s) and than the controller's broker
// session timeout (9 s). A produce request sent to the stopped node gets no
// answer at all during that time: the connection stays open, nothing
// refuses it.
const pauseFor = 25 * time.Second

// pauseMutators is the number of mutators of the pause test.
const pauseMutators = 8

// TestPausedLeaderBounded: mutators add and finish segments through one
// manager while the node leading most metadata partitions is stopped with
// SIGSTOP for longer than the produce timeout, then continued: no call hangs
// past its bound, nothing acknowledged is lost.
func TestPausedLeaderBounded(t *testing.T) {
	c := requireCluster(t)
	checkNoLeak(t)
	adm := c.admin(t)
	topic := uniqueTopic(t)
	l := openLog(t, c, topic, metaPartitions, testLogger(t))
	m := startManager(t, topicbased.Config{Log: l, ConsumeWait: faultConsumeWait, Logger: testLogger(t)})
	tps := userPartitions(t, metaPartitions, pauseMutators)
	assign(t, m, tps...)

	w := newWorkload(m, tps, faultConsumeWait, callTimeouts)
	w.start()
	time.Sleep(3 * time.Second)
	waitFullISR(t, adm, topic)
	node, led := mostLeader(t, adm, topic)
	paused := time.Now()
	c.pause(t, node)
	movedAfter, moved := leadersMovedWithin(adm, topic, node, pauseFor)
	time.Sleep(time.Until(paused.Add(pauseFor)))
	c.resume(t, node)
	resumed := time.Now()
	during := w.ackedOn(led, paused, resumed)
	catchUp := waitFullISR(t, adm, topic)
	leaders := "its partitions kept it as leader during the pause"
	if moved {
		leaders = fmt.Sprintf("its partitions had new leaders %s after SIGSTOP", movedAfter.Round(time.Millisecond))
	}
	first := "none while paused"
	if at, ok := w.firstAck(led, paused); ok {
		first = fmt.Sprintf("the first %s after SIGSTOP", at.Sub(paused).Round(time.Millisecond))
	}
	t.Logf("node %d (leader of metadata partitions %v) stopped with SIGSTOP for %s, then continued; %s; %d mutations on those partitions acknowledged during the pause (%s); all replicas in sync %s after SIGCONT",
		node, led, pauseFor, leaders, during, first, catchUp.Round(time.Millisecond))
	time.Sleep(3 * time.Second)
	after := w.ackedOn(led, resumed, time.Now())
	t.Logf("%d mutations on those partitions acknowledged in the 3 s after SIGCONT", after)
	if after == 0 {
		t.Error("no mutation on the paused node's former partitions was acknowledged after it continued")
	}
	w.endAndCheck(t, c, m, topic)
}

package brokertest

import (
	"testing"
)

// TestTieringCheck is the short check of a Kafka version (make test runs it
// on the 4.x lines that do not run the whole suite, see
// scripts/broker-test.sh versions): a tiered topic, its rolled segments
// copied and gone locally, the RLMM's server restarted (with rlmm the
// sidecar is killed with SIGKILL and the plugin starts a new one; with
// Kafka's own RLMM, which has no sidecar, the broker restarts), then every
// record read back in order from offset 0, out of remote storage.
func TestTieringCheck(t *testing.T) {
	ctx := testCtx(t)
	c := startCluster(t, 1)
	cl := c.client()
	tp := createTopic(ctx, t, cl, "check", []int32{1})

	// About 3 MiB: two or more rolled 1 MiB segments and the active one.
	const records = 3000
	produce(ctx, t, cl, tp.Topic, 0, records)
	ti := c.waitTiered(ctx, t, cl, tp, 0, 2)
	t.Logf("Kafka %s: %d segments copied (offsets 0..%d), local log starts at %d", c.version, len(ti.finished), ti.remoteEnd, ti.localStart)

	if c.mode == modeRlmm {
		killed := c.killSidecar(t)
		c.waitNewSidecar(ctx, t, killed)
		t.Logf("killed rlmm serve pid %d; the plugin started a new one", killed)
	} else {
		c.stopNode(1)
		c.startNode(1)
	}
	// Offsets 0..remoteEnd exist only in remote storage: the reads go through
	// the RLMM's lookups and the RSM's fetches.
	c.consume(ctx, t, tp.Topic, 0, records)
}

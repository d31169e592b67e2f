package brokertest

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/rlmm-go/rlmm"
)

// TestSidecarKilled kills the broker's `rlmm serve` with SIGKILL while a
// producer writes: the plugin starts a new one, tiering goes on, and no
// acknowledged event is lost (every segment finished before the kill is
// still finished afterwards; every record reads back).
func TestSidecarKilled(t *testing.T) {
	if requireMode(t) != modeRlmm {
		t.Skip("the sidecar (rlmm serve) exists only with rlmm's plugin: RLMM_BROKER_TEST=rlmm (make broker-test)")
	}
	ctx := testCtx(t)
	c := startCluster(t, 1)
	cl := c.client()
	tp := createTopic(ctx, t, cl, "sidecar", []int32{1})

	const total = 8000
	produced := make(chan error, 1)
	go func() { produced <- produceRecords(ctx, cl, tp.Topic, 0, total, 150*time.Millisecond) }()

	var acked []*segment
	waitFor(ctx, t, "the first segments copied while producing", func() (bool, string, error) {
		v, err := c.readMetadata(ctx)
		if err != nil {
			return false, "", err
		}
		acked = inState(v.segments(tp), rlmm.CopySegmentFinished)
		return len(acked) >= 2, describe(acked), nil
	})
	killed := c.killSidecar(t)
	t.Logf("killed rlmm serve pid %d with SIGKILL after %d segments finished", killed, len(acked))

	c.waitNewSidecar(ctx, t, killed)
	if err := <-produced; err != nil {
		t.Fatalf("producing across the sidecar's death: %v", err)
	}
	ti := c.waitTiered(ctx, t, cl, tp, 0, len(acked)+2)
	finished := map[rlmm.Uuid]bool{}
	for _, s := range ti.finished {
		finished[s.meta.ID.ID] = true
	}
	for _, s := range acked {
		if !finished[s.meta.ID.ID] {
			t.Errorf("segment %s (%d..%d), finished before the kill, is not finished afterwards", s.meta.ID.ID, s.meta.StartOffset, s.meta.EndOffset)
		}
	}
	restarts, err := grepFile(filepath.Join(c.nodeDir(1), "broker.log"), "started rlmm serve pid")
	must(t, err)
	t.Logf("%d segments finished in all (%d before the kill); broker.log: %q", len(ti.finished), len(acked), restarts)
	c.consume(ctx, t, tp.Topic, 0, total)
	c.verifyAndInspect(ctx, t, tp)
}

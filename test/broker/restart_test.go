package brokertest

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/rlmm-go/rlmm/topicbased"
)

// TestBrokerRestart restarts a broker whose partition is tiered: remote reads
// work again afterwards and tiering goes on from where it was. With rlmm the
// sidecar restarts from the snapshot its predecessor wrote at the broker's
// stop (the file exists between stop and start, and the new sidecar's
// "manager up" line reports the segments it loaded from it).
func TestBrokerRestart(t *testing.T) {
	ctx := testCtx(t)
	c := startCluster(t, 1)
	cl := c.client()
	tp := createTopic(ctx, t, cl, "restart", []int32{1})

	const first, second = 3000, 5000
	produce(ctx, t, cl, tp.Topic, 0, first)
	before := c.waitTiered(ctx, t, cl, tp, 0, 2)

	c.stopNode(1)
	if c.mode == modeRlmm {
		snaps := findFiles(t, c.nodeDir(1), topicbased.SnapshotFileName)
		if len(snaps) != 1 {
			t.Fatalf("after the broker's stop, %d files named %s under %s (%v), want the sidecar's one snapshot",
				len(snaps), topicbased.SnapshotFileName, c.nodeDir(1), snaps)
		}
		st, err := os.Stat(snaps[0])
		must(t, err)
		t.Logf("sidecar snapshot %s: %d bytes", snaps[0], st.Size())
	}
	c.startNode(1)

	// Every offset below the local log start comes from remote storage.
	c.consume(ctx, t, tp.Topic, 0, first)
	if c.mode == modeRlmm {
		// The restarted sidecar logs "serve: manager up ... snapshot_segments=N"
		// through the plugin into the broker's log; the second such line is
		// the restart's.
		lines, err := grepFile(filepath.Join(c.nodeDir(1), "broker.log"), "serve: manager up")
		must(t, err)
		if len(lines) < 2 {
			t.Fatalf("broker.log has %d \"serve: manager up\" lines, want one per sidecar start (2): %q", len(lines), lines)
		}
		m := regexp.MustCompile(`snapshot_segments=(\d+)`).FindStringSubmatch(lines[len(lines)-1])
		if m == nil {
			t.Fatalf("the restarted sidecar's line names no snapshot_segments: %s", lines[len(lines)-1])
		}
		if n, _ := strconv.Atoi(m[1]); n < len(before.finished) {
			t.Errorf("the restarted sidecar loaded %d segments from its snapshot, want at least the %d copied before the stop: %s",
				n, len(before.finished), lines[len(lines)-1])
		} else {
			t.Logf("the restarted sidecar loaded %d segments from its snapshot", n)
		}
	}

	// Tiering goes on after the restart, contiguous with what came before.
	produce(ctx, t, cl, tp.Topic, first, second)
	after := c.waitTiered(ctx, t, cl, tp, 0, len(before.finished)+1)
	for i, s := range before.finished {
		if after.finished[i].meta.ID != s.meta.ID {
			t.Errorf("segment %d was %s before the restart, %s after", i, s.meta.ID.ID, after.finished[i].meta.ID.ID)
		}
	}
	c.consume(ctx, t, tp.Topic, 0, second)
	c.verifyAndInspect(ctx, t, tp)
}

// findFiles returns the paths of files named name under dir.
func findFiles(t *testing.T, dir, name string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && d.Name() == name {
			out = append(out, path)
		}
		return nil
	})
	must(t, err)
	return out
}

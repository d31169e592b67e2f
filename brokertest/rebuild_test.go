package brokertest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rlmm-go/rlmm/eventlog/kafkalog"
	"github.com/rlmm-go/rlmm/topicbased"
)

// rebuildDoc is the part of `rlmm rebuild --json` this test reads.
type rebuildDoc struct {
	Steps []struct {
		SegmentID         string `json:"segmentId"`
		StartOffset       int64  `json:"startOffset"`
		EndOffset         int64  `json:"endOffset"`
		MetadataPartition int32  `json:"metadataPartition"`
	} `json:"steps"`
	Problems  []json.RawMessage `json:"problems"`
	Applied   bool              `json:"applied"`
	Published []struct {
		SegmentID string `json:"segmentId"`
		Event     string `json:"event"`
	} `json:"published"`
	OK bool `json:"ok"`
}

// TestRebuild loses a tiered topic's remote log metadata and rebuilds it
// from LocalTieredStorage alone. Two nodes: node 1 (the controller, a
// broker too) and node 2, the only replica of the topic. With node 2
// stopped (so no RLMM serves the topic while its metadata is gone), every
// record of __remote_log_metadata is deleted (DeleteRecords up to the
// high-water marks, through node 1) and every sidecar snapshot removed; no
// copy of the metadata survives. `rlmm rebuild --apply --yes` then
// publishes STARTED and FINISHED for every segment, with the metadata the
// broker had written (but broker id and event time); a second run plans
// nothing. Restarted, the broker serves every record from offset 0 in
// order (the early ones out of remote storage) and goes on tiering after
// the rebuilt segments.
func TestRebuild(t *testing.T) {
	ctx := testCtx(t)
	c := startCluster(t, 2)
	cl := c.client()
	tp := createTopic(ctx, t, cl, "rebuilt", []int32{2})
	const first, second = 5000, 6500
	produce(ctx, t, cl, tp.Topic, 0, first)
	ti := c.waitTiered(ctx, t, cl, tp, 0, 4)
	before, err := c.readMetadata(ctx)
	must(t, err)
	orig := before.segments(tp)
	if len(orig) != len(ti.finished) {
		t.Fatalf("the metadata holds %s, want only the %d finished segments", describe(orig), len(ti.finished))
	}

	c.stopNode(2)
	if c.mode == modeRlmm {
		snaps := findFiles(t, c.nodeDir(2), topicbased.SnapshotFileName)
		if len(snaps) == 0 {
			t.Fatalf("no sidecar snapshot under %s after node 2's stop", c.nodeDir(2))
		}
		removeFiles(t, snaps)
	}
	deleteMetadataRecords(ctx, t, c.client(kgo.SeedBrokers(c.addrs[0])))
	lost, err := c.readMetadata(ctx)
	must(t, err)
	if lost.events != 0 {
		t.Fatalf("the metadata topic still holds %d events after DeleteRecords", lost.events)
	}

	args := []string{"rebuild", "--json", "-q", "--kafka", c.addrs[0], "--layout", "local", "--remote-dir", c.remoteDir}
	run := func(extra ...string) rebuildDoc {
		t.Helper()
		out, code := rlmmRun(ctx, t, append(slices.Clone(args), extra...)...)
		var doc rebuildDoc
		if err := json.Unmarshal([]byte(out), &doc); err != nil || code != 0 || !doc.OK || len(doc.Problems) > 0 {
			t.Fatalf("rlmm %s: exit %d (%v):\n%s", strings.Join(append(args, extra...), " "), code, err, out)
		}
		return doc
	}
	dry := run()
	if len(dry.Steps) != len(orig) || dry.Applied || len(dry.Published) != 0 {
		t.Fatalf("dry run: %d steps (want %d), applied %v, %d published", len(dry.Steps), len(orig), dry.Applied, len(dry.Published))
	}
	if v, err := c.readMetadata(ctx); err != nil || v.events != 0 {
		t.Fatalf("after the dry run the metadata topic holds %d events (%v)", v.events, err)
	}
	applied := run("--apply", "--yes")
	if !applied.Applied || len(applied.Published) != 2*len(orig) {
		t.Fatalf("--apply: applied %v, %d events published, want %d", applied.Applied, len(applied.Published), 2*len(orig))
	}
	after, err := c.readMetadata(ctx)
	must(t, err)
	for _, s := range orig {
		r := after.segs[s.meta.ID.ID]
		if r == nil {
			t.Errorf("segment %s (%d..%d) not rebuilt", s.meta.ID.ID, s.meta.StartOffset, s.meta.EndOffset)
			continue
		}
		if fmt.Sprint(r.states) != "[COPY_SEGMENT_STARTED COPY_SEGMENT_FINISHED]" || fmt.Sprint(r.broker) != "[-1 -1]" {
			t.Errorf("segment %s: states %v by %v", s.meta.ID.ID, r.states, r.broker)
		}
		w, g := s.meta, r.meta
		if g.ID != w.ID || g.StartOffset != w.StartOffset || g.EndOffset != w.EndOffset || g.MaxTimestampMs != w.MaxTimestampMs ||
			!slices.Equal(g.LeaderEpochs, w.LeaderEpochs) || g.SizeInBytes != w.SizeInBytes || g.TxnIndexEmpty != w.TxnIndexEmpty {
			t.Errorf("segment rebuilt as %v\n      the broker wrote %v", g, w)
		}
	}
	if after.events != 2*len(orig) {
		t.Errorf("the metadata topic holds %d events after the rebuild, want %d", after.events, 2*len(orig))
	}
	if again := run("--apply", "--yes"); len(again.Steps) != 0 || len(again.Published) != 0 {
		t.Fatalf("second rebuild: %d steps, %d published", len(again.Steps), len(again.Published))
	}
	t.Logf("rebuilt %d segments (offsets 0..%d) into %d events", len(orig), ti.remoteEnd, 2*len(orig))

	if c.mode == modeRlmm {
		// Node 1's sidecar served no partition of the topic; its snapshot
		// goes too, so that no copy of the old metadata is left anywhere.
		c.stopNode(1)
		removeFiles(t, findFiles(t, c.nodeDir(1), topicbased.SnapshotFileName))
		c.startNode(1)
	}
	c.startNode(2)
	// The early offsets are in remote storage only: reading them from 0
	// goes through the rebuilt metadata.
	if local, err := listOffset(ctx, cl, tp.Topic, tsEarliestLocal); err != nil || local < ti.localStart {
		t.Fatalf("after the restart the local log starts at %d (%v), want at least %d", local, err, ti.localStart)
	}
	c.consume(ctx, t, tp.Topic, 0, first)
	if ls, err := listOffset(ctx, cl, tp.Topic, tsEarliest); err != nil || ls != 0 {
		t.Fatalf("after the restart the log starts at %d (%v), want 0", ls, err)
	}
	produce(ctx, t, cl, tp.Topic, first, second)
	later := c.waitTiered(ctx, t, cl, tp, 0, len(orig)+1)
	for i, s := range orig {
		if later.finished[i].meta.ID != s.meta.ID {
			t.Errorf("finished segment %d is %s, the rebuilt one was %s", i, later.finished[i].meta.ID.ID, s.meta.ID.ID)
		}
	}
	c.consume(ctx, t, tp.Topic, 0, second)
}

// deleteMetadataRecords deletes every record of __remote_log_metadata
// (DeleteRecords up to each partition's high-water mark) and waits until
// every partition's log start offset is its high-water mark.
func deleteMetadataRecords(ctx context.Context, t *testing.T, cl *kgo.Client) {
	t.Helper()
	adm := kadm.NewClient(cl)
	topic := kafkalog.DefaultTopic
	waitFor(ctx, t, "every record of "+topic+" deleted", func() (bool, string, error) {
		ends, err := adm.ListEndOffsets(ctx, topic)
		if err != nil {
			return false, "", err
		}
		if err := ends.Error(); err != nil {
			return false, "listing the end offsets: " + err.Error(), nil
		}
		var to kadm.Offsets
		ends.Each(func(o kadm.ListedOffset) { to.AddOffset(o.Topic, o.Partition, o.Offset, -1) })
		resps, err := adm.DeleteRecords(ctx, to)
		if err != nil {
			return false, "", err
		}
		var status []string
		done := true
		resps.Each(func(r kadm.DeleteRecordsResponse) {
			end, _ := ends.Lookup(r.Topic, r.Partition)
			if r.Err != nil || r.LowWatermark != end.Offset {
				done = false
				status = append(status, fmt.Sprintf("partition %d: low watermark %d of %d (%v)", r.Partition, r.LowWatermark, end.Offset, r.Err))
			}
		})
		return done && len(resps) > 0, strings.Join(status, "; "), nil
	})
}

func removeFiles(t *testing.T, paths []string) {
	t.Helper()
	for _, p := range paths {
		must(t, os.Remove(p))
		t.Logf("removed %s", filepath.Clean(p))
	}
}

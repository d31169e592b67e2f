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

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/eventlog/kafkalog"
	"github.com/rlmm-go/rlmm/topicbased"
)

// rebuildDoc is the part of `rlmm rebuild --json` this test reads.
type rebuildDoc struct {
	Steps    []rebuildStep `json:"steps"`
	Problems []struct {
		SegmentID string `json:"segmentId"`
		Detail    string `json:"detail"`
	} `json:"problems"`
	Applied   bool `json:"applied"`
	Published []struct {
		SegmentID string `json:"segmentId"`
		Event     string `json:"event"`
	} `json:"published"`
	OK bool `json:"ok"`
}

type rebuildStep struct {
	SegmentID         string `json:"segmentId"`
	StartOffset       int64  `json:"startOffset"`
	EndOffset         int64  `json:"endOffset"`
	MetadataPartition int32  `json:"metadataPartition"`
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
// the rebuilt segments; rlmm verify finds the metadata clean. (Node 2
// rolls its active segment on the way down and copies it, or starts to:
// a copy its stop cuts short has no or some files, and is not rebuilt.)
func TestRebuild(t *testing.T) {
	ctx := testCtx(t)
	c := startCluster(t, 2)
	cl := c.client()
	tp := createTopic(ctx, t, cl, "rebuilt", []int32{2})
	const first, second = 5000, 6500
	produce(ctx, t, cl, tp.Topic, 0, first)
	ti := c.waitTiered(ctx, t, cl, tp, 0, 4)

	c.stopNode(2)
	// The metadata as node 2 left it: it may have rolled and copied its
	// active segment on the way down, or been stopped in a copy (a segment
	// left COPY_SEGMENT_STARTED, whose files may be incomplete).
	before, err := c.readMetadata(ctx)
	must(t, err)
	orig := before.segments(tp)
	cut := map[string]bool{}
	for _, s := range inState(orig, rlmm.CopySegmentStarted) {
		cut[s.meta.ID.ID.String()] = true
	}
	if len(inState(orig, rlmm.CopySegmentFinished)) < len(ti.finished) || len(inState(orig, rlmm.CopySegmentStarted, rlmm.CopySegmentFinished)) != len(orig) {
		t.Fatalf("after the stop the metadata holds %s; %d segments were finished before", describe(orig), len(ti.finished))
	}
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
	run := rebuildRunner(ctx, t, args, cut)
	dry := run()
	if dry.Applied || len(dry.Published) != 0 {
		t.Fatalf("dry run: applied %v, %d published", dry.Applied, len(dry.Published))
	}
	// Every finished segment is planned; a copy the stop cut short is
	// planned if its files are complete, reported if some are there, and
	// not seen if none is.
	var rebuilt []*segment
	for _, s := range orig {
		planned := slices.ContainsFunc(dry.Steps, func(st rebuildStep) bool { return st.SegmentID == s.meta.ID.ID.String() })
		if planned {
			rebuilt = append(rebuilt, s)
		} else if !cut[s.meta.ID.ID.String()] {
			t.Errorf("finished segment %s (%d..%d) not planned", s.meta.ID.ID, s.meta.StartOffset, s.meta.EndOffset)
		}
	}
	if len(rebuilt) != len(dry.Steps) {
		t.Fatalf("dry run: %d steps, %d of them segments the broker had written: %+v", len(dry.Steps), len(rebuilt), dry.Steps)
	}
	if v, err := c.readMetadata(ctx); err != nil || v.events != 0 {
		t.Fatalf("after the dry run the metadata topic holds %d events (%v)", v.events, err)
	}
	applied := run("--apply", "--yes")
	if !applied.Applied || len(applied.Published) != 2*len(rebuilt) {
		t.Fatalf("--apply: applied %v, %d events published, want %d", applied.Applied, len(applied.Published), 2*len(rebuilt))
	}
	after, err := c.readMetadata(ctx)
	must(t, err)
	for _, s := range rebuilt {
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
	if after.events != 2*len(rebuilt) {
		t.Errorf("the metadata topic holds %d events after the rebuild, want %d", after.events, 2*len(rebuilt))
	}
	if again := run("--apply", "--yes"); len(again.Steps) != 0 || len(again.Published) != 0 {
		t.Fatalf("second rebuild: %d steps, %d published", len(again.Steps), len(again.Published))
	}
	t.Logf("rebuilt %d segments (%s) into %d events; %d copies cut short by the stop", len(rebuilt), describe(rebuilt), 2*len(rebuilt), len(cut))

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
	waitLeaders(ctx, t, cl, tp.Topic, 1)
	waitFor(ctx, t, fmt.Sprintf("the local log to start at %d or later (the earlier offsets remote only)", ti.localStart), func() (bool, string, error) {
		local, err := listOffset(ctx, cl, tp.Topic, tsEarliestLocal)
		if err != nil {
			return false, err.Error(), nil
		}
		return local >= ti.localStart, fmt.Sprintf("earliest local offset %d", local), nil
	})
	c.consume(ctx, t, tp.Topic, 0, first)
	if ls, err := listOffset(ctx, cl, tp.Topic, tsEarliest); err != nil || ls != 0 {
		t.Fatalf("after the restart the log starts at %d (%v), want 0", ls, err)
	}
	produce(ctx, t, cl, tp.Topic, first, second)
	later := c.waitTiered(ctx, t, cl, tp, 0, len(rebuilt)+1)
	for i, s := range rebuilt {
		if later.finished[i].meta.ID != s.meta.ID {
			t.Errorf("finished segment %d is %s, the rebuilt one was %s", i, later.finished[i].meta.ID.ID, s.meta.ID.ID)
		}
	}
	c.consume(ctx, t, tp.Topic, 0, second)
	c.verifyAndInspect(ctx, t, tp)
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

// rebuildRunner returns a function that runs `rlmm args... extra...` (a
// rebuild with --json) and returns its report, failing the test on any
// problem but one with a segment of cut: a copy the broker's stop cut short
// may have left incomplete files, the one problem (exit 1) accepted.
func rebuildRunner(ctx context.Context, t *testing.T, args []string, cut map[string]bool) func(extra ...string) rebuildDoc {
	return func(extra ...string) rebuildDoc {
		t.Helper()
		out, code := rlmmRun(ctx, t, append(slices.Clone(args), extra...)...)
		var doc rebuildDoc
		err := json.Unmarshal([]byte(out), &doc)
		for _, p := range doc.Problems {
			if !cut[p.SegmentID] {
				err = fmt.Errorf("problem with segment %s: %s", p.SegmentID, p.Detail)
			}
		}
		if err != nil || (code != 0 && (code != 1 || len(doc.Problems) == 0)) {
			t.Fatalf("rlmm %s: exit %d (%v):\n%s", strings.Join(append(args, extra...), " "), code, err, out)
		}
		return doc
	}
}

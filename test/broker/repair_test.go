package brokertest

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/eventlog/kafkalog"
	"github.com/rlmm-go/rlmm/repair"
	"github.com/rlmm-go/rlmm/scrub/layout"
	"github.com/rlmm-go/rlmm/wire"
)

// repairedRecords is how many records repairAfterTiering's topic gets:
// three segments, two of them tiered.
const repairedRecords = 2500

// repairDoc is the part of `rlmm repair --json` these tests read.
type repairDoc struct {
	repair.Plan
	Applied bool           `json:"applied"`
	Result  *repair.Result `json:"result"`
	OK      bool           `json:"ok"`
}

// repairAfterTiering is the repair half of TestScrubAfterTiering, on its
// cluster (one broker, LocalTieredStorage, the RLMM under test) and its own
// topic, tiered: a stray log file (an orphan, two hours old) is planted and
// a COPY_SEGMENT_STARTED published two hours back for a segment without a
// file (a copy that died). `rlmm repair` plans exactly to quarantine the
// stray and to close the copy, and changes nothing; --apply --yes moves the
// stray under the quarantine and publishes DELETE_SEGMENT_STARTED and
// DELETE_SEGMENT_FINISHED, which the broker's RLMM accepts (verify clean,
// inspect agrees); a second run has nothing to do; the broker still serves
// every record from offset 0, the early ones out of remote storage.
func repairAfterTiering(ctx context.Context, t *testing.T, c *cluster, tp rlmm.TopicIDPartition, records int64) {
	start := time.Now()
	defer func() { t.Logf("repair phase: %s", time.Since(start).Round(time.Millisecond)) }()
	args := []string{"repair", "--json", "-q", "--kafka", strings.Join(c.addrs, ","), "--layout", "local", "--remote-dir", c.remoteDir,
		"--older-than", "1h", "--stuck-after", "1h"}
	run := func(extra ...string) (repairDoc, int) {
		t.Helper()
		return rlmmJSON[repairDoc](ctx, t, append(slices.Clone(args), extra...)...)
	}
	l, err := layout.New(layout.LocalName, layout.Options{})
	must(t, err)
	root := filepath.Join(c.remoteDir, "kafka-tiered-storage")
	stray := rlmm.SegmentMetadata{ID: rlmm.SegmentID{TopicIDPartition: tp, ID: rlmm.RandomUuid()}, StartOffset: 888_888}
	strayKey := l.Key(tp, &stray, layout.LocalLog)
	strayPath := filepath.Join(root, filepath.FromSlash(strayKey))
	must(t, os.WriteFile(strayPath, []byte("not a segment anyone recorded"), 0o644))
	old := time.Now().Add(-2 * time.Hour)
	must(t, os.Chtimes(strayPath, old, old))
	stuck := rlmm.SegmentMetadata{ID: rlmm.SegmentID{TopicIDPartition: tp, ID: rlmm.RandomUuid()}, StartOffset: 2_000_000,
		EndOffset: 2_000_099, MaxTimestampMs: old.UnixMilli(), BrokerID: 1, EventTimestampMs: old.UnixMilli(),
		LeaderEpochs: []rlmm.EpochStart{{Epoch: 0, StartOffset: 2_000_000}}, SizeInBytes: 1000, State: rlmm.CopySegmentStarted, TxnIndexEmpty: true}
	lg, err := kafkalog.Open(ctx, kafkalog.Config{BootstrapServers: c.addrs, Topic: kafkalog.DefaultTopic, SkipTopicCreation: true})
	must(t, err)
	ev := wire.SegmentEvent(stuck)
	b, err := wire.AppendEvent(nil, &ev)
	must(t, err)
	_, err = lg.Publish(ctx, wire.MetadataPartition(tp, lg.Partitions()), b)
	must(t, err)
	must(t, lg.Close())

	doc, code := run()
	if code != 1 || doc.Applied || len(doc.Quarantine) != 1 || doc.Quarantine[0].Key != strayKey || len(doc.Close) != 1 ||
		doc.Close[0].SegmentID != stuck.ID.ID.String() || len(doc.Lost) != 0 || len(doc.Purge) != 0 || doc.Summary.Protected != 0 {
		t.Fatalf("dry run: exit %d, plan %+v\nwant exit 1, quarantine %s, close %s, nothing else", code, doc.Plan, strayKey, stuck.ID.ID)
	}
	if _, err := os.Stat(strayPath); err != nil {
		t.Fatalf("the dry run moved %s: %v", strayKey, err)
	}

	doc, code = run("--apply", "--yes")
	if code != 0 || !doc.OK || doc.Result == nil || doc.Result.Moved != 1 || doc.Result.Closed != 1 || doc.Result.Published != 2 {
		t.Fatalf("apply: exit %d, result %+v", code, doc.Result)
	}
	if _, err := os.Stat(strayPath); err == nil {
		t.Errorf("%s is still in place after apply", strayKey)
	}
	if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(doc.Quarantine[0].To))); err != nil {
		t.Errorf("the stray is not in the quarantine: %v", err)
	}
	v, err := c.readMetadata(ctx)
	must(t, err)
	s := v.segs[stuck.ID.ID]
	if s == nil || !slices.Equal(s.states, []rlmm.SegmentState{rlmm.CopySegmentStarted, rlmm.DeleteSegmentStarted, rlmm.DeleteSegmentFinished}) ||
		s.broker[1] != -1 || s.broker[2] != -1 {
		t.Errorf("the stuck copy's events: %+v, want STARTED, then DELETE_STARTED and DELETE_FINISHED by broker -1", s)
	}
	// The broker's RLMM took the events: verify finds nothing, inspect
	// shows the partition without the closed copy.
	c.verifyAndInspect(ctx, t, tp)

	doc, code = run()
	if code != 0 || !doc.OK || doc.Summary.Actions() != 0 || doc.Summary.Held != 1 {
		t.Errorf("second run: exit %d, summary %+v: want nothing to do, the stray held in quarantine", code, doc.Summary)
	}
	c.consume(ctx, t, tp.Topic, 0, records)
}

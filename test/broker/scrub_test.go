package brokertest

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/eventlog/kafkalog"
	"github.com/rlmm-go/rlmm/scrub"
	"github.com/rlmm-go/rlmm/scrub/scrubtest"
	"github.com/rlmm-go/rlmm/wire"
)

// scrubDoc is the part of `rlmm scrub --json` these tests read.
type scrubDoc struct {
	scrub.Report
	OK       bool `json:"ok"`
	Deletion *struct {
		Planned []scrub.Orphan      `json:"planned"`
		Result  *scrub.DeleteResult `json:"result"`
	} `json:"deletion"`
}

// TestScrubAfterTiering: after a real tiering run (Kafka 4.3.1,
// LocalTieredStorage, the RLMM under test), `rlmm scrub --layout local` is
// clean; then one finding of each kind is planted (a log deleted, one
// truncated, an index deleted, a stray file, a copy left
// COPY_SEGMENT_STARTED with its files): each is reported exactly, and
// --delete-orphans removes only the stray file. Before the planting, on a
// second topic of the cluster, rlmm repair (repairAfterTiering).
func TestScrubAfterTiering(t *testing.T) {
	ctx := testCtx(t)
	c := startCluster(t, 1)
	cl := c.client()
	tp := createTopic(ctx, t, cl, "scrubbed", []int32{1})
	repaired := createTopic(ctx, t, cl, "repaired", []int32{1})
	produce(ctx, t, cl, tp.Topic, 0, 5000)
	produce(ctx, t, cl, repaired.Topic, 0, repairedRecords)
	ti := c.waitTiered(ctx, t, cl, tp, 0, 4)
	c.waitTiered(ctx, t, cl, repaired, 0, 2)
	args := []string{"scrub", "--json", "-q", "--kafka", strings.Join(c.addrs, ","), "--layout", "local", "--remote-dir", c.remoteDir}
	run := func(extra ...string) (scrubDoc, int) {
		t.Helper()
		return rlmmJSON[scrubDoc](ctx, t, append(slices.Clone(args), extra...)...)
	}
	// Clean once no copy is in flight (a copy between its STARTED and
	// FINISHED events shows as protected orphans).
	waitFor(ctx, t, "a clean scrub", func() (bool, string, error) {
		doc, code := run()
		return code == 0 && doc.OK, describeScrub(&doc), nil
	})
	// rlmm repair on the other topic first: once repaired, it has no
	// finding left for the scrub below.
	repairAfterTiering(ctx, t, c, repaired, repairedRecords)
	v, err := c.readMetadata(ctx)
	must(t, err)
	var live []rlmm.SegmentMetadata
	for _, s := range inState(v.segments(tp), rlmm.CopySegmentFinished) {
		live = append(live, s.meta)
	}
	t.Logf("clean: %d finished segments (%d when tiered)", len(live), len(ti.finished))

	plant, err := scrubtest.PlantLocal(c.remoteDir, tp, live)
	must(t, err)
	lg, err := kafkalog.Open(ctx, kafkalog.Config{BootstrapServers: c.addrs, Topic: kafkalog.DefaultTopic, SkipTopicCreation: true})
	must(t, err)
	ev := wire.SegmentEvent(plant.Started)
	b, err := wire.AppendEvent(nil, &ev)
	must(t, err)
	_, err = lg.Publish(ctx, wire.MetadataPartition(tp, lg.Partitions()), b)
	must(t, err)
	must(t, lg.Close())

	doc, code := run()
	if code != 1 {
		t.Errorf("planted: exit %d, want 1", code)
	}
	var pr *scrub.PartitionReport
	for i := range doc.Partitions {
		// The broker may be copying a segment it rolled after the waits
		// above (in 2 of 11 runs the topic's last segment, offsets
		// 4000-4999, was rolled and copied only then): its files are
		// protected copy_started orphans until the copy finishes.
		if copying := dropBrokerCopies(&doc.Partitions[i], plant.Started.ID.ID); len(copying) > 0 {
			t.Logf("left out of the check, the broker's copy in flight: %v", copying)
		}
		switch {
		case doc.Partitions[i].TopicIDPartition == tp.String():
			pr = &doc.Partitions[i]
		case len(doc.Partitions[i].Missing)+len(doc.Partitions[i].Orphans)+len(doc.Partitions[i].Mismatches) > 0:
			t.Errorf("findings in another partition: %+v", doc.Partitions[i])
		}
	}
	for _, problem := range plant.Check(pr) {
		t.Error(problem)
	}

	before, err := plant.Files()
	must(t, err)
	doc, _ = run("--delete-orphans", "--older-than", "1h", "--yes")
	if doc.Deletion == nil || doc.Deletion.Result == nil || doc.Deletion.Result.Deleted != 1 || doc.Deletion.Result.Failed != 0 {
		t.Fatalf("--delete-orphans: %+v", doc.Deletion)
	}
	after, err := plant.Files()
	must(t, err)
	var gone []string
	for _, k := range before {
		if !slices.Contains(after, k) {
			gone = append(gone, k)
		}
	}
	if !slices.Equal(gone, []string{plant.StrayKey}) {
		t.Errorf("deleted %v, want only the planted orphan %s", gone, plant.StrayKey)
	}
}

// dropBrokerCopies removes from pr the protected copy_started orphans of
// segments other than planted (a copy the broker has in flight) and returns
// their keys.
func dropBrokerCopies(pr *scrub.PartitionReport, planted rlmm.Uuid) []string {
	var dropped []string
	pr.Orphans = slices.DeleteFunc(pr.Orphans, func(o scrub.Orphan) bool {
		if o.Reason == scrub.ReasonCopyStarted && o.Protected && o.SegmentID != planted.String() {
			dropped = append(dropped, o.Key)
			return true
		}
		return false
	})
	return dropped
}

// describeScrub sums a scrub report up for waitFor's status.
func describeScrub(d *scrubDoc) string {
	s := d.Summary
	return fmt.Sprintf("%d objects, %d live segments, %d missing, %d orphans, %d mismatches",
		s.Objects, s.LiveSegments, s.Missing, s.Orphans, s.Mismatches)
}

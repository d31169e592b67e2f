package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/scrub"
	"github.com/rlmm-go/rlmm/scrub/layout"
	"github.com/rlmm-go/rlmm/scrub/scrubtest"
)

// scrubRun runs rlmm scrub with args plus --json -q and decodes the report.
func scrubRun(t *testing.T, args ...string) (scrubJSON, string, int) {
	t.Helper()
	out, errOut, status := runInProcess(t, "", append([]string{"scrub", "--json", "-q"}, args...)...)
	var doc scrubJSON
	if status != exitCouldNotRun {
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatalf("scrub %v: exit %d, output is not JSON: %v\nstdout:\n%s\nstderr:\n%s", args, status, err, out, errOut)
		}
	}
	return doc, errOut, status
}

// orphanKeys returns the keys of the report's orphans of reason (all when
// empty), sorted.
func orphanKeys(doc scrubJSON, reason string) []string {
	var keys []string
	for _, p := range doc.Partitions {
		for _, o := range p.Orphans {
			if reason == "" || o.Reason == reason {
				keys = append(keys, o.Key)
			}
		}
	}
	slices.Sort(keys)
	return keys
}

func keysOf(objs []scrubtest.Object) []string {
	var keys []string
	for _, o := range objs {
		keys = append(keys, o.Key)
	}
	slices.Sort(keys)
	return keys
}

// TestScrubLocal lays out LocalTieredStorage's tree exactly as a 4.3.1
// broker writes it for a metadata log written with rlmm, finds it clean,
// then plants one finding of each kind and checks each is reported exactly,
// and that --delete-orphans deletes only the old, unprotected orphans.
func TestScrubLocal(t *testing.T) {
	ctx := context.Background()
	l, err := layout.New(layout.LocalName, layout.Options{})
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	logDir, remote := filepath.Join(work, "log"), filepath.Join(work, "tiered")
	tiered := filepath.Join(remote, "kafka-tiered-storage")
	f := scrubtest.New(scrubtest.Options{Layout: l, Topics: 2, PartitionsPerTopic: 3, SegmentsPerPartition: 4})
	if err := f.WriteLog(ctx, logDir, 4); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-48 * time.Hour)
	if err := scrubtest.WriteDir(tiered, f.Objects(), old); err != nil {
		t.Fatal(err)
	}
	args := []string{"--dir", logDir, "--layout", "local", "--remote-dir", remote}

	doc, errOut, status := scrubRun(t, args...)
	if status != 0 || !doc.OK || doc.Summary.Findings() != 0 {
		t.Fatalf("clean tree: exit %d, summary %+v, partitions %+v\n%s", status, doc.Summary, doc.Partitions, errOut)
	}
	if want := int64(len(f.Objects())); doc.Summary.Objects != want || doc.Summary.LiveSegments != 24 || doc.Summary.Partitions != 6 {
		t.Fatalf("clean tree: summary %+v, want %d objects, 24 live segments, 6 partitions", doc.Summary, want)
	}

	// Plant: the log of one segment gone (missing), one truncated (size
	// mismatch), an index of a third gone (partial), a stray old object and
	// a stray new one (orphans), a finished deletion whose objects stayed
	// (orphans), a copy left COPY_SEGMENT_STARTED with its objects
	// (protected orphans), and a file LocalTieredStorage never writes.
	lost, truncated, partial := f.Segments[0], f.Segments[5], f.Segments[10]
	rm := func(key string) {
		if err := os.Remove(filepath.Join(tiered, filepath.FromSlash(key))); err != nil {
			t.Fatal(err)
		}
	}
	rm(lost.Objects[layout.LocalLog].Key)
	rm(partial.Objects[layout.LocalIndex].Key)
	if err := os.Truncate(filepath.Join(tiered, truncated.Objects[layout.LocalLog].Key), 100); err != nil {
		t.Fatal(err)
	}
	stray := f.StrayObject(f.Partitions[1], 5000)
	young := f.StrayObject(f.Partitions[2], 6000)
	tp := f.Partitions[3]
	deleted := f.Add(tp, 400, rlmm.DeleteSegmentFinished)
	started := f.Add(tp, 500, rlmm.CopySegmentStarted)
	deletedObjs := deleted.Objects // the deletion finished, its objects stayed
	if err := f.WriteLog(ctx, logDir, 4, deleted, started); err != nil {
		t.Fatal(err)
	}
	foreign := scrubtest.Object{Key: "README.txt", Size: 5}
	for _, w := range []struct {
		objs  []scrubtest.Object
		mtime time.Time
	}{{[]scrubtest.Object{stray, foreign}, old}, {deletedObjs, old}, {started.Objects, old}, {[]scrubtest.Object{young}, time.Now()}} {
		if err := scrubtest.WriteDir(tiered, w.objs, w.mtime); err != nil {
			t.Fatal(err)
		}
	}

	doc, errOut, status = scrubRun(t, args...)
	if status != exitFindings || doc.OK {
		t.Fatalf("planted: exit %d (want 1)\n%s", status, errOut)
	}
	var missing []scrub.Missing
	var mismatches []scrub.Mismatch
	for _, p := range doc.Partitions {
		missing = append(missing, p.Missing...)
		mismatches = append(mismatches, p.Mismatches...)
	}
	if len(missing) != 1 || missing[0].SegmentID != lost.Meta.ID.ID.String() || missing[0].Keys[0] != lost.Objects[layout.LocalLog].Key ||
		len(missing[0].Keys) != 1 || missing[0].State != "COPY_SEGMENT_FINISHED" {
		t.Errorf("missing = %+v, want only segment %s's log", missing, lost.Meta.ID.ID)
	}
	if doc.Partitions[0].TopicIDPartition != lost.TP.String() {
		t.Errorf("first partition reported is %s, want the one with a missing segment %s", doc.Partitions[0].TopicIDPartition, lost.TP)
	}
	wantMismatch := []scrub.Mismatch{
		{Kind: scrub.MismatchPartial, SegmentID: partial.Meta.ID.ID.String(), MissingKeys: []string{partial.Objects[layout.LocalIndex].Key}},
		{Kind: scrub.MismatchSize, SegmentID: truncated.Meta.ID.ID.String(), Key: truncated.Objects[layout.LocalLog].Key,
			Expected: int64(truncated.Meta.SizeInBytes), Actual: 100},
	}
	slices.SortFunc(mismatches, func(a, b scrub.Mismatch) int { return strings.Compare(a.Kind, b.Kind) })
	if len(mismatches) != 2 || !scrubtest.MismatchEqual(mismatches[0], wantMismatch[0]) || !scrubtest.MismatchEqual(mismatches[1], wantMismatch[1]) {
		t.Errorf("mismatches = %+v\nwant %+v", mismatches, wantMismatch)
	}
	wantDeletable := append(keysOf(deletedObjs), stray.Key, young.Key)
	slices.Sort(wantDeletable)
	if got := orphanKeys(doc, scrub.ReasonNotInMetadata); !slices.Equal(got, wantDeletable) {
		t.Errorf("not_in_metadata orphans = %v\nwant %v", got, wantDeletable)
	}
	if got := orphanKeys(doc, scrub.ReasonCopyStarted); !slices.Equal(got, keysOf(started.Objects)) {
		t.Errorf("copy_started orphans = %v\nwant %v", got, keysOf(started.Objects))
	}
	if got := orphanKeys(doc, scrub.ReasonUnrecognized); !slices.Equal(got, []string{foreign.Key}) {
		t.Errorf("unrecognized orphans = %v, want [%s]", got, foreign.Key)
	}
	wantOrphans := len(wantDeletable) + len(started.Objects) + 1
	if doc.Summary.Orphans != wantOrphans || doc.Summary.Missing != 1 || doc.Summary.Mismatches != 2 ||
		doc.Summary.ProtectedOrphans != len(started.Objects)+1 {
		t.Errorf("summary %+v, want 1 missing, %d orphans (%d protected), 2 mismatches", doc.Summary, wantOrphans, len(started.Objects)+1)
	}

	// The text report names each finding too.
	text, _, status := runInProcess(t, "", append([]string{"scrub", "-q"}, args...)...)
	for _, want := range []string{"MISSING   segment " + lost.Meta.ID.ID.String(), "PARTIAL   segment " + partial.Meta.ID.ID.String(),
		"MISMATCH  " + truncated.Objects[0].Key, "ORPHAN    " + stray.Key, "(copy_started, protected)", "FAILED: "} {
		if !strings.Contains(text, want) || status != exitFindings {
			t.Errorf("text report (exit %d) lacks %q:\n%s", status, want, text)
		}
	}

	// --delete-orphans without --yes and without a terminal: a dry run.
	del := append(slices.Clone(args), "--delete-orphans", "--older-than", "24h")
	doc, _, status = scrubRun(t, del...)
	wantPlan := append(keysOf(deletedObjs), stray.Key)
	slices.Sort(wantPlan)
	var planned []string
	for _, o := range doc.Deletion.Planned {
		planned = append(planned, o.Key)
	}
	slices.Sort(planned)
	if status != exitFindings || doc.Deletion.Confirmed || doc.Deletion.Result != nil || !slices.Equal(planned, wantPlan) {
		t.Fatalf("dry run: exit %d, deletion %+v\nwant planned %v", status, doc.Deletion, wantPlan)
	}
	for _, k := range wantPlan {
		if _, err := os.Stat(filepath.Join(tiered, k)); err != nil {
			t.Errorf("the dry run touched %s: %v", k, err)
		}
	}

	// With --yes: exactly the planned orphans go.
	before := listTree(t, tiered)
	doc, errOut, status = scrubRun(t, append(del, "--yes")...)
	if status != exitFindings || doc.Deletion.Result == nil || doc.Deletion.Result.Deleted != len(wantPlan) || doc.Deletion.Result.Failed != 0 {
		t.Fatalf("delete: exit %d, deletion %+v\n%s", status, doc.Deletion, errOut)
	}
	for _, k := range wantPlan {
		if !strings.Contains(errOut, "orphan deleted") || !strings.Contains(errOut, k) {
			t.Errorf("deletion of %s not logged:\n%s", k, errOut)
		}
	}
	after := listTree(t, tiered)
	var gone []string
	for _, k := range before {
		if !slices.Contains(after, k) {
			gone = append(gone, k)
		}
	}
	if !slices.Equal(gone, wantPlan) {
		t.Errorf("deleted %v\nwant exactly %v", gone, wantPlan)
	}

	// Scrubbed again: the deleted orphans are no longer reported; the rest is.
	doc, _, _ = scrubRun(t, args...)
	if got := orphanKeys(doc, scrub.ReasonNotInMetadata); !slices.Equal(got, []string{young.Key}) {
		t.Errorf("after deletion, not_in_metadata orphans = %v, want only the young %s", got, young.Key)
	}
}

// listTree returns the files under root as sorted '/' keys.
func listTree(t *testing.T, root string) []string {
	t.Helper()
	var keys []string
	err := filepath.WalkDir(root, func(path string, e os.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		keys = append(keys, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(keys)
	return keys
}

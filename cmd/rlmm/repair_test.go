package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/repair"
	"github.com/rlmm-go/rlmm/scrub/layout"
	"github.com/rlmm-go/rlmm/scrub/scrubtest"
)

// TestRepairLocal plants every finding repair acts on (and those it must
// leave alone) in a LocalTieredStorage tree, checks the dry run's plan and
// that it changes nothing, applies it, and checks the tree, the metadata
// log, a second run (nothing to do) and scrub afterwards.
func TestRepairLocal(t *testing.T) {
	ctx := context.Background()
	l, err := layout.New(layout.LocalName, layout.Options{})
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	logDir, remote := filepath.Join(work, "log"), filepath.Join(work, "tiered")
	tiered := filepath.Join(remote, "kafka-tiered-storage")
	f := scrubtest.New(scrubtest.Options{Layout: l, Topics: 2, PartitionsPerTopic: 2, SegmentsPerPartition: 3})
	lost := f.Segments[1]
	tp := f.Partitions[2]
	deleted := f.Add(tp, 400, rlmm.DeleteSegmentFinished) // its objects stayed
	inFlight := f.Add(tp, 500, rlmm.CopySegmentStarted)   // its objects are there: protected
	stuck := f.Add(tp, 600, rlmm.CopySegmentStarted)      // no object: closed
	undone := f.Add(tp, 700, rlmm.DeleteSegmentStarted)   // its objects deleted, not recorded: finished
	if err := f.WriteLog(ctx, logDir, 4); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-48 * time.Hour)
	// Objects leaves out those of the finished deletion: they stayed.
	if err := scrubtest.WriteDir(tiered, append(f.Objects(), deleted.Objects...), old); err != nil {
		t.Fatal(err)
	}
	rm := func(key string) {
		if err := os.Remove(filepath.Join(tiered, filepath.FromSlash(key))); err != nil {
			t.Fatal(err)
		}
	}
	rm(lost.Objects[layout.LocalLog].Key)
	for _, o := range append(slices.Clone(stuck.Objects), undone.Objects...) {
		rm(o.Key)
	}
	stray := f.StrayObject(f.Partitions[1], 5000)
	young := f.StrayObject(f.Partitions[0], 6000)
	foreign := scrubtest.Object{Key: "README.txt", Size: 5}
	now := time.Now()
	expired := scrubtest.Object{Key: repair.QuarantineKey(repair.DefaultQuarantine, now.Add(-8*24*time.Hour), "t-0-x/00000000000000000000-y.log"), Size: 11}
	graced := scrubtest.Object{Key: repair.QuarantineKey(repair.DefaultQuarantine, now.Add(-time.Hour), "t-0-x/00000000000000000100-z.log"), Size: 12}
	unnamed := scrubtest.Object{Key: repair.DefaultQuarantine + "by-hand/notes.txt", Size: 13}
	if err := scrubtest.WriteDir(tiered, []scrubtest.Object{stray, foreign, expired, graced, unnamed}, old); err != nil {
		t.Fatal(err)
	}
	if err := scrubtest.WriteDir(tiered, []scrubtest.Object{young}, now); err != nil {
		t.Fatal(err)
	}
	args := []string{"--dir", logDir, "--layout", "local", "--remote-dir", remote}
	before := listTree(t, tiered)

	doc, errOut, status := repairRun(t, args...)
	if status != exitFindings || doc.OK || doc.Applied {
		t.Fatalf("dry run: exit %d, ok %v, applied %v (want 1, false, false)\n%s", status, doc.OK, doc.Applied, errOut)
	}
	var moved []string
	for _, m := range doc.Quarantine {
		moved = append(moved, m.Key)
		if !strings.HasPrefix(m.To, repair.DefaultQuarantine) || !strings.HasSuffix(m.To, "/"+m.Key) {
			t.Errorf("quarantine of %s goes to %s, want %s<run time>/%s", m.Key, m.To, repair.DefaultQuarantine, m.Key)
		}
	}
	wantMoved := append(keysOf(deleted.Objects), stray.Key)
	slices.Sort(wantMoved)
	if !slices.Equal(moved, wantMoved) {
		t.Errorf("quarantine = %v, want %v (the finished deletion's objects and the old stray)", moved, wantMoved)
	}
	if len(doc.Purge) != 1 || doc.Purge[0].Key != expired.Key {
		t.Errorf("purge = %+v, want only %s", doc.Purge, expired.Key)
	}
	var held []string
	for _, h := range doc.Held {
		held = append(held, h.Key)
	}
	if want := []string{graced.Key, unnamed.Key}; !slices.Equal(held, want) {
		t.Errorf("held = %v, want %v", held, want)
	}
	if len(doc.Close) != 2 || doc.Close[0].SegmentID != stuck.Meta.ID.ID.String() || doc.Close[0].StartOffset != 600 ||
		!slices.Equal(doc.Close[0].Events, []string{"DELETE_SEGMENT_STARTED", "DELETE_SEGMENT_FINISHED"}) ||
		doc.Close[1].SegmentID != undone.Meta.ID.ID.String() || !slices.Equal(doc.Close[1].Events, []string{"DELETE_SEGMENT_FINISHED"}) {
		t.Errorf("close = %+v, want segment %s (offsets 600..699) with DELETE_SEGMENT_STARTED, DELETE_SEGMENT_FINISHED, then %s with DELETE_SEGMENT_FINISHED",
			doc.Close, stuck.Meta.ID.ID, undone.Meta.ID.ID)
	}
	if len(doc.Lost) != 1 || doc.Lost[0].SegmentID != lost.Meta.ID.ID.String() || doc.Lost[0].StartOffset != lost.Meta.StartOffset ||
		doc.Lost[0].EndOffset != lost.Meta.EndOffset || doc.Lost[0].TopicIDPartition != lost.TP.String() {
		t.Errorf("lost = %+v, want segment %s of %s offsets %d..%d", doc.Lost, lost.Meta.ID.ID, lost.TP, lost.Meta.StartOffset, lost.Meta.EndOffset)
	}
	// The in-flight copy's objects and the foreign key are protected; the
	// young stray waits for --older-than.
	if s := doc.Summary; s.Protected != len(inFlight.Objects)+1 || s.Young != 1 || s.Actions() != len(wantMoved)+3 {
		t.Errorf("summary %+v: want %d protected, 1 young, %d actions", s, len(inFlight.Objects)+1, len(wantMoved)+3)
	}
	text, _, _ := runInProcess(t, "", append([]string{"repair", "-q"}, args...)...)
	for _, want := range []string{"LOST        " + lost.TP.String() + "  segment " + lost.Meta.ID.ID.String() + fmt.Sprintf(" (COPY_SEGMENT_FINISHED): offsets %d..%d lost", lost.Meta.StartOffset, lost.Meta.EndOffset),
		"CLOSE       " + tp.String() + "  segment " + stuck.Meta.ID.ID.String() + " offsets 600..699", "QUARANTINE  " + stray.Key,
		"DELETE      " + expired.Key, "HELD        " + unnamed.Key, "dry run: nothing changed"} {
		if !strings.Contains(text, want) {
			t.Errorf("the dry run's text lacks %q:\n%s", want, text)
		}
	}
	if after := listTree(t, tiered); !slices.Equal(after, before) {
		t.Fatalf("the dry run changed the tree:\nbefore %v\nafter  %v", before, after)
	}
	if got := len(readEmbedded(t, logDir).Segments(tp)); got != 3+3 {
		t.Fatalf("the dry run changed the metadata: %s has %d segments", tp, got)
	}

	_, errOut, status = runInProcess(t, "", append([]string{"repair", "-q", "--apply", "--yes"}, args...)...)
	if status != exitFindings { // the lost segment stays reported
		t.Fatalf("apply: exit %d, want 1 (a lost segment)\n%s", status, errOut)
	}
	for _, want := range []string{"repair: orphan quarantined", "orphan deleted", "repair: published"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("the log of the apply lacks %q:\n%s", want, errOut)
		}
	}
	files := listTree(t, tiered)
	for _, k := range wantMoved {
		if slices.Contains(files, k) {
			t.Errorf("%s is still in place after apply", k)
		}
		if !slices.ContainsFunc(files, func(f string) bool {
			return strings.HasPrefix(f, repair.DefaultQuarantine) && strings.HasSuffix(f, "/"+k)
		}) {
			t.Errorf("%s is not in the quarantine after apply: %v", k, files)
		}
	}
	for _, k := range append(keysOf(inFlight.Objects), young.Key, foreign.Key, graced.Key, unnamed.Key) {
		if !slices.Contains(files, k) {
			t.Errorf("%s was touched by apply", k)
		}
	}
	if slices.Contains(files, expired.Key) {
		t.Errorf("%s (quarantined 8 days ago) is still there", expired.Key)
	}
	b := readEmbedded(t, logDir)
	if a := b.StreamAnomalies(); len(a) != 0 {
		t.Errorf("the state machine rejected events after apply: %+v", a)
	}
	for _, m := range b.Segments(tp) {
		if m.ID.ID == stuck.Meta.ID.ID || m.ID.ID == undone.Meta.ID.ID {
			t.Errorf("segment %s is still there after apply, %s", m.ID.ID, m.State)
		}
	}

	doc, errOut, status = repairRun(t, args...)
	if status != exitFindings || doc.Summary.Actions() != 0 || doc.Summary.Lost != 1 || doc.Summary.Held != len(wantMoved)+2 {
		t.Fatalf("second run: exit %d, summary %+v: want nothing to do, 1 lost, %d held\n%s", status, doc.Summary, len(wantMoved)+2, errOut)
	}
	sdoc, errOut, _ := scrubRun(t, args...)
	if s := sdoc.Summary; s.Missing != 1 || s.Orphans != len(inFlight.Objects)+2 || s.Excluded != int64(len(wantMoved)+2) {
		t.Errorf("scrub after repair: summary %+v: want 1 missing, %d orphans (in flight, foreign, young), %d excluded\n%s",
			s, len(inFlight.Objects)+2, len(wantMoved)+2, errOut)
	}
}

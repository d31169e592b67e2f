package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/repair"
	"github.com/rlmm-go/rlmm/scrub/layout"
	"github.com/rlmm-go/rlmm/scrub/scrubtest"
)

// TestRepairAivenS3 repairs Aiven's layout on a real S3-compatible server
// (SeaweedFS, scripts/seaweedfs.sh) with no key prefix, so the quarantine
// lies under the layout's listing: orphans are moved there (CopyObject then
// DeleteObject, the bytes kept), an object quarantined 8 days ago is
// deleted, a stuck copy is closed, a lost segment reported; a second run has
// nothing to do, and neither scrub nor rebuild takes the quarantine for
// segments.
func TestRepairAivenS3(t *testing.T) {
	srv := scrubtest.NeedS3(t)
	scrubtest.SetAWSEnv(t, srv.AccessKey, srv.SecretKey)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	bucket := srv.NewBucket(ctx, t)
	l, err := layout.New(layout.AivenName, layout.Options{})
	if err != nil {
		t.Fatal(err)
	}
	f := scrubtest.New(scrubtest.Options{Layout: l, Topics: 2, PartitionsPerTopic: 2, SegmentsPerPartition: 3, CustomMetadata: true})
	lost := f.Segments[4]
	tp := f.Partitions[1]
	deleted := f.Add(tp, 1000, rlmm.DeleteSegmentFinished)
	inFlight := f.Add(tp, 1100, rlmm.CopySegmentStarted)
	stuck := f.Add(tp, 1200, rlmm.CopySegmentStarted)
	logDir := filepath.Join(t.TempDir(), "log")
	if err := f.WriteLog(ctx, logDir, 8); err != nil {
		t.Fatal(err)
	}
	stray := f.StrayObject(f.Partitions[3], 5000)
	expired := scrubtest.Object{Key: repair.QuarantineKey(repair.DefaultQuarantine, time.Now().Add(-8*24*time.Hour), "old/0/x.log"), Size: 9}
	var objs []scrubtest.Object
	for _, o := range append(f.Objects(), deleted.Objects...) {
		if o.Key != lost.Objects[layout.AivenLog].Key && !slices.Contains(keysOf(stuck.Objects), o.Key) {
			objs = append(objs, o)
		}
	}
	if err := srv.Upload(ctx, bucket, append(objs, expired)); err != nil {
		t.Fatal(err)
	}
	args := []string{"--dir", logDir, "--layout", "aiven", "--s3-bucket", bucket, "--s3-endpoint", srv.Endpoint, "--older-than", "1ms"}

	doc, errOut, status := repairRun(t, args...)
	if doc.Plan == nil {
		t.Fatalf("dry run: exit %d\n%s", status, errOut)
	}
	wantMoved := append(keysOf(deleted.Objects), stray.Key)
	slices.Sort(wantMoved)
	var moved []string
	for _, m := range doc.Quarantine {
		moved = append(moved, m.Key)
	}
	if status != exitFindings || !slices.Equal(moved, wantMoved) || len(doc.Purge) != 1 || doc.Purge[0].Key != expired.Key ||
		len(doc.Close) != 1 || doc.Close[0].SegmentID != stuck.Meta.ID.ID.String() || len(doc.Lost) != 1 ||
		doc.Lost[0].SegmentID != lost.Meta.ID.ID.String() || doc.Summary.Protected != len(inFlight.Objects) {
		t.Fatalf("dry run: exit %d, plan %+v\nwant quarantine %v, purge %s, close %s, lost %s\n%s",
			status, doc.Plan, wantMoved, expired.Key, stuck.Meta.ID.ID, lost.Meta.ID.ID, errOut)
	}
	before, err := srv.Keys(ctx, bucket)
	if err != nil {
		t.Fatal(err)
	}

	doc, errOut, status = repairRun(t, append(args, "--apply", "--yes")...)
	if status != exitFindings || !doc.Applied || doc.Result == nil || doc.Result.Moved != len(wantMoved) || doc.Result.Purged != 1 ||
		doc.Result.Closed != 1 || doc.Result.Failed() {
		t.Fatalf("apply: exit %d (want 1: a lost segment), result %+v\n%s", status, doc.Result, errOut)
	}
	after, err := srv.Keys(ctx, bucket)
	if err != nil {
		t.Fatal(err)
	}
	stamp := time.UnixMilli(mustStamp(t, doc.Quarantine[0].To))
	var want []string
	for _, k := range before {
		switch {
		case k == expired.Key:
		case slices.Contains(wantMoved, k):
			want = append(want, repair.QuarantineKey(repair.DefaultQuarantine, stamp, k))
		default:
			want = append(want, k)
		}
	}
	slices.Sort(want)
	if !slices.Equal(after, want) {
		t.Errorf("keys after apply:\n%v\nwant\n%v", after, want)
	}
	// The bytes moved with the key.
	for _, m := range doc.Quarantine {
		if got := readS3(ctx, t, srv, bucket, m.To); string(got) != string(scrubtest.Content(m.Size)) {
			t.Errorf("%s holds %d bytes, want %s's %d", m.To, len(got), m.Key, m.Size)
		}
	}

	doc, errOut, status = repairRun(t, args...)
	if status != exitFindings || doc.Summary.Actions() != 0 || doc.Summary.Lost != 1 || doc.Summary.Held != len(wantMoved) {
		t.Fatalf("second run: exit %d, summary %+v: want nothing to do, 1 lost, %d held\n%s", status, doc.Summary, len(wantMoved), errOut)
	}
	sdoc, errOut, _ := scrubRun(t, args[:len(args)-2]...)
	if s := sdoc.Summary; s.Missing != 1 || s.Orphans != len(inFlight.Objects) || s.Excluded != int64(len(wantMoved)) {
		t.Errorf("scrub after repair: %+v: want 1 missing, %d orphans, %d excluded\n%s", s, len(inFlight.Objects), len(wantMoved), errOut)
	}
	out, errOut, _ := runInProcess(t, "", append([]string{"rebuild", "--json", "-q"}, args[:len(args)-2]...)...)
	var rdoc rebuildJSON
	if err := json.Unmarshal([]byte(out), &rdoc); err != nil {
		t.Fatalf("rebuild: %v\n%s\n%s", err, out, errOut)
	}
	if rdoc.Found.Excluded != int64(len(wantMoved)) || len(rdoc.Steps) != 0 {
		t.Errorf("rebuild after repair: %d excluded, %d steps; want %d excluded, none planned", rdoc.Found.Excluded, len(rdoc.Steps), len(wantMoved))
	}
}

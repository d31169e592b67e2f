package main

import (
	"context"
	"net"
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

// TestScrubAivenS3 lays out, on a real S3-compatible server (SeaweedFS,
// scripts/seaweedfs.sh), the objects Aiven's plugin writes for a metadata
// log written with rlmm (custom metadata included, 10,000+ objects so
// listing pages), finds it clean, then plants every kind of finding.
func TestScrubAivenS3(t *testing.T) {
	srv := scrubtest.NeedS3(t)
	scrubtest.SetAWSEnv(t, srv.AccessKey, srv.SecretKey)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bucket := srv.NewBucket(ctx, t)
	const prefix = "tiered/"
	l, err := layout.New(layout.AivenName, layout.Options{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	f := scrubtest.New(scrubtest.Options{Layout: l, Topics: 3, PartitionsPerTopic: 4, SegmentsPerPartition: 285, CustomMetadata: true})
	// One segment uploaded before the plugin's key.prefix changed: its
	// custom metadata names the old prefix, which takes precedence.
	moved := f.Segments[7]
	f.MoveToPrefix(moved, "old-prefix/")
	logDir := filepath.Join(t.TempDir(), "log")
	if err := f.WriteLog(ctx, logDir, 8); err != nil {
		t.Fatal(err)
	}
	objs := f.Objects()
	if len(objs) < 10_000 {
		t.Fatalf("fixture has %d objects, want 10,000+", len(objs))
	}
	if err := srv.Upload(ctx, bucket, objs); err != nil {
		t.Fatal(err)
	}
	args := []string{"--dir", logDir, "--layout", "aiven", "--s3-bucket", bucket, "--s3-prefix", prefix,
		"--s3-endpoint", srv.Endpoint}

	doc, errOut, status := scrubRun(t, args...)
	if status != 0 || doc.Summary.Findings() != 0 || doc.Summary.Objects != int64(len(objs)) || doc.Summary.LiveSegments != len(f.Segments) {
		t.Fatalf("clean bucket: exit %d, summary %+v (want %d objects, %d segments), partitions %+v\n%s",
			status, doc.Summary, len(objs), len(f.Segments), doc.Partitions, errOut)
	}

	// Plant: a log gone (missing), a log re-uploaded shorter (its objects no
	// longer sum to the remote size), the indexes of a third gone (partial),
	// a stray object, a finished deletion whose objects stayed, a copy left
	// COPY_SEGMENT_STARTED with its objects, and a key Aiven never writes.
	lost, shrunk, partial := f.Segments[0], f.Segments[300], f.Segments[600]
	if err := srv.Delete(ctx, bucket, lost.Objects[layout.AivenLog].Key, partial.Objects[layout.AivenIndexes].Key); err != nil {
		t.Fatal(err)
	}
	short := shrunk.Objects[layout.AivenLog]
	short.Size -= 100
	tp := f.Partitions[5]
	deleted := f.Add(tp, 1_000_000, rlmm.DeleteSegmentFinished)
	started := f.Add(tp, 1_000_100, rlmm.CopySegmentStarted)
	if err := f.WriteLog(ctx, logDir, 8, deleted, started); err != nil {
		t.Fatal(err)
	}
	stray := f.StrayObject(f.Partitions[2], 2_000_000)
	foreign := scrubtest.Object{Key: prefix + "notes.txt", Size: 3}
	planted := append([]scrubtest.Object{short, stray, foreign}, deleted.Objects...)
	if err := srv.Upload(ctx, bucket, append(planted, started.Objects...)); err != nil {
		t.Fatal(err)
	}

	doc, errOut, status = scrubRun(t, args...)
	if status != exitFindings {
		t.Fatalf("planted: exit %d (want 1)\n%s", status, errOut)
	}
	var missing []scrub.Missing
	var mismatches []scrub.Mismatch
	for _, p := range doc.Partitions {
		missing = append(missing, p.Missing...)
		mismatches = append(mismatches, p.Mismatches...)
	}
	if len(missing) != 1 || missing[0].SegmentID != lost.Meta.ID.ID.String() || !slices.Equal(missing[0].Keys, []string{lost.Objects[0].Key}) {
		t.Errorf("missing = %+v, want only %s", missing, lost.Objects[0].Key)
	}
	var total int64
	for _, o := range shrunk.Objects {
		total += o.Size
	}
	want := []scrub.Mismatch{
		{Kind: scrub.MismatchPartial, SegmentID: partial.Meta.ID.ID.String(), MissingKeys: []string{partial.Objects[layout.AivenIndexes].Key}},
		{Kind: scrub.MismatchSize, SegmentID: shrunk.Meta.ID.ID.String(), Expected: total, Actual: total - 100},
	}
	slices.SortFunc(mismatches, func(a, b scrub.Mismatch) int { return strings.Compare(a.Kind, b.Kind) })
	if len(mismatches) != 2 || !scrubtest.MismatchEqual(mismatches[0], want[0]) || !scrubtest.MismatchEqual(mismatches[1], want[1]) {
		t.Errorf("mismatches = %+v\nwant %+v", mismatches, want)
	}
	wantDeletable := append(keysOf(deleted.Objects), stray.Key)
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
	if n := len(wantDeletable) + len(started.Objects) + 1; doc.Summary.Orphans != n {
		t.Errorf("summary %+v, want %d orphans", doc.Summary, n)
	}

	// --delete-orphans: a dry run without --yes, then exactly the planned.
	del := append(slices.Clone(args), "--delete-orphans", "--older-than", "1ms")
	doc, _, _ = scrubRun(t, del...)
	if doc.Deletion == nil || doc.Deletion.Result != nil || len(doc.Deletion.Planned) != len(wantDeletable) {
		t.Fatalf("dry run: deletion %+v, want %d planned and none deleted", doc.Deletion, len(wantDeletable))
	}
	before, err := srv.Keys(ctx, bucket)
	if err != nil {
		t.Fatal(err)
	}
	doc, errOut, _ = scrubRun(t, append(del, "--yes")...)
	if doc.Deletion == nil || doc.Deletion.Result == nil || doc.Deletion.Result.Deleted != len(wantDeletable) {
		t.Fatalf("delete: %+v\n%s", doc.Deletion, errOut)
	}
	after, err := srv.Keys(ctx, bucket)
	if err != nil {
		t.Fatal(err)
	}
	var gone []string
	for _, k := range before {
		if _, found := slices.BinarySearch(after, k); !found {
			gone = append(gone, k)
		}
	}
	if !slices.Equal(gone, wantDeletable) {
		t.Errorf("deleted %v\nwant exactly %v", gone, wantDeletable)
	}
	if !strings.Contains(errOut, "orphan deleted") || !strings.Contains(errOut, stray.Key) {
		t.Errorf("deletions not logged:\n%s", errOut)
	}
}

// TestScrubBadInput: what scrub cannot run on ends with exit 2 and its cause
// named, within a bound (the command's own retries are short).
func TestScrubBadInput(t *testing.T) {
	logDir := filepath.Join(t.TempDir(), "log")
	l, _ := layout.New(layout.AivenName, layout.Options{})
	f := scrubtest.New(scrubtest.Options{Layout: l, Topics: 1, PartitionsPerTopic: 1, SegmentsPerPartition: 1})
	if err := f.WriteLog(context.Background(), logDir, 2); err != nil {
		t.Fatal(err)
	}
	closed := closedPort(t)
	cases := []struct {
		name   string
		s3     bool // needs the S3 server
		creds  string
		args   []string
		reason string
	}{
		{"unknown layout", false, "", []string{"--layout", "hdfs", "--remote-dir", t.TempDir()}, `unknown layout "hdfs" (known: aiven, local)`},
		{"no layout", false, "", []string{"--remote-dir", t.TempDir()}, "give --layout"},
		{"no remote dir", false, "", []string{"--layout", "local", "--remote-dir", filepath.Join(t.TempDir(), "none")}, "no such file or directory"},
		{"delete without threshold", false, "", []string{"--layout", "local", "--remote-dir", t.TempDir(), "--delete-orphans"}, "needs --older-than"},
		{"nothing listens", false, "good", []string{"--layout", "aiven", "--s3-bucket", "b", "--s3-endpoint", "http://" + closed}, "nothing listens at http://" + closed},
		{"no such bucket", true, "good", []string{"--layout", "aiven", "--s3-bucket", "rlmm-no-such-bucket"}, `bucket "rlmm-no-such-bucket" does not exist`},
		{"wrong credentials", true, "wrong", []string{"--layout", "aiven", "--s3-bucket", "rlmm-any"}, "refused the credentials"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"scrub", "-q", "--dir", logDir}, c.args...)
			if c.s3 {
				srv := scrubtest.NeedS3(t)
				args = append(args, "--s3-endpoint", srv.Endpoint)
				if c.creds == "wrong" {
					scrubtest.SetAWSEnv(t, srv.AccessKey, "not-"+srv.SecretKey)
				} else {
					scrubtest.SetAWSEnv(t, srv.AccessKey, srv.SecretKey)
				}
			} else if c.creds != "" {
				scrubtest.SetAWSEnv(t, "AKIDEXAMPLE", "secret")
			}
			type result struct {
				errOut string
				status int
			}
			done := make(chan result, 1)
			go func() {
				_, errOut, status := runInProcess(t, "", args...)
				done <- result{errOut, status}
			}()
			select {
			case r := <-done:
				if r.status != exitCouldNotRun || !strings.Contains(r.errOut, c.reason) {
					t.Errorf("exit %d, stderr %q; want 2 and %q", r.status, r.errOut, c.reason)
				}
			case <-time.After(time.Minute):
				t.Fatalf("scrub %v still running after a minute", c.args)
			}
		})
	}
}

// closedPort returns 127.0.0.1:PORT where nothing listens (a port just
// released).
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

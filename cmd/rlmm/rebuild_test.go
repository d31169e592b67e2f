package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlmm-go/rlmm/rebuild/rebuildtest"
	"github.com/rlmm-go/rlmm/scrub/layout"
	"github.com/rlmm-go/rlmm/scrub/scrubtest"
)

// rebuildFixture writes LocalTieredStorage's files of 4 segments under
// remote/kafka-tiered-storage and an embedded metadata log naming the
// first; it returns the two directories and the fixture.
func rebuildFixture(t *testing.T) (logDir, remote string, f *scrubtest.Fixture) {
	t.Helper()
	l, err := layout.New(layout.LocalName, layout.Options{})
	if err != nil {
		t.Fatal(err)
	}
	f = scrubtest.New(scrubtest.Options{Layout: l, Topics: 1, PartitionsPerTopic: 2, SegmentsPerPartition: 2})
	remote = t.TempDir()
	if err := rebuildtest.WriteLocal(f, filepath.Join(remote, "kafka-tiered-storage")); err != nil {
		t.Fatal(err)
	}
	logDir = filepath.Join(t.TempDir(), "log")
	if err := f.WriteLog(context.Background(), logDir, 5, f.Segments[0]); err != nil {
		t.Fatal(err)
	}
	return logDir, remote, f
}

func rebuildJSONRun(t *testing.T, args ...string) (rebuildJSON, string, int) {
	t.Helper()
	out, errOut, status := runInProcess(t, "", append([]string{"rebuild", "--json", "-q"}, args...)...)
	var doc rebuildJSON
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("rebuild %v: exit %d, not JSON: %v\nstdout:\n%s\nstderr:\n%s", args, status, err, out, errOut)
	}
	return doc, errOut, status
}

// TestRebuildCommand: the dry run prints the plan and publishes nothing;
// --apply without --yes and without a terminal is refused; --apply --yes
// publishes and logs every event; the next run plans nothing.
func TestRebuildCommand(t *testing.T) {
	logDir, remote, _ := rebuildFixture(t)
	base := []string{"--dir", logDir, "--layout", "local", "--remote-dir", remote}

	out, errOut, status := runInProcess(t, "", append([]string{"rebuild", "-q"}, base...)...)
	if status != 0 || !strings.Contains(out, "plan: 3 segments, 6 events; left alone: 1 segments the metadata log names") ||
		!strings.Contains(out, "dry run: nothing published") || strings.Count(out, "COPY_SEGMENT_STARTED, COPY_SEGMENT_FINISHED") != 3 {
		t.Fatalf("dry run: exit %d\n%s\n%s", status, out, errOut)
	}
	t.Logf("rlmm rebuild (dry run):\n%s", out)
	doc, _, status := rebuildJSONRun(t, base...)
	if status != 0 || len(doc.Steps) != 3 || doc.Applied || len(doc.Published) != 0 || !doc.OK {
		t.Fatalf("dry run --json: exit %d, %+v", status, doc)
	}

	out, errOut, status = runInProcess(t, "", append([]string{"rebuild", "-q", "--apply"}, base...)...)
	if status != exitCouldNotRun || !strings.Contains(errOut+out, "stdin is not one: add --yes") {
		t.Fatalf("--apply without a terminal: exit %d\n%s\n%s", status, out, errOut)
	}

	doc, errOut, status = rebuildJSONRun(t, append([]string{"--apply", "--yes"}, base...)...)
	if status != 0 || !doc.Applied || len(doc.Published) != 6 {
		t.Fatalf("--apply --yes: exit %d, %+v\n%s", status, doc, errOut)
	}
	if n := strings.Count(errOut, "rebuild: published"); n != 6 || !strings.Contains(errOut, "metadata_partition=") || !strings.Contains(errOut, "offset=") {
		t.Errorf("%d events logged, want 6:\n%s", n, errOut)
	}
	for i, p := range doc.Published {
		want := "COPY_SEGMENT_STARTED"
		if i%2 == 1 {
			want = "COPY_SEGMENT_FINISHED"
		}
		if p.Event != want || p.SegmentID != doc.Steps[i/2].SegmentID || p.MetadataPartition != doc.Steps[i/2].MetadataPartition {
			t.Errorf("published %d: %+v (step %+v)", i, p, doc.Steps[i/2])
		}
	}

	out, _, status = runInProcess(t, "", append([]string{"rebuild", "-q", "--apply", "--yes"}, base...)...)
	if status != 0 || !strings.Contains(out, "plan: 0 segments, 0 events; left alone: 4 segments") || !strings.Contains(out, "nothing to publish") {
		t.Fatalf("second run: exit %d\n%s", status, out)
	}
	// inspect reads the rebuilt log: 4 finished segments, none stuck.
	out, errOut, status = runInProcess(t, "", "verify", "--dir", logDir, "-q")
	if status != 0 {
		t.Fatalf("verify after the rebuild: exit %d\n%s\n%s", status, out, errOut)
	}
}

// TestRebuildProblems: a segment whose log is damaged is listed with the
// file and byte and the exit status is 1; the others are planned.
func TestRebuildProblems(t *testing.T) {
	logDir, remote, f := rebuildFixture(t)
	l, _ := layout.New(layout.LocalName, layout.Options{})
	s := f.Segments[3]
	key := l.Key(s.TP, &s.Meta, layout.LocalLog)
	if err := os.Truncate(filepath.Join(remote, "kafka-tiered-storage", filepath.FromSlash(key)), 70); err != nil {
		t.Fatal(err)
	}
	base := []string{"--dir", logDir, "--layout", "local", "--remote-dir", filepath.Join(remote, "kafka-tiered-storage")}
	out, _, status := runInProcess(t, "", append([]string{"rebuild", "-q"}, base...)...)
	if status != exitFindings || !strings.Contains(out, "CANNOT") || !strings.Contains(out, key+": byte 0: truncated batch") ||
		!strings.Contains(out, "plan: 2 segments, 4 events") {
		t.Fatalf("exit %d\n%s", status, out)
	}
	doc, _, status := rebuildJSONRun(t, base...)
	if status != exitFindings || doc.OK || len(doc.Problems) != 1 || doc.Problems[0].SegmentID != s.Meta.ID.ID.String() {
		t.Fatalf("--json: exit %d, %+v", status, doc.Problems)
	}
}

// TestRebuildRefusals: flags that cannot work are refused with exit 2 and
// a message saying what to fix.
func TestRebuildRefusals(t *testing.T) {
	logDir, remote, _ := rebuildFixture(t)
	cases := []struct {
		args []string
		says string
	}{
		{[]string{"--dir", logDir, "--remote-dir", remote}, "give --layout"},
		{[]string{"--layout", "local", "--remote-dir", remote}, "give the metadata log to rebuild"},
		{[]string{"--dir", logDir, "--layout", "local", "--remote-dir", remote, "--yes"}, "--yes goes with --apply"},
		{[]string{"--dir", logDir, "--layout", "local", "--remote-dir", remote, "--broker-id", "3"}, "--broker-id 3: must be negative"},
		{[]string{"--dir", logDir, "--layout", "local"}, "--layout local needs --remote-dir"},
		{[]string{"--dir", logDir, "--layout", "local", "--remote-dir", remote, "--aiven-custom-metadata-fields", "OBJECT_KEY"},
			"--aiven-custom-metadata-fields goes with --layout aiven"},
		{[]string{"--dir", logDir, "--layout", "aiven", "--s3-bucket", "b", "--aiven-custom-metadata-fields", "SIZE"},
			`--aiven-custom-metadata-fields: invalid argument: aiven custom metadata field "SIZE"`},
		{[]string{"--dir", logDir, "--layout", "aiven"}, "--layout aiven needs --s3-bucket"},
		{[]string{"--dir", logDir, "--layout", "nope", "--remote-dir", remote}, "unknown layout"},
		{[]string{"--dir", filepath.Join(logDir, "none"), "--layout", "local", "--remote-dir", remote}, "no directory"},
	}
	for _, c := range cases {
		out, errOut, status := runInProcess(t, "", append([]string{"rebuild", "-q"}, c.args...)...)
		if status != exitCouldNotRun || !strings.Contains(errOut, c.says) {
			t.Errorf("rebuild %v: exit %d, want 2 saying %q\n%s%s", c.args, status, c.says, out, errOut)
		}
	}
}

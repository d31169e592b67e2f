package browser

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/rlmm-go/rlmm/scrub"
	"github.com/rlmm-go/rlmm/scrub/layout"
	"github.com/rlmm-go/rlmm/scrub/scrubtest"
)

// The console given remote storage on a real S3 server (SeaweedFS, make
// test's) lists scrub's findings on its page: the same ones `rlmm scrub`
// reports for that bucket.
func TestConsoleInChromiumS3(t *testing.T) {
	srv := scrubtest.NeedS3(t)
	scrubtest.SetAWSEnv(t, srv.AccessKey, srv.SecretKey)
	ctx := newBrowser(t)
	sctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	bucket := srv.NewBucket(sctx, t)
	const prefix = "tiered/"
	l, err := layout.New(layout.AivenName, layout.Options{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	f := scrubtest.New(scrubtest.Options{Layout: l, Topics: 1, PartitionsPerTopic: 2, SegmentsPerPartition: 5})
	logDir := filepath.Join(t.TempDir(), "log")
	if err := f.WriteLog(sctx, logDir, 4); err != nil {
		t.Fatal(err)
	}
	// Plant a missing log (segment 0's never uploaded) and an orphan.
	lost := f.Segments[0]
	stray := f.StrayObject(f.Partitions[1], 1_000_000)
	objs := slices.DeleteFunc(f.Objects(), func(o scrubtest.Object) bool { return o.Key == lost.Objects[layout.AivenLog].Key })
	if err := srv.Upload(sctx, bucket, append(objs, stray)); err != nil {
		t.Fatal(err)
	}
	storage := []string{"--layout", "aiven", "--s3-bucket", bucket, "--s3-prefix", prefix, "--s3-endpoint", srv.Endpoint}

	// What scrub itself finds there.
	out, err := exec.Command(rlmmBinary(t), append([]string{"scrub", "--dir", logDir, "--json", "-q"}, storage...)...).Output()
	var rep scrub.Report
	if jerr := json.Unmarshal(out, &rep); jerr != nil {
		t.Fatalf("rlmm scrub --json: %v (%v)\n%s", jerr, err, out)
	}
	var want []string
	for _, p := range rep.Partitions {
		for _, m := range p.Missing {
			want = append(want, "missing "+m.SegmentID)
		}
		for _, o := range p.Orphans {
			want = append(want, "orphan "+o.Key)
		}
	}
	slices.Sort(want)
	if !slices.Equal(want, []string{"missing " + lost.Meta.ID.ID.String(), "orphan " + stray.Key}) {
		t.Fatalf("rlmm scrub found %v, want the planted missing log of %s and orphan %s", want, lost.Meta.ID.ID, stray.Key)
	}

	url := startConsole(t, append([]string{"--dir", logDir}, storage...)...)
	bctx, cancelB := context.WithTimeout(ctx, testTimeout)
	defer cancelB()
	if err := chromedp.Do(bctx, chromedp.Navigate(url), chromedp.WaitReady(`body[data-loaded]`)); err != nil {
		t.Fatalf("loading %s in Chromium: %v", url, err)
	}
	type shown struct {
		Summary string     `json:"summary"`
		Rows    [][]string `json:"rows"`
	}
	got, err := chromedp.Run(bctx, chromedp.Evaluate[shown](`({
	  summary: document.getElementById('scrub-summary').textContent,
	  rows: [...document.querySelectorAll('#findings tbody tr')].map((tr) => [...tr.cells].map((td) => td.textContent)),
	})`))
	if err != nil {
		t.Fatalf("reading the page's DOM: %v", err)
	}
	t.Logf("screenshot of the console with scrub's findings: %s", screenshot(t, bctx, "s3"))
	var rows []string
	for _, r := range got.Rows {
		if len(r) == 4 {
			rows = append(rows, r[0]+" "+r[2])
		}
	}
	slices.Sort(rows)
	if !slices.Equal(rows, want) || !strings.Contains(got.Summary, "1 missing, 1 orphans") || !strings.Contains(got.Summary, bucket) {
		t.Fatalf("the page lists %v (%q), want scrub's %v", rows, got.Summary, want)
	}
}

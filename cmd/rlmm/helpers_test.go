package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/rlmm-go/rlmm/eventlog"
	"github.com/rlmm-go/rlmm/eventlog/filelog"
	"github.com/rlmm-go/rlmm/internal/view"
	"github.com/rlmm-go/rlmm/repair"
	"github.com/rlmm-go/rlmm/scrub/scrubtest"
)

// binDir holds the rlmm binary built once for the tests that run it.
var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "rlmm-cmd-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "temp dir:", err)
		os.Exit(2)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// runInProcess runs rlmm with args through the cobra command tree in this
// process and returns what it printed and its exit status.
func runInProcess(t *testing.T, stdin string, args ...string) (stdout, stderr string, status int) {
	t.Helper()
	var out, errOut bytes.Buffer
	status = run(context.Background(), args, strings.NewReader(stdin), &out, &errOut)
	return out.String(), errOut.String(), status
}

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// rlmmBinary builds cmd/rlmm once (go build into a temporary directory) and
// returns the binary's path.
func rlmmBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		goTool, err := exec.LookPath("go")
		if err != nil {
			buildErr = fmt.Errorf("the go command is not on PATH: %w", err)
			return
		}
		binPath = filepath.Join(binDir, "rlmm")
		out, err := exec.Command(goTool, "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// runBinary runs the built rlmm binary with args and stdin, and returns
// what it printed and its exit status.
func runBinary(t *testing.T, stdin string, args ...string) (stdout, stderr string, status int) {
	t.Helper()
	cmd := exec.Command(rlmmBinary(t), args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exitErr *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exitErr):
		status = exitErr.ExitCode()
	default:
		t.Fatalf("run %s: %v", cmd, err)
	}
	return out.String(), errOut.String(), status
}

// mustStamp returns the run time (Unix ms) a quarantine key names.
func mustStamp(t *testing.T, key string) int64 {
	t.Helper()
	at, ok := repair.QuarantinedAt(repair.DefaultQuarantine, key)
	if !ok || !strings.HasPrefix(key, repair.DefaultQuarantine) {
		t.Fatalf("%s names no run time", key)
	}
	return at.UnixMilli()
}

// readS3 returns the bytes of an object.
func readS3(ctx context.Context, t *testing.T, srv scrubtest.S3Server, bucket, key string) []byte {
	t.Helper()
	out, err := srv.Client().GetObject(ctx, &s3.GetObjectInput{Bucket: &bucket, Key: &key})
	if err != nil {
		t.Fatalf("reading %s: %v", key, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		t.Fatalf("reading %s: %v", key, err)
	}
	return b
}

// repairRun runs rlmm repair with args plus --json -q and decodes the
// document.
func repairRun(t *testing.T, args ...string) (repairJSON, string, int) {
	t.Helper()
	out, errOut, status := runInProcess(t, "", append([]string{"repair", "--json", "-q"}, args...)...)
	var doc repairJSON
	if status != exitCouldNotRun {
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatalf("repair %v: exit %d, output is not JSON: %v\nstdout:\n%s\nstderr:\n%s", args, status, err, out, errOut)
		}
	}
	return doc, errOut, status
}

// readEmbedded reads the embedded log in dir into a view.
func readEmbedded(t *testing.T, dir string) *view.Builder {
	t.Helper()
	l, err := filelog.Open(dir, filelog.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	b := view.NewBuilder(l.Partitions())
	if _, err := view.ReadLog(context.Background(), l, nil, func(rec eventlog.Record) error {
		_, _ = b.Apply(rec)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return b
}

// scrapeMetrics reads a /metrics page in Prometheus' text format into its
// samples: `name{labels}` (as printed) to value. Comments are skipped.
func scrapeMetrics(t *testing.T, url string) map[string]float64 {
	t.Helper()
	code, body := httpGet(t, url)
	if code != 200 {
		t.Fatalf("GET %s: %d\n%s", url, code, body)
	}
	out := map[string]float64{}
	for _, line := range strings.Split(body, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if i < 0 || err != nil {
			t.Fatalf("GET %s: line %q is not a sample", url, line)
		}
		out[line[:i]] = v
	}
	return out
}

// writeServeProperties writes dir/rlmm.properties as the plugin writes it
// for a one-broker metadata topic of 5 partitions over bootstrap, with
// extra lines, and returns its path.
func writeServeProperties(t *testing.T, dir, bootstrap string, extra ...string) string {
	t.Helper()
	props := filepath.Join(dir, "rlmm.properties")
	lines := append([]string{
		"# as the plugin writes it",
		"remote.log.metadata.common.client.bootstrap.servers=" + bootstrap,
		"remote.log.metadata.topic.num.partitions=5",
		"remote.log.metadata.topic.replication.factor=1",
		"remote.log.metadata.topic.min.isr=1",
	}, extra...)
	if err := os.WriteFile(props, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return props
}

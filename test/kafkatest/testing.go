package kafkatest

import (
	"context"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The environment switches the package reads.
const (
	// EnvSkip set to 1 skips every test that needs a broker (each says
	// why); under CI=true such a test fails instead. scripts/test.sh
	// reads the same switch and then starts no broker.
	EnvSkip = "RLMM_SKIP_KAFKA"
	// EnvKeep set to 1 keeps a test cluster's directory (its logs and
	// data) when the test passed; a failed test's is always kept.
	EnvKeep = "RLMM_KAFKA_KEEP"
)

// CannotRun says why no broker can run here ("" when one can): a skip
// switch, or no java or mvn.
func CannotRun() string {
	if os.Getenv(EnvSkip) == "1" {
		return EnvSkip + "=1: tests that start a Kafka broker are off"
	}
	return javaMissing()
}

// Require skips t, saying why, when no broker can run here; under CI=true
// it fails t instead (CI must run every test).
func Require(t testing.TB) {
	t.Helper()
	reason := CannotRun()
	if reason == "" {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s (CI=true: a test that needs a Kafka broker must run)", reason)
	}
	t.Skip(reason)
}

// StartT starts a cluster of cfg for t in a new temporary directory
// (Require first), within timeout, and stops every process of it when t
// ends, t's cleanup registered before the first process starts. A failed
// test gets the tails of the logs and keeps the directory; a passed one
// removes it unless RLMM_KAFKA_KEEP=1.
func StartT(t testing.TB, cfg Config, timeout time.Duration) *Cluster {
	t.Helper()
	Require(t)
	dir, err := os.MkdirTemp("", "kafkatest-"+safeName(t.Name())+"-")
	if err != nil {
		t.Fatal(err)
	}
	var c *Cluster
	t.Cleanup(func() {
		if c != nil {
			if t.Failed() {
				var b strings.Builder
				c.LogTails(&b, 40)
				t.Log(b.String())
			}
			c.Stop()
		}
		if t.Failed() || os.Getenv(EnvKeep) == "1" {
			t.Logf("kept the cluster's directory %s", dir)
		} else {
			_ = os.RemoveAll(dir)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	start := time.Now()
	c, err = Start(ctx, dir, cfg, testLog{t})
	if err != nil {
		t.Fatalf("starting a %d-node Kafka cluster: %v", max(cfg.Nodes, 1), err)
	}
	t.Logf("%d-node Kafka %s cluster (%s) up in %s at %s in %s", len(c.Nodes()), c.Config().Version, c.Config().Security,
		since(start), strings.Join(c.Bootstrap(), ","), dir)
	return c
}

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

func safeName(name string) string {
	s := unsafeChars.ReplaceAllString(name, "_")
	return s[:min(len(s), 60)]
}

// testLog writes what Maven and the builds print to the test's log.
type testLog struct{ t testing.TB }

func (w testLog) Write(b []byte) (int, error) {
	if s := strings.TrimRight(string(b), "\n"); s != "" {
		w.t.Log(s)
	}
	return len(b), nil
}

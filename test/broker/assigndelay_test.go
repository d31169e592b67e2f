package brokertest

import (
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// assignDelaySeam builds test/broker/internal/assigndelay around the tests'
// rlmm binary and returns the plugin settings that run it as the sidecar:
// it starts the real rlmm serve and holds back each assignment change on
// its way from the plugin to the server for delay.
func assignDelaySeam(t *testing.T, delay time.Duration) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "assigndelay")
	cmd := exec.Command("go", "build", "-o", bin,
		"-ldflags", "-X main.rlmm="+rlmmBinary+" -X main.delay="+delay.String(), "./test/broker/internal/assigndelay")
	cmd.Dir = repoRoot
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./test/broker/internal/assigndelay: %v\n%s", err, out)
	}
	return "rlmm.config.rlmm.serve.binary=" + bin
}

package filelog

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if dir := os.Getenv(crashChildEnv); dir != "" {
		// Re-executed by TestKill9: publish until killed.
		os.Exit(runCrashChild(dir))
	}
	goleak.VerifyTestMain(m)
}

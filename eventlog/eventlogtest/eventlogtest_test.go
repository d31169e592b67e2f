package eventlogtest_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/rlmm-go/rlmm/eventlog"
	"github.com/rlmm-go/rlmm/eventlog/eventlogtest"
	"github.com/rlmm-go/rlmm/eventlog/memlog"
)

// mutantEnv selects, in a child test process, the mutant to run the suite
// against.
const mutantEnv = "EVENTLOGTEST_MUTANT"

// TestMutant runs the suite against the mutant named by mutantEnv; it only
// runs as a child of TestSuiteCatchesMutants.
func TestMutant(t *testing.T) {
	name := os.Getenv(mutantEnv)
	if name == "" {
		t.Skip("runs only as a child of TestSuiteCatchesMutants (" + mutantEnv + " unset)")
	}
	for _, m := range mutants {
		if m.name == name {
			eventlogtest.Run(t, func(t *testing.T, partitions int32) eventlog.Log {
				return m.wrap(memlog.New(partitions))
			})
			return
		}
	}
	t.Fatalf("no mutant %q", name)
}

// TestSuiteCatchesMutants proves the suite has teeth: each deliberately
// broken log fails the subtest that checks the rule it breaks.
func TestSuiteCatchesMutants(t *testing.T) {
	for _, m := range mutants {
		t.Run(m.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestMutant$/^"+m.failsIn+"$", "-test.v")
			cmd.Env = append(os.Environ(), mutantEnv+"="+m.name)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("the suite passed a log that breaks %s:\n%s", m.failsIn, out)
			}
			if want := "--- FAIL: TestMutant/" + m.failsIn; !strings.Contains(string(out), want) {
				t.Fatalf("output lacks %q:\n%s", want, out)
			}
		})
	}
}

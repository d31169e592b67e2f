package kafkatest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// launchT launches argv for the test and ends its group when the test ends.
func launchT(t *testing.T, argv ...string) *process {
	t.Helper()
	p, err := launch(argv, t.TempDir(), filepath.Join(t.TempDir(), "out"), os.Environ(), false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.stop(time.Second) })
	return p
}

// waitMembers waits until group pgid has n live members.
func waitMembers(t *testing.T, pgid, n int) []int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		m := groupMembers(pgid)
		if len(m) == n {
			return m
		}
		if time.Now().After(deadline) {
			t.Fatalf("group %d has members %v, want %d", pgid, m, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestProcessStop(t *testing.T) {
	tests := []struct {
		name string
		argv []string
		// members is the size of the group.
		members int
		// min is the least time stop must take (the grace of a process
		// that ignores SIGTERM).
		min time.Duration
	}{
		{"obeys SIGTERM", []string{"sleep", "600"}, 1, 0},
		// A shell that ignores SIGTERM, with a child in its group that
		// ignores it too: both end by SIGKILL.
		{"ignores SIGTERM", []string{"sh", "-c", `trap "" TERM; sh -c 'trap "" TERM; sleep 600' & wait`}, 3, 300 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := launchT(t, tt.argv...)
			members := waitMembers(t, p.pid, tt.members)
			start := time.Now()
			p.stop(300 * time.Millisecond)
			took := time.Since(start)
			if p.alive() {
				t.Fatal("the process runs after stop")
			}
			if left := groupMembers(p.pid); len(left) > 0 {
				t.Fatalf("members %v of %v left after stop", left, members)
			}
			if took < tt.min {
				t.Fatalf("stop took %s, less than the grace %s", took, tt.min)
			}
			t.Logf("%d processes ended in %s", len(members), took.Round(time.Millisecond))
		})
	}
}

func TestProcessKillLeavesGroup(t *testing.T) {
	p := launchT(t, "sh", "-c", "sleep 600 & wait")
	members := waitMembers(t, p.pid, 2)
	p.kill()
	if p.alive() {
		t.Fatal("alive after kill")
	}
	// The child lives on (a sidecar noticing its broker's death is what a
	// fault test looks at); stop, later, ends it.
	left := groupMembers(p.pid)
	if len(left) != 1 || !slices.Contains(members, left[0]) {
		t.Fatalf("after kill, group %v, want the child of %v", left, members)
	}
	p.stop(time.Second)
	if left := groupMembers(p.pid); len(left) != 0 {
		t.Fatalf("after stop, group %v", left)
	}
}

func TestProcessPauseResume(t *testing.T) {
	p := launchT(t, "sleep", "600")
	waitMembers(t, p.pid, 1)
	state := func() string {
		_, s, _ := procStat(p.pid)
		return s
	}
	if err := p.signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	waitState(t, state, "T")
	if err := p.signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	waitState(t, state, "S")
	// A paused process still ends on stop (SIGCONT goes with SIGTERM).
	if err := p.signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	waitState(t, state, "T")
	start := time.Now()
	p.stop(10 * time.Second)
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("stopping a paused process took %s: SIGTERM was not acted on", took)
	}
}

func waitState(t *testing.T, state func() string, want string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for state() != want {
		if time.Now().After(deadline) {
			t.Fatalf("state %q, want %q", state(), want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// envDeathChild makes the test binary the child of TestProcessDiesWithParent.
const envDeathChild = "KAFKATEST_DEATH_CHILD"

// TestProcessDiesWithParent: a process launched by a test binary that is
// killed with SIGKILL (no cleanup runs) gets SIGKILL too.
func TestProcessDiesWithParent(t *testing.T) {
	if os.Getenv(envDeathChild) == "1" {
		p, err := launch([]string{"sleep", "600"}, os.TempDir(), os.DevNull, os.Environ(), false)
		if err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		fmt.Println("pid", p.pid)
		time.Sleep(time.Minute) // killed before
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestProcessDiesWithParent$")
	cmd.Env = append(os.Environ(), envDeathChild+"=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	pid := 0
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "pid "); ok {
			pid, _ = strconv.Atoi(v)
			break
		}
	}
	if pid == 0 {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatal("the child printed no pid")
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for pidAlive(pid) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("pid %d outlived the test binary that launched it", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestParseStat(t *testing.T) {
	tests := []struct {
		in    string
		pgid  int
		state string
		ok    bool
	}{
		{"123 (java) S 1 123 123 0 -1", 123, "S", true},
		{"9 (a) b) (c) T 1 77 77", 77, "T", true},
		{"9 (x y) Z 1", 0, "", false},
		{"no parenthesis", 0, "", false},
		{"1 (x) S 1 notanumber", 0, "", false},
	}
	for _, tt := range tests {
		pgid, state, ok := parseStat(tt.in)
		if pgid != tt.pgid || state != tt.state || ok != tt.ok {
			t.Errorf("parseStat(%q) = %d, %q, %v; want %d, %q, %v", tt.in, pgid, state, ok, tt.pgid, tt.state, tt.ok)
		}
	}
}

func FuzzParseStat(f *testing.F) {
	f.Add("123 (java) S 1 123 123 0 -1")
	f.Add(")))")
	f.Fuzz(func(t *testing.T, s string) {
		if _, state, ok := parseStat(s); ok && state == "" {
			t.Fatal("ok without a state")
		}
	})
}

func TestFindBroker(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	// A live process that is not a broker: refused.
	p := launchT(t, "sleep", "600")
	if err := os.WriteFile(pidFile, []byte(strconv.Itoa(p.pid)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := findBroker(pidFile, "/x/server.properties"); err == nil || !strings.Contains(err.Error(), "is not the broker") {
		t.Fatalf("findBroker of sleep: %v", err)
	}
	for _, content := range []string{"", "junk", "999999999"} {
		if err := os.WriteFile(pidFile, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := findBroker(pidFile, "/x/server.properties"); err == nil {
			t.Fatalf("findBroker of pid file %q found a broker", content)
		}
	}
}

// TestProcessExitCode: a process that ends by itself reports its exit
// status as a shell does (the code, or 128+N for signal N); a wait on one
// that does not end returns when its context does.
func TestProcessExitCode(t *testing.T) {
	tests := []struct {
		name string
		argv []string
		want int
	}{
		{"exit 0", []string{"true"}, 0},
		{"exit 1", []string{"sh", "-c", "exit 1"}, 1},
		{"exit 3", []string{"sh", "-c", "exit 3"}, 3},
		{"killed by SIGKILL", []string{"sh", "-c", "kill -9 $$"}, 128 + 9},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := launchT(t, tt.argv...)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			got, err := p.exitCode(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Fatalf("exit status %d, want %d", got, tt.want)
			}
		})
	}
	t.Run("still running", func(t *testing.T) {
		p := launchT(t, "sleep", "600")
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		if _, err := p.exitCode(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("a wait on a running process: %v, want the context's deadline", err)
		}
	})
}

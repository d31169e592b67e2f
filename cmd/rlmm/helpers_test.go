package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
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

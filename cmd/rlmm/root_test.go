package main

import (
	"errors"
	"fmt"
	"testing"
)

// TestSubcommands: every subcommand is registered once, with help text.
func TestSubcommands(t *testing.T) {
	root := newRootCmd()
	var names []string
	for _, c := range root.Commands() {
		names = append(names, c.Name())
		if c.Short == "" {
			t.Errorf("%s has no short help", c.Name())
		}
	}
	for _, want := range []string{"decode", "inspect", "simulate", "verify"} {
		if n := countOf(names, want); n != 1 {
			t.Errorf("subcommand %s registered %d times (commands: %v)", want, n, names)
		}
	}
	if !root.SilenceUsage || !root.SilenceErrors {
		t.Error("the root command must not print usage or errors itself (run prints them once)")
	}
}

func countOf(names []string, want string) int {
	n := 0
	for _, name := range names {
		if name == want {
			n++
		}
	}
	return n
}

// TestExitStatus: the mapping from a command's error to the exit status.
func TestExitStatus(t *testing.T) {
	tests := []struct {
		err  error
		want int
	}{
		{nil, 0},
		{errors.New("cobra: unknown command"), 2},
		{findings("3 anomalies"), 1},
		{fmt.Errorf("wrapped: %w", findings("x")), 1},
		{usageErrorf("bad --flag"), 2},
		{couldNotRun(errors.New("no such directory")), 2},
	}
	for _, tc := range tests {
		if got := exitStatus(tc.err); got != tc.want {
			t.Errorf("exitStatus(%v) = %d, want %d", tc.err, got, tc.want)
		}
	}
}

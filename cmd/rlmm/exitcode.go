package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

// Exit statuses of inspect, verify and simulate.
const (
	// exitFindings: the command ran and found something wrong (verify's
	// anomalies, simulate's differences from the model).
	exitFindings = 1
	// exitCouldNotRun: bad flags, a missing or unreadable log, an
	// unreachable cluster.
	exitCouldNotRun = 2
)

// statusError is an error carrying the process exit status it calls for.
// main prints the message and exits with ExitCode.
type statusError struct {
	code int
	err  error
}

// Error returns the message.
func (e *statusError) Error() string { return e.err.Error() }

// Unwrap returns the cause.
func (e *statusError) Unwrap() error { return e.err }

// ExitCode returns the process exit status.
func (e *statusError) ExitCode() int { return e.code }

// usageErrorf is a could-not-run error (exit status 2) whose message tells a
// person what to fix.
func usageErrorf(format string, args ...any) error {
	return &statusError{code: exitCouldNotRun, err: fmt.Errorf(format, args...)}
}

// couldNotRun wraps err as a could-not-run error (exit status 2).
func couldNotRun(err error) error {
	if _, ok := err.(*statusError); ok {
		return err
	}
	return &statusError{code: exitCouldNotRun, err: err}
}

// findings is the error of a command that ran and found problems (exit
// status 1); its report is already printed, the message sums it up.
func findings(format string, args ...any) error {
	return &statusError{code: exitFindings, err: fmt.Errorf(format, args...)}
}

// flagError makes a flag that does not parse a could-not-run error that
// points to the command's help.
func flagError(cmd *cobra.Command, err error) error {
	return usageErrorf("%v (see %s --help)", err, cmd.CommandPath())
}

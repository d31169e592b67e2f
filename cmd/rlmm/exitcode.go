package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"
)

// Exit statuses of inspect, verify, simulate and serve.
const (
	// exitFindings: the command ran and found something wrong (verify's
	// anomalies, simulate's differences from the model).
	exitFindings = 1
	// exitCouldNotRun: bad flags, a missing or unreadable log, an
	// unreachable cluster.
	exitCouldNotRun = 2
	// exitSettingsRefused (serve only): a flag or setting was refused (bad
	// flags, a --properties key or value, a file a setting names that
	// cannot be read, a setting the cluster refuses such as a partition
	// count other than the topic's or a store's wrong password). The message
	// names it. Running again with the same settings fails the same way, so
	// the broker plugin stops at this code instead of restarting the child;
	// exit 2 stays what may pass (an unreachable cluster, a socket or
	// snapshot directory held by another server).
	exitSettingsRefused = 3
)

// statusError is an error carrying the process exit status it calls for.
// main prints the message and exits with ExitCode.
type statusError struct {
	code int
	err  error
	// usage: the error is about a flag or setting (usageErrorf), which serve
	// exits with exitSettingsRefused.
	usage bool
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
	return &statusError{code: exitCouldNotRun, err: fmt.Errorf(format, args...), usage: true}
}

// settingsRefused makes serve's refusal of a flag or setting (a usageErrorf
// error) exit with exitSettingsRefused; other errors pass unchanged.
func settingsRefused(err error) error {
	var se *statusError
	if errors.As(err, &se) && se.usage {
		return &statusError{code: exitSettingsRefused, err: se.err, usage: true}
	}
	return err
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

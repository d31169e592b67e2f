package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// subcommands builds every subcommand of rlmm. A subcommand lives in its own
// file as func newXxxCmd() *cobra.Command; adding one is one line here.
var subcommands = []func() *cobra.Command{
	newConsoleCmd,
	newDecodeCmd,
	newFramesCmd,
	newInspectCmd,
	newRebuildCmd,
	newRepairCmd,
	newScrubCmd,
	newSimulateCmd,
	newServeCmd,
	newVerifyCmd,
}

// newRootCmd returns the rlmm command with every subcommand. Errors are not
// printed by cobra: run prints them once, without usage or stack trace.
func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "rlmm",
		Short: "Kafka tiered-storage remote log metadata: simulate, inspect, verify, decode",
		Long: `rlmm is a Go implementation of Apache Kafka's tiered-storage Remote Log
Metadata Manager (KIP-405) that shares Kafka's __remote_log_metadata topic
with Java brokers, byte for byte.

This command plays a broker cluster's tiered-storage life through it
(simulate), shows and checks the remote log metadata of an rlmm log or of a
Kafka cluster (inspect, verify), and decodes raw record values (decode).

Exit status: 0 success; 1 the command ran and found something wrong; 2 it
could not run (bad flags or arguments, missing input, unreachable cluster).`,
		Version:       version(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(flagError)
	for _, sub := range subcommands {
		root.AddCommand(sub())
	}
	return root
}

// run executes rlmm with args and returns the process exit status; main is
// os.Exit(run(...)). Tests call it in process.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := newRootCmd()
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "rlmm: %v\n", err)
	}
	return exitStatus(err)
}

// exitStatus maps a command's error to the exit status: 0 for none, the
// status an error carries (an ExitCode method, as statusError has), and 2
// (could not run) for any other error, such as cobra's own for an unknown
// command or argument count.
func exitStatus(err error) int {
	if err == nil {
		return 0
	}
	var coded interface{ ExitCode() int }
	if errors.As(err, &coded) {
		return coded.ExitCode()
	}
	return exitCouldNotRun
}

// version is the module version the binary was built from ("(devel)" for
// a build from a work tree), with the VCS revision when known.
func version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	v := info.Main.Version
	for _, s := range info.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 {
			v += " " + s.Value[:12]
		}
	}
	return v
}

// Command rlmm is the operator command of rlmm, a Go implementation of
// Apache Kafka's tiered-storage Remote Log Metadata Manager: it simulates a
// broker cluster through rlmm (simulate), shows and checks the remote log
// metadata of an rlmm log or of a Kafka cluster's __remote_log_metadata
// topic (inspect, verify), and decodes raw record values (decode).
//
// It is built on github.com/spf13/cobra, the conventional Go command-line
// library: subcommands, --help everywhere and shell completion
// (rlmm completion bash|zsh|fish|powershell).
//
// Exit status: 0 success; 1 the command ran and found something wrong (a
// record that does not decode, verify's anomalies, simulate's differences
// from its model); 2 it could not run (bad flags or arguments, a missing
// file or log, an unreachable cluster).
package main

import (
	"context"
	"os"
)

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

package main

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
)

// TestCommandErrors: wrong arguments fail before anything starts, with an
// error naming what was wrong.
func TestCommandErrors(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"too many nodes", []string{"start", dir, "--nodes", "12"}, "nodes must be 1..9, got 12"},
		{"no nodes", []string{"start", dir, "--nodes", "0"}, "--nodes must be 1..9, got 0"},
		{"unknown security", []string{"start", dir, "--security", "tls"}, `security must be one of [plaintext ssl sasl_plain sasl_scram gssapi], got "tls"`},
		{"unknown RLMM", []string{"start", dir, "--tiered", "--rlmm", "zk"}, `the RLMM must be "kafka" or "rlmm", got "zk"`},
		{"stop of no cluster", []string{"stop", dir}, "holds no cluster"},
		{"status of no cluster", []string{"status", dir}, "holds no cluster"},
		{"no directory", []string{"start"}, "accepts 1 arg(s), received 0"},
		{"kill without a node", []string{"kill", dir}, "accepts 2 arg(s), received 1"},
		{"pid of no cluster", []string{"pid", dir, "1"}, "holds no cluster"},
		{"missing rlmm binary", []string{"start", dir, "--tiered", "--rlmm", "rlmm", "--rlmm-binary", dir + "/no-rlmm"}, "--rlmm-binary: stat " + dir + "/no-rlmm: no such file"},
		{"missing plugin jar", []string{"start", dir, "--tiered", "--rlmm", "rlmm", "--plugin-jar", dir + "/no.jar"}, "--plugin-jar: stat " + dir + "/no.jar: no such file"},
		{"ports of no number", []string{"ports", "eight"}, `the number of ports must be a number, got "eight"`},
		{"no ports", []string{"ports", "0"}, "the number of ports must be 1..100, got 0"},
		{"missing KDC directory", []string{"start", dir, "--security", "gssapi", "--kerberos-dir", dir + "/kdc"}, "--kerberos-dir: stat"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			root := newRoot(&out, &errOut)
			root.SetArgs(tt.args)
			err := root.Execute()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("kafkatest %v: %v, want an error containing %q", tt.args, err, tt.want)
			}
			if out.Len() != 0 {
				t.Fatalf("kafkatest %v printed %q on stdout", tt.args, out.String())
			}
		})
	}
}

// TestPortsCommand: ports N prints N distinct port numbers, one a line.
func TestPortsCommand(t *testing.T) {
	var out, errOut bytes.Buffer
	root := newRoot(&out, &errOut)
	root.SetArgs([]string{"ports", "5"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	lines := strings.Fields(out.String())
	seen := map[string]bool{}
	for _, l := range lines {
		if n, err := strconv.Atoi(l); err != nil || n <= 0 || n > 65535 || seen[l] {
			t.Fatalf("kafkatest ports 5 printed %q: want 5 distinct ports", out.String())
		}
		seen[l] = true
	}
	if len(lines) != 5 {
		t.Fatalf("kafkatest ports 5 printed %d ports: %q", len(lines), out.String())
	}
}

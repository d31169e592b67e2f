package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The broker plugin's binary is built with -tags rlmm_nos3 (scripts/plugin.sh):
// it serves as every rlmm does, and a command given an S3 bucket says that
// this binary has no S3 client and where the one with it is, instead of
// failing somewhere inside.
func TestBinaryWithoutS3Support(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is not on PATH: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "rlmm-nos3")
	if out, err := exec.Command(goTool, "build", "-tags", "rlmm_nos3", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build -tags rlmm_nos3: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "serve", "--help").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--snapshot-dir") {
		t.Fatalf("rlmm serve --help of the plugin's binary: %v\n%s", err, out)
	}
	for _, args := range [][]string{
		{"scrub", "--dir", t.TempDir(), "--layout", "aiven", "--s3-bucket", "tiered", "--s3-endpoint", "http://127.0.0.1:1"},
		{"rebuild", "--dir", t.TempDir(), "--layout", "aiven", "--s3-bucket", "tiered", "--s3-endpoint", "http://127.0.0.1:1"},
	} {
		cmd := exec.Command(bin, args...)
		out, err := cmd.CombinedOutput()
		if err == nil {
			t.Fatalf("rlmm %s succeeded without S3 support:\n%s", args[0], out)
		}
		if !strings.Contains(string(out), "built without S3 support") {
			t.Errorf("rlmm %s of the plugin's binary: %v, and the output does not name the missing S3 support:\n%s", args[0], err, out)
		}
	}
}

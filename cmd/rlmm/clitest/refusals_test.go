package clitest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOutOfRangeFlagsAreRefused runs every numeric flag of every subcommand
// with values that cannot be right: each run exits 2 naming the flag (and
// its limit where there is one), prints no stack trace, creates no data
// directory and changes nothing in the simulated run it reads.
func TestOutOfRangeFlagsAreRefused(t *testing.T) {
	work, rep := simulate(t)
	runDir := rep.RunDir
	before := treeDigest(t, runDir)
	fresh := filepath.Join(work, "fresh") // simulate's --dir: must never be created
	sim := func(args ...string) []string { return append([]string{"simulate", "--quiet", "--dir", fresh}, args...) }
	insp := func(args ...string) []string { return append([]string{"inspect", "--quiet", "--dir", runDir}, args...) }
	ver := func(args ...string) []string { return append([]string{"verify", "--quiet", "--dir", runDir}, args...) }
	tests := []struct {
		args []string
		want []string // in stderr
	}{
		// simulate's sizes: 0 is refused like -1, never replaced by the default.
		{sim("--partitions", "9999999999"), []string{"--partitions 9999999999", "1000000"}},
		{sim("--partitions", "1000001"), []string{"--partitions 1000001", "1000000"}},
		{sim("--partitions", "0"), []string{"--partitions 0"}},
		{sim("--partitions", "-1"), []string{"--partitions -1"}},
		{sim("--partitions", "2", "--topics", "3"), []string{"--partitions 2", "3 topics"}},
		{sim("--partitions", "many"), []string{"--partitions", "--help"}},
		{sim("--records-per-segment", "9223372036854775807"), []string{"--records-per-segment 9223372036854775807", "1000000000"}},
		{sim("--records-per-segment", "1000000001"), []string{"--records-per-segment", "1000000000"}},
		{sim("--records-per-segment", "0"), []string{"--records-per-segment 0"}},
		{sim("--records-per-segment", "1"), []string{"--records-per-segment 1"}},
		{sim("--records-per-segment", "-1"), []string{"--records-per-segment -1"}},
		{sim("--brokers", "0"), []string{"--brokers 0"}},
		{sim("--brokers", "-1"), []string{"--brokers -1"}},
		{sim("--brokers", "1"), []string{"--brokers 1"}},
		{sim("--brokers", "101"), []string{"--brokers 101", "100"}},
		{sim("--rounds", "0"), []string{"--rounds 0"}},
		{sim("--rounds", "-1"), []string{"--rounds -1"}},
		{sim("--rounds", "2"), []string{"--rounds 2"}},
		{sim("--rounds", "1000001"), []string{"--rounds 1000001", "1000000"}},
		{sim("--concurrency", "0"), []string{"--concurrency 0"}},
		{sim("--concurrency", "-1"), []string{"--concurrency -1"}},
		{sim("--concurrency", "10001"), []string{"--concurrency 10001", "10000"}},
		{sim("--topics", "0"), []string{"--topics 0"}},
		{sim("--topics", "1"), []string{"--topics 1"}},
		{sim("--topics", "10001", "--partitions", "20000"), []string{"--topics 10001", "10000"}},
		{sim("--replication-factor", "0"), []string{"--replication-factor 0"}},
		{sim("--replication-factor", "1"), []string{"--replication-factor 1"}},
		{sim("--replication-factor", "4"), []string{"--replication-factor 4", "--brokers"}},
		{sim("--replication-factor", "11", "--brokers", "20"), []string{"--replication-factor 11", "10"}},
		{sim("--retain", "0"), []string{"--retain 0"}},
		{sim("--retain", "10001"), []string{"--retain 10001", "10000"}},
		{sim("--lookups", "-1"), []string{"--lookups -1"}},
		{sim("--lookups", "10001"), []string{"--lookups 10001", "10000"}},
		{sim("--copy-failure-rate", "NaN"), []string{"--copy-failure-rate NaN"}},
		{sim("--copy-failure-rate", "1"), []string{"--copy-failure-rate 1"}},
		{sim("--copy-failure-rate", "-0.1"), []string{"--copy-failure-rate -0.1"}},
		{sim("--leader-move-rate", "NaN"), []string{"--leader-move-rate NaN"}},
		{sim("--leader-move-rate", "1.5"), []string{"--leader-move-rate 1.5"}},
		{sim("--leader-move-rate", "-1"), []string{"--leader-move-rate -1"}},
		{sim("--metadata-partitions", "0"), []string{"--metadata-partitions 0"}},
		{sim("--metadata-partitions", "10001"), []string{"--metadata-partitions 10001", "10000"}},
		{sim("--metadata-partitions", "99999999999"), []string{"--metadata-partitions", "--help"}},
		{sim("--seed", "one"), []string{"--seed", "--help"}},
		{sim("--timeout", "0"), []string{"--timeout 0s"}},
		{sim("--timeout", "-1s"), []string{"--timeout -1s"}},
		{sim("--timeout", "169h"), []string{"--timeout 169h", "168h"}},
		{sim("--partitions", "1000000"), []string{"--partitions 1000000 × --retain 5 × --replication-factor 2", "2000000"}},
		{sim("--partitions", "100000", "--rounds", "1000"), []string{"--partitions 100000 × --rounds 1000", "10000000"}},
		{sim("--kafka", "127.0.0.1:1", "--kafka-partitions", "10001"), []string{"--kafka-partitions", "10000"}},
		{sim("--kafka", "127.0.0.1:1", "--kafka-partitions", "-1"), []string{"--kafka-partitions"}},
		// inspect
		{insp("--partition", "-5"), []string{"--partition -5", "0 or more"}},
		{insp("--partition", "-1"), []string{"--partition -1", "0 or more"}},
		{insp("--partition", "99999999999"), []string{"--partition", "--help"}},
		{insp("--timeout", "0"), []string{"--timeout 0s"}},
		{insp("--timeout", "169h"), []string{"--timeout 169h", "168h"}},
		{insp("--kafka", "127.0.0.1:1", "--kafka-partitions", "10001"), []string{"either --dir or --kafka"}},
		{[]string{"inspect", "--quiet", "--kafka", "127.0.0.1:1", "--kafka-partitions", "10001"}, []string{"--kafka-partitions", "10000"}},
		// verify
		{ver("--stuck-after", "0"), []string{"--stuck-after 0s"}},
		{ver("--stuck-after", "-1h"), []string{"--stuck-after -1h"}},
		{ver("--stuck-after", "8761h"), []string{"--stuck-after 8761h", "8760h"}},
		{ver("--timeout", "-1s"), []string{"--timeout -1s"}},
		{ver("--timeout", "169h"), []string{"--timeout 169h", "168h"}},
		{[]string{"verify", "--quiet", "--kafka", "127.0.0.1:1", "--kafka-partitions", "-2"}, []string{"--kafka-partitions"}},
		// --timeout bounds the connection too.
		{[]string{"verify", "--quiet", "--kafka", "127.0.0.1:1", "--timeout", "2s"}, []string{"127.0.0.1:1", "within 2s"}},
		{[]string{"inspect", "--quiet", "--kafka", "127.0.0.1:1", "--timeout", "1500ms"}, []string{"127.0.0.1:1", "within 1.5s"}},
		{sim("--kafka", "127.0.0.1:1", "--timeout", "1s"), []string{"127.0.0.1:1", "within 1s"}},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			r := run(t, work, tc.args...)
			mustCode(t, r, 2, tc.args...)
			mustNotPanic(t, r, tc.args...)
			for _, w := range tc.want {
				if !strings.Contains(r.stderr, w) {
					t.Fatalf("rlmm %v: stderr lacks %q:\n%s", tc.args, w, r.stderr)
				}
			}
		})
	}
	t.Logf("%d out-of-range invocations refused", len(tests))
	if _, err := os.Stat(fresh); err == nil {
		t.Errorf("simulate with refused flags created %s", fresh)
	}
	if after := treeDigest(t, runDir); after != before {
		t.Errorf("refused invocations changed the simulated run in %s", runDir)
	}
}

// TestDamagedLogIsACleanError damages the first metadata partition of a
// copied simulate run in each way the embedded log can be damaged before
// its last partition; inspect and verify exit 2 with an error naming the
// damaged file, no stack trace, and leave the copy as it was.
func TestDamagedLogIsACleanError(t *testing.T) {
	work, rep := simulate(t)
	firstSeg := filepath.Join("log", "p-00000", "00000000000000000000.seg")
	tests := []struct {
		name   string
		damage func(t *testing.T, dir string) string // returns the path the error must name
	}{
		{"first segment renamed to base offset 7", func(t *testing.T, run string) string {
			to := filepath.Join(run, "log", "p-00000", "00000000000000000007.seg")
			if err := os.Rename(filepath.Join(run, firstSeg), to); err != nil {
				t.Fatal(err)
			}
			return to
		}},
		{"a segment name that is not a number", func(t *testing.T, run string) string {
			bad := filepath.Join(run, "log", "p-00000", "x.seg")
			if err := os.WriteFile(bad, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			return bad
		}},
		{"a segment that cannot be opened (a dangling link)", func(t *testing.T, run string) string {
			seg := filepath.Join(run, firstSeg)
			if err := os.Remove(seg); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(filepath.Join(run, "gone"), seg); err != nil {
				t.Fatal(err)
			}
			return seg
		}},
		{"a partition directory that cannot be read (a file)", func(t *testing.T, run string) string {
			pdir := filepath.Join(run, "log", "p-00000")
			if err := os.RemoveAll(pdir); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(pdir, []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
			return pdir
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			runCopy := filepath.Join(t.TempDir(), "run")
			copyTree(t, rep.RunDir, runCopy)
			file := tc.damage(t, runCopy)
			before := treeDigest(t, runCopy)
			for _, cmd := range []string{"verify", "inspect"} {
				args := []string{cmd, "--dir", runCopy, "--quiet"}
				r := run(t, work, args...)
				mustCode(t, r, 2, args...)
				mustNotPanic(t, r, args...)
				if !strings.Contains(r.stderr, file) {
					t.Fatalf("rlmm %v: stderr does not name %s:\n%s", args, file, r.stderr)
				}
			}
			if treeDigest(t, runCopy) != before {
				t.Errorf("inspect or verify changed the damaged log")
			}
		})
	}
}

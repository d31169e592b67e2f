package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestReplaceSection(t *testing.T) {
	section := beginMarker + "\nnew tables\n" + endMarker + "\n"
	cases := []struct {
		name, before string
		absent       bool
		want         string
		wantErr      bool
	}{
		{name: "no file", absent: true, want: section},
		{name: "empty file", before: "", want: section},
		{name: "no markers: appended", before: "# Benchmarks\n\nthe lead's text\n",
			want: "# Benchmarks\n\nthe lead's text\n\n" + section},
		{name: "markers: only the inside changes", before: "head\n" + beginMarker + "\nold\n" + endMarker + "\ntail\n",
			want: "head\n" + beginMarker + "\nnew tables\n" + endMarker + "\ntail\n"},
		{name: "one marker only", before: "head\n" + beginMarker + "\nold\n", wantErr: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "BENCHMARKS.md")
			if !c.absent {
				if err := os.WriteFile(file, []byte(c.before), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			err := replaceSection(file, section)
			if c.wantErr {
				if err == nil {
					t.Fatal("no error for a file with one marker")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != c.want {
				t.Fatalf("file is\n%q\nwant\n%q", got, c.want)
			}
		})
	}
}

func TestLatencyPercentiles(t *testing.T) {
	// 1..100 ms: the element at floor(p*n), as KafkaRlmmDriver computes it.
	var d []time.Duration
	for i := 100; i >= 1; i-- {
		d = append(d, time.Duration(i)*time.Millisecond)
	}
	got := latency(d)
	want := map[string]float64{"p50": 51_000, "p90": 91_000, "p99": 100_000, "max": 100_000, "mean": 50_500}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v µs; want %v", k, got[k], v)
		}
	}
	if got["count"] != 100 {
		t.Errorf("count = %v", got["count"])
	}
}

func TestBenchValues(t *testing.T) {
	dir := t.TempDir()
	out := strings.Join([]string{
		"goos: linux",
		"BenchmarkSegmentForOffset/copy-2   \t 100\t 300.5 ns/op\t 250.0 cpu-ns/op\t 16 B/op",
		"BenchmarkSegmentForOffset/into-2   \t 100\t 150.0 ns/op",
		"BenchmarkSegmentForOffset/copy-2   \t 100\t 310.5 ns/op\t 260.0 cpu-ns/op\t 16 B/op",
		"BenchmarkSegmentForOffset/copy-1partition-2   \t 100\t 200.0 ns/op\t 180.0 cpu-ns/op\t 16 B/op",
		"BenchmarkSegmentForOffset/copy-1partition-2   \t 100\t 220.0 ns/op\t 190.0 cpu-ns/op\t 16 B/op",
		"BenchmarkSegmentForOffset/copy-1partition-2   \t 100\t 210.0 ns/op\t 185.0 cpu-ns/op\t 16 B/op",
		"PASS",
	}, "\n")
	if err := os.WriteFile(filepath.Join(dir, "go-lookup.txt"), []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	r := &reporter{dir: dir}
	if got := r.benchValues("go-lookup.txt", "BenchmarkSegmentForOffset/copy", "ns/op"); len(got) != 2 || got[0] != 300.5 || got[1] != 310.5 {
		t.Errorf("copy ns/op = %v", got)
	}
	if got := r.benchValues("go-lookup.txt", "BenchmarkSegmentForOffset/copy", "cpu-ns/op"); len(got) != 2 || got[1] != 260 {
		t.Errorf("copy cpu-ns/op = %v", got)
	}
	// The name must match exactly: copy does not pick up copy-1partition.
	if got := r.benchValues("go-lookup.txt", "BenchmarkSegmentForOffset/copy-1partition", "ns/op"); len(got) != 3 || got[0] != 200 || got[2] != 210 {
		t.Errorf("copy-1partition ns/op = %v", got)
	}
	if got := median([]float64{3, 1, 2, 10}); got != 2.5 {
		t.Errorf("median = %v; want 2.5", got)
	}
}

func TestBenchName(t *testing.T) {
	cases := []struct{ field, want string }{
		{"BenchmarkSegmentForOffset/copy-2", "BenchmarkSegmentForOffset/copy"},
		{"BenchmarkSegmentForOffset/copy-1partition-2", "BenchmarkSegmentForOffset/copy-1partition"},
		{"BenchmarkSegmentForOffset/copy-1partition", "BenchmarkSegmentForOffset/copy-1partition"},
		{"BenchmarkRetainedHeap/100x10000-16", "BenchmarkRetainedHeap/100x10000"},
		{"BenchmarkX", "BenchmarkX"},
		{"BenchmarkX-", "BenchmarkX-"},
	}
	for _, c := range cases {
		if got := benchName(c.field); got != c.want {
			t.Errorf("benchName(%q) = %q; want %q", c.field, got, c.want)
		}
	}
}

// TestLookupRows renders the report of a results directory holding only the
// lookup results: copy-1partition is the target row, judged against Java's
// median, and the 8-partition rows follow as the harder case.
func TestLookupRows(t *testing.T) {
	dir := t.TempDir()
	goOut := strings.Join([]string{
		"BenchmarkSegmentForOffset/into-2   \t 100\t 150.0 ns/op",
		"BenchmarkSegmentForOffset/copy-2   \t 100\t 400.0 ns/op\t 300.0 cpu-ns/op",
		"BenchmarkSegmentForOffset/copy-1partition-2   \t 100\t 250.0 ns/op\t 200.0 cpu-ns/op",
	}, "\n")
	files := map[string]string{
		"go-lookup.txt":    goOut,
		"java-lookup.json": `{"nsPerOp": {"median": 800, "min": 400}}`,
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := &reporter{dir: dir}
	out := r.build(&reportOptions{})
	if r.err != nil {
		t.Fatal(r.err)
	}
	for _, want := range []string{
		"| median, `copy-1partition` (like for like) | 800 | 250 | 3.2x | yes |",
		"| fastest round, `copy-1partition` | 400 | 250 | 1.6x | |",
		"| median, `copy` (8 partitions, harder) | 800 | 400 | 2.0x | |",
		"| median, `into` (8 partitions, no copy) | 800 | 150 | 5.3x | |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "lookup (") {
		t.Errorf("report counts the lookup as missed:\n%s", out)
	}
}

// TestMutationRows renders the mutation table of three rounds per side: each
// cell is the median with the rounds' range, the ratio is the medians' with
// the range of each round's own ratio, and the target is judged on the
// medians. A results directory of one run (no round in the names) still
// renders, without ranges.
func TestMutationRows(t *testing.T) {
	mut := func(p50, mean, rate float64) string {
		return fmt.Sprintf(`{"segments": 3200, "mutationsPerSec": %g, "latencyUs": {"p50": %g, "p99": %g, "mean": %g}}`, rate, p50, 4*p50, mean)
	}
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  []string
	}{
		{
			name: "three rounds",
			files: map[string]string{
				"java-mut-16-1.json": mut(8000, 20000, 500),
				"java-mut-16-2.json": mut(9000, 24000, 480),
				"java-mut-16-3.json": mut(8500, 22000, 490),
				"go-mut-16-1.json":   mut(1000, 1100, 15000),
				"go-mut-16-2.json":   mut(2000, 2100, 7000),
				"go-mut-16-3.json":   mut(1700, 1800, 9000),
			},
			want: []string{
				"| 16 | 3,200 | 3 | 8.5 ms (8.0 ms–9.0 ms) | 34.0 ms | 22.0 ms | 490 | 1.7 ms (1.0 ms–2.0 ms) | 6.8 ms | 1.8 ms | 9000 | 5.0x (4.5–8.0x) | 12.2x (11.4–18.2x) | **no** |",
				"mutation p50 with 16 callers (5.0x, target 10x)",
			},
		},
		{
			name: "one run",
			files: map[string]string{
				"java-mut-16.json": mut(8600, 27800, 407),
				"go-mut-16.json":   mut(1000, 1000, 15105),
			},
			want: []string{"| 16 | 3,200 | 1 | 8.6 ms | 34.4 ms | 27.8 ms | 407 | 1.0 ms | 4.0 ms | 1.0 ms | 15105 | 8.6x | 27.8x | **no** |"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, body := range tc.files {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			r := &reporter{dir: dir}
			out := r.build(&reportOptions{mutRuns: 3, mut1: 500, mut16: 3200})
			if r.err != nil {
				t.Fatal(r.err)
			}
			for _, want := range tc.want {
				if !strings.Contains(out, want) {
					t.Errorf("report lacks %q:\n%s", want, out)
				}
			}
		})
	}
}

package main

import (
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
	if got := median([]float64{3, 1, 2, 10}); got != 2.5 {
		t.Errorf("median = %v; want 2.5", got)
	}
}

package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestRestartRunsMedian(t *testing.T) {
	for _, tc := range []struct {
		name    string
		ms      []float64
		median  float64
		seconds string
	}{
		{"one run", []float64{120}, 120, "0.12 s"},
		{"odd", []float64{300, 100, 200}, 200, "0.20 s (0.10–0.30)"},
		{"even", []float64{400, 100, 200, 300}, 250, "0.25 s (0.10–0.40)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var rs restartRuns
			for _, v := range tc.ms {
				rs = append(rs, map[string]any{"answerToRemoteFetchMs": v})
			}
			if got := rs.median("answerToRemoteFetchMs"); got != tc.median {
				t.Errorf("median = %v, want %v", got, tc.median)
			}
			if got := rs.seconds("answerToRemoteFetchMs"); got != tc.seconds {
				t.Errorf("seconds = %q, want %q", got, tc.seconds)
			}
		})
	}
}

// TestReadRuns reads R runs by their numbered names, falls back to the
// unnumbered file of a single run, and reports a missing run as missing.
func TestReadRuns(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, ms float64) {
		b, err := json.Marshal(map[string]any{"answerToRemoteFetchMs": ms})
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	read := func(name string) (map[string]any, error) {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return nil, err
		}
		var m map[string]any
		return m, json.Unmarshal(b, &m)
	}
	write("restart-rlmm-10-1.json", 30)
	write("restart-rlmm-10-2.json", 10)
	write("restart-rlmm-10-3.json", 20)
	write("restart-kafka-10.json", 500)
	rs, err := readRuns(read, "rlmm", "10", 3)
	if err != nil || rs.median("answerToRemoteFetchMs") != 20 {
		t.Fatalf("readRuns(rlmm, 3 runs) = %v, %v; want the median 20", rs, err)
	}
	rs, err = readRuns(read, "kafka", "10", 1)
	if err != nil || rs.median("answerToRemoteFetchMs") != 500 {
		t.Fatalf("readRuns(kafka, 1 run) = %v, %v; want the unnumbered file", rs, err)
	}
	if _, err := readRuns(read, "kafka", "10", 2); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("readRuns of runs that were not written: %v, want os.ErrNotExist", err)
	}
}

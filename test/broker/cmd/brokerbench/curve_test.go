package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rlmm-go/rlmm/test/kafkatest"
)

// TestSetRLMM checks the RLMM the next start of a curve's broker gets, and
// that a mode without an RLMM or the plugin's files is a usage error.
func TestSetRLMM(t *testing.T) {
	for _, tc := range []struct {
		mode, jar, bin string
		want           kafkatest.RLMM
		err            bool
	}{
		{"kafka", "", "", kafkatest.RLMMKafka, false},
		{"rlmm", "/p.jar", "/bin/rlmm", kafkatest.RLMMPlugin, false},
		{"none", "/p.jar", "/b", "", true},
		{"rlmm", "", "/b", "", true},
		{"rlmm", "/p.jar", "", "", true},
	} {
		b := &broker{o: options{pluginJar: tc.jar, binary: tc.bin}}
		err := b.setRLMM(tc.mode)
		if tc.err {
			if !errors.Is(err, errUsage) {
				t.Errorf("setRLMM(%q, jar %q, binary %q) = %v, want errUsage", tc.mode, tc.jar, tc.bin, err)
			}
			continue
		}
		if err != nil || b.rlmm != tc.want || b.o.mode != tc.mode {
			t.Errorf("setRLMM(%q) = %v: rlmm %q mode %q, want %q", tc.mode, err, b.rlmm, b.o.mode, tc.want)
		}
	}
}

// TestTurn: every turn runs each mode once, and over three turns each mode
// runs first once.
func TestTurn(t *testing.T) {
	first := map[string]int{}
	for r := 1; r <= 3; r++ {
		tr := turn(r)
		sorted := slices.Sorted(slices.Values(tr))
		if !slices.Equal(sorted, []string{"kafka", modeNone, "rlmm"}) {
			t.Fatalf("turn %d = %q, want each mode once", r, tr)
		}
		first[tr[0]]++
	}
	if len(first) != 3 {
		t.Fatalf("first modes of three turns: %v, want each once", first)
	}
}

// TestCurveReport writes the results of two event counts, two runs each,
// and checks the table's rows, medians and ratios, the target cells, and
// the plot (three series of two points, the ratios as labels), and that a
// missing run is an error naming the file.
func TestCurveReport(t *testing.T) {
	dir := t.TempDir()
	// answerToRemoteFetchMs per mode, per event count, per run.
	spans := map[string]map[int][2]float64{
		"kafka":  {1000000: {1800, 1600}, 10000000: {20000, 22000}},
		"rlmm":   {1000000: {100, 100}, 10000000: {1000, 1000}},
		modeNone: {1000000: {40, 60}, 10000000: {50, 50}},
	}
	for mode, byN := range spans {
		for n, ms := range byN {
			for r, v := range ms {
				b, err := json.Marshal(map[string]any{"answerToRemoteFetchMs": v, "launchToAnswerMs": 2500, "brokerLiveHeapMiB": 100})
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("restart-%s-%d-%d.json", mode, n, r+1)), b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	md := filepath.Join(dir, "broker.md")
	if err := os.WriteFile(md, []byte("# page\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	svg := filepath.Join(dir, "plot", "restart-curve.svg")
	if err := os.MkdirAll(filepath.Dir(svg), 0o755); err != nil {
		t.Fatal(err)
	}
	err := curveReport([]string{"--dir", dir, "--events", "1000000 10000000", "--runs", "2", "--svg", svg, "--benchmarks", md})
	if err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(md)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| 1M | 1.70 s (1.60–1.80) | 0.10 s (0.10–0.10) | 0.05 s (0.04–0.06) | 17.0x | 34.0x | 0.05 s |",
		"| 10M | 21.00 s (20.00–22.00) | 1.00 s (1.00–1.00) | 0.05 s (0.05–0.05) | 21.0x | 420.0x | 0.95 s |",
		"| yes (20x) |", "](plot/restart-curve.svg)", curveBegin, curveEnd,
	} {
		if !strings.Contains(string(page), want) {
			t.Errorf("the page lacks %q:\n%s", want, page)
		}
	}
	plot, err := os.ReadFile(svg)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(plot), `class="series"`); n != 3 {
		t.Errorf("%d series in the plot, want 3", n)
	}
	for _, want := range []string{">17.0x<", ">21.0x<"} {
		if !strings.Contains(string(plot), want) {
			t.Errorf("the plot lacks the label %s", want)
		}
	}
	// Run again: the section is replaced, not added.
	if err := curveReport([]string{"--dir", dir, "--events", "1000000 10000000", "--runs", "2", "--svg", svg, "--benchmarks", md}); err != nil {
		t.Fatal(err)
	}
	if page, _ := os.ReadFile(md); strings.Count(string(page), curveBegin) != 1 {
		t.Errorf("the section is in the page %d times after two reports", strings.Count(string(page), curveBegin))
	}
	if err := os.Remove(filepath.Join(dir, "restart-rlmm-10000000-2.json")); err != nil {
		t.Fatal(err)
	}
	err = curveReport([]string{"--dir", dir, "--events", "1000000 10000000", "--runs", "2", "--svg", svg})
	if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "restart-rlmm-10000000-2.json") {
		t.Errorf("a missing run: %v, want an error naming restart-rlmm-10000000-2.json", err)
	}
}

func TestCountText(t *testing.T) {
	for n, want := range map[int]string{20000: "20k", 100000: "100k", 1000000: "1M", 30000000: "30M", 1500: "1500", 2500000: "2500k"} {
		if got := countText(n); got != want {
			t.Errorf("countText(%d) = %q, want %q", n, got, want)
		}
	}
}

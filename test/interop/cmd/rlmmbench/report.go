package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
)

// The markers of the generated section of docs/bench/compare.md.
const (
	beginMarker = "<!-- bench-compare:begin -->"
	endMarker   = "<!-- bench-compare:end -->"
)

// reportOptions are the flags of `rlmmbench report`.
type reportOptions struct {
	dir, benchmarks string
	events          []string
	runs            int
	mutRuns         int
	mut1, mut16     int
	heapSegments    int
}

// runReport reads the results bench-compare.sh left in --dir, prints the
// markdown tables on w and, with --benchmarks, writes them between the
// markers of that file.
func runReport(args []string, w, stderr io.Writer) error {
	var o reportOptions
	var events string
	fs := flag.NewFlagSet("rlmmbench report", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.dir, "dir", "", "directory of the results (required)")
	fs.StringVar(&o.benchmarks, "benchmarks", "", "markdown file whose marked section is replaced (empty: print only)")
	fs.StringVar(&events, "events", "100000 1000000", "cold-start event counts, space separated")
	fs.IntVar(&o.runs, "runs", 3, "cold starts per side and count")
	fs.IntVar(&o.mutRuns, "mut-runs", 3, "mutation runs per side and caller count")
	fs.IntVar(&o.mut1, "mut1", 500, "segments of the single-caller mutation run")
	fs.IntVar(&o.mut16, "mut16", 3200, "segments of the 16-caller mutation run")
	fs.IntVar(&o.heapSegments, "heap-segments", 1_000_000, "segments of Java's heap benchmark")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	if o.dir == "" {
		return fmt.Errorf("%w: --dir is required", errUsage)
	}
	o.events = strings.Fields(events)
	r := &reporter{dir: o.dir}
	md := r.build(&o)
	if r.err != nil {
		return r.err
	}
	if _, err := io.WriteString(w, md); err != nil {
		return err
	}
	if o.benchmarks != "" {
		return replaceSection(o.benchmarks, md)
	}
	return nil
}

// replaceSection puts section (which starts and ends with the markers)
// in place of the marked part of file, or appends it when there is none.
func replaceSection(file, section string) error {
	old, err := os.ReadFile(file)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	s := string(old)
	var out string
	b, e := strings.Index(s, beginMarker), strings.Index(s, endMarker)
	switch {
	case b >= 0 && e > b:
		out = s[:b] + strings.TrimSuffix(section, "\n") + s[e+len(endMarker):]
	case b >= 0 || e >= 0:
		return fmt.Errorf("%s: only one of the markers %s and %s is present", file, beginMarker, endMarker)
	case s == "":
		out = section
	default:
		out = strings.TrimRight(s, "\n") + "\n\n" + section
	}
	return os.WriteFile(file, []byte(out), 0o644)
}

// reporter reads result files; the first error sticks.
type reporter struct {
	dir string
	err error
}

// json reads a result file into a generic document (nil if absent: a step
// that was not run).
func (r *reporter) json(name string) map[string]any {
	b, err := os.ReadFile(filepath.Join(r.dir, name))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err == nil {
		var v map[string]any
		if err = json.Unmarshal(b, &v); err == nil {
			return v
		}
	}
	if r.err == nil {
		r.err = fmt.Errorf("result %s: %w", name, err)
	}
	return nil
}

// num returns the number at a dotted path of doc, NaN-free: ok false if absent.
func num(doc map[string]any, path string) (float64, bool) {
	var cur any = doc
	for _, k := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return 0, false
		}
		cur = m[k]
	}
	f, ok := cur.(float64)
	return f, ok
}

func str(doc map[string]any, key string) string {
	s, _ := doc[key].(string)
	return s
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// benchValues returns the values of unit on the lines of a go test -bench
// output of the benchmark named bench: the name without its -GOMAXPROCS
// suffix must equal bench, so that "X/copy" does not also pick up
// "X/copy-1partition".
func (r *reporter) benchValues(name, bench, unit string) []float64 {
	b, err := os.ReadFile(filepath.Join(r.dir, name))
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) && r.err == nil {
			r.err = err
		}
		return nil
	}
	var out []float64
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 3 || benchName(f[0]) != bench {
			continue
		}
		for i := 2; i+1 < len(f); i++ {
			if f[i+1] == unit {
				if v, err := strconv.ParseFloat(f[i], 64); err == nil {
					out = append(out, v)
				}
			}
		}
	}
	return out
}

// benchName strips the -GOMAXPROCS suffix ("-2") go test appends to a
// benchmark's name, if there is one.
func benchName(field string) string {
	i := strings.LastIndexByte(field, '-')
	if i < 0 || i == len(field)-1 {
		return field
	}
	for _, c := range field[i+1:] {
		if c < '0' || c > '9' {
			return field
		}
	}
	return field[:i]
}

func (r *reporter) firstLine(name string) string {
	b, err := os.ReadFile(filepath.Join(r.dir, name))
	if err != nil {
		return "unknown"
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	return line
}

func (r *reporter) lines(name string) []string {
	b, err := os.ReadFile(filepath.Join(r.dir, name))
	if err != nil {
		return []string{"unknown", "unknown"}
	}
	l := strings.Split(strings.TrimSpace(string(b)), "\n")
	for len(l) < 2 {
		l = append(l, "unknown")
	}
	return l
}

// machine describes the CPU and memory from /proc.
func machine() string {
	model, mem := "unknown CPU", "unknown memory"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if f := strings.Fields(l); len(f) >= 2 && f[0] == "MemTotal:" {
				if kb, err := strconv.ParseFloat(f[1], 64); err == nil {
					mem = fmt.Sprintf("%.1f GiB RAM", kb/(1<<20))
				}
			}
		}
	}
	return fmt.Sprintf("%d CPUs (nproc), %s, %s", runtime.NumCPU(), model, mem)
}

func fmtMs(us float64) string {
	switch {
	case us >= 100_000:
		return fmt.Sprintf("%.0f ms", us/1000)
	case us >= 1000:
		return fmt.Sprintf("%.1f ms", us/1000)
	}
	return fmt.Sprintf("%.2f ms", us/1000)
}

func fmtDur(ms float64) string {
	if ms >= 1000 {
		return fmt.Sprintf("%.2f s", ms/1000)
	}
	return fmt.Sprintf("%.0f ms", ms)
}

func yesNo(ok bool) string {
	if ok {
		return "yes"
	}
	return "**no**"
}

func withCommas(n int) string {
	s := strconv.Itoa(n)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

func (r *reporter) build(o *reportOptions) string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	started, finished := r.lines("started.txt"), r.lines("finished.txt")
	mutRuns := max(o.mutRuns, 1)
	var kafka string
	if runs := r.mutationRuns("java", 1, mutRuns); len(runs) > 0 {
		kafka = str(runs[0], "kafkaVersion")
	}
	if kafka == "" {
		kafka = "4.4.0"
	}
	var missed []string

	p("%s\n", beginMarker)
	p("## Side by side: Apache Kafka %s's Java RLMM and rlmm (`make bench-compare`)\n\n", kafka)
	p("Generated by `make bench-compare` (scripts/bench-compare.sh) from %s to %s UTC. ", started[0], finished[0])
	p("Machine: %s. Versions: %s; %s; Apache Kafka %s (broker and RLMM jars from Maven Central, single-node KRaft broker of test/kafkatest on 127.0.0.1). ",
		machine(), r.firstLine("go-version.txt"), r.firstLine("java-version.txt"), kafka)
	p("Load average (1/5/15 min) at start: %s; at the end: %s. ", loadOf(started[1]), loadOf(finished[1]))
	p("The two sides run the same workload on the same broker, taking turns: each round of the mutation and cold-start runs alternates which side goes first (Java in odd rounds, rlmm in even ones), and each cell is the median of the rounds with their range in brackets. Commentary and reasons for missed targets: docs/bench/compare.md.\n\n")

	// Mutations.
	p("### Mutation latency: add, then update to COPY_SEGMENT_FINISHED (each call awaited)\n\n")
	p("Target: rlmm's p50 at least 10 times lower than Java's. With C callers each awaiting its call before the next, C over the throughput is the mean latency while all C are busy (Little's law): rlmm's measured mean matches it; Java's is lower, as its callers finish at different times, and its p50 lower still, as its consumer rechecks on a fixed 50 ms sleep (docs/bench/compare.md).")
	if j, g := r.mutationRuns("java", 16, mutRuns), r.mutationRuns("go", 16, mutRuns); len(j) > 0 && len(g) > 0 {
		jw, _ := num(j[0], "warmupSeconds")
		gw, _ := num(g[0], "warmupSeconds")
		if jw > 0 || gw > 0 {
			p(" Before each timed run, its callers copied segments untimed for %.0f s (Java) and %.0f s (rlmm): the broker's code for the load is compiled first, as on a broker that has run for a while (a fresh broker answered rlmm's produce requests 2-3x slower over its first tens of thousands).", jw, gw)
		}
	}
	p("\n\n")
	p("| callers | segments | rounds | Java p50 | Java p99 | Java mean | Java mutations/s | rlmm p50 | rlmm p99 | rlmm mean | rlmm mutations/s | p50 Java/rlmm | mean Java/rlmm | target met? |\n")
	p("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, c := range []struct {
		callers, count int
	}{{1, o.mut1}, {16, o.mut16}} {
		j, g := r.mutationRuns("java", c.callers, mutRuns), r.mutationRuns("go", c.callers, mutRuns)
		jp50, gp50 := values(j, "latencyUs.p50"), values(g, "latencyUs.p50")
		if len(jp50) == 0 || len(gp50) == 0 {
			p("| %d | %s | | not measured in this run | | | | | | | | | | |\n", c.callers, withCommas(c.count))
			continue
		}
		jmean, gmean := values(j, "latencyUs.mean"), values(g, "latencyUs.mean")
		segs, _ := num(g[0], "segments")
		ratio := median(jp50) / median(gp50)
		met := ratio >= 10
		if !met {
			missed = append(missed, fmt.Sprintf("mutation p50 with %d callers (%.1fx, target 10x)", c.callers, ratio))
		}
		rounds := strconv.Itoa(min(len(j), len(g)))
		p("| %d | %s | %s | %s | %s | %s | %.0f | %s | %s | %s | %.0f | %s | %s | %s |\n", c.callers, withCommas(int(segs)), rounds,
			fmtMedianRange(jp50, fmtMs), fmtMs(median(values(j, "latencyUs.p99"))), fmtMs(median(jmean)), median(values(j, "mutationsPerSec")),
			fmtMedianRange(gp50, fmtMs), fmtMs(median(values(g, "latencyUs.p99"))), fmtMs(median(gmean)), median(values(g, "mutationsPerSec")),
			fmtRatio(jp50, gp50), fmtRatio(jmean, gmean), yesNo(met))
	}

	// Cold start.
	p("\n### Cold start to ready, 50 user partitions (median of %d rounds each, range in brackets)\n\n", o.runs)
	p("Java: `configure` to `isReady` of every partition, replaying all events of their metadata partitions (fresh JVM each run). ")
	p("rlmm: kafkalog.Open to every partition ready (fresh process each run), from scratch and from the snapshot it wrote after a full replay. ")
	p("Targets: from scratch at least 2 times faster, from the snapshot at least 20 times faster. A fresh broker per event count.\n\n")
	p("| events | Java | rlmm from scratch | speed-up | target met? | rlmm from snapshot | speed-up | target met? |\n")
	p("|---|---|---|---|---|---|---|---|\n")
	var coldNotes []string
	for _, n := range o.events {
		var jv, sv, nv, lv, rv []float64
		for run := 1; run <= o.runs; run++ {
			if d := r.json(fmt.Sprintf("java-cold-%s-%d.json", n, run)); d != nil {
				if v, ok := num(d, "configureToReadyMs"); ok {
					jv = append(jv, v)
				}
			}
			if d := r.json(fmt.Sprintf("go-scratch-%s-%d.json", n, run)); d != nil {
				if v, ok := num(d, "openToReadyMs"); ok {
					sv = append(sv, v)
				}
			}
			if d := r.json(fmt.Sprintf("go-snap-%s-%d.json", n, run)); d != nil {
				if v, ok := num(d, "openToReadyMs"); ok {
					nv = append(nv, v)
				}
				if v, ok := num(d, "snapshotLoadMs"); ok {
					lv = append(lv, v)
				}
			}
			if d := r.json(fmt.Sprintf("go-scratch-%s-%d.json", n, run)); d != nil {
				if v, ok := num(d, "replayEventsPerSec"); ok {
					rv = append(rv, v)
				}
			}
		}
		count, _ := strconv.Atoi(n)
		if len(jv) == 0 || len(sv) == 0 || len(nv) == 0 {
			p("| %s | not measured in this run | | | | | | |\n", withCommas(count))
			continue
		}
		jm, sm, nm := median(jv), median(sv), median(nv)
		sr, nr := jm/sm, jm/nm
		if sr < 2 {
			missed = append(missed, fmt.Sprintf("cold start from scratch after %s events (%.1fx, target 2x)", withCommas(count), sr))
		}
		if nr < 20 {
			missed = append(missed, fmt.Sprintf("cold start from snapshot after %s events (%.1fx, target 20x)", withCommas(count), nr))
		}
		p("| %s | %s | %s | %.1fx | %s | %s | %.1fx | %s |\n", withCommas(count), fmtMedianRange(jv, fmtDur), fmtMedianRange(sv, fmtDur), sr, yesNo(sr >= 2),
			fmtMedianRange(nv, fmtDur), nr, yesNo(nr >= 20))
		if len(lv) > 0 && len(rv) > 0 {
			coldNotes = append(coldNotes, fmt.Sprintf("%s events: rlmm replayed %.0f k events/s from scratch (median); from the snapshot, reading and loading the snapshot file took %s of the %s (median)",
				withCommas(count), median(rv)/1000, fmtDur(median(lv)), fmtDur(nm)))
		}
	}
	if len(coldNotes) > 0 {
		p("\n%s.\n", strings.Join(coldNotes, "; "))
	}

	// Lookup.
	p("\n### Lookup by (epoch, offset), 10,000 finished segments in a partition\n\n")
	p("Java: `RemoteLogMetadataCache.remoteLogSegmentMetadata` of one partition's cache of 10,000 finished segments, in a warmed-up timed loop (KafkaRlmmDriver bench-lookup, 10 rounds); it returns Kafka's own object (no copy). ")
	p("rlmm: `go test -bench 'BenchmarkSegmentForOffset$/^(copy-1partition|copy|into)$' -count 5 ./memory`, random offsets, in a manager of 10,000 partitions. ")
	p("`copy-1partition` (the like-for-like target row) calls `SegmentForOffset`, which returns a copy the caller owns, on one partition of 10,000 segments, as Java's loop queries one partition; ")
	p("`copy` and `into` spread the queries over 8 such partitions (a working set larger than the CPU caches: the harder case), `into` filling the caller's struct instead of returning a copy. ")
	p("Target: at least 2 times faster (wall time per op, medians).\n\n")
	p("| | Java ns/op | rlmm ns/op | speed-up | target met? |\n|---|---|---|---|---|\n")
	jl := r.json("java-lookup.json")
	g1 := r.benchValues("go-lookup.txt", "BenchmarkSegmentForOffset/copy-1partition", "ns/op")
	gl := r.benchValues("go-lookup.txt", "BenchmarkSegmentForOffset/copy", "ns/op")
	gi := r.benchValues("go-lookup.txt", "BenchmarkSegmentForOffset/into", "ns/op")
	g1cpu := r.benchValues("go-lookup.txt", "BenchmarkSegmentForOffset/copy-1partition", "cpu-ns/op")
	gcpu := r.benchValues("go-lookup.txt", "BenchmarkSegmentForOffset/copy", "cpu-ns/op")
	if jm, ok := num(jl, "nsPerOp.median"); ok && (len(g1) > 0 || len(gl) > 0) {
		jmin, _ := num(jl, "nsPerOp.min")
		// The target row: copy-1partition; a results directory from before
		// it existed has only the 8-partition copy, which then stands in.
		target, targetName, targetAll := g1, "copy-1partition", gl
		if len(g1) == 0 {
			target, targetName = gl, "copy"
		}
		gm := median(target)
		ratio := jm / gm
		if ratio < 2 {
			missed = append(missed, fmt.Sprintf("lookup (%.1fx, target 2x)", ratio))
		}
		p("| median, `%s` (like for like) | %.0f | %.0f | %.1fx | %s |\n", targetName, jm, gm, ratio, yesNo(ratio >= 2))
		p("| fastest round, `%s` | %.0f | %.0f | %.1fx | |\n", targetName, jmin, slices.Min(target), jmin/slices.Min(target))
		if len(g1) > 0 && len(targetAll) > 0 {
			p("| median, `copy` (8 partitions, harder) | %.0f | %.0f | %.1fx | |\n", jm, median(targetAll), jm/median(targetAll))
		}
		if len(gi) > 0 {
			p("| median, `into` (8 partitions, no copy) | %.0f | %.0f | %.1fx | |\n", jm, median(gi), jm/median(gi))
		}
		var cpuNotes []string
		if len(g1cpu) > 0 {
			cpuNotes = append(cpuNotes, fmt.Sprintf("`copy-1partition` %.0f ns", median(g1cpu)))
		}
		if len(gcpu) > 0 {
			cpuNotes = append(cpuNotes, fmt.Sprintf("`copy` %.0f ns", median(gcpu)))
		}
		if len(cpuNotes) > 0 {
			p("\nrlmm's CPU time per op (the benchmark's cpu-ns/op, which leaves out time spent waiting for a CPU), medians: %s.\n", strings.Join(cpuNotes, ", "))
		}
	} else {
		p("| median | not measured in this run | | | |\n")
	}

	// Heap.
	p("\n### Heap per live segment, finished single-epoch segments without custom metadata, 100 partitions\n\n")
	p("Java: KafkaRlmmDriver bench-heap (%s segments, used heap after System.gc(), -Xmx6g, G1, compressed oops). ", withCommas(o.heapSegments))
	p("rlmm: `go test -bench 'BenchmarkRetainedHeap/100x10000$' -benchtime 1x -count 3 ./memory` (1,000,000 segments, HeapAlloc after runtime.GC()). Target: at most half of Java's.\n\n")
	p("| segments | Java bytes/segment | rlmm bytes/segment | rlmm/Java | target met? |\n|---|---|---|---|---|\n")
	jh := r.json("java-heap.json")
	gh := r.benchValues("go-heap.txt", "BenchmarkRetainedHeap/100x10000", "bytes/segment")
	if jb, ok := num(jh, "bytesPerSegment"); ok && len(gh) > 0 {
		gb := median(gh)
		ratio := gb / jb
		if ratio > 0.5 {
			missed = append(missed, fmt.Sprintf("heap per segment (%.2f of Java's, target 0.5)", ratio))
		}
		p("| %s | %.1f | %.1f | %.2f | %s |\n", withCommas(o.heapSegments), jb, gb, ratio, yesNo(ratio <= 0.5))
	} else {
		p("| %s | not measured in this run | | | |\n", withCommas(o.heapSegments))
	}

	p("\n")
	if len(missed) == 0 {
		p("All targets met in this run.\n")
	} else {
		p("Targets missed in this run: %s. docs/bench/compare.md says why.\n", strings.Join(missed, "; "))
	}
	p("%s\n", endMarker)
	return b.String()
}

// mutationRuns reads one side's mutation results at a caller count:
// <side>-mut-<callers>-<round>.json for rounds 1 to runs, or, from a results
// directory of a single run, <side>-mut-<callers>.json.
func (r *reporter) mutationRuns(side string, callers, runs int) []map[string]any {
	var out []map[string]any
	for run := 1; run <= runs; run++ {
		if d := r.json(fmt.Sprintf("%s-mut-%d-%d.json", side, callers, run)); d != nil {
			out = append(out, d)
		}
	}
	if len(out) == 0 {
		if d := r.json(fmt.Sprintf("%s-mut-%d.json", side, callers)); d != nil {
			out = append(out, d)
		}
	}
	return out
}

// values returns the number at path of each document that has it.
func values(docs []map[string]any, path string) []float64 {
	var out []float64
	for _, d := range docs {
		if v, ok := num(d, path); ok {
			out = append(out, v)
		}
	}
	return out
}

// fmtMedianRange formats the median of v, and its range when v holds
// more than one value.
func fmtMedianRange(v []float64, f func(float64) string) string {
	m := f(median(v))
	if len(v) < 2 {
		return m
	}
	return fmt.Sprintf("%s (%s–%s)", m, f(slices.Min(v)), f(slices.Max(v)))
}

// fmtRatio formats the ratio of the medians of java and rlmm, and, when both
// hold the same number of rounds (more than one), the range of the rounds'
// own ratios: round i of one side ran beside round i of the other.
func fmtRatio(java, rlmm []float64) string {
	s := fmt.Sprintf("%.1fx", median(java)/median(rlmm))
	if len(java) < 2 || len(java) != len(rlmm) {
		return s
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for i := range java {
		q := java[i] / rlmm[i]
		lo, hi = math.Min(lo, q), math.Max(hi, q)
	}
	return fmt.Sprintf("%s (%.1f–%.1fx)", s, lo, hi)
}

// loadOf keeps the three load averages of a /proc/loadavg line.
func loadOf(line string) string {
	f := strings.Fields(line)
	if len(f) < 3 {
		return line
	}
	return strings.Join(f[:3], " ")
}

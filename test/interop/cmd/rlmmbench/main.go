// Command rlmmbench is the Go half of `make bench-compare`: it measures
// rlmm's topic-based manager over kafkalog (franz-go) on a real broker with
// the workloads interop's KafkaRlmmDriver uses for Kafka's Java manager, and
// prints one JSON object of the same shape on stdout.
//
//	rlmmbench mutations --bootstrap B --callers C --count N [--warmup W] [--warmup-seconds S]
//	rlmmbench coldstart --bootstrap B --topic-id ID [--topic T] [--user-partitions P]
//	                    [--snapshot-dir D [--prepare]]
//	rlmmbench report --dir RESULTS [--benchmarks docs/bench/compare.md] ...
//
// mutations: a fresh topic id with C user partitions, all led by one
// manager; each of C goroutines copies N/C segments of its partition (add in
// COPY_SEGMENT_STARTED, then update to COPY_SEGMENT_FINISHED), each call
// timed as one mutation, after W untimed warm-up segments of one caller and
// then S seconds of all C callers copying untimed (the broker's JIT and
// steady state: a fresh broker answered our produce requests 2-3x slower
// for its first tens of thousands of them). Its "split"
// says where the timed mutations' time went (topicbased.MutationSplit's
// p50s) and how many records each produce request and fetch carried.
//
// coldstart: the time from opening the log to every one of the P user
// partitions being ready, over events written before (KafkaRlmmDriver fill).
// Without --snapshot-dir the manager replays from scratch. With it, --prepare
// replays once and writes a snapshot (ShutdownAndFlush); a later run with the
// same directory and without --prepare starts from that snapshot.
//
// report: reads the results scripts/bench-compare.sh collected and prints the
// markdown tables (machine, versions, date, targets met or not); with
// --benchmarks it replaces the part of that file between the
// bench-compare:begin and bench-compare:end markers (appending them if absent).
//
// Exit status 0 with the JSON result, 1 with {"error": ...}, 2 for bad usage.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/eventlog/kafkalog"
	"github.com/rlmm-go/rlmm/topicbased"
)

// errUsage marks a bad command line (exit status 2).
var errUsage = errors.New("usage")

func main() {
	if len(os.Args) > 1 && os.Args[1] == "report" {
		if err := runReport(os.Args[2:], os.Stdout, os.Stderr); err != nil {
			fmt.Fprintln(os.Stderr, "rlmmbench report:", err)
			if errors.Is(err, errUsage) {
				os.Exit(2)
			}
			os.Exit(1)
		}
		return
	}
	out, err := run(os.Args[1:], os.Stderr)
	if err != nil {
		out = map[string]any{"error": err.Error()}
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", " ")
	_ = enc.Encode(out)
	switch {
	case errors.Is(err, errUsage):
		os.Exit(2)
	case err != nil:
		os.Exit(1)
	}
}

// options are the flags common to the subcommands.
type options struct {
	bootstrap      string
	metaPartitions int
	timeout        time.Duration
	callers, count int
	warmup         int
	warmupSeconds  float64
	topicID, topic string
	userPartitions int
	snapshotDir    string
	prepare        bool
}

func run(args []string, stderr io.Writer) (map[string]any, error) {
	if len(args) == 0 {
		return nil, fmt.Errorf("%w: rlmmbench mutations|coldstart --bootstrap HOST:PORT [flags]", errUsage)
	}
	var o options
	fs := flag.NewFlagSet("rlmmbench "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.bootstrap, "bootstrap", "", "Kafka bootstrap servers (required)")
	fs.IntVar(&o.metaPartitions, "metadata-partitions", 50, "partitions of __remote_log_metadata")
	fs.DurationVar(&o.timeout, "timeout", 10*time.Minute, "bound of the whole run")
	fs.IntVar(&o.callers, "callers", 1, "mutations: concurrent callers, one user partition each")
	fs.IntVar(&o.count, "count", 1000, "mutations: segments copied in total")
	fs.IntVar(&o.warmup, "warmup", 50, "mutations: untimed segments first")
	fs.Float64Var(&o.warmupSeconds, "warmup-seconds", 0, "mutations: then this many seconds of every caller copying, untimed")
	fs.StringVar(&o.topicID, "topic-id", "", "coldstart: topic id the events were filled for")
	fs.StringVar(&o.topic, "topic", "rlmm-coldstart", "coldstart: topic name the events were filled for")
	fs.IntVar(&o.userPartitions, "user-partitions", 50, "coldstart: user partitions to assign")
	fs.StringVar(&o.snapshotDir, "snapshot-dir", "", "coldstart: snapshot directory (empty: replay from scratch)")
	fs.BoolVar(&o.prepare, "prepare", false, "coldstart: replay and write the snapshot to --snapshot-dir")
	if err := fs.Parse(args[1:]); err != nil {
		return nil, fmt.Errorf("%w: %w", errUsage, err)
	}
	if !(o.warmupSeconds >= 0 && o.warmupSeconds <= 3600) { // NaN too
		return nil, fmt.Errorf("%w: --warmup-seconds must be between 0 and 3600, got %v", errUsage, o.warmupSeconds)
	}
	if o.bootstrap == "" {
		return nil, fmt.Errorf("%w: --bootstrap is required", errUsage)
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	switch args[0] {
	case "mutations":
		if o.callers < 1 || o.count < o.callers {
			return nil, fmt.Errorf("%w: want --callers >= 1 and --count >= --callers", errUsage)
		}
		return benchMutations(ctx, &o)
	case "coldstart":
		if o.topicID == "" || o.userPartitions < 1 || (o.prepare && o.snapshotDir == "") {
			return nil, fmt.Errorf("%w: want --topic-id, --user-partitions >= 1, and --snapshot-dir with --prepare", errUsage)
		}
		return coldStart(ctx, &o)
	}
	return nil, fmt.Errorf("%w: unknown subcommand %q", errUsage, args[0])
}

func openLog(ctx context.Context, o *options) (*kafkalog.Log, error) {
	return kafkalog.Open(ctx, kafkalog.Config{BootstrapServers: []string{o.bootstrap},
		NumPartitions: int32(o.metaPartitions), ConnectTimeout: time.Minute})
}

// waitAllReady waits until every partition is ready.
func waitAllReady(ctx context.Context, m *topicbased.Manager, tps []rlmm.TopicIDPartition) error {
	for _, tp := range tps {
		if err := m.WaitReady(ctx, tp); err != nil {
			return err
		}
	}
	return nil
}

// latency summarizes durations as KafkaRlmmDriver does (microseconds;
// percentile p is the element at floor(p*n) of the sorted list).
func latency(d []time.Duration) map[string]any {
	s := slices.Clone(d)
	slices.Sort(s)
	out := map[string]any{"count": len(s)}
	if len(s) == 0 {
		return out
	}
	at := func(p float64) float64 {
		i := min(len(s)-1, int(p*float64(len(s))))
		return float64(s[i].Nanoseconds()) / 1e3
	}
	var sum time.Duration
	for _, v := range s {
		sum += v
	}
	out["p50"], out["p90"], out["p99"] = at(0.50), at(0.90), at(0.99)
	out["max"] = float64(s[len(s)-1].Nanoseconds()) / 1e3
	out["mean"] = float64(sum.Nanoseconds()) / float64(len(s)) / 1e3
	return out
}

// copySegment adds a 100-offset single-epoch segment at *next and finishes
// it, returning both latencies.
func copySegment(ctx context.Context, m *topicbased.Manager, tp rlmm.TopicIDPartition, next *int64) (time.Duration, time.Duration, error) {
	start := *next
	*next += 100
	now := time.Now().UnixMilli()
	md := rlmm.SegmentMetadata{ID: rlmm.SegmentID{TopicIDPartition: tp, ID: rlmm.RandomUuid()},
		StartOffset: start, EndOffset: start + 99, MaxTimestampMs: now, EventTimestampMs: now,
		LeaderEpochs: []rlmm.EpochStart{{Epoch: 0, StartOffset: start}}, SizeInBytes: 1 << 20,
		State: rlmm.CopySegmentStarted}
	t0 := time.Now()
	if err := m.AddSegment(ctx, md); err != nil {
		return 0, 0, err
	}
	t1 := time.Now()
	err := m.UpdateSegment(ctx, rlmm.SegmentUpdate{ID: md.ID, EventTimestampMs: time.Now().UnixMilli(),
		State: rlmm.CopySegmentFinished})
	return t1.Sub(t0), time.Since(t1), err
}

func benchMutations(ctx context.Context, o *options) (map[string]any, error) {
	l, err := openLog(ctx, o)
	if err != nil {
		return nil, err
	}
	defer func() { _ = l.Close() }()
	split := &splits{}
	m, err := topicbased.Start(ctx, topicbased.Config{Log: l, Metrics: split})
	if err != nil {
		return nil, err
	}
	defer func() { _ = m.Close() }()
	topicID := rlmm.RandomUuid()
	tps := make([]rlmm.TopicIDPartition, o.callers)
	for i := range tps {
		tps[i] = rlmm.TopicIDPartition{TopicID: topicID, Topic: "rlmm-bench-mutations", Partition: int32(i)}
	}
	if err := m.OnPartitionLeadershipChanges(ctx, tps, nil); err != nil {
		return nil, err
	}
	if err := waitAllReady(ctx, m, tps); err != nil {
		return nil, err
	}
	next := make([]int64, o.callers)
	for range o.warmup {
		if _, _, err := copySegment(ctx, m, tps[0], &next[0]); err != nil {
			return nil, fmt.Errorf("warm-up: %w", err)
		}
	}
	// Then every caller copies, untimed, for --warmup-seconds: the same
	// load as the timed run, so the broker's code for it is compiled and
	// its buffers grown before anything is measured.
	deadline := time.Now().Add(time.Duration(o.warmupSeconds * float64(time.Second)))
	if err := runCallers(o.callers, func(c int) error {
		for time.Now().Before(deadline) {
			if _, _, err := copySegment(ctx, m, tps[c], &next[c]); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("warm-up: %w", err)
	}
	split.reset()
	traffic := l.Stats()
	perCaller := o.count / o.callers
	adds := make([][]time.Duration, o.callers)
	updates := make([][]time.Duration, o.callers)
	t0 := time.Now()
	err = runCallers(o.callers, func(c int) error {
		adds[c] = make([]time.Duration, 0, perCaller)
		updates[c] = make([]time.Duration, 0, perCaller)
		for range perCaller {
			a, u, err := copySegment(ctx, m, tps[c], &next[c])
			if err != nil {
				return err
			}
			adds[c] = append(adds[c], a)
			updates[c] = append(updates[c], u)
		}
		return nil
	})
	elapsed := time.Since(t0)
	if err != nil {
		return nil, fmt.Errorf("a caller failed: %w", err)
	}
	allAdds, allUpdates := slices.Concat(adds...), slices.Concat(updates...)
	all := slices.Concat(allAdds, allUpdates)
	return map[string]any{
		"command": "mutations", "callers": o.callers, "segments": perCaller * o.callers, "mutations": len(all), "warmupSeconds": o.warmupSeconds,
		"elapsedMs": float64(elapsed.Nanoseconds()) / 1e6, "mutationsPerSec": float64(len(all)) / elapsed.Seconds(),
		"latencyUs": latency(all), "addLatencyUs": latency(allAdds), "updateLatencyUs": latency(allUpdates),
		"split": split.summary(traffic, l.Stats()),
	}, nil
}

// runCallers runs work for callers 0 to n-1 on a goroutine each and
// returns their errors joined once all have returned.
func runCallers(n int, work func(c int) error) error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	for c := range n {
		wg.Go(func() { errs[c] = work(c) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

func coldStart(ctx context.Context, o *options) (map[string]any, error) {
	id, err := rlmm.ParseUuid(o.topicID)
	if err != nil {
		return nil, fmt.Errorf("%w: --topic-id: %w", errUsage, err)
	}
	tps := make([]rlmm.TopicIDPartition, o.userPartitions)
	for i := range tps {
		tps[i] = rlmm.TopicIDPartition{TopicID: id, Topic: o.topic, Partition: int32(i)}
	}
	var snapshotLoad time.Duration
	var snapshotSegments int
	metrics := &loadMetrics{done: func(d time.Duration, n int) { snapshotLoad, snapshotSegments = d, n }}

	t0 := time.Now()
	l, err := openLog(ctx, o)
	if err != nil {
		return nil, err
	}
	defer func() { _ = l.Close() }()
	tOpen := time.Now()
	m, err := topicbased.Start(ctx, topicbased.Config{Log: l, SnapshotDir: o.snapshotDir, SnapshotInterval: -1, Metrics: metrics})
	if err != nil {
		return nil, err
	}
	defer func() { _ = m.Close() }()
	tStart := time.Now()
	if err := m.OnPartitionLeadershipChanges(ctx, tps, nil); err != nil {
		return nil, err
	}
	if err := waitAllReady(ctx, m, tps); err != nil {
		return nil, err
	}
	tReady := time.Now()

	segments := 0
	for _, tp := range tps {
		s, err := m.ListSegments(tp)
		if err != nil {
			return nil, err
		}
		segments += len(s)
	}
	st := m.Stats()
	mode := "scratch"
	if o.snapshotDir != "" {
		mode = "snapshot"
	}
	out := map[string]any{
		"command": "coldstart", "mode": mode, "prepare": o.prepare, "topicId": o.topicID, "userPartitions": o.userPartitions,
		"openMs":          ms(tOpen.Sub(t0)),
		"startMs":         ms(tStart.Sub(tOpen)),
		"assignToReadyMs": ms(tReady.Sub(tStart)),
		"openToReadyMs":   ms(tReady.Sub(t0)),
		"eventsConsumed":  st.Consumed(),
		"segmentsLoaded":  segments,
	}
	if o.snapshotDir != "" {
		out["snapshotLoadMs"], out["snapshotSegments"] = ms(snapshotLoad), snapshotSegments
	}
	if el := tReady.Sub(tStart).Seconds(); el > 0 {
		out["replayEventsPerSec"] = float64(st.Consumed()) / el
	}
	if o.prepare {
		t := time.Now()
		if err := m.ShutdownAndFlush(ctx); err != nil {
			return nil, fmt.Errorf("writing the snapshot: %w", err)
		}
		out["snapshotWriteMs"] = ms(time.Since(t))
	}
	return out, nil
}

func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }

// loadMetrics records the snapshot load of Start.
type loadMetrics struct {
	topicbased.NopMetrics
	done func(d time.Duration, segments int)
}

// SnapshotLoaded records the load's duration and size.
func (l *loadMetrics) SnapshotLoaded(d time.Duration, segments int, _ error) { l.done(d, segments) }

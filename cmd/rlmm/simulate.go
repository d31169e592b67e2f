package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rlmm-go/rlmm/eventlog"
	"github.com/rlmm-go/rlmm/eventlog/filelog"
	"github.com/rlmm-go/rlmm/eventlog/kafkalog"
	"github.com/rlmm-go/rlmm/internal/sim"
)

// simulateOptions are the flags of rlmm simulate.
type simulateOptions struct {
	log                *logFlags
	cfg                sim.Config
	metadataPartitions int32
	jsonOut            bool
	quiet              bool
	verbose            bool
	timeout            time.Duration
}

func newSimulateCmd() *cobra.Command {
	o := &simulateOptions{cfg: sim.Defaults()}
	cmd := &cobra.Command{
		Use:   "simulate",
		Short: "Play a broker cluster's tiered-storage life through rlmm and check every broker against a model",
		Long: `simulate runs several brokers, each with its own topic-based remote log
metadata manager and snapshot, over one shared metadata log: the embedded log
in a fresh run directory under --dir (default ./rlmm-data), or a Kafka cluster
with --kafka.

Partitions of a few topics are led and followed across the brokers. In rounds,
leaders roll and copy segments (COPY_SEGMENT_STARTED, then FINISHED; some copies
fail and are cleaned up with DELETE_SEGMENT_STARTED/FINISHED), retention deletes
the oldest, and leaders and followers serve fetch-path reads by (leader epoch,
offset). Leadership moves with leader-epoch bumps, one topic is deleted, and
one broker is shut down and restarted from its snapshot.

At the end every broker's view is compared with an independent model; any
difference is printed and the exit status is 1 (2 when the run could not
start). The report gives events, mutation throughput and latency, lookup
throughput and latency, the restart (time, events replayed of the total),
memory per live segment and rejected events. The same --seed and sizes play
the same workload.`,
		Example: `  rlmm simulate
  rlmm simulate --partitions 1000 --rounds 20 --seed 42 --json
  rlmm simulate --kafka localhost:9092          # a fresh topic rlmm-simulate-<time> on the cluster`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runSimulate(cmd, o) },
	}
	o.log = addLogFlags(cmd, "data directory: each run writes a fresh run-<time>-seed<seed> directory in it (log/ and brokers/)")
	if fl := cmd.Flags().Lookup("kafka-topic"); fl != nil {
		// simulate never writes into the real metadata topic by default.
		fl.DefValue = "rlmm-simulate-<time>, a fresh topic per run"
		fl.Usage = "metadata topic to simulate in; it must be empty"
	}
	cmd.SetFlagErrorFunc(flagError)
	f := cmd.Flags()
	c := &o.cfg
	f.Int32Var(&o.metadataPartitions, "metadata-partitions", 50, fmt.Sprintf("partitions of the embedded metadata log, 1 to %d (Kafka's remote.log.metadata.topic.num.partitions default)", maxMetadataPartitions))
	f.IntVar(&c.Brokers, "brokers", c.Brokers, fmt.Sprintf("simulated brokers, 2 to %d", sim.MaxBrokers))
	f.IntVar(&c.Topics, "topics", c.Topics, fmt.Sprintf("topics, 2 to %d (the last one is deleted half way)", sim.MaxTopics))
	f.IntVar(&c.Partitions, "partitions", c.Partitions, fmt.Sprintf("user partitions in total, spread over the topics: --topics to %d, and --partitions × --retain × --replication-factor at most %d, --partitions × --rounds at most %d", sim.MaxPartitions, sim.MaxLiveSegments, sim.MaxSegmentCopies))
	f.IntVar(&c.ReplicationFactor, "replication-factor", c.ReplicationFactor, fmt.Sprintf("replicas per partition, a leader and followers: 2 to --brokers (at most %d)", sim.MaxReplicationFactor))
	f.IntVar(&c.Rounds, "rounds", c.Rounds, fmt.Sprintf("rounds, 3 to %d: each partition rolls and copies one segment per round", sim.MaxRounds))
	f.IntVar(&c.RecordsPerSegment, "records-per-segment", c.RecordsPerSegment, fmt.Sprintf("mean records per segment, 2 to %d", sim.MaxRecordsPerSegment))
	f.IntVar(&c.Retain, "retain", c.Retain, fmt.Sprintf("finished segments retention keeps per partition, 1 to %d", sim.MaxRetain))
	f.Float64Var(&c.CopyFailureRate, "copy-failure-rate", c.CopyFailureRate, "probability that a segment copy fails and is cleaned up, in [0, 1)")
	f.Float64Var(&c.LeaderMoveRate, "leader-move-rate", c.LeaderMoveRate, "probability per partition and round that leadership moves, in [0, 1]")
	f.IntVar(&c.LookupsPerRound, "lookups", c.LookupsPerRound, fmt.Sprintf("fetch-path reads per partition and round, 0 to %d", sim.MaxLookupsPerRound))
	f.IntVar(&c.Concurrency, "concurrency", c.Concurrency, fmt.Sprintf("partitions worked on at once, 1 to %d", sim.MaxConcurrency))
	f.Int64Var(&c.Seed, "seed", c.Seed, "seed of the workload: the same seed and sizes play the same run")
	f.BoolVar(&o.jsonOut, "json", false, "print the report as JSON")
	f.BoolVarP(&o.quiet, "quiet", "q", false, "no progress display on stderr")
	f.BoolVar(&o.verbose, "verbose", false, "log the brokers' warnings on stderr")
	f.DurationVar(&o.timeout, "timeout", 10*time.Minute, "give up after this long, at most "+maxTimeout.String())
	return cmd
}

// simulateJSON is the report of simulate --json: sim.Report plus where the
// run's data is.
type simulateJSON struct {
	*sim.Report
	RunDir string `json:"runDir"`
	Log    string `json:"log"`
}

func runSimulate(cmd *cobra.Command, o *simulateOptions) error {
	if err := checkTimeout(o.timeout); err != nil {
		return err
	}
	if o.metadataPartitions < 1 || o.metadataPartitions > maxMetadataPartitions {
		return usageErrorf("--metadata-partitions %d: must be between 1 and %d", o.metadataPartitions, maxMetadataPartitions)
	}
	// Every size flag holds its default unless the user typed a value, so
	// a 0 here was asked for: refuse it instead of taking the default.
	if err := o.cfg.ValidateAsGiven(); err != nil {
		return usageErrorf("%v", err)
	}
	if o.log.kafka.Enabled() {
		if _, err := o.log.kafka.Config(); err != nil {
			return usageErrorf("%v", err) // before the data directory is made
		}
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	logger := slog.New(slog.DiscardHandler)
	if o.verbose {
		logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	// The embedded log lives in the run directory; a Kafka topic is
	// opened first, so an unreachable cluster leaves no directory behind.
	var runDir string
	var err error
	if !o.log.kafka.Enabled() {
		if runDir, err = newRunDir(o.log.dir, o.cfg.Seed); err != nil {
			return couldNotRun(err)
		}
	}
	log, logName, inspectHint, err := o.openLog(ctx, cmd, runDir, logger)
	if err != nil {
		if runDir != "" {
			_ = os.RemoveAll(runDir)
		}
		return couldNotRun(err)
	}
	defer log.Close()
	if runDir == "" {
		if runDir, err = newRunDir(o.log.dir, o.cfg.Seed); err != nil {
			return couldNotRun(err)
		}
	}

	cfg := o.cfg
	cfg.Log = log
	cfg.WorkDir = filepath.Join(runDir, "brokers")
	cfg.Logger = logger
	prog := newProgress("simulate", "steps", o.quiet)
	cfg.Progress = prog.set
	rep, err := sim.Run(ctx, cfg)
	prog.finish()
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil {
			return findings("simulate did not finish within --timeout %s: %v", o.timeout, err)
		}
		if errors.Is(err, context.Canceled) {
			return findings("simulate interrupted: %v", err)
		}
		return findings("simulate failed: %v (data kept in %s)", err, runDir)
	}
	out := cmd.OutOrStdout()
	if o.jsonOut {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		err = enc.Encode(simulateJSON{Report: rep, RunDir: runDir, Log: logName})
	} else {
		err = rep.WriteText(out)
		if err == nil {
			_, err = fmt.Fprintf(out, "  data         %s\n  look at it   %s\n", runDir, inspectHint)
		}
	}
	if err != nil {
		return couldNotRun(fmt.Errorf("writing the report: %w", err))
	}
	if !rep.OK {
		return findings("simulate: %d differences between the brokers and the model, %d rejected events",
			len(rep.Differences), rep.Rejected)
	}
	return nil
}

// newRunDir creates a fresh run directory in dataDir (created if absent). A
// dataDir holding anything but earlier runs is refused, so simulate never
// writes into a directory it does not own.
func newRunDir(dataDir string, seed int64) (string, error) {
	st, err := os.Stat(dataDir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := os.MkdirAll(dataDir, 0o755); err != nil {
			return "", fmt.Errorf("creating the data directory: %w", err)
		}
	case err != nil:
		return "", fmt.Errorf("reading the data directory: %w", err)
	case !st.IsDir():
		return "", usageErrorf("--dir %s is a file, not a directory", dataDir)
	default:
		entries, err := os.ReadDir(dataDir)
		if err != nil {
			return "", fmt.Errorf("reading the data directory: %w", err)
		}
		for _, e := range entries {
			if !e.IsDir() || !strings.HasPrefix(e.Name(), "run-") {
				return "", usageErrorf("--dir %s is not empty and not an rlmm simulate data directory (it holds %q): choose an empty or new directory", dataDir, e.Name())
			}
		}
	}
	base := filepath.Join(dataDir, fmt.Sprintf("run-%s-seed%d", time.Now().UTC().Format("20060102-150405"), seed))
	dir := base
	for i := 2; ; i++ {
		err := os.Mkdir(dir, 0o755)
		if err == nil {
			return dir, nil
		}
		if !errors.Is(err, fs.ErrExist) || i > 100 {
			return "", fmt.Errorf("creating the run directory: %w", err)
		}
		dir = fmt.Sprintf("%s-%d", base, i)
	}
}

// openLog opens the shared metadata log of the run: a new embedded log in
// runDir/log, or a new (or empty) Kafka topic.
func (o *simulateOptions) openLog(ctx context.Context, cmd *cobra.Command, runDir string, logger *slog.Logger) (eventlog.Log, string, string, error) {
	if !o.log.kafka.Enabled() {
		dir := filepath.Join(runDir, "log")
		l, err := filelog.Open(dir, filelog.Options{Partitions: o.metadataPartitions, Logger: logger})
		if err != nil {
			return nil, "", "", fmt.Errorf("creating the embedded log in %s: %w", dir, err)
		}
		return l, "embedded log " + dir, fmt.Sprintf("rlmm inspect --dir %s; rlmm verify --dir %s", runDir, runDir), nil
	}
	cfg, err := o.log.kafka.Config()
	if err != nil {
		return nil, "", "", usageErrorf("%v", err)
	}
	if !cmd.Flags().Changed("kafka-topic") {
		// Never the real __remote_log_metadata: a fresh topic per run.
		cfg.Topic = "rlmm-simulate-" + time.Now().UTC().Format("20060102-150405")
	}
	if !cmd.Flags().Changed("kafka-partitions") && (!cmd.Flags().Changed("kafka-topic") || cmd.Flags().Changed("metadata-partitions")) {
		// A named existing topic keeps its own count unless one is asked for.
		cfg.NumPartitions = o.metadataPartitions
	}
	cfg.Logger = logger
	l, err := kafkalog.Open(ctx, cfg)
	if err != nil {
		return nil, "", "", err
	}
	parts := make([]int32, l.Partitions())
	for i := range parts {
		parts[i] = int32(i)
	}
	hwms, err := l.HighWaterMarks(ctx, parts)
	if err != nil {
		_ = l.Close()
		return nil, "", "", fmt.Errorf("reading the high-water marks of topic %s: %w", cfg.Topic, err)
	}
	for p, h := range hwms {
		if h > 0 {
			_ = l.Close()
			return nil, "", "", usageErrorf("Kafka topic %s already holds records (partition %d has %d): simulate needs an empty topic; choose another --kafka-topic or leave it to the default", cfg.Topic, p, h)
		}
	}
	servers := strings.Join(cfg.BootstrapServers, ",")
	return l, fmt.Sprintf("Kafka topic %s at %s", cfg.Topic, servers),
		fmt.Sprintf("rlmm inspect --kafka %s --kafka-topic %s; rlmm verify --kafka %s --kafka-topic %s", servers, cfg.Topic, servers, cfg.Topic), nil
}

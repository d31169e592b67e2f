package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/eventlog"
	"github.com/rlmm-go/rlmm/eventlog/filelog"
	"github.com/rlmm-go/rlmm/eventlog/kafkalog"
	"github.com/rlmm-go/rlmm/internal/view"
)

// defaultDataDir is where simulate writes and where inspect and verify look
// when given neither --dir nor --kafka.
const defaultDataDir = "rlmm-data"

// logFlags are the flags that say which metadata log a command reads:
// --dir for the embedded log, or --kafka and its security flags.
type logFlags struct {
	dir   string
	kafka *kafkalog.FlagValues
}

func addLogFlags(cmd *cobra.Command, dirUsage string) *logFlags {
	f := &logFlags{}
	cmd.Flags().StringVar(&f.dir, "dir", defaultDataDir, dirUsage)
	f.kafka = kafkalog.RegisterFlags(cmd.Flags())
	_ = cmd.MarkFlagDirname("dir")
	return f
}

// source is an opened metadata log and where it came from.
type source struct {
	log  eventlog.Log
	name string
	// tornTails are the embedded log's torn tails, reported as warnings.
	tornTails []view.Anomaly
}

// resolveDir finds the embedded log under dir: dir itself, dir/log (a
// simulate run directory), or the log of the newest run-* directory in dir
// (simulate's data directory).
func resolveDir(dir string) (string, error) {
	st, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return "", usageErrorf("no directory %s: give --dir the directory of an rlmm log (or of an `rlmm simulate` run), or --kafka host:port", dir)
	}
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", dir, err)
	}
	if !st.IsDir() {
		return "", usageErrorf("%s is not a directory: give --dir the directory of an rlmm log", dir)
	}
	if isDir(filepath.Join(dir, "log")) {
		return filepath.Join(dir, "log"), nil
	}
	runs, _ := filepath.Glob(filepath.Join(dir, "run-*"))
	slices.Sort(runs)
	for i := len(runs) - 1; i >= 0; i-- {
		if isDir(filepath.Join(runs[i], "log")) {
			return filepath.Join(runs[i], "log"), nil
		}
	}
	return dir, nil
}

func isDir(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.IsDir()
}

// openReadOnly opens the log for reading only: the embedded log without
// its lock, or the Kafka topic without creating it. timeout is the
// command's --timeout, which bounds the connection too (ctx has it as its
// deadline).
func (f *logFlags) openReadOnly(ctx context.Context, cmd *cobra.Command, logger *slog.Logger, timeout time.Duration) (*source, error) {
	if f.kafka.Enabled() {
		if cmd.Flags().Changed("dir") {
			return nil, usageErrorf("give either --dir or --kafka, not both")
		}
		cfg, err := f.kafka.Config()
		if err != nil {
			return nil, usageErrorf("%v", err)
		}
		cfg.SkipTopicCreation = true
		cfg.Logger = logger
		if timeout < kafkalog.DefaultConnectTimeout {
			// The connection is bounded by ctx's deadline; saying so in
			// the error needs the bound here as well.
			cfg.ConnectTimeout = timeout
		}
		l, err := kafkalog.Open(ctx, cfg)
		if err != nil {
			return nil, explainKafka(err, cfg)
		}
		return &source{log: l, name: fmt.Sprintf("Kafka topic %s at %s", cfg.Topic, strings.Join(cfg.BootstrapServers, ","))}, nil
	}
	dir, err := resolveDir(f.dir)
	if err != nil {
		return nil, err
	}
	l, err := filelog.Open(dir, filelog.Options{ReadOnly: true, Logger: logger})
	if err != nil {
		return nil, explainFilelog(err, dir)
	}
	src := &source{log: l, name: "embedded log " + dir}
	for _, t := range l.TornTails() {
		a := view.Anomaly{Kind: view.TornTail, Warning: true,
			Detail: fmt.Sprintf("%s: %d bytes after the last good record at byte %d: %s", t.File, t.Bytes, t.Pos, t.Reason)}
		if t.Partition >= 0 {
			a.Record = &view.RecordRef{Partition: t.Partition, Offset: t.Offset}
		}
		src.tornTails = append(src.tornTails, a)
	}
	return src, nil
}

// explainFilelog turns an open error into one a person can act on.
func explainFilelog(err error, dir string) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return usageErrorf("%s holds no rlmm log (%v)", dir, err)
	case errors.Is(err, rlmm.ErrInvalidArgument), errors.Is(err, rlmm.ErrCorrupt):
		return usageErrorf("%v", err)
	case errors.Is(err, fs.ErrPermission):
		return usageErrorf("%s cannot be read: permission denied (%v)", dir, err)
	}
	return fmt.Errorf("opening the log in %s: %w", dir, err)
}

// explainKafka turns a Kafka open error into one a person can act on.
func explainKafka(err error, cfg kafkalog.Config) error {
	if errors.Is(err, kafkalog.ErrTopicNotFound) {
		return usageErrorf("the Kafka cluster at %s has no topic %s (is tiered storage enabled? is --kafka-topic right?)",
			strings.Join(cfg.BootstrapServers, ","), cfg.Topic)
	}
	return fmt.Errorf("%w", err)
}

// readTimeout is the default bound of reading a whole log.
const readTimeout = 10 * time.Minute

package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/rlmm-go/rlmm/test/kafkatest"
)

// curve is the restart curve at one event count (scripts/bench-broker.sh
// curve calls it once per count): the restart workload of restart, written
// once and restarted many times, so every mode restarts the same broker on
// the same data.
//
//   - The tiered broker (KAFKA_TIERED=1) is prepared once with rlmm's
//     plugin as its RLMM: the topic, its records tiered, N events in the
//     topic partition's metadata partition. Its modes kafka and rlmm are
//     restarts of this one directory with the RLMM lines of
//     server.properties switched (withRLMM): the metadata topic, the
//     remote segments and the sidecar's snapshot directory stay. Neither
//     RLMM writes to the metadata topic at a start, so every restart reads
//     the same log.
//   - The floor, none, is a second broker with tiered storage off, prepared
//     once the same way (restart's mode none: the N events in a plain topic
//     of 50 partitions). It cannot be the same directory: a broker with
//     tiered storage off loads a tiered partition with its log start offset
//     raised to its first local segment (Kafka's LogLoader) and writes that
//     into its checkpoint at the stop, so the remote records would no
//     longer be served to the next tiered restart.
//   - One warm-up restart of each mode (rlmm first: its sidecar reads the
//     events it has not read yet and writes its snapshot at the stop, as a
//     broker's sidecar has at any later restart; and every log is in the
//     page cache), results kept as warmup-MODE-N.json, not in the medians.
//   - Then runs turns of the three modes, each turn starting with another
//     mode (kafka rlmm none, rlmm none kafka, none kafka rlmm, ...), each
//     restart timed by timeRestart and written to restart-MODE-N-R.json.
//     After the timing: the broker's live heap (jcmd GC.class_histogram, a
//     full GC), then the stop, which must be clean (the log directory's
//     .kafka_cleanshutdown: an unclean stop would make the next start
//     recover the logs and time that), and no OutOfMemoryError in the
//     broker's output.
//
// Only one broker runs at a time. Their directories (under BROKERBENCH_DIR)
// are removed at the end unless BROKERBENCH_KEEP is set.
func curve(args []string) (map[string]any, error) {
	var o options
	fs := flag.NewFlagSet("curve", flag.ContinueOnError)
	fs.IntVar(&o.events, "events", 1000000, "metadata events written once before the restarts")
	fs.IntVar(&o.runs, "runs", 3, "timed restarts per mode (the modes taking turns)")
	fs.StringVar(&o.out, "out", "", "directory for the results: restart-MODE-N-R.json and warmup-MODE-N.json")
	fs.StringVar(&o.heap, "heap", "1g", "the broker's heap (-Xms and -Xmx), the same for every mode")
	fs.BoolVar(&o.warmup, "warmup", true, "one untimed restart of each mode before the timed ones")
	fs.StringVar(&o.pluginJar, "plugin-jar", "", "rlmm's plugin jar")
	fs.StringVar(&o.binary, "rlmm-binary", "", "the rlmm binary")
	timeout := fs.Duration("timeout", 6*time.Hour, "the whole run's limit")
	if err := fs.Parse(args); err != nil {
		return nil, fmt.Errorf("%w: %v", errUsage, err)
	}
	if o.events < 2 || o.runs < 1 || o.out == "" || o.pluginJar == "" || o.binary == "" {
		return nil, fmt.Errorf("%w: curve --events N (>= 2) --runs R (>= 1) --out DIR --plugin-jar J --rlmm-binary B", errUsage)
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	began := time.Now()
	// A start that loads tens of GiB of logs and a stop of a broker whose
	// RLMM is still replaying take longer than kafkatest's defaults allow.
	long := func(c *kafkatest.Config) { c.StartTimeout, c.StopTimeout = 15*time.Minute, 300*time.Second }

	to := o
	to.mode = "rlmm"
	tiered, err := startNodesWith(ctx, to, 1, "", long)
	if err != nil {
		return nil, err
	}
	defer tiered.close()
	// Kafka's RLMM replays every event before the first remote fetch: on a
	// loaded 2-core machine about 13 µs each (30,000,000: 6.5 minutes).
	fetchWait := 10*time.Minute + time.Duration(o.events)*40*time.Microsecond
	tiered.fetchWait = fetchWait
	logf("curve %d: preparing the tiered broker %s", o.events, tiered.dir)
	tieredPrep, err := prepareRestart(ctx, to, tiered)
	if err != nil {
		return nil, err
	}
	if err := tiered.stopClean(ctx); err != nil {
		return nil, err
	}
	fo := o
	fo.mode = modeNone
	floor, err := startNodesWith(ctx, fo, 1, "", long)
	if err != nil {
		return nil, err
	}
	defer floor.close()
	floor.fetchWait = fetchWait
	logf("curve %d: preparing the broker without tiered storage %s", o.events, floor.dir)
	floorPrep, err := prepareRestart(ctx, fo, floor)
	if err != nil {
		return nil, err
	}
	if err := floor.stopClean(ctx); err != nil {
		return nil, err
	}
	prepared := time.Since(began)

	one := func(mode, file string) error {
		b, prep := tiered, tieredPrep
		if mode == modeNone {
			b, prep = floor, floorPrep
		} else if err := b.setRLMM(mode); err != nil {
			return err
		}
		start := time.Now()
		out := maps.Clone(prep)
		out["mode"] = mode
		res, err := timeRestart(ctx, b, out)
		if err == nil {
			res["brokerLiveHeapMiB"], err = b.liveHeapMiB(ctx)
		}
		err = errors.Join(err, b.stopClean(ctx))
		if err != nil {
			return fmt.Errorf("%s restart (%s): %w", mode, file, err)
		}
		res["wallMs"] = time.Since(start).Milliseconds()
		logf("curve %d: %s: %s answer to fetch %v ms (launch to answer %v ms), %v ms in all", o.events, file, mode,
			res["answerToRemoteFetchMs"], res["launchToAnswerMs"], res["wallMs"])
		return writeJSON(filepath.Join(o.out, file), res)
	}
	if o.warmup {
		for _, mode := range []string{"rlmm", "kafka", modeNone} {
			if err := one(mode, fmt.Sprintf("warmup-%s-%d.json", mode, o.events)); err != nil {
				return nil, err
			}
		}
	}
	for r := 1; r <= o.runs; r++ {
		for _, mode := range turn(r) {
			if err := one(mode, fmt.Sprintf("restart-%s-%d-%d.json", mode, o.events, r)); err != nil {
				return nil, err
			}
		}
	}
	return map[string]any{
		"workload": "curve", "events": o.events, "runs": o.runs, "heap": o.heap, "out": o.out,
		"tieredFillMs": tieredPrep["fillMs"], "floorFillMs": floorPrep["fillMs"],
		"prepareMs": prepared.Milliseconds(), "totalMs": time.Since(began).Milliseconds(),
		"diskBytes": dirBytes(tiered.dir) + dirBytes(floor.dir),
	}, nil
}

// curveModes are the restart curve's modes in their first turn's order.
var curveModes = [3]string{"kafka", "rlmm", modeNone}

// turn returns the order of the modes in turn r (from 1): each turn starts
// with the next mode, so no mode always runs first.
func turn(r int) []string {
	out := make([]string, len(curveModes))
	for i := range curveModes {
		out[i] = curveModes[(r-1+i)%len(curveModes)]
	}
	return out
}

// setRLMM makes the stopped one-node broker b start with the RLMM of mode
// (kafka or rlmm) on its data.
func (b *broker) setRLMM(mode string) error {
	switch mode {
	case "kafka":
		b.rlmm = kafkatest.RLMMKafka
	case "rlmm":
		if b.o.pluginJar == "" || b.o.binary == "" {
			return fmt.Errorf("%w: the RLMM rlmm needs the plugin jar and the rlmm binary", errUsage)
		}
		b.rlmm = kafkatest.RLMMPlugin
	default:
		return fmt.Errorf("%w: no RLMM for mode %q", errUsage, mode)
	}
	b.o.mode = mode
	return nil
}

// stopClean stops the one-node broker b and checks that it stopped
// cleanly: its log directory holds Kafka's clean-shutdown file (else the
// next start recovers the logs, and times that) and its output no
// OutOfMemoryError.
func (b *broker) stopClean(ctx context.Context) error {
	b.stop()
	node := b.nodeDir(1)
	var errs []error
	if _, err := os.Stat(filepath.Join(node, "data", ".kafka_cleanshutdown")); err != nil {
		errs = append(errs, fmt.Errorf("the broker in %s did not stop cleanly (no data/.kafka_cleanshutdown; see its broker.log): %w", b.dir, err))
	}
	for _, name := range []string{"broker.out", "broker.log"} {
		if out, err := os.ReadFile(filepath.Join(node, name)); err == nil && strings.Contains(string(out), "OutOfMemoryError") {
			errs = append(errs, fmt.Errorf("the broker in %s ran out of heap (OutOfMemoryError in %s): raise --heap", b.dir, name))
		}
	}
	return errors.Join(errs...)
}

// liveHeapMiB is the running one-node broker's live heap in MiB (a full GC).
func (b *broker) liveHeapMiB(ctx context.Context) (float64, error) {
	pid, err := b.brokerPid(ctx, 1)
	if err != nil {
		return 0, err
	}
	total, _, err := liveHeap(ctx, pid)
	return float64(total) / (1 << 20), err
}

// dirBytes is the size of the files under dir (0 when it cannot be read).
func dirBytes(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// logf writes a progress line to stderr (stdout is the JSON result).
func logf(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "%s brokerbench: %s\n", time.Now().UTC().Format("15:04:05"), fmt.Sprintf(format, a...))
}

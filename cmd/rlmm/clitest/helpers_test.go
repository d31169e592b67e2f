package clitest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/eventlog/filelog"
	"github.com/rlmm-go/rlmm/wire"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// rlmmBinary is the path of the command under test.
var rlmmBinary string

func TestMain(m *testing.M) {
	os.Exit(buildAndRun(m))
}

func buildAndRun(m *testing.M) int {
	if bin := os.Getenv("RLMM_BINARY"); bin != "" {
		rlmmBinary = bin
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "rlmm-clitest-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "clitest:", err)
		return 2
	}
	defer os.RemoveAll(dir)
	rlmmBinary = filepath.Join(dir, "rlmm")
	build := exec.Command("go", "build", "-o", rlmmBinary, "github.com/rlmm-go/rlmm/cmd/rlmm")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "clitest: building rlmm:", err)
		return 2
	}
	return m.Run()
}

// result is what one run of the command produced.
type result struct {
	stdout, stderr string
	code           int
}

// run runs rlmm with args in dir and returns its output and exit status.
func run(t *testing.T, dir string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, rlmmBinary, args...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := result{stdout: stdout.String(), stderr: stderr.String()}
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		res.code = exit.ExitCode()
	default:
		t.Fatalf("running rlmm %v: %v", args, err)
	}
	return res
}

// mustCode fails t unless r exited with code.
func mustCode(t *testing.T, r result, code int, args ...string) {
	t.Helper()
	if r.code != code {
		t.Fatalf("rlmm %v exited %d, want %d\nstdout:\n%s\nstderr:\n%s", args, r.code, code, r.stdout, r.stderr)
	}
}

// simulateReport is the part of simulate's JSON report the tests check.
type simulateReport struct {
	OK                 bool     `json:"ok"`
	Differences        []string `json:"differences"`
	Rejected           int64    `json:"rejected"`
	Events             int64    `json:"events"`
	Mutations          int64    `json:"mutations"`
	MutationsPerSec    float64  `json:"mutationsPerSec"`
	Lookups            int64    `json:"lookups"`
	LookupsPerSec      float64  `json:"lookupsPerSec"`
	Partitions         int      `json:"partitions"`
	Brokers            int      `json:"brokers"`
	MetadataPartitions int32    `json:"metadataPartitions"`
	LiveSegments       int64    `json:"liveSegments"`
	SegmentsCopied     int64    `json:"segmentsCopied"`
	MultiEpochSegments int64    `json:"multiEpochSegments"`
	HeapBytesPerSeg    float64  `json:"heapBytesPerSegment"`
	MutationLatency    struct {
		Count int64   `json:"count"`
		P50Us float64 `json:"p50Us"`
		P99Us float64 `json:"p99Us"`
		MaxUs float64 `json:"maxUs"`
	} `json:"mutationLatency"`
	Restart struct {
		DurationMs     float64 `json:"durationMs"`
		EventsReplayed int64   `json:"eventsReplayed"`
		EventsTotal    int64   `json:"eventsTotal"`
	} `json:"restart"`
	RunDir string `json:"runDir"`
}

// smallSimulation is the argument list of a quick simulation.
var smallSimulation = []string{"simulate", "--partitions", "12", "--rounds", "4", "--records-per-segment", "50",
	"--lookups", "2", "--metadata-partitions", "6", "--seed", "5", "--json", "--quiet"}

// simulate runs a small simulation in a new directory and returns the
// working directory and the report.
func simulate(t *testing.T) (string, simulateReport) {
	t.Helper()
	work := t.TempDir()
	r := run(t, work, smallSimulation...)
	mustCode(t, r, 0, smallSimulation...)
	var rep simulateReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("simulate --json printed no JSON report (%v):\n%s", err, r.stdout)
	}
	if !filepath.IsAbs(rep.RunDir) {
		rep.RunDir = filepath.Join(work, rep.RunDir)
	}
	return work, rep
}

// publish appends raw records to the embedded log in dir, each to its
// partition, and returns their offsets.
func publish(t *testing.T, dir string, records []planted) []int64 {
	t.Helper()
	l, err := filelog.Open(dir, filelog.Options{})
	if err != nil {
		t.Fatalf("opening the simulated log to plant records: %v", err)
	}
	defer l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	offsets := make([]int64, len(records))
	for i, r := range records {
		if offsets[i], err = l.Publish(ctx, r.partition, r.value); err != nil {
			t.Fatalf("planting record %d: %v", i, err)
		}
	}
	return offsets
}

// planted is a raw record to plant in a log.
type planted struct {
	partition int32
	value     []byte
}

// eventRecord encodes ev for the metadata partition Kafka's partitioner
// gives its user partition.
func eventRecord(t *testing.T, ev wire.Event, partitions int32) planted {
	t.Helper()
	b, err := wire.AppendEvent(nil, &ev)
	if err != nil {
		t.Fatalf("encoding %v: %v", ev, err)
	}
	tp, _ := ev.TopicIDPartition()
	return planted{partition: wire.MetadataPartition(tp, partitions), value: b}
}

// newSegment returns a COPY_SEGMENT_STARTED segment of tp.
func newSegment(tp rlmm.TopicIDPartition, start, end, tsMs int64) rlmm.SegmentMetadata {
	return rlmm.SegmentMetadata{ID: rlmm.SegmentID{TopicIDPartition: tp, ID: rlmm.RandomUuid()}, StartOffset: start,
		EndOffset: end, MaxTimestampMs: tsMs, BrokerID: 7, EventTimestampMs: tsMs,
		LeaderEpochs: []rlmm.EpochStart{{Epoch: 0, StartOffset: start}}, SizeInBytes: 1000, State: rlmm.CopySegmentStarted}
}

// treeDigest returns a digest of every path, mode, size and content under
// dir, to show that a command changed nothing there.
func treeDigest(t *testing.T, dir string) string {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s %v %d\n", path, info.Mode(), info.Size())
		if info.Mode().IsRegular() {
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			h.Write(data)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("digest of %s: %v", dir, err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// copyTree copies the regular files and directories under src to dst.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
	if err != nil {
		t.Fatalf("copying %s to %s: %v", src, dst, err)
	}
}

// mustNotPanic fails t if a run printed a Go stack trace.
func mustNotPanic(t *testing.T, r result, args ...string) {
	t.Helper()
	if strings.Contains(r.stderr, "goroutine ") || strings.Contains(r.stderr, "panic") {
		t.Fatalf("rlmm %v printed a stack trace:\n%s", args, r.stderr)
	}
}

// realBootstrap returns the address of the real Kafka broker of `make test`
// (RLMM_KAFKA_BOOTSTRAP), or skips saying why (fails in CI, where make test
// starts one).
func realBootstrap(t *testing.T) string {
	t.Helper()
	addr := os.Getenv("RLMM_KAFKA_BOOTSTRAP")
	if addr == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("RLMM_KAFKA_BOOTSTRAP unset in CI: make test starts the broker")
		}
		t.Skip("RLMM_KAFKA_BOOTSTRAP unset: no real Kafka broker to test against; start one with " +
			"`go run ./test/kafkatest/cmd/kafkatest start <dir>` and export the variable it prints (make test does this)")
	}
	return addr
}

// kafkaAdmin returns a kadm client on addr, closed when the test ends.
func kafkaAdmin(t *testing.T, addr string) *kadm.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

// deleteRecordsBefore moves the log start offset of topic's partition p to
// offset (Kafka's DeleteRecords).
func deleteRecordsBefore(t *testing.T, adm *kadm.Client, topic string, p int32, offset int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var os kadm.Offsets
	os.Add(kadm.Offset{Topic: topic, Partition: p, At: offset})
	resp, err := adm.DeleteRecords(ctx, os)
	if err == nil {
		if r, ok := resp.Lookup(topic, p); !ok {
			err = fmt.Errorf("no answer for partition %d", p)
		} else {
			err = r.Err
		}
	}
	if err != nil {
		t.Fatalf("DeleteRecords %s-%d before %d: %v", topic, p, offset, err)
	}
}

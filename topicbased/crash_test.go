package topicbased

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/eventlog/filelog"
)

// The kill -9 test re-executes the test binary as a child that runs a
// manager over filelog (with periodic snapshots) and prints a line for every
// acknowledged mutation; the parent kills it at a random point, several
// times, then checks that every acknowledged mutation is there after a
// restart, from the snapshot and from a full replay alike.

const (
	childEnv      = "RLMM_TOPICBASED_CRASH_CHILD" // the log directory
	childFirstEnv = "RLMM_TOPICBASED_CRASH_FIRST" // the first segment number
	crashParts    = 3
)

func crashPartitions() []rlmm.TopicIDPartition {
	return []rlmm.TopicIDPartition{topicPartition("crash", 9, 0), topicPartition("crash", 9, 1), topicPartition("crash", 9, 2)}
}

// runCrashChild is the child's workload; it runs until killed.
func runCrashChild() int {
	dir := os.Getenv(childEnv)
	first, err := strconv.Atoi(os.Getenv(childFirstEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, "child: bad", childFirstEnv, err)
		return 2
	}
	l, err := filelog.Open(filepath.Join(dir, "log"), filelog.Options{Partitions: crashParts})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child: open log:", err)
		return 2
	}
	ctx := context.Background()
	m, err := Start(ctx, Config{Log: l, SnapshotDir: filepath.Join(dir, "snap"), SnapshotInterval: 20 * time.Millisecond})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child: start:", err)
		return 2
	}
	tps := crashPartitions()
	if err := m.OnPartitionLeadershipChanges(ctx, tps, nil); err != nil {
		fmt.Fprintln(os.Stderr, "child: assign:", err)
		return 2
	}
	out := bufio.NewWriter(os.Stdout)
	for i := first; ; i++ {
		tp := tps[i%len(tps)]
		md := segment(tp, uint64(i), int64(i)*10, int64(i)*10+9)
		if err := m.AddSegment(ctx, md); err != nil {
			fmt.Fprintln(os.Stderr, "child: add:", err)
			return 2
		}
		fmt.Fprintf(out, "add %d\n", i)
		_ = out.Flush()
		if i%2 == 0 {
			if err := m.UpdateSegment(ctx, update(md, rlmm.CopySegmentFinished)); err != nil {
				fmt.Fprintln(os.Stderr, "child: finish:", err)
				return 2
			}
			fmt.Fprintf(out, "fin %d\n", i)
			_ = out.Flush()
		}
	}
}

func TestKill9NoAcknowledgedMutationLost(t *testing.T) {
	exe, err := os.Executable()
	must(t, err)
	dir := t.TempDir()
	acked := map[int]rlmm.SegmentState{}
	next := 0
	for round, kills := range []int{5, 300, 1, 120, 400, 17} {
		cmd := exec.Command(exe, "-test.run=^$")
		cmd.Env = append(os.Environ(), childEnv+"="+dir, childFirstEnv+"="+strconv.Itoa(next))
		stdout, err := cmd.StdoutPipe()
		must(t, err)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		must(t, cmd.Start())
		sc := bufio.NewScanner(stdout)
		lines := 0
		for lines < kills && sc.Scan() {
			var op string
			var i int
			if _, err := fmt.Sscanf(sc.Text(), "%s %d", &op, &i); err != nil {
				t.Fatalf("round %d: child printed %q", round, sc.Text())
			}
			acked[i] = map[string]rlmm.SegmentState{"add": rlmm.CopySegmentStarted, "fin": rlmm.CopySegmentFinished}[op]
			next = max(next, i+1)
			lines++
		}
		must(t, cmd.Process.Signal(syscall.SIGKILL))
		_ = cmd.Wait()
		if lines < kills {
			t.Fatalf("round %d: child stopped after %d acknowledgements: %s", round, lines, stderr.String())
		}
		// Lines printed after the kill point were acknowledged too.
		for sc.Scan() {
			var op string
			var i int
			if _, err := fmt.Sscanf(sc.Text(), "%s %d", &op, &i); err == nil {
				acked[i] = map[string]rlmm.SegmentState{"add": rlmm.CopySegmentStarted, "fin": rlmm.CopySegmentFinished}[op]
				next = max(next, i+1)
			}
		}
	}

	l, err := filelog.Open(filepath.Join(dir, "log"), filelog.Options{Partitions: crashParts})
	must(t, err)
	t.Cleanup(func() { _ = l.Close() })
	tps := crashPartitions()
	fromSnapshot := startManager(t, Config{Log: l, SnapshotDir: filepath.Join(dir, "snap"), SnapshotInterval: -1})
	if err := fromSnapshot.Stats().SnapshotError; err != nil {
		t.Errorf("a snapshot written by a killed process is unusable: %v", err)
	}
	assign(t, fromSnapshot, tps...)
	full := startManager(t, Config{Log: l})
	assign(t, full, tps...)
	if err := sameViews(viewOf(t, fromSnapshot, tps), viewOf(t, full, tps)); err != nil {
		t.Errorf("snapshot + tail differs from a full replay: %v", err)
	}
	if st := fromSnapshot.Stats(); st.SnapshotSegments == 0 || st.Consumed() >= full.Stats().Consumed() {
		t.Errorf("the restart did not start from a snapshot: %d segments loaded, replayed %d of %d events",
			st.SnapshotSegments, st.Consumed(), full.Stats().Consumed())
	}
	states := map[rlmm.SegmentID]rlmm.SegmentState{}
	for _, tp := range tps {
		list, err := full.ListSegments(tp)
		must(t, err)
		for _, s := range list {
			states[s.ID] = s.State
		}
	}
	for i, want := range acked {
		md := segment(tps[i%len(tps)], uint64(i), 0, 0)
		got, ok := states[md.ID]
		if !ok || got < want {
			t.Errorf("segment %d: acknowledged %s, after restart present=%v state %s", i, want, ok, got)
		}
	}
	if len(acked) == 0 {
		t.Fatal("no mutation was acknowledged")
	}
}

package filelog

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The kill -9 test re-executes this test binary as a child that publishes
// until it is killed. TestMain switches on crashChildEnv.
const (
	crashChildEnv      = "FILELOG_CRASH_CHILD_DIR"
	crashRoundEnv      = "FILELOG_CRASH_ROUND"
	crashPartitions    = 4
	crashPublishers    = 8
	crashSegmentBytes  = 2048 // small, so kills land around rolls
	crashJournalBytes  = 8192 // and around checkpoints
	crashRounds        = 20
	crashAckTimeout    = 30 * time.Second
	crashMaxRunBeforeK = 150 * time.Millisecond
)

// runCrashChild opens dir and publishes from several goroutines, printing
// "partition offset value" for every acknowledged record, until killed.
func runCrashChild(dir string) int {
	l, err := Open(dir, Options{Partitions: crashPartitions, SegmentBytes: crashSegmentBytes, JournalBytes: crashJournalBytes})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child open:", err)
		return 2
	}
	round := os.Getenv(crashRoundEnv)
	var out sync.Mutex
	var wg sync.WaitGroup
	for g := range crashPublishers {
		wg.Go(func() {
			for i := 0; ; i++ {
				p := int32((g + i) % crashPartitions)
				v := fmt.Sprintf("r%s-g%d-i%d-%s", round, g, i, strings.Repeat("v", i%50))
				off, err := l.Publish(context.Background(), p, []byte(v))
				if err != nil {
					fmt.Fprintln(os.Stderr, "child publish:", err)
					os.Exit(3)
				}
				line := fmt.Sprintf("%d %d %s\n", p, off, v)
				out.Lock()
				os.Stdout.WriteString(line) // one write per line: a kill cannot split it
				out.Unlock()
			}
		})
	}
	wg.Wait()
	return 0
}

func TestKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode: it runs the test binary as a child 20 times")
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed))
	dir := t.TempDir() + "/log"
	acked := make(map[[2]int64]string)
	tornTails := 0
	for round := range crashRounds {
		lines := runAndKill(t, dir, round, time.Duration(rng.Int64N(int64(crashMaxRunBeforeK))))
		for _, line := range lines {
			f := strings.SplitN(line, " ", 3)
			if len(f) != 3 {
				t.Fatalf("round %d: bad child line %q", round, line)
			}
			p, err1 := strconv.ParseInt(f[0], 10, 32)
			off, err2 := strconv.ParseInt(f[1], 10, 64)
			if err1 != nil || err2 != nil {
				t.Fatalf("round %d: bad child line %q", round, line)
			}
			key := [2]int64{p, off}
			if prev, dup := acked[key]; dup {
				t.Fatalf("round %d: partition %d offset %d acknowledged twice (%q, then %q)", round, p, off, prev, f[2])
			}
			acked[key] = f[2]
		}
		// Every third round, make the files look as if the power had
		// failed instead: unsynced bytes lost or zeroed.
		if round%3 == 1 {
			simulatePowerLoss(t, dir, acked, rng)
		}
		// Verify, alternately read-only (so the next child recovers the
		// crash itself) and writable (recovery by this process).
		readOnly := round%2 == 0
		l, err := Open(dir, Options{ReadOnly: readOnly})
		if err != nil {
			t.Fatalf("round %d: reopening after kill -9: %v", round, err)
		}
		tornTails += len(l.TornTails())
		for p := range int32(crashPartitions) {
			recs, err := readAllRecords(t, l, p)
			if err != nil {
				t.Fatalf("round %d: reading partition %d: %v", round, p, err)
			}
			vals := values(t, recs) // offsets dense from 0
			for key, v := range acked {
				if key[0] != int64(p) {
					continue
				}
				if key[1] >= int64(len(vals)) {
					t.Fatalf("round %d: acknowledged partition %d offset %d lost (partition ends at %d)", round, p, key[1], len(vals))
				}
				if vals[key[1]] != v {
					t.Fatalf("round %d: partition %d offset %d is %q, acknowledged %q", round, p, key[1], vals[key[1]], v)
				}
			}
		}
		mustClose(t, l)
		t.Logf("round %d: killed after %d acknowledgements, %d in total", round, len(lines), len(acked))
	}
	if len(acked) == 0 {
		t.Fatalf("no record was ever acknowledged")
	}
	t.Logf("%d torn tails recovered by the verifying opens (the children recover the others)", tornTails)
}

// runAndKill starts the child on dir, lets it publish for about d after its
// first acknowledgement, kills it with SIGKILL and returns the complete
// lines it printed.
func runAndKill(t *testing.T, dir string, round int, d time.Duration) []string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+dir, crashRoundEnv+"="+strconv.Itoa(round))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting the child: %v", err)
	}
	r := bufio.NewReader(stdout)
	var lines []string
	first := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				if err == io.EOF {
					err = nil // a partial last line, if any, was never complete
				}
				done <- err
				return
			}
			lines = append(lines, strings.TrimSuffix(line, "\n"))
			if len(lines) == 1 {
				close(first)
			}
		}
	}()
	select {
	case <-first:
	case err := <-done:
		cmd.Wait()
		t.Fatalf("round %d: child ended before its first acknowledgement (%v): %s", round, err, stderr.String())
	case <-time.After(crashAckTimeout):
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("round %d: no acknowledgement within %v: %s", round, crashAckTimeout, stderr.String())
	}
	if round == 0 {
		// While the child holds the log, this process cannot open it.
		if l, err := Open(dir, Options{}); !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), fmt.Sprintf("pid %d", cmd.Process.Pid)) {
			if err == nil {
				l.Close()
			}
			cmd.Process.Kill()
			<-done
			cmd.Wait()
			t.Fatalf("opening a log held by child pid %d: got %v, want ErrLocked naming it", cmd.Process.Pid, err)
		}
	}
	time.Sleep(d)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("round %d: kill: %v", round, err)
	}
	if err := <-done; err != nil {
		t.Fatalf("round %d: reading the child: %v", round, err)
	}
	err = cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("round %d: child did not die of SIGKILL (%v): %s", round, err, stderr.String())
	}
	return lines
}

// simulatePowerLoss damages dir the way a power failure could after the
// last fsync: the journal keeps every acknowledged record but loses or
// zeroes what follows; each partition keeps its records below the journal's
// checkpoint but loses, zeroes or drops (whole segment files created since)
// anything after.
func simulatePowerLoss(t *testing.T, dir string, acked map[[2]int64]string, rng *rand.Rand) {
	t.Helper()
	journals, err := filepath.Glob(filepath.Join(dir, journalPrefix+"*"+journalSuffix))
	if err != nil || len(journals) == 0 {
		t.Fatalf("no journal in %s (%v)", dir, err)
	}
	sort.Strings(journals)
	jpath := journals[len(journals)-1]
	seq, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(filepath.Base(jpath), journalPrefix), journalSuffix), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(jpath)
	if err != nil {
		t.Fatal(err)
	}
	h, recs, _, err := readJournal(data, seq, crashPartitions)
	if _, torn := isFrameError(err); err != nil && !torn {
		t.Fatalf("journal %s: %v", jpath, err)
	}
	keep := int64(len(appendJournalHeader(nil, h)))
	for _, r := range recs {
		if v, ok := acked[[2]int64{int64(r.partition), r.offset}]; ok && v == string(r.value) {
			keep = max(keep, r.pos+frameHeaderSize+journalRecordPrefix+int64(len(r.value)))
		}
	}
	lossyCut(t, jpath, keep, rng)
	for p := range int32(crashPartitions) {
		segs := segmentFiles(t, dir, p)
		c := h.Checkpoint[p]
		i := len(segs) - 1
		for ; i > 0; i-- {
			base, _ := strconv.ParseInt(strings.TrimSuffix(filepath.Base(segs[i]), segmentSuffix), 10, 64)
			if base <= c {
				break
			}
		}
		base, _ := strconv.ParseInt(strings.TrimSuffix(filepath.Base(segs[i]), segmentSuffix), 10, 64)
		seg, err := os.ReadFile(segs[i])
		if err != nil {
			t.Fatal(err)
		}
		keepSeg := int64(-1) // byte position of record c
		count, end, _ := scanSegment(seg, base, func(off, pos int64, _ []byte) {
			if off == c {
				keepSeg = pos
			}
		})
		if keepSeg < 0 {
			if base+count < c {
				t.Fatalf("%s ends at offset %d, below the checkpoint %d", segs[i], base+count, c)
			}
			keepSeg = end
		}
		lossyCut(t, segs[i], keepSeg, rng)
		for _, later := range segs[i+1:] {
			if rng.IntN(2) == 0 {
				if err := os.Remove(later); err != nil {
					t.Fatal(err)
				}
			} else {
				lossyCut(t, later, 0, rng)
			}
		}
	}
}

// lossyCut truncates path at a random point at or after keep, and sometimes
// appends zeros (pages whose size update reached the disk but whose data did
// not).
func lossyCut(t *testing.T, path string, keep int64, rng *rand.Rand) {
	t.Helper()
	size := fileSize(t, path)
	if keep > size {
		t.Fatalf("%s: asked to keep %d bytes of %d", path, keep, size)
	}
	if err := os.Truncate(path, keep+rng.Int64N(size-keep+1)); err != nil {
		t.Fatal(err)
	}
	if rng.IntN(3) == 0 {
		appendBytes(t, path, make([]byte, 1+rng.IntN(100)))
	}
}

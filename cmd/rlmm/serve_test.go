package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"go.uber.org/goleak"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/rpc/brokerframe"
	"github.com/rlmm-go/rlmm/rpc/brokerframe/frametest"
	"github.com/rlmm-go/rlmm/rpc/rlmmpb"
	"github.com/rlmm-go/rlmm/topicbased"
)

const serveTestTimeout = 60 * time.Second

// syncBuffer is a bytes.Buffer safe for the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// servingProc is an `rlmm serve` run in this process.
type servingProc struct {
	cancel context.CancelFunc
	done   chan int
	stdout syncBuffer
	stderr syncBuffer
}

// startServe runs `rlmm serve args...` in process and returns once it is
// running (or has exited).
func startServe(t *testing.T, args ...string) *servingProc {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	p := &servingProc{cancel: cancel, done: make(chan int, 1)}
	// In process, GOMAXPROCS is the test binary's: left alone unless the
	// test asks (args come after, so a test's own --serving-procs wins).
	go func() {
		p.done <- run(ctx, append([]string{"serve", "--serving-procs", "0"}, args...), strings.NewReader(""), &p.stdout, &p.stderr)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-p.done:
		case <-time.After(serveTestTimeout):
			t.Error("rlmm serve did not stop")
		}
	})
	return p
}

// stop cancels the run (the in-process SIGTERM) and returns its exit status.
func (p *servingProc) stop(t *testing.T) int {
	t.Helper()
	p.cancel()
	select {
	case code := <-p.done:
		p.done <- code // for the cleanup
		return code
	case <-time.After(serveTestTimeout):
		t.Fatal("rlmm serve did not stop")
	}
	return -1
}

// waitFile waits for path to exist (the ready file) and returns its lines
// as a map, failing if done reports an exit first.
func waitFile(t *testing.T, path string, done chan int, stderr fmt.Stringer) map[string]string {
	t.Helper()
	deadline := time.Now().Add(serveTestTimeout)
	for {
		if b, err := os.ReadFile(path); err == nil {
			out := map[string]string{}
			for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
				k, v, _ := strings.Cut(line, "=")
				out[k] = v
			}
			return out
		}
		select {
		case code := <-done:
			done <- code
			t.Fatalf("rlmm serve exited %d before it was ready:\n%s", code, stderr)
		case <-time.After(5 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never appeared:\n%s", path, stderr)
		}
	}
}

// shortTemp is a temporary directory short enough for a socket path.
func shortTemp(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "rlmm-serve-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// rpcClient is a frame client of the Unix socket, closed at cleanup.
func rpcClient(t *testing.T, socket string) *frametest.Client {
	return frametest.New(t, frametest.Dialer("unix", socket, nil), nil)
}

// brokerWork is what a broker does through the plugin: take leadership,
// wait for readiness, copy a segment (add, finish), look it up.
func brokerWork(t *testing.T, c *frametest.Client, tp rlmm.TopicIDPartition, segID rlmm.Uuid, start int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), serveTestTimeout)
	defer cancel()
	ptp := frametest.TopicIDPartition(tp)
	if _, err := c.OnPartitionLeadershipChanges(ctx, &rlmmpb.LeadershipChangesRequest{Leaders: []*rlmmpb.TopicIdPartition{ptp}}); err != nil {
		t.Fatalf("OnPartitionLeadershipChanges: %v", err)
	}
	copyAndLookup(t, c, tp, segID, start)
}

// copyAndLookup is brokerWork on a partition the server already hosts: one
// segment copied (added, finished) and looked up.
func copyAndLookup(t *testing.T, c *frametest.Client, tp rlmm.TopicIDPartition, segID rlmm.Uuid, start int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), serveTestTimeout)
	defer cancel()
	ptp := frametest.TopicIDPartition(tp)
	waitReady(t, ctx, c, ptp)
	id := frametest.UUID(segID)
	if _, err := c.AddSegment(ctx, &rlmmpb.AddSegmentRequest{Segment: &rlmmpb.SegmentMetadata{
		TopicIdPartition: ptp, SegmentId: id, StartOffset: start, EndOffset: start + 99, BrokerId: 1,
		LeaderEpochs: []*rlmmpb.EpochStart{{Epoch: 0, StartOffset: start}}, SegmentSizeInBytes: 100,
		State: rlmmpb.SegmentState_COPY_SEGMENT_STARTED,
	}}); err != nil {
		t.Fatalf("AddSegment: %v", err)
	}
	if _, err := c.UpdateSegment(ctx, &rlmmpb.UpdateSegmentRequest{Update: &rlmmpb.SegmentUpdate{
		TopicIdPartition: ptp, SegmentId: id, State: rlmmpb.SegmentState_COPY_SEGMENT_FINISHED, BrokerId: 1,
	}}); err != nil {
		t.Fatalf("UpdateSegment: %v", err)
	}
	lookup(t, c, tp, start+50, segID)
}

func waitReady(t *testing.T, ctx context.Context, c *frametest.Client, ptp *rlmmpb.TopicIdPartition) {
	t.Helper()
	for {
		ready, err := c.Ready(ctx, ptp)
		if err != nil {
			t.Fatalf("a lookup: %v", err)
		}
		if ready {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatal("never ready")
		case <-time.After(2 * time.Millisecond):
		}
	}
}

// lookup checks that offset of tp's epoch 0 is in segment want.
func lookup(t *testing.T, c *frametest.Client, tp rlmm.TopicIDPartition, offset int64, want rlmm.Uuid) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), serveTestTimeout)
	defer cancel()
	r, err := c.SegmentForOffset(ctx, &rlmmpb.SegmentForOffsetRequest{TopicIdPartition: frametest.TopicIDPartition(tp), LeaderEpoch: 0, Offset: offset})
	if err != nil {
		t.Fatalf("SegmentForOffset: %v", err)
	}
	got := rlmm.UuidFromBits(int64(r.GetSegment().GetSegmentId().GetMostSignificantBits()), int64(r.GetSegment().GetSegmentId().GetLeastSignificantBits()))
	if !r.Found || got != want || r.Segment.State != rlmmpb.SegmentState_COPY_SEGMENT_FINISHED {
		t.Fatalf("offset %d: found=%v segment %v state %v, want %v finished", offset, r.Found, got, r.GetSegment().GetState(), want)
	}
}

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestServeLifecycle runs rlmm serve over the embedded log in process:
// it serves, refuses a second server on its snapshot directory and on its
// socket (naming its pid), writes a final snapshot when stopped (exit 0),
// and a restart serves what the first recorded.
func TestServeLifecycle(t *testing.T) {
	// Registered first, so it runs after every other cleanup (the clients'
	// Close, the server's stop).
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
	dir := shortTemp(t)
	logDir, snap, socket, ready := filepath.Join(dir, "log"), filepath.Join(dir, "snap"), filepath.Join(dir, "s.sock"), filepath.Join(dir, "ready")
	args := []string{"--dir", logDir, "--snapshot-dir", snap, "--socket", socket, "--ready-file", ready,
		"--metrics-listen", "127.0.0.1:0", "--kafka-partitions", "8", "--broker-id", "3", "--log-format", "json"}
	p := startServe(t, args...)
	info := waitFile(t, ready, p.done, &p.stderr)
	if info["socket"] != socket || info["pid"] != fmt.Sprint(os.Getpid()) || info["metrics"] == "" {
		t.Fatalf("ready file %v", info)
	}
	c := rpcClient(t, socket)
	si, err := c.ServerInfo(context.Background())
	if err != nil || si.BrokerId != 3 || si.MetadataPartitions != 8 || si.Log != "embedded log "+logDir {
		t.Fatalf("ServerInfo %v %v", si, err)
	}
	// The same socket speaks the broker's frames: the hello's answer says who the server is.
	if fi := brokerHello(t, socket); fi.GetPid() != si.GetPid() || fi.GetBrokerId() != 3 {
		t.Fatalf("the broker hello on %s was answered by %v, want the server of ServerInfo %v", socket, fi, si)
	}
	// One socket, mode 0600: nothing else is served beside it.
	if st, err := os.Stat(socket); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("socket %s: %v %v, want mode 0600", socket, st, err)
	}
	if ents, err := os.ReadDir(dir); err != nil || len(ents) != 4 {
		t.Fatalf("%s holds %v (%v), want the log, the snapshots, the socket and the ready file", dir, ents, err)
	}
	tp := rlmm.TopicIDPartition{TopicID: rlmm.RandomUuid(), Topic: "orders", Partition: 2}
	seg := rlmm.RandomUuid()
	brokerWork(t, c, tp, seg, 0)
	if code, body := httpGet(t, "http://"+info["metrics"]+"/readyz"); code != http.StatusOK {
		t.Fatalf("/readyz %d %q", code, body)
	}
	if _, body := httpGet(t, "http://"+info["metrics"]+"/metrics"); !strings.Contains(body, `rlmm_mutation_duration_seconds_count{op="AddSegment",result="ok"} 1`) {
		t.Fatalf("/metrics lacks the add:\n%s", body)
	}

	t.Run("second server on the snapshot directory", func(t *testing.T) {
		_, stderr, code := runInProcess(t, "", "serve", "--dir", filepath.Join(dir, "log2"), "--snapshot-dir", snap, "--socket", filepath.Join(dir, "t.sock"))
		if code != exitCouldNotRun || !strings.Contains(stderr, snap) || !strings.Contains(stderr, fmt.Sprintf("pid %d", os.Getpid())) {
			t.Fatalf("exit %d, stderr %q: want 2 naming %s and pid %d", code, stderr, snap, os.Getpid())
		}
	})
	t.Run("second server on the socket", func(t *testing.T) {
		_, stderr, code := runInProcess(t, "", "serve", "--dir", filepath.Join(dir, "log3"), "--snapshot-dir", filepath.Join(dir, "snap3"), "--socket", socket)
		if code != exitCouldNotRun || !strings.Contains(stderr, socket) || !strings.Contains(stderr, fmt.Sprintf("pid %d", os.Getpid())) {
			t.Fatalf("exit %d, stderr %q: want 2 naming %s and pid %d", code, stderr, socket, os.Getpid())
		}
	})

	if code := p.stop(t); code != 0 {
		t.Fatalf("exit %d after stop:\n%s", code, p.stderr.String())
	}
	if p.stdout.String() != "" {
		t.Fatalf("serve printed on stdout: %q", p.stdout.String())
	}
	if _, err := os.Stat(filepath.Join(snap, topicbased.SnapshotFileName)); err != nil {
		t.Fatalf("no final snapshot: %v\n%s", err, p.stderr.String())
	}
	for _, gone := range []string{socket, ready} {
		if _, err := os.Stat(gone); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s left behind (%v)", gone, err)
		}
	}

	// A restart serves the segment again, from the snapshot.
	p = startServe(t, args...)
	waitFile(t, ready, p.done, &p.stderr)
	c = rpcClient(t, socket)
	ctx, cancel := context.WithTimeout(context.Background(), serveTestTimeout)
	defer cancel()
	if _, err := c.OnPartitionLeadershipChanges(ctx, &rlmmpb.LeadershipChangesRequest{Leaders: []*rlmmpb.TopicIdPartition{frametest.TopicIDPartition(tp)}}); err != nil {
		t.Fatal(err)
	}
	waitReady(t, ctx, c, frametest.TopicIDPartition(tp))
	lookup(t, c, tp, 10, seg)
	if code := p.stop(t); code != 0 {
		t.Fatalf("exit %d after the second stop:\n%s", code, p.stderr.String())
	}
	if !strings.Contains(p.stderr.String(), `"snapshot_segments":1`) {
		t.Fatalf("the restart did not load the snapshot's segment:\n%s", p.stderr.String())
	}
}

// TestServeBadFlags: every refusal of a flag or setting exits 3
// (exitSettingsRefused, which the broker plugin does not restart) naming it.
func TestServeBadFlags(t *testing.T) {
	dir := shortTemp(t)
	snap := filepath.Join(dir, "snap")
	token := filepath.Join(dir, "token")
	os.WriteFile(token, []byte("tok\n"), 0o600)
	props := filepath.Join(dir, "bad.properties")
	os.WriteFile(props, []byte("remote.log.metadata.topic.num.partitions=50\nno.such.setting=1\n"), 0o600)
	noSep := filepath.Join(dir, "nosep.properties")
	os.WriteFile(noSep, []byte("justakey\n"), 0o600)
	base := []string{"serve", "--dir", filepath.Join(dir, "log"), "--snapshot-dir", snap}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no log", []string{"serve", "--snapshot-dir", snap}, "--kafka"},
		{"no snapshot dir", []string{"serve", "--dir", dir}, "--snapshot-dir"},
		{"dir and kafka", append(base, "--kafka", "127.0.0.1:1"), "either --dir or --kafka"},
		{"plaintext TCP", append(base, "--listen-tcp", "127.0.0.1:0"), "--listen-tcp 127.0.0.1:0 without --token-file"},
		{"TCP not loopback", append(base, "--listen-tcp", "0.0.0.0:0", "--token-file", token), "not a loopback"},
		{"remote without TLS", append(base, "--listen-tcp", "0.0.0.0:0", "--token-file", token, "--allow-remote"), "--allow-remote needs TLS"},
		{"TLS without client CA or token", append(base, "--listen-tcp", "127.0.0.1:0", "--listen-tls-cert", token, "--listen-tls-key", token), "--listen-tls-client-ca"},
		{"token without TCP", append(base, "--token-file", token), "--listen-tcp"},
		{"missing token file", append(base, "--listen-tcp", "127.0.0.1:0", "--token-file", filepath.Join(dir, "nope")), "--token-file"},
		{"socket too long", append(base, "--socket", "/tmp/"+strings.Repeat("s", 120)), "--socket"},
		{"log format", append(base, "--log-format", "xml"), "--log-format"},
		{"log level", append(base, "--log-level", "loud"), "--log-level"},
		{"unknown property", append(base, "--properties", props), "no.such.setting"},
		{"property line", append(base, "--properties", noSep), "line 1"},
		{"missing properties", append(base, "--properties", filepath.Join(dir, "none")), "--properties"},
		{"negative consume wait", append(base, "--consume-wait", "-1s"), "--consume-wait"},
		{"metrics address", append(base, "--metrics-listen", "nonsense"), "--metrics-listen"},
		{"metrics not loopback", append(base, "--metrics-listen", "0.0.0.0:0"), "--metrics-listen"},
		{"not a flag", append(base, "--no-such-flag"), "--no-such-flag"},
		{"bad duration", append(base, "--shutdown-timeout", "soon"), "--shutdown-timeout"},
		{"consume wait past the limit", append(base, "--consume-wait", "9000h"), "--consume-wait 9000h0m0s: must be 0 (the default) to"},
		{"shutdown timeout past the limit", append(base, "--shutdown-timeout", "9000h"), "--shutdown-timeout 9000h0m0s: must be positive and at most"},
		{"snapshot interval past the limit", append(base, "--snapshot-interval", "9000h"), "--snapshot-interval 9000h0m0s: must be at most"},
		{"too many metadata partitions", append(base, "--kafka-partitions", "10001"), "--kafka-partitions is 10001, must be 0 to 10000"},
		{"negative serving procs", append(base, "--serving-procs", "-1"), "--serving-procs -1: must be 0"},
		{"serving procs past the limit", append(base, "--serving-procs", "5000"), "--serving-procs 5000: must be 0"},
		{"an argument", append(base, "extra"), "extra"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, code := runInProcess(t, "", tc.args...)
			if code != exitSettingsRefused || !strings.Contains(stderr, tc.want) || stdout != "" {
				t.Fatalf("exit %d, stdout %q, stderr %q: want 3 naming %q", code, stdout, stderr, tc.want)
			}
		})
	}
}

// TestServeStopsAsABinary runs the built binary and stops it with SIGTERM,
// and with the end of its stdin (--exit-with-stdin, the parent's death):
// exit 0 and a final snapshot either way.
func TestServeStopsAsABinary(t *testing.T) {
	bin := rlmmBinary(t)
	for _, how := range []string{"SIGTERM", "stdin closed"} {
		t.Run(how, func(t *testing.T) {
			dir := shortTemp(t)
			snap, socket, ready := filepath.Join(dir, "snap"), filepath.Join(dir, "s.sock"), filepath.Join(dir, "ready")
			cmd, done, stderr, stdin := startBinary(t, bin, "serve", "--dir", filepath.Join(dir, "log"), "--snapshot-dir", snap, "--socket", socket,
				"--ready-file", ready, "--exit-with-stdin="+fmt.Sprint(how == "stdin closed"))
			info := waitFile(t, ready, done, stderr)
			if info["pid"] != fmt.Sprint(cmd.Process.Pid) {
				t.Fatalf("ready file names pid %s, the child is %d", info["pid"], cmd.Process.Pid)
			}
			c := rpcClient(t, socket)
			tp := rlmm.TopicIDPartition{TopicID: rlmm.RandomUuid(), Topic: "t", Partition: 0}
			brokerWork(t, c, tp, rlmm.RandomUuid(), 100)
			var err error
			if how == "SIGTERM" {
				err = cmd.Process.Signal(syscall.SIGTERM)
			} else {
				err = stdin.Close()
			}
			if err != nil {
				t.Fatal(err)
			}
			select {
			case code := <-done:
				done <- code
				if code != 0 {
					t.Fatalf("exit %d after %s:\n%s", code, how, stderr)
				}
			case <-time.After(serveTestTimeout):
				t.Fatalf("no exit after %s", how)
			}
			if _, err := os.Stat(filepath.Join(snap, topicbased.SnapshotFileName)); err != nil {
				t.Fatalf("no final snapshot after %s: %v\n%s", how, err, stderr)
			}
			if !strings.Contains(stderr.String(), "final snapshot written") {
				t.Fatalf("the log does not say the final snapshot was written:\n%s", stderr)
			}
		})
	}
}

// TestServeNarrowsProcsWhenRestored: once the snapshot's state is built the
// server runs on --serving-procs Go processors (1 by default), as its
// /metrics shows (go_sched_gomaxprocs_threads); GOMAXPROCS set in the
// environment and --serving-procs 0 leave the processor count alone.
func TestServeNarrowsProcsWhenRestored(t *testing.T) {
	bin := rlmmBinary(t)
	if runtime.NumCPU() < 2 {
		t.Logf("this machine has %d CPU: the default count is already 1, so only the log lines tell the cases apart", runtime.NumCPU())
	}
	tests := []struct {
		name    string
		env     string // GOMAXPROCS in the child's environment; "" unset
		flags   []string
		want    int
		logLine string
	}{
		{"default", "", nil, 1, "serving on --serving-procs Go processors"},
		{"three", "", []string{"--serving-procs", "3"}, 3, "serving on --serving-procs Go processors"},
		{"set by the environment", "2", nil, 2, "GOMAXPROCS is set in the environment; --serving-procs is not applied"},
		{"zero leaves it", "", []string{"--serving-procs", "0"}, runtime.NumCPU(), ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(envGOMAXPROCS, tc.env) // restored after the test
			if tc.env == "" {
				if err := os.Unsetenv(envGOMAXPROCS); err != nil {
					t.Fatal(err)
				}
			}
			dir := shortTemp(t)
			ready := filepath.Join(dir, "ready")
			args := append([]string{"serve", "--dir", filepath.Join(dir, "log"), "--snapshot-dir", filepath.Join(dir, "snap"),
				"--socket", filepath.Join(dir, "s.sock"), "--ready-file", ready, "--metrics-listen", "127.0.0.1:0"}, tc.flags...)
			_, done, stderr, _ := startBinary(t, bin, args...)
			info := waitFile(t, ready, done, stderr)
			want := fmt.Sprintf("go_sched_gomaxprocs_threads %d\n", tc.want)
			deadline := time.Now().Add(serveTestTimeout)
			for {
				_, body := httpGet(t, "http://"+info["metrics"]+"/metrics")
				logged := tc.logLine == "" || strings.Contains(stderr.String(), tc.logLine)
				if strings.Contains(body, want) && logged {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("want %q in /metrics and %q logged; stderr:\n%s", want, tc.logLine, stderr)
				}
				time.Sleep(20 * time.Millisecond)
			}
			if tc.logLine == "" && strings.Contains(stderr.String(), "Go processors") {
				t.Errorf("--serving-procs 0 changed the processor count:\n%s", stderr)
			}
		})
	}
}

// TestServeOverKfake serves over franz-go's in-process Kafka: the topic is
// created (with the properties' partition count), the broker's work goes
// through, the stop writes the snapshot.
func TestServeOverKfake(t *testing.T) {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatalf("starting kfake: %v", err)
	}
	defer cluster.Close()
	serveOverKafka(t, strings.Join(cluster.ListenAddrs(), ","))
}

// TestServeOverRealKafka is the same against the real broker of make test.
func TestServeOverRealKafka(t *testing.T) {
	addr := os.Getenv("RLMM_KAFKA_BOOTSTRAP")
	if addr == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("RLMM_KAFKA_BOOTSTRAP is unset in CI: make test starts a real Kafka broker and sets it")
		}
		t.Skip("RLMM_KAFKA_BOOTSTRAP is unset: no real Kafka broker to run against; `go run ./test/kafkatest/cmd/kafkatest start DIR` starts one and prints the variable (make test does this)")
	}
	serveOverKafka(t, addr)
}

func serveOverKafka(t *testing.T, bootstrap string) {
	dir := shortTemp(t)
	topic := fmt.Sprintf("rlmm-serve-test.%d", time.Now().UnixNano())
	props := writeServeProperties(t, dir, bootstrap, "remote.log.metadata.consume.wait.ms=30000")
	socket, ready := filepath.Join(dir, "s.sock"), filepath.Join(dir, "ready")
	logDir := filepath.Join(dir, "kafka-logs") // the broker's log.dir; the snapshots go beside it
	p := startServe(t, "--properties", props, "--kafka-topic", topic, "--log-dir", logDir, "--socket", socket, "--ready-file", ready)
	waitFile(t, ready, p.done, &p.stderr)
	c := rpcClient(t, socket)
	si, err := c.ServerInfo(context.Background())
	if err != nil || si.MetadataPartitions != 5 || si.Log != "kafka "+topic+" at "+bootstrap {
		t.Fatalf("ServerInfo %v %v", si, err)
	}
	tp := rlmm.TopicIDPartition{TopicID: rlmm.RandomUuid(), Topic: "payments", Partition: 1}
	brokerWork(t, c, tp, rlmm.RandomUuid(), 0)
	if code := p.stop(t); code != 0 {
		t.Fatalf("exit %d:\n%s", code, p.stderr.String())
	}
	if _, err := os.Stat(filepath.Join(defaultSnapshotDir(logDir), topicbased.SnapshotFileName)); err != nil {
		t.Fatalf("no final snapshot in <log-dir>.rlmm/snapshots: %v\n%s", err, p.stderr.String())
	}
}

// TestServeTCPWithToken: --listen-tcp with --token-file serves the
// broker's frames to a caller whose hello carries the token (every
// purpose: a leadership change, a mutation, a lookup) and refuses one
// without it.
func TestServeTCPWithToken(t *testing.T) {
	dir := shortTemp(t)
	token := filepath.Join(dir, "token")
	if err := os.WriteFile(token, []byte("a-long-random-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ready := filepath.Join(dir, "ready")
	p := startServe(t, "--dir", filepath.Join(dir, "log"), "--snapshot-dir", filepath.Join(dir, "snap"),
		"--listen-tcp", "127.0.0.1:0", "--token-file", token, "--ready-file", ready)
	info := waitFile(t, ready, p.done, &p.stderr)
	if info["tcp"] == "" {
		t.Fatalf("ready file without tcp=: %v", info)
	}
	ctx, cancel := context.WithTimeout(context.Background(), serveTestTimeout)
	defer cancel()
	if _, err := frametest.New(t, frametest.Dialer("tcp", info["tcp"], nil), nil).ServerInfo(ctx); err == nil || !strings.Contains(err.Error(), "a valid token is required") {
		t.Fatalf("without the token: %v, want the hello refused", err)
	}
	c := frametest.New(t, frametest.Dialer("tcp", info["tcp"], nil), []byte("a-long-random-token"))
	if _, err := c.ServerInfo(ctx); err != nil {
		t.Fatalf("with the token: %v", err)
	}
	brokerWork(t, c, rlmm.TopicIDPartition{TopicID: rlmm.RandomUuid(), Topic: "tcp", Partition: 0}, rlmm.RandomUuid(), 0)
	if code := p.stop(t); code != 0 {
		t.Fatalf("exit %d:\n%s", code, p.stderr.String())
	}
}

// TestServeAnswersWhileTheLogOpens: the socket accepts calls before the
// log is open (here a cluster that never answers): reads say NOT_READY;
// a stop meanwhile exits 0.
func TestServeAnswersWhileTheLogOpens(t *testing.T) {
	dir := shortTemp(t)
	socket, ready := filepath.Join(dir, "s.sock"), filepath.Join(dir, "ready")
	p := startServe(t, "--kafka", "127.0.0.1:1", "--snapshot-dir", filepath.Join(dir, "snap"), "--socket", socket, "--ready-file", ready)
	waitFile(t, ready, p.done, &p.stderr)
	c := rpcClient(t, socket)
	ctx, cancel := context.WithTimeout(context.Background(), serveTestTimeout)
	defer cancel()
	tp := frametest.TopicIDPartition(rlmm.TopicIDPartition{TopicID: rlmm.RandomUuid(), Topic: "t"})
	if _, err := c.SegmentForOffset(ctx, &rlmmpb.SegmentForOffsetRequest{TopicIdPartition: tp}); frametest.Kind(err) != rlmmpb.ErrorKind_NOT_READY {
		t.Fatalf("read while the log opens: %v, want NOT_READY", err)
	}
	if code := p.stop(t); code != 0 {
		t.Fatalf("stop while the log opens: exit %d:\n%s", code, p.stderr.String())
	}
}

// TestServeWaitsForTheCluster: a cluster that does not answer within the
// connect timeout (10 s) is waited for, not a reason to exit (a broker starts
// its sidecar before its own listener accepts connections).
func TestServeWaitsForTheCluster(t *testing.T) {
	dir := shortTemp(t)
	socket, ready := filepath.Join(dir, "s.sock"), filepath.Join(dir, "ready")
	p := startServe(t, "--kafka", "127.0.0.1:1", "--snapshot-dir", filepath.Join(dir, "snap"), "--socket", socket, "--ready-file", ready)
	waitFile(t, ready, p.done, &p.stderr)
	deadline := time.After(30 * time.Second)
	for !strings.Contains(p.stderr.String(), "opening the metadata topic failed; retrying") {
		select {
		case code := <-p.done:
			t.Fatalf("serve exited (%d) while the cluster did not answer:\n%s", code, p.stderr.String())
		case <-deadline:
			t.Fatalf("no retry logged after 30 s:\n%s", p.stderr.String())
		case <-time.After(200 * time.Millisecond):
		}
	}
	if code := p.stop(t); code != 0 {
		t.Fatalf("stop while waiting for the cluster: exit %d:\n%s", code, p.stderr.String())
	}
}

// startBinary starts the built rlmm with args, a pipe as its stdin; done
// receives its exit status. It is killed at cleanup.
func startBinary(t *testing.T, bin string, args ...string) (*exec.Cmd, chan int, *syncBuffer, io.WriteCloser) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan int, 1)
	go func() {
		err := cmd.Wait()
		var ee *exec.ExitError
		switch {
		case err == nil:
			done <- 0
		case errors.As(err, &ee):
			done <- ee.ExitCode()
		default:
			done <- -1
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		code := <-done
		done <- code
	})
	return cmd, done, stderr, stdin
}

// TestServeKilledRestarts: after kill -9 (no final snapshot, the socket
// file left behind), a new server on the same directories starts (stale
// socket removed, the lock died with the process) and serves everything
// acknowledged before the kill.
func TestServeKilledRestarts(t *testing.T) {
	bin := rlmmBinary(t)
	dir := shortTemp(t)
	args := []string{"serve", "--dir", filepath.Join(dir, "log"), "--snapshot-dir", filepath.Join(dir, "snap"),
		"--socket", filepath.Join(dir, "s.sock"), "--ready-file", filepath.Join(dir, "ready")}
	cmd, done, stderr, _ := startBinary(t, bin, args...)
	waitFile(t, filepath.Join(dir, "ready"), done, stderr)
	c := rpcClient(t, filepath.Join(dir, "s.sock"))
	tp := rlmm.TopicIDPartition{TopicID: rlmm.RandomUuid(), Topic: "t", Partition: 4}
	seg := rlmm.RandomUuid()
	brokerWork(t, c, tp, seg, 0)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-done
	done <- -1
	if st, err := os.Lstat(filepath.Join(dir, "s.sock")); err != nil || st.Mode().Type() != os.ModeSocket {
		t.Fatalf("the killed server's socket file is not there (%v): the test proves nothing", err)
	}
	os.Remove(filepath.Join(dir, "ready"))

	_, done2, stderr2, _ := startBinary(t, bin, args...)
	waitFile(t, filepath.Join(dir, "ready"), done2, stderr2)
	c = rpcClient(t, filepath.Join(dir, "s.sock"))
	ctx, cancel := context.WithTimeout(context.Background(), serveTestTimeout)
	defer cancel()
	if _, err := c.OnPartitionLeadershipChanges(ctx, &rlmmpb.LeadershipChangesRequest{Leaders: []*rlmmpb.TopicIdPartition{frametest.TopicIDPartition(tp)}}); err != nil {
		t.Fatal(err)
	}
	waitReady(t, ctx, c, frametest.TopicIDPartition(tp))
	lookup(t, c, tp, 42, seg)
}

// brokerHello says the broker frames' hello (purpose read) on socket and
// returns who the server says it is.
func brokerHello(t *testing.T, socket string) *rlmmpb.ServerInfoReply {
	t.Helper()
	c, err := net.Dial("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(serveTestTimeout))
	hello, err := brokerframe.AppendHello(nil, brokerframe.Version, &rlmmpb.BrokerHello{Purpose: rlmmpb.Purpose_PURPOSE_READ})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write(brokerframe.Append(nil, hello)); err != nil {
		t.Fatal(err)
	}
	body, err := brokerframe.ReadFrame(c, nil, brokerframe.MaxReply)
	if err != nil {
		t.Fatalf("reading the answer to the broker hello: %v", err)
	}
	info, err := brokerframe.ParseAnswer(body, brokerframe.Version)
	if err != nil {
		t.Fatalf("the broker hello: %v", err)
	}
	return info
}

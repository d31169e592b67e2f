package interop

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/eventlog/kafkalog"
	"github.com/rlmm-go/rlmm/memory"
	"github.com/rlmm-go/rlmm/topicbased"
	"github.com/rlmm-go/rlmm/wire"
)

const (
	envBootstrap = "RLMM_KAFKA_BOOTSTRAP"
	// harnessBuilt is the stamp scripts/interop.sh build leaves after a
	// successful Maven build of the Java harness, relative to repoRoot.
	harnessBuilt = "test/interop/java/target/.rlmm-build-stamp"
	// metadataPartitions is remote.log.metadata.topic.num.partitions on
	// both sides (Kafka's default; the Java manager only uses
	// __remote_log_metadata, so the tests share it and use fresh topic ids).
	metadataPartitions = 50
	// testTimeout bounds every wait for something that must happen.
	testTimeout = 90 * time.Second
)

var (
	// repoRoot is the module root (the tests run in test/interop/).
	repoRoot, _ = filepath.Abs("../..")
	// rlmmBinary is the rlmm command built by TestMain ("" when skipped).
	rlmmBinary string
	// buildErr is why rlmmBinary could not be built.
	buildErr error

	serveMu   sync.Mutex
	serveProc *javaServer
)

func TestMain(m *testing.M) {
	var tmp string
	if os.Getenv(envBootstrap) != "" && javaHarnessBuilt() {
		var err error
		if tmp, err = os.MkdirTemp("", "rlmm-interop-"); err != nil {
			buildErr = err
		} else {
			rlmmBinary = filepath.Join(tmp, "rlmm")
			cmd := exec.Command("go", "build", "-o", rlmmBinary, "./cmd/rlmm")
			cmd.Dir = repoRoot
			if out, err := cmd.CombinedOutput(); err != nil {
				buildErr = fmt.Errorf("go build ./cmd/rlmm: %w\n%s", err, out)
				rlmmBinary = ""
			}
		}
	}
	code := m.Run()
	serveMu.Lock()
	if serveProc != nil {
		serveProc.close()
	}
	serveMu.Unlock()
	if tmp != "" {
		_ = os.RemoveAll(tmp)
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goroutines leaked:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// requireInterop returns the broker address, or skips the test with the
// reason (fails it when CI=true) if the broker or the Java harness is absent.
func requireInterop(t *testing.T) string {
	t.Helper()
	var missing []string
	if os.Getenv(envBootstrap) == "" {
		missing = append(missing, envBootstrap+" (a Kafka 4.4.0 broker: go run ./test/kafkatest/cmd/kafkatest start DIR)")
	}
	if !javaHarnessBuilt() {
		missing = append(missing, "the Java harness built (scripts/interop.sh build; no "+harnessBuilt+")")
	}
	if len(missing) > 0 {
		reason := "interoperability test needs " + strings.Join(missing, " and ") + "; make test provides both"
		if os.Getenv("CI") == "true" {
			t.Fatal(reason)
		}
		t.Skip(reason)
	}
	return os.Getenv(envBootstrap)
}

// javaHarnessBuilt reports whether scripts/interop.sh build has built the
// Java harness.
func javaHarnessBuilt() bool {
	_, err := os.Stat(filepath.Join(repoRoot, harnessBuilt))
	return err == nil
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// ---- the Java side ----

// javaCommand returns the command that runs KafkaRlmmDriver with args.
func javaCommand(args ...string) *exec.Cmd {
	opts := strings.Fields(os.Getenv("JAVA_OPTS"))
	if len(opts) == 0 {
		opts = []string{"-Xmx512m"}
	}
	cp := filepath.Join(repoRoot, "test/interop/java/target/classes") + string(os.PathListSeparator) + filepath.Join(repoRoot, "test/interop/java/target/lib/*")
	full := append(opts, "-cp", cp, "org.rlmm.interop.KafkaRlmmDriver")
	return exec.Command("java", append(full, args...)...)
}

// runDriver runs one KafkaRlmmDriver subcommand and decodes its JSON result
// into out; a non-zero exit fails the test with the output.
func runDriver(t *testing.T, out any, args ...string) {
	t.Helper()
	cmd := javaCommand(args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("KafkaRlmmDriver %s: %v\nstdout: %s\nstderr (tail): %s", args[0], err, stdout.String(), tail(stderr.String(), 3000))
	}
	if err := json.Unmarshal(stdout.Bytes(), out); err != nil {
		t.Fatalf("KafkaRlmmDriver %s printed no JSON object: %v\n%s", args[0], err, stdout.String())
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// javaServer is KafkaRlmmDriver serve: one Kafka manager in one JVM, driven
// by JSON lines. The pipes are *os.File so exec starts no copying goroutine
// and reads can have deadlines.
type javaServer struct {
	cmd    *exec.Cmd
	stdin  *os.File
	stdout *os.File
	reader *bufio.Reader
	stderr *os.File
}

// serveResponse is the common part of every answer of serve.
type serveResponse struct {
	Op    string `json:"op"`
	OK    bool   `json:"ok"`
	Error string `json:"error"`
}

// javaServe returns the package's shared serve process, starting it on first
// use (TestMain closes it). Tests use it one at a time.
func javaServe(t *testing.T, bootstrap string) *javaServer {
	t.Helper()
	serveMu.Lock()
	defer serveMu.Unlock()
	if serveProc != nil {
		return serveProc
	}
	s, err := startJavaServer(bootstrap)
	if err != nil {
		t.Fatalf("starting KafkaRlmmDriver serve: %v", err)
	}
	serveProc = s
	return s
}

func startJavaServer(bootstrap string) (*javaServer, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	errFile, err := os.CreateTemp("", "rlmm-interop-serve-*.log")
	if err != nil {
		return nil, err
	}
	cmd := javaCommand("serve", "--bootstrap", bootstrap, "--timeout-ms", "60000",
		"--metadata-partitions", fmt.Sprint(metadataPartitions), "--broker-id", "100")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errFile
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	_ = inR.Close()
	_ = outW.Close()
	s := &javaServer{cmd: cmd, stdin: inW, stdout: outR, reader: bufio.NewReaderSize(outR, 1<<20), stderr: errFile}
	var hello serveResponse
	if err := s.readLine(&hello); err != nil || !hello.OK || hello.Op != "started" {
		s.close()
		return nil, fmt.Errorf("no started line (%v, %+v); stderr: %s", err, hello, s.stderrTail())
	}
	return s, nil
}

func (s *javaServer) stderrTail() string {
	b, _ := os.ReadFile(s.stderr.Name())
	return tail(string(b), 3000)
}

func (s *javaServer) readLine(out any) error {
	if err := s.stdout.SetReadDeadline(time.Now().Add(testTimeout)); err != nil {
		return err
	}
	line, err := s.reader.ReadBytes('\n')
	if err != nil {
		return fmt.Errorf("reading serve's answer: %w", err)
	}
	if err := json.Unmarshal(line, out); err != nil {
		return fmt.Errorf("serve answered %q: %w", line, err)
	}
	return nil
}

// call sends one request and decodes the answer into out (which should
// embed serveResponse); an answer that is not ok is an error.
func (s *javaServer) call(req any, out any) error {
	b, err := json.Marshal(req)
	if err != nil {
		return err
	}
	if _, err := s.stdin.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("writing to serve: %w", err)
	}
	var raw json.RawMessage
	if err := s.readLine(&raw); err != nil {
		return err
	}
	var base serveResponse
	if err := json.Unmarshal(raw, &base); err != nil {
		return err
	}
	if !base.OK {
		return fmt.Errorf("serve %s: %s", base.Op, base.Error)
	}
	if out != nil {
		return json.Unmarshal(raw, out)
	}
	return nil
}

// mustCall is call that fails the test.
func (s *javaServer) mustCall(t *testing.T, req any, out any) {
	t.Helper()
	if err := s.call(req, out); err != nil {
		t.Fatalf("%v\nserve stderr: %s", err, s.stderrTail())
	}
}

func (s *javaServer) close() {
	_, _ = s.stdin.Write([]byte(`{"op":"close"}` + "\n"))
	_ = s.stdin.Close()
	done := make(chan error, 1)
	go func() { done <- s.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = s.cmd.Process.Kill()
		<-done
	}
	_ = s.stdout.Close()
	_ = s.stderr.Close()
	_ = os.Remove(s.stderr.Name())
}

// javaLeadership makes the Java manager lead and follow partitions and waits
// until all of them are ready.
func (s *javaServer) leadership(t *testing.T, leaders, followers []rlmm.TopicIDPartition) {
	t.Helper()
	s.mustCall(t, map[string]any{"op": "leadership", "leaders": tpStrings(leaders), "followers": tpStrings(followers)}, nil)
	s.mustCall(t, map[string]any{"op": "awaitReady", "partitions": tpStrings(append(slices.Clone(leaders), followers...))}, nil)
}

func (s *javaServer) apply(t *testing.T, ev wire.Event) {
	t.Helper()
	s.mustCall(t, map[string]any{"op": "apply", "event": ev}, nil)
}

// dump returns the Java manager's view of tps, normalized.
func (s *javaServer) dump(t *testing.T, tps []rlmm.TopicIDPartition) string {
	t.Helper()
	var resp struct {
		Partitions json.RawMessage `json:"partitions"`
	}
	s.mustCall(t, map[string]any{"op": "dump", "partitions": tpStrings(tps)}, &resp)
	return normalize(t, resp.Partitions)
}

// lookup returns Kafka's remoteLogSegmentMetadata(tp, epoch, offset),
// normalized ("null" when absent).
func (s *javaServer) lookup(t *testing.T, tp rlmm.TopicIDPartition, epoch int32, offset int64) string {
	t.Helper()
	var resp struct {
		Segment json.RawMessage `json:"segment"`
	}
	s.mustCall(t, map[string]any{"op": "lookup", "topicIdPartition": tp.String(), "epoch": epoch, "offset": offset}, &resp)
	return normalize(t, resp.Segment)
}

func tpStrings(tps []rlmm.TopicIDPartition) []string {
	out := make([]string, len(tps))
	for i, tp := range tps {
		out[i] = tp.String()
	}
	return out
}

// ---- the rlmm side ----

// openLog opens __remote_log_metadata on the broker, closed at the end of
// the test (after the managers over it).
func openLog(t *testing.T, bootstrap string) *kafkalog.Log {
	t.Helper()
	l, err := kafkalog.Open(testCtx(t), kafkalog.Config{BootstrapServers: []string{bootstrap},
		NumPartitions: metadataPartitions, ConnectTimeout: 30 * time.Second})
	if err != nil {
		t.Fatalf("kafkalog.Open: %v", err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// startRlmm starts a topic-based manager over l, closed at the end of the test.
func startRlmm(t *testing.T, l *kafkalog.Log) *topicbased.Manager {
	t.Helper()
	m, err := topicbased.Start(testCtx(t), topicbased.Config{Log: l, ConsumeWait: testTimeout})
	if err != nil {
		t.Fatalf("topicbased.Start: %v", err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m
}

// rlmmLeadership assigns partitions to m and waits until they are ready.
func rlmmLeadership(t *testing.T, m *topicbased.Manager, leaders, followers []rlmm.TopicIDPartition) {
	t.Helper()
	ctx := testCtx(t)
	must(t, m.OnPartitionLeadershipChanges(ctx, leaders, followers))
	for _, tp := range append(slices.Clone(leaders), followers...) {
		if err := m.WaitReady(ctx, tp); err != nil {
			t.Fatalf("rlmm not ready for %s: %v", tp, err)
		}
	}
}

// applyTo applies one event to an rlmm manager.
func applyTo(ctx context.Context, m rlmm.Manager, ev wire.Event) error {
	switch ev.Key {
	case wire.KeySegment:
		return m.AddSegment(ctx, ev.Segment)
	case wire.KeyUpdate:
		return m.UpdateSegment(ctx, ev.Update)
	case wire.KeyPartitionDelete:
		return m.PutPartitionDelete(ctx, ev.PartitionDelete)
	}
	return fmt.Errorf("%w: event type %s cannot be applied", rlmm.ErrInvalidArgument, ev.Key)
}

// viewReader is what a view needs of a manager; found reports whether the
// manager holds any state for the partition (Kafka: listRemoteLogSegments
// does not throw RemoteResourceNotFoundException).
type viewReader struct {
	rlmm.Manager
	found func(tp rlmm.TopicIDPartition) (bool, error)
}

func topicbasedReader(m *topicbased.Manager) viewReader {
	return viewReader{m, func(tp rlmm.TopicIDPartition) (bool, error) {
		_, ok, err := m.View(tp)
		return ok, err
	}}
}

func memoryReader(m *memory.Manager) viewReader {
	return viewReader{m, func(tp rlmm.TopicIDPartition) (bool, error) {
		_, ok := m.View(tp)
		return ok, nil
	}}
}

// dumpPartition is one partition of KafkaRlmmDriver's dump, built from an
// rlmm manager.
type dumpPartition struct {
	TopicIDPartition      dumpTP        `json:"topicIdPartition"`
	Found                 bool          `json:"found"`
	Segments              []wire.Event  `json:"segments"`
	HighestOffsetForEpoch []dumpHighest `json:"highestOffsetForEpoch"`
}

type dumpTP struct {
	TopicID   string `json:"topicId"`
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
}

type dumpHighest struct {
	Epoch  int32  `json:"epoch"`
	Offset *int64 `json:"offset"`
}

// sortSegments orders segments as the dump does: start offset, end offset,
// segment id bytes.
func sortSegments(segs []rlmm.SegmentMetadata) {
	slices.SortFunc(segs, func(a, b rlmm.SegmentMetadata) int {
		if c := cmp.Compare(a.StartOffset, b.StartOffset); c != 0 {
			return c
		}
		if c := cmp.Compare(a.EndOffset, b.EndOffset); c != 0 {
			return c
		}
		return bytes.Compare(a.ID.ID[:], b.ID.ID[:])
	})
}

// rlmmDump builds the dump of tps from r, normalized like the Java one.
func rlmmDump(t *testing.T, r viewReader, tps []rlmm.TopicIDPartition) string {
	t.Helper()
	out := make([]dumpPartition, 0, len(tps))
	for _, tp := range tps {
		p := dumpPartition{TopicIDPartition: dumpTP{tp.TopicID.String(), tp.Topic, tp.Partition},
			Segments: []wire.Event{}, HighestOffsetForEpoch: []dumpHighest{}}
		found, err := r.found(tp)
		must(t, err)
		p.Found = found
		segs, err := r.ListSegments(tp)
		must(t, err)
		sortSegments(segs)
		epochs := map[int32]bool{}
		for _, s := range segs {
			p.Segments = append(p.Segments, wire.SegmentEvent(s))
			for _, e := range s.LeaderEpochs {
				epochs[e.Epoch] = true
			}
		}
		for _, e := range slices.Sorted(maps.Keys(epochs)) {
			h := dumpHighest{Epoch: e}
			off, ok, err := r.HighestOffsetForEpoch(tp, e)
			must(t, err)
			if ok {
				h.Offset = &off
			}
			p.HighestOffsetForEpoch = append(p.HighestOffsetForEpoch, h)
		}
		out = append(out, p)
	}
	b, err := json.Marshal(out)
	must(t, err)
	return normalize(t, b)
}

// rlmmLookup is SegmentForOffset as normalized JSON ("null" when absent).
func rlmmLookup(t *testing.T, m rlmm.Manager, tp rlmm.TopicIDPartition, epoch int32, offset int64) string {
	t.Helper()
	s, ok, err := m.SegmentForOffset(tp, epoch, offset)
	must(t, err)
	if !ok {
		return "null"
	}
	b, err := json.Marshal(wire.SegmentEvent(s))
	must(t, err)
	return normalize(t, b)
}

// normalize re-encodes JSON with sorted keys and indentation, so two
// documents with the same content compare equal as strings.
func normalize(t testing.TB, b []byte) string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("normalize %q: %v", tail(string(b), 500), err)
	}
	out, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// diff describes the first differing line of two normalized documents.
func diff(a, b string) string {
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < max(len(la), len(lb)); i++ {
		var x, y string
		if i < len(la) {
			x = la[i]
		}
		if i < len(lb) {
			y = lb[i]
		}
		if x != y {
			from := max(0, i-8)
			return fmt.Sprintf("first difference at line %d:\n  %q\n  %q\ncontext (first):\n%s",
				i+1, x, y, strings.Join(la[from:min(len(la), i+3)], "\n"))
		}
	}
	return "no difference"
}

// sameView fails the test when two normalized views differ.
func sameView(t *testing.T, what string, want, got string) {
	t.Helper()
	if want != got {
		t.Fatalf("%s differ: %s", what, diff(want, got))
	}
}

// eventually polls until both views are equal, or fails with the last
// difference after testTimeout.
func eventually(t *testing.T, what string, a, b func() string) string {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for {
		x, y := a(), b()
		if x == y {
			return x
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not converge within %s: %s", what, testTimeout, diff(x, y))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// ---- workloads ----

// workload builds events for fresh user partitions of one fresh topic id,
// and applies each to an in-memory model, the expected view.
type workload struct {
	topicID rlmm.Uuid
	topic   string
	events  []wire.Event
	model   *memory.Manager
	clock   int64
	// gone holds the partitions whose deletion finished.
	gone map[rlmm.TopicIDPartition]bool
}

func newWorkload(t *testing.T, name string) *workload {
	w := &workload{topicID: rlmm.RandomUuid(), topic: fmt.Sprintf("%s-%d", name, time.Now().UnixNano()%1e9),
		model: memory.New(), clock: time.Now().UnixMilli(), gone: map[rlmm.TopicIDPartition]bool{}}
	t.Cleanup(func() { _ = w.model.Close() })
	return w
}

func (w *workload) tp(p int32) rlmm.TopicIDPartition {
	return rlmm.TopicIDPartition{TopicID: w.topicID, Topic: w.topic, Partition: p}
}

func (w *workload) tps(n int32) []rlmm.TopicIDPartition {
	out := make([]rlmm.TopicIDPartition, n)
	for i := range out {
		out[i] = w.tp(int32(i))
	}
	return out
}

// readable returns tps without the partitions whose deletion finished: a
// Kafka 4.4.0 manager newly assigned such a partition fails in its consumer
// thread (ConsumerTask.maybeMarkUserPartitionsAsReady calls markInitialized
// on the cache the delete removed: NullPointerException) and never becomes
// ready for any partition again. A broker is not assigned a deleted topic's
// partitions, so the tests do not assign them to a Kafka reader either.
func (w *workload) readable(tps []rlmm.TopicIDPartition) []rlmm.TopicIDPartition {
	var out []rlmm.TopicIDPartition
	for _, tp := range tps {
		if !w.gone[tp] {
			out = append(out, tp)
		}
	}
	return out
}

func (w *workload) tick() int64 { w.clock++; return w.clock }

// record appends ev and applies it to the model; the model must accept it.
func (w *workload) record(t *testing.T, ev wire.Event) wire.Event {
	t.Helper()
	if err := applyTo(context.Background(), w.model, ev); err != nil {
		t.Fatalf("the model rejects workload event %d (%s): %v", len(w.events), ev.String(), err)
	}
	w.events = append(w.events, ev)
	return ev
}

// add is a COPY_SEGMENT_STARTED segment of tp; epochs are (epoch, start) pairs.
func (w *workload) add(t *testing.T, tp rlmm.TopicIDPartition, start, end int64, custom []byte, broker int32, epochs ...int64) rlmm.SegmentMetadata {
	t.Helper()
	m := rlmm.SegmentMetadata{ID: rlmm.SegmentID{TopicIDPartition: tp, ID: rlmm.RandomUuid()},
		StartOffset: start, EndOffset: end, MaxTimestampMs: w.clock - 500, BrokerID: broker,
		EventTimestampMs: w.tick(), SizeInBytes: int32(1000 + end - start), CustomMetadata: custom,
		State: rlmm.CopySegmentStarted, TxnIndexEmpty: start%200 == 0}
	for i := 0; i+1 < len(epochs); i += 2 {
		m.LeaderEpochs = append(m.LeaderEpochs, rlmm.EpochStart{Epoch: int32(epochs[i]), StartOffset: epochs[i+1]})
	}
	w.record(t, wire.SegmentEvent(m))
	return m
}

// update moves segment s to state.
func (w *workload) update(t *testing.T, s rlmm.SegmentMetadata, state rlmm.SegmentState, custom []byte, broker int32) wire.Event {
	t.Helper()
	return w.record(t, wire.UpdateEvent(rlmm.SegmentUpdate{ID: s.ID, EventTimestampMs: w.tick(), CustomMetadata: custom, State: state, BrokerID: broker}))
}

func (w *workload) deletePartition(t *testing.T, tp rlmm.TopicIDPartition, state rlmm.PartitionDeleteState, broker int32) wire.Event {
	t.Helper()
	if state == rlmm.DeletePartitionFinished {
		w.gone[tp] = true
	}
	return w.record(t, wire.PartitionDeleteEvent(rlmm.PartitionDelete{TopicIDPartition: tp, State: state, EventTimestampMs: w.tick(), BrokerID: broker}))
}

// standard builds the shared workload of tests 1, 2 and 4 over partitions
// 0..3: finished segments with custom metadata absent, empty and present,
// a multi-epoch segment, one still copying, deletions in progress and
// finished, a partition marked for deletion and one whose deletion
// finished (it disappears from both managers).
func (w *workload) standard(t *testing.T, broker int32) {
	t.Helper()
	p0, p1, p2, p3 := w.tp(0), w.tp(1), w.tp(2), w.tp(3)
	a := w.add(t, p0, 0, 99, nil, broker, 0, 0)
	w.update(t, a, rlmm.CopySegmentFinished, []byte{1, 2, 3}, broker+1)
	b := w.add(t, p0, 100, 299, []byte{}, broker, 0, 100, 1, 150, 3, 200)
	w.update(t, b, rlmm.CopySegmentFinished, nil, broker+1)
	w.add(t, p0, 300, 399, nil, broker, 3, 300)

	c := w.add(t, p1, 0, 49, nil, broker, 0, 0)
	w.update(t, c, rlmm.CopySegmentFinished, nil, broker)
	d := w.add(t, p1, 50, 149, []byte("present"), broker, 0, 50, 2, 120)
	w.update(t, d, rlmm.CopySegmentFinished, []byte("kept"), broker)
	w.update(t, c, rlmm.DeleteSegmentStarted, nil, broker)

	e := w.add(t, p2, 0, 9, nil, broker, 0, 0)
	w.update(t, e, rlmm.CopySegmentFinished, nil, broker)
	w.update(t, e, rlmm.DeleteSegmentStarted, nil, broker)
	w.update(t, e, rlmm.DeleteSegmentFinished, nil, broker)
	w.deletePartition(t, p2, rlmm.DeletePartitionMarked, broker)
	w.deletePartition(t, p2, rlmm.DeletePartitionStarted, broker)
	w.deletePartition(t, p2, rlmm.DeletePartitionFinished, broker)

	f := w.add(t, p3, 0, 199, nil, broker, 4, 0)
	w.update(t, f, rlmm.CopySegmentFinished, nil, broker)
	w.deletePartition(t, p3, rlmm.DeletePartitionMarked, broker)
}

// spotChecks compares SegmentForOffset of the Java manager, an rlmm manager
// and the model at offsets around every listed segment's epoch ranges.
func spotChecks(t *testing.T, srv *javaServer, m rlmm.Manager, w *workload, tps []rlmm.TopicIDPartition) int {
	t.Helper()
	checks := 0
	for _, tp := range tps {
		segs, err := w.model.ListSegments(tp)
		must(t, err)
		for _, s := range segs {
			for _, e := range s.LeaderEpochs {
				start, end, _ := s.EpochRange(e.Epoch)
				for _, off := range []int64{start, (start + end) / 2, end, end + 1} {
					want := rlmmLookup(t, w.model, tp, e.Epoch, off)
					if got := srv.lookup(t, tp, e.Epoch, off); got != want {
						t.Errorf("Java lookup(%s, epoch %d, offset %d) differs from the model: %s", tp, e.Epoch, off, diff(want, got))
					}
					if got := rlmmLookup(t, m, tp, e.Epoch, off); got != want {
						t.Errorf("rlmm lookup(%s, epoch %d, offset %d) differs from the model: %s", tp, e.Epoch, off, diff(want, got))
					}
					checks++
				}
			}
		}
	}
	return checks
}

// runRlmm runs the built rlmm binary and returns its stdout and exit code.
func runRlmm(t *testing.T, args ...string) (string, int) {
	t.Helper()
	if rlmmBinary == "" {
		t.Fatalf("rlmm binary not built: %v", buildErr)
	}
	ctx := testCtx(t)
	cmd := exec.CommandContext(ctx, rlmmBinary, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return stdout.String(), 0
	case errors.As(err, &exit):
		if exit.ExitCode() == 2 {
			t.Logf("rlmm %s stderr: %s", strings.Join(args, " "), stderr.String())
		}
		return stdout.String(), exit.ExitCode()
	}
	t.Fatalf("rlmm %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	return "", -1
}

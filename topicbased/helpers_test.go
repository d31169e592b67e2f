package topicbased

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/eventlog"
	"github.com/rlmm-go/rlmm/eventlog/memlog"
	"github.com/rlmm-go/rlmm/internal/apply"
	"github.com/rlmm-go/rlmm/internal/atomicfile"
	"github.com/rlmm-go/rlmm/memory"
	"github.com/rlmm-go/rlmm/snapshot"
	"github.com/rlmm-go/rlmm/wire"
)

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		// Re-executed by the kill -9 test: run the child's workload only.
		os.Exit(runCrashChild())
	}
	code := m.Run()
	closeRestartFixture()
	closeFakeCluster()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goroutine leak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// testTimeout bounds every wait of a test for something that must happen.
const testTimeout = 30 * time.Second

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// testLogger logs to the test output only when -v is given with RLMM_TEST_LOG=1.
func testLogger(t testing.TB) *slog.Logger {
	if os.Getenv("RLMM_TEST_LOG") == "" {
		return nil
	}
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type tWriter struct{ t testing.TB }

func (w tWriter) Write(b []byte) (int, error) { w.t.Log(string(b)); return len(b), nil }

// logBackend opens a fresh, empty event log for a test.
type logBackend struct {
	name string
	open func(t testing.TB, partitions int32) eventlog.Log
}

// memBackend is the default backend of the tests.
var memBackend = logBackend{"memlog", func(_ testing.TB, partitions int32) eventlog.Log { return memlog.New(partitions) }}

// currentBackend is the backend newLog uses; runOver swaps it to run the
// same tests over another log (tests in this package are not parallel).
var currentBackend = memBackend

// newLog returns a fresh log of the current backend, closed at the end of
// the test (after the managers started on it, which register later).
func newLog(t testing.TB, partitions int32) eventlog.Log {
	t.Helper()
	l := currentBackend.open(t, partitions)
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// logWithoutID is a log that cannot say its id (as a filelog created before
// logs had one), so a restart compares only offsets.
type logWithoutID struct{ eventlog.Log }

func (logWithoutID) ID() rlmm.Uuid { return rlmm.ZeroUuid }

// restartOnAnotherLog starts a manager on l with the snapshot of dir,
// written for the log with id snapshotLog, and checks that it dropped the
// snapshot (dropped metadata partitions, one log line naming both ids) and
// shows exactly expected's state of tps.
func restartOnAnotherLog(t testing.TB, l eventlog.Log, snapshotLog rlmm.Uuid, dir string, tps []rlmm.TopicIDPartition, expected *memory.Manager, dropped uint64) *Manager {
	t.Helper()
	logs := &logRecorder{}
	m := startManager(t, Config{Log: l, SnapshotDir: dir, SnapshotInterval: -1, Logger: slog.New(logs)})
	assign(t, m, tps...)
	if err := sameViews(viewOf(t, m, tps), viewOf(t, expected, tps)); err != nil {
		t.Errorf("state after the restart on another log: %v", err)
	}
	if got := m.Stats().SnapshotDropped; got != dropped {
		t.Errorf("Stats.SnapshotDropped = %d, want %d (the metadata partitions the snapshot held)", got, dropped)
	}
	reason := fmt.Sprintf("was written for the log with id %s, this log's id is %s", snapshotLog, l.ID())
	if got := logs.matching("snapshot dropped", reason); len(got) != 1 {
		t.Errorf("log lines dropping the snapshot with %q: %q", reason, logs.matching("snapshot"))
	}
	return m
}

// runOver runs tests as subtests of t with newLog opening logs of b.
func runOver(t *testing.T, b logBackend, tests []namedTest) {
	saved := currentBackend
	currentBackend = b
	defer func() { currentBackend = saved }()
	for _, tc := range tests {
		t.Run(tc.name, tc.fn)
	}
}

type namedTest struct {
	name string
	fn   func(*testing.T)
}

// startManager starts a manager over log, closed at the end of the test
// (registered after the log's cleanup, so it runs first).
func startManager(t testing.TB, cfg Config) *Manager {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = testLogger(t)
	}
	m, err := Start(testCtx(t), cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m
}

// uuidN returns a deterministic valid Uuid numbered n (never zero or one).
func uuidN(n uint64) rlmm.Uuid {
	var u rlmm.Uuid
	binary.BigEndian.PutUint64(u[:8], 0x1000+n)
	binary.BigEndian.PutUint64(u[8:], n*0x9e3779b97f4a7c15+7)
	return u
}

func topicPartition(topic string, topicN uint64, partition int32) rlmm.TopicIDPartition {
	return rlmm.TopicIDPartition{TopicID: uuidN(topicN), Topic: topic, Partition: partition}
}

// sharingPartitions returns count partitions of one topic whose events go to
// the same metadata partition of a log with n partitions, and that partition.
func sharingPartitions(t testing.TB, n int32, count int) ([]rlmm.TopicIDPartition, int32) {
	t.Helper()
	byMP := map[int32][]rlmm.TopicIDPartition{}
	for p := int32(0); p < 10000; p++ {
		tp := topicPartition("shared", 77, p)
		mp := wire.MetadataPartition(tp, n)
		byMP[mp] = append(byMP[mp], tp)
		if len(byMP[mp]) == count {
			return byMP[mp], mp
		}
	}
	t.Fatalf("no %d partitions share a metadata partition", count)
	return nil, 0
}

// distinctPartitions returns one user partition for each of the first count
// metadata partitions (index i maps to metadata partition i).
func distinctPartitions(t testing.TB, n int32, count int) []rlmm.TopicIDPartition {
	t.Helper()
	out := make([]rlmm.TopicIDPartition, count)
	got := 0
	for p := int32(0); p < 100000 && got < count; p++ {
		tp := topicPartition("distinct", 88, p)
		mp := wire.MetadataPartition(tp, n)
		if int(mp) < count && out[mp].Topic == "" {
			out[mp] = tp
			got++
		}
	}
	if got < count {
		t.Fatalf("found only %d of %d distinct metadata partitions", got, count)
	}
	return out
}

// segment returns a COPY_SEGMENT_STARTED segment of tp with the given id,
// offsets and leader epochs (pairs of epoch, start offset).
func segment(tp rlmm.TopicIDPartition, id uint64, start, end int64, epochs ...int64) rlmm.SegmentMetadata {
	if len(epochs) == 0 {
		epochs = []int64{0, start}
	}
	m := rlmm.SegmentMetadata{
		ID:          rlmm.SegmentID{TopicIDPartition: tp, ID: uuidN(1_000_000 + id)},
		StartOffset: start, EndOffset: end, MaxTimestampMs: 1000 + end, BrokerID: 1,
		EventTimestampMs: 500, SizeInBytes: int32(end - start + 1), State: rlmm.CopySegmentStarted,
		TxnIndexEmpty: true,
	}
	for i := 0; i+1 < len(epochs); i += 2 {
		m.LeaderEpochs = append(m.LeaderEpochs, rlmm.EpochStart{Epoch: int32(epochs[i]), StartOffset: epochs[i+1]})
	}
	return m
}

// update returns the update of md to state by broker 2 at time 900.
func update(md rlmm.SegmentMetadata, state rlmm.SegmentState) rlmm.SegmentUpdate {
	return rlmm.SegmentUpdate{ID: md.ID, EventTimestampMs: 900, State: state, BrokerID: 2, CustomMetadata: []byte{byte(state)}}
}

// finished returns md after update(md, COPY_SEGMENT_FINISHED).
func finished(t testing.TB, md rlmm.SegmentMetadata) rlmm.SegmentMetadata {
	t.Helper()
	out, err := md.WithUpdate(update(md, rlmm.CopySegmentFinished))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// assign makes m host tps and waits until each is ready.
func assign(t testing.TB, m *Manager, tps ...rlmm.TopicIDPartition) {
	t.Helper()
	ctx := testCtx(t)
	if err := m.OnPartitionLeadershipChanges(ctx, tps, nil); err != nil {
		t.Fatalf("OnPartitionLeadershipChanges: %v", err)
	}
	for _, tp := range tps {
		if err := m.WaitReady(ctx, tp); err != nil {
			t.Fatalf("WaitReady(%s): %v", tp, err)
		}
	}
}

// must fails the test on err.
func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// hwm returns the high-water mark of one partition of l.
func hwm(t testing.TB, l eventlog.Log, p int32) int64 {
	t.Helper()
	h, err := l.HighWaterMarks(testCtx(t), []int32{p})
	if err != nil {
		t.Fatal(err)
	}
	return h[0]
}

// addFinished adds md and finishes it through m.
func addFinished(t testing.TB, m *Manager, md rlmm.SegmentMetadata) {
	t.Helper()
	ctx := testCtx(t)
	must(t, m.AddSegment(ctx, md))
	must(t, m.UpdateSegment(ctx, update(md, rlmm.CopySegmentFinished)))
}

// sameSegments compares two segment lists by value.
func sameSegments(a, b []rlmm.SegmentMetadata) error {
	if len(a) != len(b) {
		return fmt.Errorf("got %d segments, want %d", len(a), len(b))
	}
	for i := range a {
		if !a[i].Equal(&b[i]) {
			return fmt.Errorf("segment %d: got %v, want %v", i, a[i], b[i])
		}
	}
	return nil
}

// pausableLog wraps a log so a test can hold back delivery to the
// subscriptions it opens (to observe a manager catching up).
type pausableLog struct {
	eventlog.Log
	mu     sync.Mutex
	paused bool
	resume chan struct{}
}

func newPausableLog(l eventlog.Log) *pausableLog {
	return &pausableLog{Log: l, resume: make(chan struct{})}
}

func (l *pausableLog) Pause() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.paused = true
}

func (l *pausableLog) Resume() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.paused {
		l.paused = false
		close(l.resume)
		l.resume = make(chan struct{})
	}
}

func (l *pausableLog) gate(ctx context.Context) error {
	for {
		l.mu.Lock()
		paused, resume := l.paused, l.resume
		l.mu.Unlock()
		if !paused {
			return nil
		}
		select {
		case <-resume:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (l *pausableLog) Subscribe(ctx context.Context) (eventlog.Subscription, error) {
	s, err := l.Log.Subscribe(ctx)
	if err != nil {
		return nil, err
	}
	return &pausableSub{Subscription: s, l: l}, nil
}

type pausableSub struct {
	eventlog.Subscription
	l    *pausableLog
	mu   sync.Mutex
	held []eventlog.Record // fetched while paused, returned after Resume
}

// Poll fetches, then holds the records while the log is paused, so a Poll
// already blocked when Pause is called delivers nothing until Resume.
func (s *pausableSub) Poll(ctx context.Context) ([]eventlog.Record, error) {
	s.mu.Lock()
	empty := len(s.held) == 0
	s.mu.Unlock()
	if empty {
		recs, err := s.Subscription.Poll(ctx)
		if err != nil {
			return nil, err
		}
		s.mu.Lock()
		s.held = append(s.held, recs...)
		s.mu.Unlock()
	}
	if err := s.l.gate(ctx); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.held
	s.held = nil
	return out, nil
}

// drop forgets held records of p, keeping Add and Remove exact.
func (s *pausableSub) drop(p int32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	kept := s.held[:0]
	for _, r := range s.held {
		if r.Partition != p {
			kept = append(kept, r)
		}
	}
	s.held = kept
}

func (s *pausableSub) Add(p int32, offset int64) error {
	s.drop(p)
	return s.Subscription.Add(p, offset)
}

func (s *pausableSub) Remove(p int32) error {
	err := s.Subscription.Remove(p)
	s.drop(p)
	return err
}

// countingMetrics counts what Metrics reports.
type countingMetrics struct {
	NopMetrics
	mu                             sync.Mutex
	applied, rejected, undecodable int
	mutations                      int
	snapshots                      int
	built                          []uint64 // failures of each SnapshotBuilt
	ready                          map[int32]bool
	progress                       map[int32][2]int64 // applied offset, high-water mark
	historyLost                    [][3]int64         // partition, from, to of each HistoryLost
}

func (c *countingMetrics) HistoryLost(p int32, from, to int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.historyLost = append(c.historyLost, [3]int64{int64(p), from, to})
}

// lostGaps returns the HistoryLost reports so far.
func (c *countingMetrics) lostGaps() [][3]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.historyLost)
}

func (c *countingMetrics) PartitionProgress(p int32, applied, highWaterMark int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.progress == nil {
		c.progress = map[int32][2]int64{}
	}
	c.progress[p] = [2]int64{applied, highWaterMark}
}

func (c *countingMetrics) EventsConsumed(_ int32, a, r, u int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.applied += a
	c.rejected += r
	c.undecodable += u
}

func (c *countingMetrics) PartitionReadiness(p int32, _, ready bool, _ time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ready == nil {
		c.ready = map[int32]bool{}
	}
	c.ready[p] = ready
}

func (c *countingMetrics) MutationDone(Op, time.Duration, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mutations++
}

func (c *countingMetrics) SnapshotBuilt(_ time.Duration, failures uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.built = append(c.built, failures)
}

func (c *countingMetrics) SnapshotWritten(_ time.Duration, _ int64, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err == nil {
		c.snapshots++
	}
}

// isErr reports whether err matches target (for table-driven want errors;
// a nil target means no error).
func isErr(err, target error) bool {
	if target == nil {
		return err == nil
	}
	return errors.Is(err, target)
}

// waitFor waits until cond holds, checking every millisecond, for at most
// testTimeout. Only tests poll: the manager itself never does.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// partitionView is what a manager answers about one user partition.
type partitionView struct {
	Segments []rlmm.SegmentMetadata
	Highest  map[int32]int64
}

// segmentReader is what viewOf reads: a *Manager, or a memory.Manager a
// test built as the expected state.
type segmentReader interface {
	ListSegments(tp rlmm.TopicIDPartition) ([]rlmm.SegmentMetadata, error)
	HighestOffsetForEpoch(tp rlmm.TopicIDPartition, leaderEpoch int32) (int64, bool, error)
}

// viewOf reads tps (epochs 0 to 3) from m; every read must succeed.
func viewOf(t testing.TB, m segmentReader, tps []rlmm.TopicIDPartition) map[rlmm.TopicIDPartition]partitionView {
	t.Helper()
	out := map[rlmm.TopicIDPartition]partitionView{}
	for _, tp := range tps {
		segs, err := m.ListSegments(tp)
		if err != nil {
			t.Fatalf("ListSegments(%s): %v", tp, err)
		}
		v := partitionView{Segments: segs, Highest: map[int32]int64{}}
		for e := int32(0); e <= 3; e++ {
			h, ok, err := m.HighestOffsetForEpoch(tp, e)
			if err != nil {
				t.Fatalf("HighestOffsetForEpoch(%s, %d): %v", tp, e, err)
			}
			if ok {
				v.Highest[e] = h
			}
		}
		out[tp] = v
	}
	return out
}

// sameViews reports the first difference between two views.
func sameViews(got, want map[rlmm.TopicIDPartition]partitionView) error {
	if len(got) != len(want) {
		return fmt.Errorf("views of %d partitions, want %d", len(got), len(want))
	}
	for tp, w := range want {
		g := got[tp]
		if err := sameSegments(g.Segments, w.Segments); err != nil {
			return fmt.Errorf("%s: %w", tp, err)
		}
		if fmt.Sprint(g.Highest) != fmt.Sprint(w.Highest) {
			return fmt.Errorf("%s: highest offsets %v, want %v", tp, g.Highest, w.Highest)
		}
	}
	return nil
}

// workload runs a deterministic mix of mutations over tps through m and
// returns how many events it published: per segment an add and a finish,
// every third one then deleted (two more events).
func workload(t testing.TB, m *Manager, tps []rlmm.TopicIDPartition, firstID uint64, perPartition int) int {
	t.Helper()
	ctx := testCtx(t)
	events := 0
	for i := range perPartition {
		for j, tp := range tps {
			id := firstID + uint64(i*len(tps)+j)
			start := int64(i) * 100
			md := segment(tp, id, start, start+99, int64(i/2), start)
			addFinished(t, m, md)
			events += 2
			if id%3 == 0 {
				must(t, m.UpdateSegment(ctx, update(md, rlmm.DeleteSegmentStarted)))
				must(t, m.UpdateSegment(ctx, update(md, rlmm.DeleteSegmentFinished)))
				events += 2
			}
		}
	}
	return events
}

// waitForNil waits until check returns nil and reports its last error on
// timeout.
func waitForNil(t testing.TB, what string, check func() error) {
	t.Helper()
	var last error
	deadline := time.Now().Add(testTimeout)
	for last = check(); last != nil; last = check() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s: %v", what, last)
		}
		time.Sleep(time.Millisecond)
	}
}

// waitCaughtUp waits until m has applied everything now in l of the
// metadata partitions it consumes.
func waitCaughtUp(t testing.TB, m *Manager, l eventlog.Log) {
	t.Helper()
	waitForNil(t, "manager to catch up with the log", func() error {
		for _, p := range m.Stats().Partitions {
			if h := hwm(t, l, p.Partition); p.Applied != h-1 {
				return fmt.Errorf("metadata partition %d applied up to %d, the log ends at %d", p.Partition, p.Applied, h-1)
			}
		}
		return nil
	})
}

// processCPUTime is the CPU time (user + system) the process has used, for
// benchmarks that report it beside the wall time of a loaded machine.
func processCPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// flushedRun runs the workload (perPartition rounds over tps) on a manager
// with a snapshot directory, writes the final snapshot, and returns the view
// it ended with and the number of events the workload published.
func flushedRun(t testing.TB, l eventlog.Log, dir string, tps []rlmm.TopicIDPartition, perPartition int) (map[rlmm.TopicIDPartition]partitionView, int) {
	t.Helper()
	m := startManager(t, Config{Log: l, SnapshotDir: dir, SnapshotInterval: -1})
	assign(t, m, tps...)
	events := workload(t, m, tps, 0, perPartition)
	want := viewOf(t, m, tps)
	must(t, m.ShutdownAndFlush(testCtx(t)))
	return want, events
}

// restartReplaysNothing starts a manager on the snapshot a final flush left
// in dir and checks that it replays no event and shows want.
func restartReplaysNothing(t testing.TB, l eventlog.Log, dir string, tps []rlmm.TopicIDPartition, want map[rlmm.TopicIDPartition]partitionView) {
	t.Helper()
	m := startManager(t, Config{Log: l, SnapshotDir: dir, SnapshotInterval: -1})
	assign(t, m, tps...)
	if got := m.Stats().Consumed(); got != 0 {
		t.Errorf("replayed %d events after a final snapshot; want 0", got)
	}
	must(t, sameViews(viewOf(t, m, tps), want))
}

// snapshotContent is a whole snapshot held in memory: what the tests write
// into a snapshot file (to damage it, or to start from it) and read back.
type snapshotContent struct {
	partitions int32
	committed  []int64
	states     []memory.PartitionState
}

// memFile is an io.WriterAt over a growing byte slice.
type memFile struct{ b []byte }

func (f *memFile) WriteAt(p []byte, off int64) (int, error) {
	if end := int(off) + len(p); end > len(f.b) {
		f.b = append(f.b, make([]byte, end-len(f.b))...)
	}
	return copy(f.b[off:], p), nil
}

// encodeSnapshot returns the bytes of a snapshot file holding s (written
// with snapshot.Writer, format version 4, as the manager writes it). It
// panics if s cannot be written (a test's mistake).
func encodeSnapshot(s *snapshotContent) []byte {
	var out bytes.Buffer
	w, err := snapshot.NewWriter(&out, rlmm.ZeroUuid, s.partitions)
	if err != nil {
		panic(err)
	}
	for mp, c := range s.committed {
		if err := w.SetCommitted(int32(mp), c); err != nil {
			panic(err)
		}
	}
	for i := range s.states {
		if err := w.WriteBlock(&s.states[i]); err != nil {
			panic(err)
		}
	}
	if _, err := w.Finish(); err != nil {
		panic(err)
	}
	return out.Bytes()
}

// encodeSnapshotV3 is encodeSnapshot in the older format, version 3
// (snapshot.WriterV3), as builds before version 4 wrote it.
func encodeSnapshotV3(s *snapshotContent) []byte {
	tps := make([]rlmm.TopicIDPartition, len(s.states))
	for i := range s.states {
		tps[i] = s.states[i].TopicIDPartition
	}
	var out memFile
	w, err := snapshot.NewWriterV3(&out, snapshot.Head{Partitions: s.partitions, Committed: s.committed}, tps)
	if err != nil {
		panic(err)
	}
	for i := range s.states {
		if err := w.WriteBlock(&s.states[i]); err != nil {
			panic(err)
		}
	}
	if _, err := w.Finish(); err != nil {
		panic(err)
	}
	return out.b
}

// decodeSnapshot checks and decodes a whole snapshot file held in memory
// (the states own their memory). Every failure wraps rlmm.ErrCorrupt.
func decodeSnapshot(file []byte) (*snapshotContent, error) {
	r, err := snapshot.Open(bytes.NewReader(file), int64(len(file)))
	if err != nil {
		return nil, err
	}
	head := r.Head()
	s := &snapshotContent{partitions: head.Partitions, committed: head.Committed, states: make([]memory.PartitionState, len(r.Blocks()))}
	var buf []byte
	for k, blk := range r.Blocks() {
		if buf, err = r.ReadBlock(k, buf); err != nil {
			return nil, err
		}
		if s.states[k], err = snapshot.DecodeState(buf, blk); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// logRecorder is a slog.Handler that keeps every record's message and
// attributes as one line, for tests of what the manager logs.
type logRecorder struct {
	mu    sync.Mutex
	lines []string
}

func (r *logRecorder) Enabled(context.Context, slog.Level) bool { return true }

func (r *logRecorder) Handle(_ context.Context, rec slog.Record) error {
	var b strings.Builder
	b.WriteString(rec.Level.String() + " " + rec.Message)
	rec.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	})
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lines = append(r.lines, b.String())
	return nil
}

func (r *logRecorder) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *logRecorder) WithGroup(string) slog.Handler      { return r }

// matching returns the lines that contain every one of parts.
func (r *logRecorder) matching(parts ...string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
next:
	for _, l := range r.lines {
		for _, p := range parts {
			if !strings.Contains(l, p) {
				continue next
			}
		}
		out = append(out, l)
	}
	return out
}

// readAll returns every record of partition p of l from its log start up
// to its high-water mark now.
func readAll(t testing.TB, l eventlog.Log, p int32) []eventlog.Record {
	t.Helper()
	ctx := testCtx(t)
	end := hwm(t, l, p)
	so, err := l.StartOffsets(ctx, []int32{p})
	must(t, err)
	if so[0] >= end {
		return nil
	}
	sub, err := l.Subscribe(ctx)
	must(t, err)
	defer func() { _ = sub.Close() }()
	must(t, sub.Add(p, so[0]))
	var out []eventlog.Record
	for len(out) == 0 || out[len(out)-1].Offset < end-1 {
		recs, err := sub.Poll(ctx)
		if err != nil {
			t.Fatalf("reading partition %d up to %d: %v", p, end, err)
		}
		out = append(out, recs...)
	}
	return out
}

// replayInto applies the events of recs to c as the pump does, ignoring
// what the state machine refuses: the expected state of a manager that
// applied exactly those records.
func replayInto(t testing.TB, c *memory.Manager, recs []eventlog.Record) {
	t.Helper()
	for _, r := range recs {
		// 0 partitions: no partitioner check (the records are the tests' own).
		if res := apply.Record(c, 0, r.Partition, r.Offset, r.Value, nil, nil); res.Reason == ReasonUndecodable {
			t.Fatalf("record %d of partition %d: %v", r.Offset, r.Partition, res.Err)
		}
	}
}

// historyLostOf returns the RejectedEvents of ReasonHistoryLost, each as
// partition, from and to.
func historyLostOf(t testing.TB, m *Manager) [][3]int64 {
	t.Helper()
	var out [][3]int64
	for _, r := range m.Rejected() {
		if r.Reason != ReasonHistoryLost {
			continue
		}
		var hl *HistoryLostError
		if !errors.As(r.Err, &hl) {
			t.Fatalf("history_lost entry without a *HistoryLostError: %+v", r)
		}
		want := fmt.Sprintf("history lost between offsets %d and %d of metadata partition %d", hl.From, hl.To, hl.Partition)
		if !strings.Contains(r.Err.Error(), want) || r.Offset != hl.From || r.Partition != hl.Partition {
			t.Errorf("history_lost entry %+v: want offset %d and the text %q", r, hl.From, want)
		}
		out = append(out, [3]int64{int64(hl.Partition), hl.From, hl.To})
	}
	return out
}

// realKafka returns the addresses of the real broker of RLMM_KAFKA_BOOTSTRAP;
// it skips the test, saying why, when the variable is unset, and fails it in
// CI (CI=true), where make test sets it.
func realKafka(t testing.TB) []string {
	t.Helper()
	addr := os.Getenv(envBootstrap)
	if addr == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal(envBootstrap + " is unset in CI: make test starts a real Kafka broker and sets it")
		}
		t.Skip(envBootstrap + " is unset: no real Kafka broker to run against; `go run ./test/kafkatest/cmd/kafkatest start <dir>` starts one and prints the variable (make test does this)")
	}
	return strings.Split(addr, ",")
}

// kafkaAdmin returns an admin client of the cluster at addrs, closed at the
// end of the test.
func kafkaAdmin(t testing.TB, addrs []string) *kadm.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

// kafkaDeleteRecords moves the log start offset of partition p of topic to
// offset (Kafka's DeleteRecords) and checks the broker's answer.
func kafkaDeleteRecords(t testing.TB, adm *kadm.Client, topic string, p int32, offset int64) {
	t.Helper()
	var os kadm.Offsets
	os.Add(kadm.Offset{Topic: topic, Partition: p, At: offset})
	resp, err := adm.DeleteRecords(testCtx(t), os)
	if err != nil {
		t.Fatalf("DeleteRecords %s-%d before %d: %v", topic, p, offset, err)
	}
	r, ok := resp.Lookup(topic, p)
	switch {
	case !ok:
		t.Fatalf("DeleteRecords %s-%d: no answer for the partition", topic, p)
	case r.Err != nil:
		t.Fatalf("DeleteRecords %s-%d before %d: %v", topic, p, offset, r.Err)
	case r.LowWatermark != offset:
		t.Fatalf("DeleteRecords %s-%d before %d: the start is now %d", topic, p, offset, r.LowWatermark)
	}
}

// writeFileAtomic writes data to dir/name atomically.
func writeFileAtomic(dir, name string, data []byte) error {
	return atomicfile.WriteFile(filepath.Join(dir, name), data, 0o600)
}

// unhostedReads runs every read of tp and returns the errors of those that
// did not answer with an error, or with a value (each must be refused).
func unhostedReads(m *Manager, tp rlmm.TopicIDPartition) []error {
	var errs []error
	check := func(name string, answered bool, err error) {
		if answered || err == nil {
			err = fmt.Errorf("%s of %s answered (%v, %v)", name, tp, answered, err)
		}
		errs = append(errs, err)
	}
	_, ok, err := m.SegmentForOffset(tp, 0, 0)
	check("SegmentForOffset", ok, err)
	_, ok, err = m.HighestOffsetForEpoch(tp, 0)
	check("HighestOffsetForEpoch", ok, err)
	sz, err := m.RemoteLogSize(tp, 0)
	check("RemoteLogSize", sz != 0, err)
	list, err := m.ListSegments(tp)
	check("ListSegments", len(list) != 0, err)
	var dst rlmm.SegmentMetadata
	ok, err = m.SegmentForOffsetInto(tp, 0, 0, &dst)
	check("SegmentForOffsetInto", ok, err)
	_, ok, err = m.NextSegmentWithTxnIndex(tp, 0, 0)
	check("NextSegmentWithTxnIndex", ok, err)
	list, err = m.ListSegmentsForEpoch(tp, 0)
	check("ListSegmentsForEpoch", len(list) != 0, err)
	return errs
}

// splitCollector is a Metrics that keeps every mutation's split.
type splitCollector struct {
	NopMetrics
	mu     sync.Mutex
	splits []MutationSplit
}

func (c *splitCollector) MutationSplit(_ Op, s MutationSplit) {
	c.mu.Lock()
	c.splits = append(c.splits, s)
	c.mu.Unlock()
}

// take returns the splits kept so far and forgets them.
func (c *splitCollector) take() []MutationSplit {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.splits
	c.splits = nil
	return s
}

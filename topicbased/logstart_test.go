package topicbased

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/eventlog"
	"github.com/rlmm-go/rlmm/eventlog/memlog"
	"github.com/rlmm-go/rlmm/memory"
)

// Readiness and replay from the log start offset (records deleted at the
// start, and a metadata partition whose records were all deleted, which
// must still become ready), over memlog's DeleteRecordsBefore and a
// real broker's DeleteRecords.

// truncater is a log whose records a test can delete: memlog, or a real
// Kafka topic through kadm.
type truncater struct {
	name string
	// open returns a fresh log of n partitions (closed at the end of the
	// test) and the function deleting the records of p below offset.
	open func(t *testing.T, n int32) (eventlog.Log, func(p int32, offset int64))
}

var memTruncater = truncater{"memlog", func(t *testing.T, n int32) (eventlog.Log, func(int32, int64)) {
	l := memlog.New(n)
	t.Cleanup(func() { _ = l.Close() })
	return l, func(p int32, offset int64) { must(t, l.DeleteRecordsBefore(testCtx(t), p, offset)) }
}}

func kafkaTruncater(addrs []string) truncater {
	return truncater{"kafka", func(t *testing.T, n int32) (eventlog.Log, func(int32, int64)) {
		topic := kafkaTopicName(t)
		l := openKafkaTopic(t, addrs, topic, n)
		t.Cleanup(func() { _ = l.Close() })
		adm := kafkaAdmin(t, addrs)
		return l, func(p int32, offset int64) { kafkaDeleteRecords(t, adm, topic, p, offset) }
	}}
}

// startCase is one row of the log start table: where the log starts after
// the deletion, relative to the snapshot's committed offset (the first
// workload's last event, at h1-1) and the end of the log (h2).
type startCase struct {
	name     string
	snapshot bool
	start    func(h1, h2 int64) int64
}

var startCases = []startCase{
	{"no snapshot, start 0", false, func(_, _ int64) int64 { return 0 }},
	{"no snapshot, start in the middle", false, func(h1, _ int64) int64 { return h1 }},
	{"no snapshot, start at the high-water mark", false, func(_, h2 int64) int64 { return h2 }},
	{"snapshot, start 0", true, func(_, _ int64) int64 { return 0 }},
	{"snapshot committed above the start", true, func(h1, _ int64) int64 { return h1 - 3 }},
	{"snapshot committed just below the start", true, func(h1, _ int64) int64 { return h1 }},
	{"snapshot committed below the start", true, func(h1, _ int64) int64 { return h1 + 3 }},
	{"snapshot, start at the high-water mark", true, func(_, h2 int64) int64 { return h2 }},
}

// TestReadyFromTheLogStart runs the table over memlog.
func TestReadyFromTheLogStart(t *testing.T) { runStartCases(t, memTruncater) }

// TestReadyFromTheLogStartRealKafka runs the table over a real broker.
func TestReadyFromTheLogStartRealKafka(t *testing.T) {
	runStartCases(t, kafkaTruncater(realKafka(t)))
}

func runStartCases(t *testing.T, tr truncater) {
	for _, tc := range startCases {
		t.Run(tc.name, func(t *testing.T) { runStartCase(t, tr, tc) })
	}
}

// runStartCase writes two workloads to one metadata partition (a snapshot
// after the first when the row says so), deletes the records below the
// row's start and starts a manager: it must be ready (WaitReady returns at
// once when start is the high-water mark), show exactly the state of the
// records it could read (plus the snapshot's), report the gap between what
// it held and the start (log, metric, Rejected) and accept a mutation.
func runStartCase(t *testing.T, tr truncater, tc startCase) {
	l, deleteBefore := tr.open(t, 3)
	tps, mp := sharingPartitions(t, 3, 2)
	dir := t.TempDir()

	// The first workload, then (snapshot rows) the snapshot of it.
	m1 := startManager(t, Config{Log: l, SnapshotDir: dir, SnapshotInterval: -1})
	assign(t, m1, tps...)
	workload(t, m1, tps, 0, 3)
	if tc.snapshot {
		must(t, m1.ShutdownAndFlush(testCtx(t)))
	} else {
		must(t, m1.Close())
	}
	h1 := hwm(t, l, mp)
	// The second workload, by a manager without a snapshot directory.
	m2 := startManager(t, Config{Log: l, SnapshotInterval: -1})
	assign(t, m2, tps...)
	workload(t, m2, tps, 100, 3)
	must(t, m2.Close())
	h2 := hwm(t, l, mp)
	all := readAll(t, l, mp)
	if int64(len(all)) != h2 {
		t.Fatalf("read %d records of metadata partition %d, want %d", len(all), mp, h2)
	}

	start := tc.start(h1, h2)
	if start > 0 {
		deleteBefore(mp, start)
	}
	// The expected state: the snapshot's (records below h1) and the
	// records still in the log after it; the expected gap: what is
	// neither.
	held := int64(0)
	if tc.snapshot {
		held = h1
	}
	from := max(held, start)
	expected := memory.New()
	replayInto(t, expected, all[:held])
	replayInto(t, expected, all[from:])
	var wantGaps [][3]int64
	if start > held {
		wantGaps = [][3]int64{{int64(mp), held, start}}
	}

	met := &countingMetrics{}
	logs := &logRecorder{}
	m3 := startManager(t, Config{Log: l, SnapshotDir: dir, SnapshotInterval: -1, Metrics: met,
		Logger: slog.New(logs), ConsumeWait: testTimeout})
	began := time.Now()
	assign(t, m3, tps...)
	t.Logf("start %d of high-water mark %d (snapshot committed %d): ready after %s", start, h2, held-1, time.Since(began))
	if err := sameViews(viewOf(t, m3, tps), viewOf(t, expected, tps)); err != nil {
		t.Errorf("state after the restart: %v", err)
	}
	if got := historyLostOf(t, m3); fmt.Sprint(got) != fmt.Sprint(wantGaps) {
		t.Errorf("Rejected() history_lost = %v, want %v", got, wantGaps)
	}
	if got := met.lostGaps(); fmt.Sprint(got) != fmt.Sprint(wantGaps) {
		t.Errorf("Metrics.HistoryLost = %v, want %v", got, wantGaps)
	}
	lines := logs.matching("history lost", fmt.Sprintf("partition=%d", mp))
	if len(lines) != len(wantGaps) {
		t.Errorf("%d log lines about history lost, want %d: %q", len(lines), len(wantGaps), lines)
	}
	st := m3.Stats()
	if want := uint64(start - held); start > held && st.HistoryLost != want {
		t.Errorf("Stats.HistoryLost = %d, want %d", st.HistoryLost, want)
	}
	for _, ps := range st.Partitions {
		if ps.Partition == mp && (ps.Applied != h2-1 || ps.LogStart != start || !ps.Ready) {
			t.Errorf("stats of metadata partition %d = %+v; want applied %d, log start %d, ready", mp, ps, h2-1, start)
		}
	}

	// A mutation behaves as on any partition: applied and read back.
	md := segment(tps[0], 999, 10_000, 10_099)
	addFinished(t, m3, md)
	if _, ok, err := m3.SegmentForOffset(tps[0], 0, 10_050); !ok || err != nil {
		t.Errorf("the segment added after the restart: %v, %v", ok, err)
	}
	must(t, m3.Sync(testCtx(t), tps[1]))
}

// staleStartLog answers StartOffsets with 0 for its first stale calls, as a
// log start read just before records were deleted would: the manager must
// then learn the start from what the log delivers (a gap) or, when nothing
// is left to deliver, from its periodic check of catching-up partitions.
type staleStartLog struct {
	*memlog.Log
	stale atomic.Int32
}

func (l *staleStartLog) StartOffsets(ctx context.Context, ps []int32) ([]int64, error) {
	if l.stale.Add(-1) >= 0 {
		return make([]int64, len(ps)), nil
	}
	return l.Log.StartOffsets(ctx, ps)
}

// Records deleted after the manager read the log start (at its assignment)
// and before it consumed them: some of them (the gap shows in what the log
// delivers) or all of them (the housekeeper's check finds the new start).
// Either way the partition becomes ready and the gap is reported once.
func TestRecordsDeletedAfterTheStartWasRead(t *testing.T) {
	for _, all := range []bool{false, true} {
		t.Run(fmt.Sprintf("all=%v", all), func(t *testing.T) {
			base := memlog.New(3)
			t.Cleanup(func() { _ = base.Close() })
			l := &staleStartLog{Log: base}
			tps, mp := sharingPartitions(t, 3, 2)
			m1 := startManager(t, Config{Log: l, SnapshotInterval: -1})
			assign(t, m1, tps...)
			workload(t, m1, tps, 0, 3)
			must(t, m1.Close())
			h := hwm(t, l, mp)
			start := h / 2
			if all {
				start = h
			}
			records := readAll(t, l, mp)
			must(t, base.DeleteRecordsBefore(testCtx(t), mp, start))

			expected := memory.New()
			replayInto(t, expected, records[start:])
			l.stale.Store(1) // the assignment's read
			met := &countingMetrics{}
			m2 := startManager(t, Config{Log: l, SnapshotInterval: -1, Metrics: met})
			began := time.Now()
			assign(t, m2, tps...)
			t.Logf("start %d of %d: ready after %s", start, h, time.Since(began))
			if err := sameViews(viewOf(t, m2, tps), viewOf(t, expected, tps)); err != nil {
				t.Error(err)
			}
			want := fmt.Sprint([][3]int64{{int64(mp), 0, start}})
			if got := fmt.Sprint(historyLostOf(t, m2)); got != want {
				t.Errorf("Rejected() history_lost = %s, want %s", got, want)
			}
			if got := fmt.Sprint(met.lostGaps()); got != want {
				t.Errorf("Metrics.HistoryLost = %s, want %s", got, want)
			}
		})
	}
}

// What bounded a wait is what its timeout error says: the caller's
// deadline for WaitReady (which ConsumeWait does not bound), ConsumeWait or
// the caller's deadline for a mutation, whichever came first. (Before, the
// text always claimed "bounded by ctx and ConsumeWait", also after WaitReady
// waited twice ConsumeWait.)
func TestTimeoutSaysWhatBoundedIt(t *testing.T) {
	const short = 100 * time.Millisecond
	cases := []struct {
		name        string
		consumeWait time.Duration
		callerWait  time.Duration
		call        func(ctx context.Context, m *Manager, tp rlmm.TopicIDPartition) error
		want        string
		notWant     string
	}{
		{"WaitReady, the caller's deadline", short, 3 * short,
			func(ctx context.Context, m *Manager, tp rlmm.TopicIDPartition) error { return m.WaitReady(ctx, tp) },
			"bounded by the caller's context deadline", "ConsumeWait"},
		{"mutation, ConsumeWait first", short, time.Hour,
			func(ctx context.Context, m *Manager, tp rlmm.TopicIDPartition) error {
				return m.AddSegment(ctx, segment(tp, 1, 0, 9))
			},
			"bounded by Config.ConsumeWait 100ms", "caller"},
		{"mutation, the caller's deadline first", time.Hour, short,
			func(ctx context.Context, m *Manager, tp rlmm.TopicIDPartition) error {
				return m.AddSegment(ctx, segment(tp, 1, 0, 9))
			},
			"bounded by the caller's context deadline", "ConsumeWait"},
		{"Sync, ConsumeWait first", short, time.Hour,
			func(ctx context.Context, m *Manager, tp rlmm.TopicIDPartition) error { return m.Sync(ctx, tp) },
			"bounded by Config.ConsumeWait 100ms", "caller"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			base := newLog(t, 3)
			tp := topicPartition("foo", 1, 0)
			m0 := startManager(t, Config{Log: base})
			assign(t, m0, tp)
			addFinished(t, m0, segment(tp, 7, 0, 9))
			must(t, m0.Close())
			pl := newPausableLog(base)
			pl.Pause()
			defer pl.Resume()
			m := startManager(t, Config{Log: pl, ConsumeWait: tc.consumeWait})
			must(t, m.OnPartitionLeadershipChanges(testCtx(t), []rlmm.TopicIDPartition{tp}, nil))
			ctx, cancel := context.WithTimeout(context.Background(), tc.callerWait)
			defer cancel()
			began := time.Now()
			err := tc.call(ctx, m, tp)
			waited := time.Since(began)
			if !errors.Is(err, rlmm.ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("err = %v; want rlmm.ErrTimeout and context.DeadlineExceeded", err)
			}
			if !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), tc.notWant) {
				t.Errorf("err = %q; want %q and no %q", err, tc.want, tc.notWant)
			}
			if !strings.Contains(err.Error(), "gave up after ") {
				t.Errorf("err = %q does not say how long it waited (%s)", err, waited)
			}
		})
	}
}

// A metadata topic deleted and created again under the same name (its
// offsets back at 0), on a real broker, with fewer records than the
// snapshot claims and with more: the restarted manager drops the snapshot,
// written for the old topic's id, with a logged reason and shows what the
// new topic says. (With more records, offsets alone cannot tell the topics
// apart: the old topic's segments would be served as the new one's.)
func TestRecreatedTopicDropsTheSnapshotRealKafka(t *testing.T) {
	for _, tc := range []struct {
		name string
		// newSegments is how many segments the new topic's history adds
		// to each user partition.
		newSegments int
		more        bool
	}{
		{"fewer records than the snapshot claims", 1, false},
		{"more records than the snapshot claims", 6, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addrs := realKafka(t)
			topic := kafkaTopicName(t)
			adm := kafkaAdmin(t, addrs)
			tps, mp := sharingPartitions(t, 3, 2)
			dir := t.TempDir()

			old := openKafkaTopic(t, addrs, topic, 3)
			oldID := old.ID()
			m1 := startManager(t, Config{Log: old, SnapshotDir: dir, SnapshotInterval: -1})
			assign(t, m1, tps...)
			workload(t, m1, tps, 0, 3)
			must(t, m1.ShutdownAndFlush(testCtx(t)))
			oldEnd := hwm(t, old, mp)
			must(t, old.Close())

			ctx := testCtx(t)
			resp, err := adm.DeleteTopics(ctx, topic)
			must(t, err)
			must(t, resp.Error())
			waitForNil(t, "the deleted topic to be gone", func() error {
				details, err := adm.ListTopics(ctx, topic)
				if err != nil {
					return err
				}
				if d, ok := details[topic]; ok && d.Err == nil {
					return fmt.Errorf("topic %s still listed", topic)
				}
				return nil
			})
			fresh := openKafkaTopic(t, addrs, topic, 3)
			t.Cleanup(func() { _ = fresh.Close() })
			if fresh.ID() == oldID || fresh.ID() == rlmm.ZeroUuid {
				t.Fatalf("the recreated topic's id is %s, the old one's %s: want a new one", fresh.ID(), oldID)
			}
			// The new topic's history: other segments of the same user
			// partitions.
			m2 := startManager(t, Config{Log: fresh, SnapshotInterval: -1})
			assign(t, m2, tps...)
			workload(t, m2, tps, 500, tc.newSegments)
			must(t, m2.Close())
			newEnd := hwm(t, fresh, mp)
			if (newEnd > oldEnd) != tc.more {
				t.Fatalf("the new topic has %d records in metadata partition %d, the old one had %d: want more %v", newEnd, mp, oldEnd, tc.more)
			}
			expected := memory.New()
			replayInto(t, expected, readAll(t, fresh, mp))

			m3 := restartOnAnotherLog(t, fresh, oldID, dir, tps, expected, 1)
			if got := historyLostOf(t, m3); len(got) != 0 {
				t.Errorf("history lost reported on a topic that starts at 0: %v", got)
			}
			t.Logf("old topic %s ended at %d, the recreated one %s at %d: snapshot dropped, %d segments shown",
				oldID, oldEnd, fresh.ID(), newEnd, len(viewOf(t, m3, tps)[tps[0]].Segments))
		})
	}
}

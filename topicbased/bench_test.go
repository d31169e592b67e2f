package topicbased

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/eventlog"
	"github.com/rlmm-go/rlmm/eventlog/filelog"
	"github.com/rlmm-go/rlmm/eventlog/kafkalog"
	"github.com/rlmm-go/rlmm/eventlog/memlog"
	"github.com/rlmm-go/rlmm/memory"
	"github.com/rlmm-go/rlmm/wire"
)

// Benchmarks of docs/bench/topicbased.md. Targets: mutation p50
// over filelog within 1.5 x one fsync; 64 concurrent mutators >= 20,000
// mutations/s; restart with 1,000,000 live segments from a snapshot < 2 s
// to ready and >= 10 x faster than a full replay. The restart size defaults
// to 100,000 segments; -args -restart-segments 1000000 runs the target.

// benchFilelogManager starts a manager over a fresh filelog in a temp dir,
// hosting tps.
func benchFilelogManager(b *testing.B, partitions int32, tps []rlmm.TopicIDPartition) *Manager {
	b.Helper()
	l, err := filelog.Open(filepath.Join(b.TempDir(), "log"), filelog.Options{Partitions: partitions})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = l.Close() })
	m := startManager(b, Config{Log: l})
	assign(b, m, tps...)
	return m
}

// BenchmarkFsync is the reference for the mutation latency: one 200-byte
// write and fsync of a file in the same temp directory as the filelog.
func BenchmarkFsync(b *testing.B) {
	f, err := os.Create(filepath.Join(b.TempDir(), "fsync"))
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	buf := make([]byte, 200)
	lat := make([]time.Duration, 0, b.N)
	for b.Loop() {
		start := time.Now()
		if _, err := f.Write(buf); err != nil {
			b.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	reportPercentiles(b, lat)
}

// BenchmarkMutationLatencyFilelog: one caller, AddSegment then
// UpdateSegment(FINISHED) alternately (one mutation per op), each waiting
// for its event to be durable and applied.
func BenchmarkMutationLatencyFilelog(b *testing.B) {
	tp := topicPartition("bench", 1, 0)
	m := benchFilelogManager(b, 50, []rlmm.TopicIDPartition{tp})
	benchMutationLatency(b, m, tp)
}

// benchMutationLatency times one caller's mutations of tp, AddSegment then
// UpdateSegment(FINISHED) alternately (one mutation per op), and reports
// their percentiles.
func benchMutationLatency(b *testing.B, m *Manager, tp rlmm.TopicIDPartition) {
	ctx := context.Background()
	lat := make([]time.Duration, 0, b.N)
	i := 0
	var md rlmm.SegmentMetadata
	for b.Loop() {
		start := time.Now()
		var err error
		if i%2 == 0 {
			md = segment(tp, uint64(i), int64(i)*100, int64(i)*100+99)
			err = m.AddSegment(ctx, md)
		} else {
			err = m.UpdateSegment(ctx, update(md, rlmm.CopySegmentFinished))
		}
		if err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
		i++
	}
	reportPercentiles(b, lat)
}

// BenchmarkMutationLatencyKafka: as BenchmarkMutationLatencyFilelog over
// kafkalog, against kfake and, when RLMM_KAFKA_BOOTSTRAP is set, a real
// broker (acks=all, the publish-to-delivered round trip included).
func BenchmarkMutationLatencyKafka(b *testing.B) {
	backends := []logBackend{kafkaBackend("kfake", fakeCluster(b).ListenAddrs())}
	if addr := os.Getenv(envBootstrap); addr != "" {
		backends = append(backends, kafkaBackend("kafka", strings.Split(addr, ",")))
	} else {
		b.Log(envBootstrap + " unset: the real-broker case is not run")
	}
	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) {
			tp := topicPartition("bench", 1, 0)
			l := be.open(b, 50)
			b.Cleanup(func() { _ = l.Close() })
			m := startManager(b, Config{Log: l})
			assign(b, m, tp)
			benchMutationLatency(b, m, tp)
		})
	}
}

// BenchmarkConcurrentMutatorsFilelog: 64 goroutines, each copying segments
// of its own user partition (add, then finish), over 50 metadata partitions.
func BenchmarkConcurrentMutatorsFilelog(b *testing.B) {
	const mutators = 64
	tps := make([]rlmm.TopicIDPartition, mutators)
	for i := range tps {
		tps[i] = topicPartition("bench", 2, int32(i))
	}
	m := benchFilelogManager(b, 50, tps)
	ctx := context.Background()
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for g := range mutators {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tp := tps[g]
			for {
				i := next.Add(2) - 2
				if i >= int64(b.N) {
					return
				}
				md := segment(tp, uint64(i), i*100, i*100+99)
				if err := m.AddSegment(ctx, md); err != nil {
					b.Error(err)
					return
				}
				if err := m.UpdateSegment(ctx, update(md, rlmm.CopySegmentFinished)); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "mutations/s")
}

// reportPercentiles reports p50 and p99 of lat as custom metrics.
func reportPercentiles(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds()), "p99-ns")
}

// restartFixture is a log holding the history of a number of live
// segments, and a snapshot of all of it.
type restartFixture struct {
	log      eventlog.Log
	dir      string // the snapshot directory
	tps      []rlmm.TopicIDPartition
	segments int
	events   int
}

var (
	restartMu       sync.Mutex
	restartFixtures = map[string]*restartFixture{}
	restartTempDirs []string
)

// restartShape is where the restart fixture's deleted segments lie
// (-restart-shape): "reupload", the default, uploads each live
// segment's offsets again history times, each copy then deleted, so every
// delete uncovers the live segment beneath it (the costliest delete there
// is); "retention" uploads history older segments below the live ones,
// each deleted as retention deletes them, the shape of a topic whose
// remote data ages out.
func restartShape() string {
	if *restartShapeFlag == "retention" {
		return "retention"
	}
	return "reupload"
}

// restartHistory is how many deleted segments (add, finish, delete
// started, delete finished) the history holds per live segment:
// -restart-history, default 0 (the least history possible).
func restartHistory() int { return max(*restartHistoryFlag, 0) }

// restartSegments is the fixture's live segments: -restart-segments.
func restartSegments() int {
	if *restartSegmentsFlag > 0 {
		return *restartSegmentsFlag
	}
	return 100_000
}

// restartPerPartition is how many live segments the restart fixture puts
// in each user partition.
const restartPerPartition = 1000

// restartPartitions returns the user partitions of a restart fixture of
// segments live segments.
func restartPartitions(segments int) []rlmm.TopicIDPartition {
	tps := make([]rlmm.TopicIDPartition, 0, (segments+restartPerPartition-1)/restartPerPartition)
	for i := range cap(tps) {
		tps = append(tps, topicPartition("restart", 3, int32(i)))
	}
	return tps
}

// buildRestartFixture writes, per live segment, its add and its finish (the
// least history a live segment can have, which favours the full replay) and
// history deleted segments laid out as shape says (restartShape) to l (50
// partitions), 1,000 live segments per user partition, from publishWorkers
// concurrent publishers; then a manager replays it all and writes its snapshot.
func buildRestartFixture(l eventlog.Log, snapDir string, segments, history int, shape string) (*restartFixture, error) {
	const perPartition = restartPerPartition
	f := &restartFixture{log: l, dir: snapDir, segments: segments, events: (2 + 4*history) * segments, tps: restartPartitions(segments)}
	ctx := context.Background()
	err := publishFromWorkers(ctx, l, f.tps, func(t int, tp rlmm.TopicIDPartition) []wire.Event {
		var evs []wire.Event
		deleted := func(id uint64, start int64) {
			old := segment(tp, id, start, start+99, start/10_000, start)
			evs = append(evs, wire.SegmentEvent(old), wire.UpdateEvent(update(old, rlmm.CopySegmentFinished)),
				wire.UpdateEvent(update(old, rlmm.DeleteSegmentStarted)), wire.UpdateEvent(update(old, rlmm.DeleteSegmentFinished)))
		}
		live := int64(0) // the first live segment's offset
		if shape == "retention" {
			// Every older segment first, in offset order, each deleted.
			live = int64(history) * perPartition * 100
			for j := range history {
				for k := int64(0); k < perPartition && t*perPartition+int(k) < segments; k++ {
					deleted(uint64(t*perPartition)+uint64(k)+uint64(j+1)<<32, (int64(j)*perPartition+k)*100)
				}
			}
		}
		for k := int64(0); k < perPartition && t*perPartition+int(k) < segments; k++ {
			start := live + k*100
			md := segment(tp, uint64(t*perPartition)+uint64(k), start, start+99, start/10_000, start)
			evs = append(evs, wire.SegmentEvent(md), wire.UpdateEvent(update(md, rlmm.CopySegmentFinished)))
			if shape == "reupload" {
				for j := range history {
					deleted(uint64(t*perPartition)+uint64(k)+uint64(j+1)<<32, start)
				}
			}
		}
		return evs
	})
	if err != nil {
		return nil, err
	}
	m, err := Start(ctx, Config{Log: f.log, SnapshotDir: f.dir, SnapshotInterval: -1})
	if err != nil {
		return nil, err
	}
	if err := waitAllReady(ctx, m, f.tps); err != nil {
		_ = m.Close()
		return nil, err
	}
	return f, m.ShutdownAndFlush(ctx)
}

// publishWorkers is how many goroutines publishFromWorkers publishes from.
// Each has one event in flight, so it bounds what one group commit of
// filelog carries: with 64, the fixture of 100,000,000 events was written
// at about 25,000 events/s (an fsync per 64 events).
const publishWorkers = 1024

// publishFromWorkers publishes, from publishWorkers goroutines, the events
// eventsOf returns for each of tps (in order within one partition) to the
// partition's metadata partition, and returns the first error.
func publishFromWorkers(ctx context.Context, l eventlog.Log, tps []rlmm.TopicIDPartition, eventsOf func(i int, tp rlmm.TopicIDPartition) []wire.Event) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, publishWorkers)
	for range publishWorkers {
		wg.Go(func() {
			var buf []byte
			for {
				i := int(next.Add(1) - 1)
				if i >= len(tps) {
					return
				}
				mp := wire.MetadataPartition(tps[i], l.Partitions())
				for _, ev := range eventsOf(i, tps[i]) {
					var err error
					if buf, err = wire.AppendEvent(buf[:0], &ev); err == nil {
						_, err = l.Publish(ctx, mp, buf)
					}
					if err != nil {
						errs <- err
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

func waitAllReady(ctx context.Context, m *Manager, tps []rlmm.TopicIDPartition) error {
	if err := m.OnPartitionLeadershipChanges(ctx, tps, nil); err != nil {
		return err
	}
	for _, tp := range tps {
		if err := m.WaitReady(ctx, tp); err != nil {
			return err
		}
	}
	return nil
}

// closeRestartFixture closes the benchmarks' shared logs and removes their
// files (called by TestMain, before the kfake cluster is closed).
func closeRestartFixture() {
	restartMu.Lock()
	defer restartMu.Unlock()
	for name, f := range restartFixtures {
		_ = f.log.Close()
		delete(restartFixtures, name)
	}
	if hostingFix != nil {
		_ = hostingFix.log.Close()
		hostingFix = nil
	}
	for _, d := range restartTempDirs {
		_ = os.RemoveAll(d)
	}
	restartTempDirs = nil
}

// restartFixtureFor builds (once per backend) the restart fixture.
func restartFixtureFor(b *testing.B, backend string) *restartFixture {
	restartMu.Lock()
	defer restartMu.Unlock()
	if f := restartFixtures[backend]; f != nil {
		return f
	}
	segments, history := restartSegments(), restartHistory()
	dir, keep := restartFixtureDir(backend, segments, history, restartShape())
	if keep != "" {
		if f, err := reopenRestartFixture(b, backend, dir, keep, segments, history); err == nil {
			b.Logf("%s fixture: %d segments, %d events, reused from %s", backend, f.segments, f.events, dir)
			restartFixtures[backend] = f
			return f
		} else if !errors.Is(err, fs.ErrNotExist) {
			b.Fatal(err)
		}
		_ = os.RemoveAll(dir)
	}
	if keep == "" {
		var err error
		if dir, err = os.MkdirTemp("", "rlmm-bench-restart-"); err != nil {
			b.Fatal(err)
		}
		restartTempDirs = append(restartTempDirs, dir)
	}
	l, err := openRestartLog(b, backend, dir, restartKafkaTopic(segments, history, restartShape()))
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	f, err := buildRestartFixture(l, filepath.Join(dir, "snap"), segments, history, restartShape())
	if err != nil {
		_ = l.Close()
		b.Fatal(err)
	}
	if keep != "" {
		if err := os.WriteFile(filepath.Join(dir, "fixture"), []byte(keep), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("%s fixture: %d segments, %d events, built in %s", backend, f.segments, f.events, time.Since(start))
	restartFixtures[backend] = f
	return f
}

// openRestartLog opens the log of a restart fixture of backend: filelog in
// dir, kfake's shared cluster, or the real broker of RLMM_KAFKA_BOOTSTRAP
// (kafka), whose topic is created when it does not exist yet.
func openRestartLog(b *testing.B, backend, dir, topic string) (eventlog.Log, error) {
	switch backend {
	case "filelog":
		return filelog.Open(filepath.Join(dir, "log"), filelog.Options{Partitions: 50})
	case "kfake", "kafka":
		addrs := fakeCluster(b).ListenAddrs()
		if backend == "kafka" {
			addrs = realKafka(b)
		}
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		return kafkalog.Open(ctx, kafkalog.Config{BootstrapServers: addrs, Topic: topic, NumPartitions: 50, ReplicationFactor: 1})
	}
	return nil, fmt.Errorf("no restart fixture backend %q", backend)
}

// restartKafkaTopic names the topic of a restart fixture over Kafka, one
// per shape, so that a kept fixture's topic is found again.
func restartKafkaTopic(segments, history int, shape string) string {
	return fmt.Sprintf("rlmm-bench-restart-%d-%d-%s", segments, history, shape)
}

// restartFixtureDir returns where the fixture of backend lives and, when it
// outlives the run (-restart-dir names a directory; filelog, and
// kafka whose topic stays on the broker: the 100,000,000-event fixture takes
// minutes to write), the line that names its shape in the directory's
// "fixture" file.
func restartFixtureDir(backend string, segments, history int, shape string) (dir, keep string) {
	root := *restartDirFlag
	if root == "" || backend == "kfake" {
		return "", ""
	}
	name := fmt.Sprintf("segments=%d,history=%d", segments, history)
	if shape != "reupload" {
		name += ",shape=" + shape
	}
	return filepath.Join(root, backend+"-"+name), name
}

// reopenRestartFixture opens the fixture kept in dir when its "fixture"
// file names the same shape; fs.ErrNotExist when there is none to reuse.
func reopenRestartFixture(b *testing.B, backend, dir, keep string, segments, history int) (*restartFixture, error) {
	got, err := os.ReadFile(filepath.Join(dir, "fixture"))
	if err != nil || string(got) != keep {
		return nil, fs.ErrNotExist
	}
	l, err := openRestartLog(b, backend, dir, restartKafkaTopic(segments, history, restartShape()))
	if err != nil {
		return nil, fmt.Errorf("reopen the restart fixture in %s: %w", dir, err)
	}
	return &restartFixture{log: l, dir: filepath.Join(dir, "snap"), segments: segments,
		events: (2 + 4*history) * segments, tps: restartPartitions(segments)}, nil
}

// BenchmarkRestart measures Start to every partition ready, from the
// snapshot (tail empty) and by a full replay of the same history, over
// filelog, kfake and (kafka, when RLMM_KAFKA_BOOTSTRAP names one) a real
// broker. From the snapshot it also reports the heap the manager holds once
// ready, per segment (heap-B/segment, after a collection, untimed).
func BenchmarkRestart(b *testing.B) {
	for _, backend := range []string{"filelog", "kfake", "kafka"} {
		b.Run(backend, func(b *testing.B) {
			if backend == "kafka" {
				realKafka(b) // skips, saying why, without a broker
			}
			benchmarkRestart(b, restartFixtureFor(b, backend))
		})
	}
}

func benchmarkRestart(b *testing.B, f *restartFixture) {
	for _, c := range []struct {
		name string
		dir  string
	}{{"fromSnapshot", f.dir}, {"fullReplay", ""}} {
		b.Run(fmt.Sprintf("%s/segments=%d/events=%d", c.name, f.segments, f.events), func(b *testing.B) {
			ctx := context.Background()
			// Where the time to ready goes: Start's snapshot check (the
			// header and the index: load-ms), the rest of Start
			// (subscribe, goroutines), and the wait until every metadata
			// partition is ready, which from a snapshot is the restore
			// (blocks decoded into builders on every core, installed by the
			// pump) plus the empty tail. built-ms/op is when the restore
			// ended, from Start (a partition is ready only once its state is
			// built, so it is at most ns/op).
			// cpu-ms/op is the process's CPU time from Start to ready (all
			// goroutines, GC included): on a loaded machine it leaves out
			// the time spent waiting for a CPU.
			var load, start, ready, built, cpu time.Duration
			var heapBefore, heapHeld uint64
			for b.Loop() {
				if c.dir != "" {
					b.StopTimer()
					heapBefore = heapInUse()
					b.StartTimer()
				}
				c0 := processCPUTime()
				t0 := time.Now()
				m, err := Start(ctx, Config{Log: f.log, SnapshotDir: c.dir, SnapshotInterval: -1})
				if err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				if err := waitAllReady(ctx, m, f.tps); err != nil {
					b.Fatal(err)
				}
				ready += time.Since(t1)
				cpu += processCPUTime() - c0
				start += t1.Sub(t0)
				load += m.Stats().SnapshotLoadDuration
				b.StopTimer()
				if c.dir != "" && m.Stats().SnapshotSegments != f.segments {
					b.Fatalf("snapshot held %d segments, want %d", m.Stats().SnapshotSegments, f.segments)
				}
				for m.Stats().SnapshotPending > 0 {
					time.Sleep(time.Millisecond)
				}
				built += m.Stats().SnapshotBuildDuration
				if c.dir != "" {
					if after := heapInUse(); after > heapBefore {
						heapHeld = after - heapBefore
					}
				}
				if got := m.Stats().Consumed(); c.dir == "" && got != uint64(f.events) {
					b.Fatalf("full replay consumed %d events, want %d", got, f.events)
				}
				_ = m.Close()
				b.StartTimer()
			}
			b.ReportMetric(float64(f.segments), "segments")
			n := float64(b.N)
			b.ReportMetric(float64(load.Milliseconds())/n, "load-ms/op")
			b.ReportMetric(float64((start-load).Milliseconds())/n, "start-rest-ms/op")
			b.ReportMetric(float64(ready.Milliseconds())/n, "ready-wait-ms/op")
			b.ReportMetric(float64(built.Milliseconds())/n, "built-ms/op")
			b.ReportMetric(float64(cpu.Milliseconds())/n, "cpu-ms/op")
			if c.dir != "" {
				b.ReportMetric(float64(heapHeld)/float64(f.segments), "heap-B/segment")
			}
		})
	}
}

// heapInUse is the live heap after a collection.
func heapInUse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// BenchmarkSegmentForOffset: the read path (gate + cache) with 10,000
// finished segments in the partition.
func BenchmarkSegmentForOffset(b *testing.B) {
	l := newLog(b, 50)
	m := startManager(b, Config{Log: l})
	tp := topicPartition("bench", 4, 0)
	assign(b, m, tp)
	const n = 10_000
	var buf []byte
	mp := m.MetadataPartitionOf(tp)
	ctx := context.Background()
	for i := range int64(n) {
		md := segment(tp, uint64(i), i*100, i*100+99)
		for _, ev := range []wire.Event{wire.SegmentEvent(md), wire.UpdateEvent(update(md, rlmm.CopySegmentFinished))} {
			var err error
			if buf, err = wire.AppendEvent(buf[:0], &ev); err == nil {
				_, err = l.Publish(ctx, mp, buf)
			}
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := m.Sync(ctx, tp); err != nil {
		b.Fatal(err)
	}
	b.Run("copy", func(b *testing.B) {
		i := int64(0)
		for b.Loop() {
			if _, ok, err := m.SegmentForOffset(tp, 0, (i*7919)%(n*100)); !ok || err != nil {
				b.Fatal("miss", err)
			}
			i++
		}
	})
	b.Run("into", func(b *testing.B) {
		var dst rlmm.SegmentMetadata
		i := int64(0)
		for b.Loop() {
			if ok, err := m.SegmentForOffsetInto(tp, 0, (i*7919)%(n*100), &dst); !ok || err != nil {
				b.Fatal("miss", err)
			}
			i++
		}
	})
}

// BenchmarkWriteSnapshot: one snapshot of the restart fixture's live
// segments (over filelog), and apart the part of it that holds the pump
// (the export under applyMu).
func BenchmarkWriteSnapshot(b *testing.B) {
	f := restartFixtureFor(b, "filelog")
	dir := b.TempDir()
	m := startManager(b, Config{Log: f.log, SnapshotDir: dir, SnapshotInterval: -1})
	ctx := context.Background()
	if err := waitAllReady(ctx, m, f.tps); err != nil {
		b.Fatal(err)
	}
	b.Run(fmt.Sprintf("segments=%d", f.segments), func(b *testing.B) {
		for b.Loop() {
			if err := m.WriteSnapshot(ctx); err != nil {
				b.Fatal(err)
			}
		}
		st, err := os.Stat(filepath.Join(dir, SnapshotFileName))
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(st.Size())/float64(f.segments), "file-bytes/segment")
	})
	// The longest hold of the pump: the export of the metadata partition
	// holding the most segments.
	counts := map[int32]int{}
	for _, tp := range f.tps {
		counts[m.MetadataPartitionOf(tp)]++
	}
	var biggest int32
	for mp, c := range counts {
		if c > counts[biggest] {
			biggest = mp
		}
	}
	b.Run(fmt.Sprintf("pumpPause/segments=%d", counts[biggest]*1000), func(b *testing.B) {
		for b.Loop() {
			m.applyMu.Lock()
			_ = m.inner.Export(func(tp rlmm.TopicIDPartition) bool { return wire.MetadataPartition(tp, m.n) == biggest })
			m.applyMu.Unlock()
		}
	})
}

// BenchmarkLoadSnapshot: Start with a snapshot file of finished
// single-epoch segments without custom metadata (the bench-compare
// workload), 1,000 per user partition over 50 metadata partitions, until
// every partition of it is built in the cache (Start returns before: it
// only checks the file, and the restorer builds the partitions, reported as
// start-ns/segment). ns/segment is the figure docs/bench/topicbased.md
// compares; cpu-ns/segment is the process's CPU time (all goroutines, GC
// included), which leaves out the time spent waiting for a CPU on a loaded
// machine.
func BenchmarkLoadSnapshot(b *testing.B) {
	for _, segments := range []int{50_000, 1_000_000} {
		b.Run(fmt.Sprintf("segments=%d", segments), func(b *testing.B) {
			const perPartition = 1000
			const parts = 50
			dir := b.TempDir()
			s := &snapshotContent{partitions: parts, committed: make([]int64, parts)}
			for p := range int32(segments / perPartition) {
				tp := topicPartition("load", 5, p)
				st := memory.PartitionState{TopicIDPartition: tp}
				for k := range int64(perPartition) {
					md := segment(tp, uint64(p)*perPartition+uint64(k), k*100, k*100+99)
					md.State = rlmm.CopySegmentFinished
					st.Segments = append(st.Segments, md)
				}
				st.HighestOffsets = []memory.EpochOffset{{Epoch: 0, Offset: perPartition*100 - 1}}
				s.states = append(s.states, st)
			}
			if err := writeFileAtomic(dir, SnapshotFileName, encodeSnapshot(s)); err != nil {
				b.Fatal(err)
			}
			s = nil
			l := memlog.New(parts)
			b.Cleanup(func() { _ = l.Close() })
			ctx := context.Background()
			var cpu, started time.Duration
			for b.Loop() {
				c0 := processCPUTime()
				t0 := time.Now()
				m, err := Start(ctx, Config{Log: l, SnapshotDir: dir, SnapshotInterval: -1})
				if err != nil {
					b.Fatal(err)
				}
				started += time.Since(t0)
				// The build runs on every core; wait for it without
				// taking one.
				for m.Stats().SnapshotPending > 0 {
					time.Sleep(100 * time.Microsecond)
				}
				b.StopTimer()
				cpu += processCPUTime() - c0
				if st := m.Stats(); st.SnapshotError != nil || st.SnapshotSegments != segments {
					b.Fatalf("snapshot loaded %d segments (error %v), want %d", st.SnapshotSegments, st.SnapshotError, segments)
				}
				_ = m.Close()
				m = nil
				// Like a fresh process (rlmmbench coldstart): a small heap
				// goal and no memory kept from the previous load.
				debug.FreeOSMemory()
				b.StartTimer()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(segments), "ns/segment")
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N)/float64(segments), "cpu-ns/segment")
			b.ReportMetric(float64(started.Nanoseconds())/float64(b.N)/float64(segments), "start-ns/segment")
		})
	}
}

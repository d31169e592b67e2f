package topicbased

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/eventlog"
	"github.com/rlmm-go/rlmm/eventlog/filelog"
	"github.com/rlmm-go/rlmm/wire"
)

// Benchmarks of hosted-only state (docs/bench/topicbased.md, "A broker
// keeps what it hosts"): what the pump pays per event of a partition it does not host
// against one it applies, and the time to ready of partitions hosted after
// their metadata partitions were consumed. The log holds
// -hosting-events events (default 200,000; the target is
// 1,000,000): 25 segments (add and finish) per user partition, over a
// 50-partition filelog.

// hostingFixture is a filelog holding the history of many user
// partitions, built once per run.
type hostingFixture struct {
	log    eventlog.Log
	tps    []rlmm.TopicIDPartition
	events int
}

var (
	hostingOnce sync.Once
	hostingFix  *hostingFixture
	hostingErr  error
)

func hostingEvents() int {
	if *hostingEventsFlag > 0 {
		return *hostingEventsFlag
	}
	return 200_000
}

// hostingFixtureFor builds the fixture (once; it is removed with the other
// benchmark fixtures by TestMain).
func hostingFixtureFor(b *testing.B) *hostingFixture {
	hostingOnce.Do(func() {
		dir, err := os.MkdirTemp("", "rlmm-bench-hosting-")
		if err != nil {
			hostingErr = err
			return
		}
		restartMu.Lock()
		restartTempDirs = append(restartTempDirs, dir)
		restartMu.Unlock()
		l, err := filelog.Open(filepath.Join(dir, "log"), filelog.Options{Partitions: 50})
		if err != nil {
			hostingErr = err
			return
		}
		start := time.Now()
		hostingFix, hostingErr = buildHostingFixture(l, hostingEvents())
		if hostingErr != nil {
			_ = l.Close()
			return
		}
		b.Logf("hosting fixture: %d user partitions, %d events, built in %s", len(hostingFix.tps), hostingFix.events, time.Since(start))
	})
	if hostingErr != nil {
		b.Fatal(hostingErr)
	}
	return hostingFix
}

// buildHostingFixture publishes events events to l from 64 publishers:
// per user partition, 25 segments added and finished.
func buildHostingFixture(l eventlog.Log, events int) (*hostingFixture, error) {
	const perPartition = 25
	nTPs := max(1, events/(2*perPartition))
	f := &hostingFixture{log: l, events: nTPs * perPartition * 2}
	for i := range nTPs {
		f.tps = append(f.tps, topicPartition("hosting", 5, int32(i)))
	}
	err := publishFromWorkers(context.Background(), l, f.tps, func(t int, tp rlmm.TopicIDPartition) []wire.Event {
		evs := make([]wire.Event, 0, 2*perPartition)
		for k := int64(0); k < perPartition; k++ {
			md := segment(tp, uint64(t*perPartition)+uint64(k), k*100, k*100+99)
			evs = append(evs, wire.SegmentEvent(md), wire.UpdateEvent(update(md, rlmm.CopySegmentFinished)))
		}
		return evs
	})
	if err != nil {
		return nil, err
	}
	return f, nil
}

// onePerMetadataPartition returns, of tps, the first user partition of
// each metadata partition: hosting them makes a manager consume the whole
// log while keeping almost nothing.
func onePerMetadataPartition(tps []rlmm.TopicIDPartition, n int32) []rlmm.TopicIDPartition {
	seen := map[int32]bool{}
	var out []rlmm.TopicIDPartition
	for _, tp := range tps {
		if mp := wire.MetadataPartition(tp, n); !seen[mp] {
			seen[mp] = true
			out = append(out, tp)
		}
	}
	return out
}

// BenchmarkReplayHosted replays the whole fixture log from 0 with every
// user partition hosted (every event applied) and with one user partition
// per metadata partition hosted (almost every event skipped): ns/event of
// each is the apply's and the skip's cost in the pump.
func BenchmarkReplayHosted(b *testing.B) {
	f := hostingFixtureFor(b)
	for _, c := range []struct {
		name string
		tps  []rlmm.TopicIDPartition
	}{
		{"all", f.tps},
		{"one-per-metadata-partition", onePerMetadataPartition(f.tps, f.log.Partitions())},
	} {
		b.Run(c.name, func(b *testing.B) {
			var total time.Duration
			for b.Loop() {
				ctx := context.Background()
				m, err := Start(ctx, Config{Log: f.log, SnapshotInterval: -1})
				if err != nil {
					b.Fatal(err)
				}
				start := time.Now()
				if err := waitAllReady(ctx, m, c.tps); err != nil {
					b.Fatal(err)
				}
				total += time.Since(start)
				_ = m.Close()
			}
			b.ReportMetric(float64(total.Nanoseconds())/float64(b.N)/float64(f.events), "ns/event")
		})
	}
}

// BenchmarkNewlyHostedReady: a manager consuming every metadata partition
// of the fixture (one user partition hosted in each) is given 1 or 1,000
// more user partitions; the time from OnPartitionLeadershipChanges to every
// one ready is what a reassignment costs (each metadata partition concerned
// read once again from its start, however many partitions it gets).
func BenchmarkNewlyHostedReady(b *testing.B) {
	f := hostingFixtureFor(b)
	base := onePerMetadataPartition(f.tps, f.log.Partitions())
	inBase := map[rlmm.TopicIDPartition]bool{}
	for _, tp := range base {
		inBase[tp] = true
	}
	var others []rlmm.TopicIDPartition
	for _, tp := range f.tps {
		if !inBase[tp] {
			others = append(others, tp)
		}
	}
	for _, n := range []int{1, 1000} {
		if n > len(others) {
			continue
		}
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			ctx := context.Background()
			m, err := Start(ctx, Config{Log: f.log, SnapshotInterval: -1})
			if err != nil {
				b.Fatal(err)
			}
			defer func() { _ = m.Close() }()
			if err := waitAllReady(ctx, m, base); err != nil {
				b.Fatal(err)
			}
			var total time.Duration
			var passes uint64
			for b.Loop() {
				added := others[:n]
				passesBefore := m.Stats().Passes
				start := time.Now()
				if err := waitAllReady(ctx, m, added); err != nil {
					b.Fatal(err)
				}
				total += time.Since(start)
				passes += m.Stats().Passes - passesBefore
				if err := m.OnStopPartitions(ctx, added); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms-to-ready")
			b.ReportMetric(float64(passes)/float64(b.N), "passes")
		})
	}
}

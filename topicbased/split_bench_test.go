package topicbased

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/eventlog"
	"github.com/rlmm-go/rlmm/eventlog/filelog"
	"github.com/rlmm-go/rlmm/eventlog/kafkalog"
)

// BenchmarkMutationSplit: where a mutation's time goes, with 1 and 16
// callers (each copying segments of its own user partition, add then
// finish, as rlmmbench mutations does), over filelog, kfake and, when
// RLMM_KAFKA_BOOTSTRAP is set, a real broker. It reports the p50 of the
// latency and of each phase of MutationSplit (ready, encode, publish,
// fetch, apply, wake), the share of mutations whose record the pump
// fetched before Publish returned, the records per pump batch, and the
// log's batching: records per produce request and per fetch and the
// produce round trip (kafkalog), records per fsync (filelog).
func BenchmarkMutationSplit(b *testing.B) {
	backends := []logBackend{
		{"filelog", func(t testing.TB, partitions int32) eventlog.Log {
			l, err := filelog.Open(filepath.Join(t.TempDir(), "log"), filelog.Options{Partitions: partitions})
			if err != nil {
				t.Fatal(err)
			}
			return l
		}},
		kafkaBackend("kfake", fakeCluster(b).ListenAddrs()),
	}
	if addr := os.Getenv(envBootstrap); addr != "" {
		backends = append(backends, kafkaBackend("kafka", strings.Split(addr, ",")))
	} else {
		b.Log(envBootstrap + " unset: the real-broker case is not run")
	}
	for _, be := range backends {
		for _, callers := range []int{1, 16} {
			b.Run(be.name+"/callers-"+strconv.Itoa(callers), func(b *testing.B) {
				benchMutationSplit(b, be, callers)
			})
		}
	}
}

func benchMutationSplit(b *testing.B, be logBackend, callers int) {
	l := be.open(b, 50)
	b.Cleanup(func() { _ = l.Close() })
	col := &splitCollector{}
	m := startManager(b, Config{Log: l, Metrics: col})
	tps := make([]rlmm.TopicIDPartition, callers)
	for i := range tps {
		tps[i] = topicPartition("split", 3, int32(i))
	}
	assign(b, m, tps...)
	ctx := context.Background()
	// Warm up the clients' connections and the producer's id.
	warm := segment(tps[0], 1<<40, 0, 99)
	if err := m.AddSegment(ctx, warm); err != nil {
		b.Fatal(err)
	}
	col.take()
	before := logTraffic(l)
	var next atomic.Int64
	lat := make([][]time.Duration, callers)
	var wg sync.WaitGroup
	b.ResetTimer()
	for c := range callers {
		wg.Go(func() {
			tp := tps[c]
			for {
				i := next.Add(2) - 2
				if i >= int64(b.N) {
					return
				}
				md := segment(tp, uint64(i)+1, i*100, i*100+99)
				t0 := time.Now()
				if err := m.AddSegment(ctx, md); err != nil {
					b.Error(err)
					return
				}
				t1 := time.Now()
				if err := m.UpdateSegment(ctx, update(md, rlmm.CopySegmentFinished)); err != nil {
					b.Error(err)
					return
				}
				lat[c] = append(lat[c], t1.Sub(t0), time.Since(t1))
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	reportPercentiles(b, slices.Concat(lat...))
	reportSplits(b, col.take())
	logTraffic(l).since(before).report(b)
}

// reportSplits reports the p50 of each phase, the share fetched before the
// publish returned and the mean records per pump batch.
func reportSplits(b *testing.B, splits []MutationSplit) {
	if len(splits) == 0 {
		return
	}
	phases := []struct {
		name string
		of   func(MutationSplit) time.Duration
	}{
		{"ready", func(s MutationSplit) time.Duration { return s.Ready }},
		{"encode", func(s MutationSplit) time.Duration { return s.Encode }},
		{"publish", func(s MutationSplit) time.Duration { return s.Publish }},
		{"fetch", func(s MutationSplit) time.Duration { return s.Fetch }},
		{"apply", func(s MutationSplit) time.Duration { return s.Apply }},
		{"wake", func(s MutationSplit) time.Duration { return s.Wake }},
	}
	d := make([]time.Duration, len(splits))
	for _, ph := range phases {
		for i, s := range splits {
			d[i] = ph.of(s)
		}
		slices.Sort(d)
		b.ReportMetric(float64(d[len(d)/2].Nanoseconds()), ph.name+"-p50-ns")
	}
	first, records := 0, 0
	for _, s := range splits {
		if s.FetchedFirst {
			first++
		}
		records += s.Batch
	}
	b.ReportMetric(float64(first)/float64(len(splits)), "fetched-first")
	b.ReportMetric(float64(records)/float64(len(splits)), "records/poll")
}

// traffic is a log's batching counters.
type traffic struct {
	kafka *kafkalog.Stats
	file  *filelog.Stats
}

func logTraffic(l eventlog.Log) traffic {
	switch l := l.(type) {
	case *kafkalog.Log:
		s := l.Stats()
		return traffic{kafka: &s}
	case *filelog.Log:
		s := l.Stats()
		return traffic{file: &s}
	}
	return traffic{}
}

// since returns the counts of t less those of before.
func (t traffic) since(before traffic) traffic {
	switch {
	case t.kafka != nil:
		k := kafkalog.Stats{
			ProduceRequests: t.kafka.ProduceRequests - before.kafka.ProduceRequests,
			ProducedRecords: t.kafka.ProducedRecords - before.kafka.ProducedRecords,
			ProduceTime:     t.kafka.ProduceTime - before.kafka.ProduceTime,
			Fetches:         t.kafka.Fetches - before.kafka.Fetches,
			FetchedRecords:  t.kafka.FetchedRecords - before.kafka.FetchedRecords,
			FetchTime:       t.kafka.FetchTime - before.kafka.FetchTime,
		}
		return traffic{kafka: &k}
	case t.file != nil:
		f := filelog.Stats{Syncs: t.file.Syncs - before.file.Syncs, Records: t.file.Records - before.file.Records}
		return traffic{file: &f}
	}
	return t
}

func (t traffic) report(b *testing.B) {
	if k := t.kafka; k != nil && k.ProduceRequests > 0 {
		b.ReportMetric(float64(k.ProducedRecords)/float64(k.ProduceRequests), "records/produce")
		b.ReportMetric(float64(k.ProduceTime.Nanoseconds())/float64(k.ProduceRequests), "produce-rtt-ns")
		if k.Fetches > 0 {
			b.ReportMetric(float64(k.FetchedRecords)/float64(k.Fetches), "records/fetch")
			b.ReportMetric(float64(k.FetchTime.Nanoseconds())/float64(k.Fetches), "fetch-rtt-ns")
		}
	}
	if f := t.file; f != nil && f.Syncs > 0 {
		b.ReportMetric(float64(f.Records)/float64(f.Syncs), "records/fsync")
	}
}

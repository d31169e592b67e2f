package filelog

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// benchValueSize is the record size of the benchmarks: about one encoded
// remote log segment metadata event.
const benchValueSize = 200

// reportLatency reports the median and 99th percentile of samples as the
// custom metrics p50-ns and p99-ns.
func reportLatency(b *testing.B, samples []time.Duration) {
	if len(samples) == 0 {
		return
	}
	slices.Sort(samples)
	b.ReportMetric(float64(samples[len(samples)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(samples[len(samples)*99/100].Nanoseconds()), "p99-ns")
}

// benchLatency times op once per iteration (i counts from 0) and reports
// the latency percentiles; a failing op fails the benchmark.
func benchLatency(b *testing.B, op func(i int) error) {
	samples := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		start := time.Now()
		if err := op(i); err != nil {
			b.Fatal(err)
		}
		samples = append(samples, time.Since(start))
	}
	b.StopTimer()
	reportLatency(b, samples)
}

// BenchmarkRawWriteFdatasync is the floor a durable publish stands on: one
// 200-byte append and one fdatasync of a plain file on the same disk.
func BenchmarkRawWriteFdatasync(b *testing.B) {
	benchRawSync(b, fdatasync)
}

// BenchmarkRawWriteFsync is the same with fsync (os.File.Sync).
func BenchmarkRawWriteFsync(b *testing.B) {
	benchRawSync(b, (*os.File).Sync)
}

func benchRawSync(b *testing.B, sync func(*os.File) error) {
	f, err := os.Create(filepath.Join(b.TempDir(), "raw"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, benchValueSize)
	b.SetBytes(benchValueSize)
	benchLatency(b, func(int) error {
		if _, err := f.Write(buf); err != nil {
			return err
		}
		return sync(f)
	})
}

// BenchmarkPublishLatency is one publisher, one record at a time, into a
// 50-partition log (Kafka's default partition count of the metadata topic).
func BenchmarkPublishLatency(b *testing.B) {
	l := mustOpen(b, filepath.Join(b.TempDir(), "log"), Options{Partitions: 50})
	defer mustClose(b, l)
	ctx := context.Background()
	value := make([]byte, benchValueSize)
	b.SetBytes(benchValueSize)
	benchLatency(b, func(i int) error {
		_, err := l.Publish(ctx, int32(i%50), value)
		return err
	})
}

// BenchmarkPublishConcurrent is 64 publishers, each publishing one record
// at a time and waiting for it, over 1 or 50 partitions; b.N records in all.
func BenchmarkPublishConcurrent(b *testing.B) {
	for _, bc := range []struct {
		name       string
		partitions int32
	}{{"64pub-1part", 1}, {"64pub-50part", 50}} {
		b.Run(bc.name, func(b *testing.B) {
			const publishers = 64
			l := mustOpen(b, filepath.Join(b.TempDir(), "log"), Options{Partitions: bc.partitions})
			defer mustClose(b, l)
			value := make([]byte, benchValueSize)
			var next atomic.Int64
			var wg sync.WaitGroup
			var mu sync.Mutex
			var samples []time.Duration
			b.SetBytes(benchValueSize)
			b.ResetTimer()
			start := time.Now()
			for g := range publishers {
				wg.Go(func() {
					ctx := context.Background()
					local := make([]time.Duration, 0, b.N/publishers+1)
					for {
						i := next.Add(1) - 1
						if i >= int64(b.N) {
							break
						}
						t0 := time.Now()
						if _, err := l.Publish(ctx, int32((int(i)+g)%int(bc.partitions)), value); err != nil {
							b.Error(err)
							return
						}
						local = append(local, time.Since(t0))
					}
					mu.Lock()
					samples = append(samples, local...)
					mu.Unlock()
				})
			}
			wg.Wait()
			elapsed := time.Since(start)
			b.StopTimer()
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "records/s")
			st := l.Stats()
			b.ReportMetric(float64(st.Records)/float64(max(st.Syncs, 1)), "records/fsync")
			reportLatency(b, samples)
		})
	}
}

// BenchmarkReplay reads 100,000 records of one partition from the files,
// as a manager replaying its metadata partition at start.
func BenchmarkReplay(b *testing.B) {
	l := mustOpen(b, filepath.Join(b.TempDir(), "log"), Options{Partitions: 1})
	defer mustClose(b, l)
	ctx := context.Background()
	value := make([]byte, benchValueSize)
	const n = 100_000
	var wg sync.WaitGroup
	for g := range 64 {
		wg.Go(func() {
			for range n / 64 {
				if _, err := l.Publish(ctx, 0, value); err != nil {
					b.Error(err)
					return
				}
			}
			_ = g
		})
	}
	wg.Wait()
	b.SetBytes(n / 64 * 64 * benchValueSize)
	b.ResetTimer()
	for range b.N {
		if _, err := readAllRecords(b, l, 0); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(n/64*64*b.N)/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkPublishToDelivered is what a manager's mutation waits for: from
// the Publish call until a subscription's Poll returns the record.
func BenchmarkPublishToDelivered(b *testing.B) {
	l := mustOpen(b, filepath.Join(b.TempDir(), "log"), Options{Partitions: 50})
	defer mustClose(b, l)
	ctx := context.Background()
	sub, err := l.Subscribe(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer sub.Close()
	if err := sub.Add(7, 0); err != nil {
		b.Fatal(err)
	}
	value := make([]byte, benchValueSize)
	benchLatency(b, func(int) error {
		off, err := l.Publish(ctx, 7, value)
		if err != nil {
			return err
		}
		for delivered := false; !delivered; {
			recs, err := sub.Poll(ctx)
			if err != nil {
				return err
			}
			delivered = recs[len(recs)-1].Offset >= off
		}
		return nil
	})
}

// BenchmarkOpen reopens a cleanly closed log of 200,000 records in 50
// partitions (about 45 MB): what a restart costs before replay starts.
func BenchmarkOpen(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "log")
	l := mustOpen(b, dir, Options{Partitions: 50})
	const n = 200_000
	value := make([]byte, benchValueSize)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < n; i = next.Add(1) - 1 {
				if _, err := l.Publish(context.Background(), int32(i%50), value); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	mustClose(b, l)
	b.ResetTimer()
	for range b.N {
		mustClose(b, mustOpen(b, dir, Options{}))
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/record")
}

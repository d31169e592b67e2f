package kafkalog

import (
	"context"
	"os"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// benchValueSize is about the size of a segment metadata record.
const benchValueSize = 200

// benchTargets are the brokers the benchmarks run against: kfake in process
// always, the real broker of test/kafkatest when RLMM_KAFKA_BOOTSTRAP is set.
func benchTargets(b *testing.B) []struct {
	name  string
	addrs func(b *testing.B) []string
} {
	return []struct {
		name  string
		addrs func(b *testing.B) []string
	}{
		{"kfake", func(b *testing.B) []string { return fakeCluster(b, 1).ListenAddrs() }},
		{"kafka-4.4.0", func(b *testing.B) []string {
			addr := os.Getenv(envBootstrap)
			if addr == "" {
				b.Skip(envBootstrap + " unset: no real broker (start one with go run ./test/kafkatest/cmd/kafkatest start <dir>)")
			}
			return []string{addr}
		}},
	}
}

// reportLatencies reports the p50, p99 and max of samples in microseconds.
func reportLatencies(b *testing.B, prefix string, samples []time.Duration) {
	if len(samples) == 0 {
		return
	}
	slices.Sort(samples)
	at := func(q float64) float64 {
		return float64(samples[min(len(samples)-1, int(q*float64(len(samples))))].Nanoseconds()) / 1e3
	}
	b.ReportMetric(at(0.50), prefix+"p50-µs")
	b.ReportMetric(at(0.99), prefix+"p99-µs")
	b.ReportMetric(float64(samples[len(samples)-1].Nanoseconds())/1e3, prefix+"max-µs")
}

// benchLatency times op once per iteration and reports its latencies; a
// failing op fails the benchmark.
func benchLatency(b *testing.B, op func() error) {
	samples := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		if err := op(); err != nil {
			b.Fatal(err)
		}
		samples = append(samples, time.Since(start))
	}
	b.StopTimer()
	reportLatencies(b, "", samples)
}

// BenchmarkPublishToDelivered measures, for one publisher, the time from
// calling Publish until a subscription following the partition returns the
// record ("deliver-"), and until Publish itself returns ("ack-").
func BenchmarkPublishToDelivered(b *testing.B) {
	for _, target := range benchTargets(b) {
		b.Run(target.name, func(b *testing.B) {
			l := openLog(b, testConfig(b, target.addrs(b), 1))
			sub := subscribeLog(b, l)
			if err := sub.Add(0, 0); err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			value := make([]byte, benchValueSize)
			delivered := make([]time.Duration, 0, b.N)
			acked := make([]time.Duration, 0, b.N)
			var pending []int64
			b.ResetTimer()
			for range b.N {
				start := time.Now()
				off, err := l.Publish(ctx, 0, value)
				if err != nil {
					b.Fatal(err)
				}
				acked = append(acked, time.Since(start))
				// The subscription may have returned this record
				// already: a follower often sees it before the ack.
				for !slices.Contains(pending, off) {
					recs, err := sub.Poll(ctx)
					if err != nil {
						b.Fatal(err)
					}
					for _, r := range recs {
						pending = append(pending, r.Offset)
					}
				}
				delivered = append(delivered, time.Since(start))
				pending = slices.DeleteFunc(pending, func(o int64) bool { return o <= off })
			}
			b.StopTimer()
			reportLatencies(b, "deliver-", delivered)
			reportLatencies(b, "ack-", acked)
		})
	}
}

// BenchmarkProduceSyncRTT is the broker's own produce round trip: a bare kgo
// client with the log's producer settings (idempotent, acks=all, explicit
// partition), one record per ProduceSync, no eventlog code.
func BenchmarkProduceSyncRTT(b *testing.B) {
	for _, target := range benchTargets(b) {
		b.Run(target.name, func(b *testing.B) {
			addrs := target.addrs(b)
			l := openLog(b, testConfig(b, addrs, 1)) // creates the topic
			cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.DefaultProduceTopic(l.Topic()),
				kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(0),
				kgo.ProducerBatchCompression(kgo.NoCompression()))
			if err != nil {
				b.Fatal(err)
			}
			defer cl.Close()
			ctx := context.Background()
			value := make([]byte, benchValueSize)
			benchLatency(b, func() error {
				return cl.ProduceSync(ctx, &kgo.Record{Partition: 0, Value: value}).FirstErr()
			})
		})
	}
}

// BenchmarkPublishConcurrent has 64 publishers share one log over 8
// partitions: the producer batches what they queue (group commit).
func BenchmarkPublishConcurrent(b *testing.B) {
	for _, target := range benchTargets(b) {
		b.Run(target.name, func(b *testing.B) {
			l := openLog(b, testConfig(b, target.addrs(b), 8))
			value := make([]byte, benchValueSize)
			var seq atomic.Int32
			b.SetParallelism(max(1, 64/runtime.GOMAXPROCS(0))) // 64 publishers
			start := time.Now()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				p := seq.Add(1) % 8
				ctx := context.Background()
				for pb.Next() {
					if _, err := l.Publish(ctx, p, value); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.StopTimer()
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "records/s")
		})
	}
}

// BenchmarkPublish is Publish alone (no subscription following), to set the
// log's own cost beside BenchmarkProduceSyncRTT.
func BenchmarkPublish(b *testing.B) {
	for _, target := range benchTargets(b) {
		b.Run(target.name, func(b *testing.B) {
			l := openLog(b, testConfig(b, target.addrs(b), 1))
			ctx := context.Background()
			value := make([]byte, benchValueSize)
			benchLatency(b, func() error {
				_, err := l.Publish(ctx, 0, value)
				return err
			})
		})
	}
}

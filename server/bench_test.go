package server

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/eventlog"
	"github.com/rlmm-go/rlmm/eventlog/filelog"
	"github.com/rlmm-go/rlmm/eventlog/kafkalog"
	"github.com/rlmm-go/rlmm/rpc/brokerframe"
	"github.com/rlmm-go/rlmm/rpc/rlmmpb"
)

// reportLatencies reports the p50 and p99 of the per-operation latencies.
func reportLatencies(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	pct := func(p float64) float64 { return float64(lat[int(float64(len(lat)-1)*p)].Nanoseconds()) / 1e3 }
	b.ReportMetric(pct(0.50), "p50-µs")
	b.ReportMetric(pct(0.99), "p99-µs")
}

// BenchmarkLookupRoundTrip is the broker's fetch-path lookup as the
// plugin's client sees it, over the Unix socket (Go client, one lookup
// connection, one lookup at a time, the frames encoded into reused
// buffers as the plugin does) on a partition of 1,000 finished segments.
func BenchmarkLookupRoundTrip(b *testing.B) {
	f := newFixture(b, fixtureOpts{})
	tp := newTP()
	f.assign(b, tp)
	const segments = 1000
	f.addFinishedRun(b, tp, segments)
	b.Run("framed", func(b *testing.B) {
		c := brokerConnFor(b, f.socket, rlmmpb.Purpose_PURPOSE_LOOKUP)
		q := &rlmmpb.SegmentForOffsetRequest{TopicIdPartition: tpToProto(tp), LeaderEpoch: 1}
		req := &rlmmpb.BrokerRequest{Call: &rlmmpb.BrokerRequest_SegmentForOffset{SegmentForOffset: q}}
		var out, in []byte
		var r rlmmpb.BrokerReply
		var err error
		lat := make([]time.Duration, 0, 1<<16)
		i := 0
		for b.Loop() {
			req.Id = uint64(i)
			q.Offset = int64(i%segments)*100 + 60
			i++
			start := time.Now()
			var at int
			out, at = brokerframe.Begin(out[:0])
			out, err = proto.MarshalOptions{}.MarshalAppend(out, req)
			if err == nil {
				_, err = c.conn.Write(brokerframe.End(out, at))
			}
			if err == nil {
				in, err = brokerframe.ReadFrame(c.r, in[:0], brokerframe.MaxReply)
			}
			if err == nil {
				err = proto.Unmarshal(in, &r)
			}
			lat = append(lat, time.Since(start))
			if err != nil || r.Id != req.Id || !r.GetSegment().GetFound() {
				b.Fatalf("lookup of %d: %v %v", q.Offset, &r, err)
			}
		}
		reportLatencies(b, lat)
	})
}

// BenchmarkAddFinishRoundTrip is a copied segment's metadata as the
// plugin's client sees it: AddSegment then UpdateSegment to
// COPY_SEGMENT_FINISHED over the Unix socket, each returning once applied;
// over the embedded log (filelog), and over the real broker when
// RLMM_KAFKA_BOOTSTRAP is set. The -direct cases call the manager without
// the socket, on the same kind of log: the difference is the socket's cost.
func BenchmarkAddFinishRoundTrip(b *testing.B) {
	openFilelog := func(b *testing.B) eventlog.Log {
		l, err := filelog.Open(b.TempDir(), filelog.Options{Partitions: metadataPartitions})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { l.Close() })
		return l
	}
	openKafka := func(b *testing.B) eventlog.Log {
		addr := os.Getenv("RLMM_KAFKA_BOOTSTRAP")
		if addr == "" {
			b.Skip("RLMM_KAFKA_BOOTSTRAP is unset: no real Kafka broker; `go run ./test/kafkatest/cmd/kafkatest start <dir>` starts one and prints the variable")
		}
		l, err := kafkalog.Open(testCtx(b), kafkalog.Config{
			BootstrapServers: strings.Split(addr, ","), NumPartitions: metadataPartitions,
			Topic: "rlmm-serve-bench." + rlmm.RandomUuid().String()[:8], ReplicationFactor: 1, MinInSyncReplicas: 1,
		})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { l.Close() })
		return l
	}
	for _, bc := range []struct {
		name   string
		open   func(*testing.B) eventlog.Log
		direct bool
	}{
		{"filelog", openFilelog, false},
		{"filelog-direct", openFilelog, true},
		{"kafka", openKafka, false},
		{"kafka-direct", openKafka, true},
	} {
		b.Run(bc.name, func(b *testing.B) { benchAddFinish(b, bc.open(b), bc.direct) })
	}
}

func benchAddFinish(b *testing.B, l eventlog.Log, direct bool) {
	f := newFixture(b, fixtureOpts{log: l})
	tp := newTP()
	f.assign(b, tp)
	ctx := testCtx(b)
	lat := make([]time.Duration, 0, 1<<12)
	i := 0
	for b.Loop() {
		md := segment(tp, int64(i)*100)
		i++
		add := &rlmmpb.AddSegmentRequest{Segment: segmentToProto(&md)}
		fin := finish(md)
		start := time.Now()
		if direct {
			if err := f.mgr.AddSegment(ctx, md); err != nil {
				b.Fatal(err)
			}
			u, _ := updateFromProto(fin.Update)
			if err := f.mgr.UpdateSegment(ctx, u); err != nil {
				b.Fatal(err)
			}
		} else {
			if _, err := f.client.AddSegment(ctx, add); err != nil {
				b.Fatal(err)
			}
			if _, err := f.client.UpdateSegment(ctx, fin); err != nil {
				b.Fatal(err)
			}
		}
		lat = append(lat, time.Since(start))
	}
	reportLatencies(b, lat)
}

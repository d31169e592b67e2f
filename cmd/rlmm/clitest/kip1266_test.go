package clitest

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/wire"
)

// TestVerifyKIP1266TopicOverKafka plants in a Kafka topic (franz-go's kfake)
// what a KIP-1266 writer would: keyed records of record version 1 and
// tombstones. inspect reads them all (version 1 applied, tombstones
// counted); verify finds the key two live segments share, and the live
// segment whose key was tombstoned, naming their segment ids; a segment
// deleted and tombstoned as KIP-1266 does is clean.
func TestVerifyKIP1266TopicOverKafka(t *testing.T) {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(4, "kip1266"))
	if err != nil {
		t.Fatalf("starting kfake: %v", err)
	}
	defer cluster.Close()
	addr := strings.Join(cluster.ListenAddrs(), ",")
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()

	tp := rlmm.TopicIDPartition{TopicID: rlmm.UuidFromBits(5, 6), Topic: "orders", Partition: 2}
	mp := wire.MetadataPartition(tp, 4)
	shared1, shared2 := newSegment(tp, 0, 99, 10), newSegment(tp, 50, 99, 11) // one end offset: one key
	tombstoned := newSegment(tp, 100, 199, 12)
	deleted := newSegment(tp, 200, 299, 13)
	var recs []*kgo.Record
	keyed := func(e wire.Event) {
		k, _ := e.RecordKey()
		k.BrokerLeaderEpoch = 3
		e.BrokerLeaderEpoch = 3
		recs = append(recs, &kgo.Record{Topic: "kip1266", Partition: mp, Key: []byte(k.String()), Value: v1Value(t, e)})
	}
	tombstone := func(m rlmm.SegmentMetadata, update bool) {
		k := wire.RecordKey{TopicIDPartition: tp, EndOffset: m.EndOffset, BrokerLeaderEpoch: 3, Update: update}
		recs = append(recs, &kgo.Record{Topic: "kip1266", Partition: mp, Key: []byte(k.String())})
	}
	upd := func(m rlmm.SegmentMetadata, st rlmm.SegmentState) wire.Event {
		e := wire.UpdateEvent(rlmm.SegmentUpdate{ID: m.ID, EventTimestampMs: 20, State: st, BrokerID: 7})
		e.EndOffset = m.EndOffset
		return e
	}
	for _, m := range []rlmm.SegmentMetadata{shared1, shared2, tombstoned, deleted} {
		keyed(wire.SegmentEvent(m))
		keyed(upd(m, rlmm.CopySegmentFinished))
	}
	tombstone(tombstoned, false)
	keyed(upd(deleted, rlmm.DeleteSegmentStarted))
	keyed(upd(deleted, rlmm.DeleteSegmentFinished))
	tombstone(deleted, true)
	tombstone(deleted, false)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	work := t.TempDir()
	args := []string{"inspect", "--kafka", addr, "--kafka-topic", "kip1266", "--json", "--quiet"}
	r := run(t, work, args...)
	mustCode(t, r, 0, args...)
	var doc struct {
		Counts struct {
			Records, Undecodable, Rejected, Tombstones int64
		} `json:"counts"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("inspect --json: %v\n%s", err, r.stdout)
	}
	if c := doc.Counts; c.Records != int64(len(recs)) || c.Tombstones != 3 || c.Undecodable != 0 || c.Rejected != 0 {
		t.Fatalf("inspect counts %+v; want %d records, 3 tombstones, none undecodable or rejected", c, len(recs))
	}

	// The raw events: keyed lines, version 1's fields, the tombstones.
	args = []string{"inspect", "--kafka", addr, "--kafka-topic", "kip1266", "--events", "--quiet"}
	r = run(t, work, args...)
	mustCode(t, r, 0, args...)
	first := wire.RecordKey{TopicIDPartition: tp, EndOffset: 99, BrokerLeaderEpoch: 3}
	for _, want := range []string{
		"partition: " + strconv.Itoa(int(mp)) + ", offset: 0, key: \"" + first.String() + "\", value: RemoteLogSegmentMetadata{",
		"state=COPY_SEGMENT_STARTED, txnIdxEmpty=false} [recordVersion=1, brokerLeaderEpoch=3]\n",
		"state=COPY_SEGMENT_FINISHED, eventTimestampMs=20, brokerId=7} [recordVersion=1, brokerLeaderEpoch=3, endOffset=99]\n",
		"offset: 8, key: \"" + wire.RecordKey{TopicIDPartition: tp, EndOffset: 199, BrokerLeaderEpoch: 3}.String() + "\", value: null (a tombstone)\n",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("inspect --events does not print %q:\n%s", want, r.stdout)
		}
	}

	args = []string{"verify", "--kafka", addr, "--kafka-topic", "kip1266", "--json", "--quiet"}
	r = run(t, work, args...)
	mustCode(t, r, 1, args...)
	var v struct {
		Anomalies []struct {
			Kind       string   `json:"kind"`
			Warning    bool     `json:"warning"`
			SegmentIDs []string `json:"segmentIds"`
			Detail     string   `json:"detail"`
		} `json:"anomalies"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
		t.Fatalf("verify --json: %v\n%s", err, r.stdout)
	}
	var shared, tombstones int
	for _, a := range v.Anomalies {
		switch a.Kind {
		case "shared_record_key":
			shared++
			if a.Warning || !slices.Equal(a.SegmentIDs, []string{shared1.ID.ID.String(), shared2.ID.ID.String()}) {
				t.Errorf("shared_record_key %+v; want a failure naming %s and %s", a, shared1.ID.ID, shared2.ID.ID)
			}
		case "tombstoned_live_segment":
			tombstones++
			if a.Warning || !slices.Equal(a.SegmentIDs, []string{tombstoned.ID.ID.String()}) {
				t.Errorf("tombstoned_live_segment %+v; want a failure naming %s", a, tombstoned.ID.ID)
			}
		case "overlapping_segments":
		default:
			t.Errorf("unexpected anomaly %+v", a)
		}
	}
	// The segment key and the :UPDATE key of the shared pair.
	if shared != 2 || tombstones != 1 {
		t.Errorf("%d shared_record_key and %d tombstoned_live_segment; want 2 and 1:\n%s", shared, tombstones, r.stdout)
	}
}

// v1Value writes e as record version 1, from the spec's layout (the version
// 0 bytes with the version byte 1 and the record's own tagged fields, empty
// in those bytes, replaced by version 1's): BrokerLeaderEpoch (tag 1 of a
// segment, tag 0 of an update) and an update's EndOffset (tag 1).
func v1Value(t *testing.T, e wire.Event) []byte {
	t.Helper()
	b, err := wire.AppendEvent(nil, &e)
	if err != nil || b[len(b)-1] != 0 {
		t.Fatalf("encoding %v: %x, %v", e.String(), b, err)
	}
	b[2] = 1
	b = b[:len(b)-1]
	ble := []byte{byte(e.BrokerLeaderEpoch >> 24), byte(e.BrokerLeaderEpoch >> 16), byte(e.BrokerLeaderEpoch >> 8), byte(e.BrokerLeaderEpoch)}
	if e.Key == wire.KeySegment {
		return append(append(b, 1, 1, 4), ble...)
	}
	b = append(append(b, 2, 0, 4), ble...)
	b = append(b, 1, 8)
	for i := 7; i >= 0; i-- {
		b = append(b, byte(e.EndOffset>>(8*i)))
	}
	return b
}

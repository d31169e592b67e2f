package kafkalog

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// A record whose value is null (a tombstone, as a compacted metadata topic
// under KIP-1266 holds) is delivered as one: Tombstone set, Value nil; an
// empty value is not a tombstone. Keys are delivered as written, and what
// Publish writes has a null key (as released Kafka writes).
func TestTombstoneIsDeliveredAsOne(t *testing.T) {
	c := fakeCluster(t, 1)
	cfg := testConfig(t, c.ListenAddrs(), 1)
	l := openLog(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for _, r := range []*kgo.Record{
		{Topic: cfg.Topic, Partition: 0, Key: []byte("k"), Value: nil},
		{Topic: cfg.Topic, Partition: 0, Key: []byte("k2"), Value: []byte{}},
	} {
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := l.Publish(ctx, 0, []byte("published")); err != nil {
		t.Fatal(err)
	}
	s := subscribeLog(t, l)
	if err := s.Add(0, 0); err != nil {
		t.Fatal(err)
	}
	recs := pollN(t, s, 3)
	if !recs[0].Tombstone || recs[0].Value != nil || string(recs[0].Key) != "k" {
		t.Errorf("null value delivered as %+v; want a tombstone with a nil value and key k", recs[0])
	}
	if recs[1].Tombstone || string(recs[1].Key) != "k2" {
		t.Errorf("empty value delivered as %+v; want no tombstone, key k2", recs[1])
	}
	if recs[2].Key != nil || string(recs[2].Value) != "published" {
		t.Errorf("Publish's record delivered as %+v; want a null key", recs[2])
	}
}

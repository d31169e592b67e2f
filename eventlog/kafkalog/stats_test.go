package kafkalog

import (
	"context"
	"testing"
)

// TestStatsCountTraffic: the counters see every produced record in a
// produce request with a round trip, and every record fetched back.
func TestStatsCountTraffic(t *testing.T) {
	l := openLog(t, testConfig(t, fakeCluster(t, 1).ListenAddrs(), 2))
	s := subscribeLog(t, l)
	before := l.Stats()
	const n = 5
	ctx := context.Background()
	for i := range n {
		if _, err := l.Publish(ctx, int32(i%2), recordValue(int32(i%2), i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Add(0, 0); err != nil {
		t.Fatal(err)
	}
	if err := s.Add(1, 0); err != nil {
		t.Fatal(err)
	}
	pollN(t, s, n)
	got := l.Stats()
	if d := got.ProducedRecords - before.ProducedRecords; d != n {
		t.Errorf("ProducedRecords grew by %d, want %d", d, n)
	}
	if d := got.ProduceRequests - before.ProduceRequests; d < 1 || d > n {
		t.Errorf("ProduceRequests grew by %d, want 1 to %d for %d records", d, n, n)
	}
	if got.ProduceTime <= before.ProduceTime {
		t.Errorf("ProduceTime did not grow: %s, then %s", before.ProduceTime, got.ProduceTime)
	}
	if d := got.FetchedRecords - before.FetchedRecords; d < n {
		t.Errorf("FetchedRecords grew by %d, want at least %d", d, n)
	}
	if got.Fetches <= before.Fetches || got.FetchTime <= before.FetchTime {
		t.Errorf("fetches not counted: %+v, then %+v", before, got)
	}
}

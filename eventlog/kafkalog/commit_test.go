package kafkalog

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rlmm-go/rlmm"
)

// TestConcurrentPublishersShareRequests: publishers running at once share
// produce requests (the committer's rounds), and every one gets its own
// offset, in order per partition.
func TestConcurrentPublishersShareRequests(t *testing.T) {
	l := openLog(t, testConfig(t, fakeCluster(t, 1).ListenAddrs(), 4))
	const publishers, each = 16, 20
	before := l.Stats()
	offsets := make([][]int64, publishers)
	var wg sync.WaitGroup
	errs := make(chan error, publishers)
	for g := range publishers {
		wg.Go(func() {
			for i := range each {
				off, err := l.Publish(context.Background(), int32(g%4), recordValue(int32(g%4), i))
				if err != nil {
					errs <- err
					return
				}
				offsets[g] = append(offsets[g], off)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	seen := map[[2]int64]bool{}
	for g, offs := range offsets {
		for i, off := range offs {
			key := [2]int64{int64(g % 4), off}
			if seen[key] {
				t.Fatalf("offset %d of partition %d returned twice", off, g%4)
			}
			seen[key] = true
			if i > 0 && off <= offs[i-1] {
				t.Fatalf("publisher %d: offset %d after %d", g, off, offs[i-1])
			}
		}
	}
	got := l.Stats()
	records, requests := got.ProducedRecords-before.ProducedRecords, got.ProduceRequests-before.ProduceRequests
	if records != publishers*each {
		t.Fatalf("%d records produced, want %d", records, publishers*each)
	}
	if requests >= records {
		t.Fatalf("%d produce requests for %d records from %d concurrent publishers: none shared", requests, records, publishers)
	}
	t.Logf("%d records in %d produce requests", records, requests)
}

// TestCloseAnswersQueuedPublishes: Close while publishers are queued ends
// every Publish, each with an offset or rlmm.ErrClosed, and none after.
func TestCloseAnswersQueuedPublishes(t *testing.T) {
	cfg := testConfig(t, fakeCluster(t, 1).ListenAddrs(), 2)
	l := openLog(t, cfg)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 8 {
		wg.Go(func() {
			for i := 0; ; i++ {
				if _, err := l.Publish(context.Background(), int32(g%2), recordValue(int32(g%2), i)); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	// Let a few rounds go out, then close under them.
	if _, err := l.Publish(context.Background(), 0, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if !errors.Is(err, rlmm.ErrClosed) {
			t.Errorf("Publish during Close: %v, want rlmm.ErrClosed", err)
		}
	}
	if _, err := l.Publish(context.Background(), 0, []byte("y")); !errors.Is(err, rlmm.ErrClosed) {
		t.Fatalf("Publish after Close: %v, want rlmm.ErrClosed", err)
	}
}

// TestPublisherGivesUpMidFlush: a publisher alone whose context ends while
// its produce request is held hands its round to the committer; the next
// publisher's record goes out once the broker answers, and Publish returns.
func TestPublisherGivesUpMidFlush(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close) // after the log's own cleanup, which deletes its topic
	l := openLog(t, testConfig(t, c.ListenAddrs(), 1))
	hold := make(chan struct{})
	held := make(chan struct{})
	var once sync.Once
	c.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		// Only the first produce request is held (kfake may run the
		// function again after the sleep).
		once.Do(func() {
			close(held)
			c.SleepControl(func() { <-hold })
		})
		return nil, nil, false // then kfake answers it as usual
	})
	ctx, cancel := context.WithCancel(context.Background())
	first := make(chan error, 1)
	go func() {
		_, err := l.Publish(ctx, 0, []byte("first"))
		first <- err
	}()
	<-held
	cancel()
	if err := <-first; !errors.Is(err, context.Canceled) {
		t.Fatalf("Publish whose context ended while its request was held: %v, want context.Canceled", err)
	}
	second := make(chan error, 1)
	var offset int64
	go func() {
		var err error
		offset, err = l.Publish(context.Background(), 0, []byte("second"))
		second <- err
	}()
	close(hold)
	select {
	case err := <-second:
		if err != nil {
			t.Fatalf("Publish after the handover: %v", err)
		}
	case <-time.After(testTimeout):
		t.Fatal("Publish after the handover never returned: nobody flushed")
	}
	hw, err := l.HighWaterMarks(context.Background(), []int32{0})
	if err != nil {
		t.Fatal(err)
	}
	if hw[0] != offset+1 {
		t.Fatalf("high-water mark %d after the second record at offset %d", hw[0], offset)
	}
}

package topicbased

import (
	"testing"
	"time"

	"github.com/rlmm-go/rlmm"
)

func TestSplitOf(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(us int) time.Time { return t0.Add(time.Duration(us) * time.Microsecond) }
	us := func(n int) time.Duration { return time.Duration(n) * time.Microsecond }
	clock := mutationClock{start: at(0), encoding: at(10), publishing: at(12), published: at(500)}
	tests := []struct {
		name  string
		batch batchStamp
		woken time.Time
		want  MutationSplit
	}{{
		name:  "fetched after the acknowledgement",
		batch: batchStamp{fetched: at(700), applied: at(750), records: 3},
		woken: at(800),
		want:  MutationSplit{Ready: us(10), Encode: us(2), Publish: us(488), Fetch: us(200), Apply: us(50), Wake: us(50), Batch: 3},
	}, {
		name:  "fetched before the acknowledgement, applied after it",
		batch: batchStamp{fetched: at(400), applied: at(520), records: 1},
		woken: at(530),
		want:  MutationSplit{Ready: us(10), Encode: us(2), Publish: us(488), Apply: us(20), Wake: us(10), FetchedFirst: true, Batch: 1},
	}, {
		name:  "applied before the acknowledgement",
		batch: batchStamp{fetched: at(300), applied: at(350), records: 2},
		woken: at(510),
		want:  MutationSplit{Ready: us(10), Encode: us(2), Publish: us(488), Wake: us(10), FetchedFirst: true, Batch: 2},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := splitOf(clock, tc.batch, tc.woken)
			if got != tc.want {
				t.Fatalf("splitOf = %+v, want %+v", got, tc.want)
			}
			sum := got.Ready + got.Encode + got.Publish + got.Fetch + got.Apply + got.Wake
			if want := tc.woken.Sub(clock.start); sum != want {
				t.Fatalf("phases add up to %s, want the mutation's %s", sum, want)
			}
		})
	}
}

// TestMutationSplitReported: a Metrics that implements SplitMetrics hears
// of every mutation, with phases that add up to at most its latency.
func TestMutationSplitReported(t *testing.T) {
	col := &splitCollector{}
	m := startManager(t, Config{Log: newLog(t, 4), Metrics: col})
	tp := topicPartition("split", 1, 0)
	assign(t, m, tp)
	ctx := testCtx(t)
	md := segment(tp, 1, 0, 99)
	start := time.Now()
	if err := m.AddSegment(ctx, md); err != nil {
		t.Fatal(err)
	}
	if err := m.UpdateSegment(ctx, update(md, rlmm.CopySegmentFinished)); err != nil {
		t.Fatal(err)
	}
	elapsed := time.Since(start)
	splits := col.take()
	if len(splits) != 2 {
		t.Fatalf("%d splits reported, want 2 (one per mutation)", len(splits))
	}
	var sum time.Duration
	for _, s := range splits {
		if s.Batch < 1 {
			t.Errorf("split %+v: its event's batch holds no record", s)
		}
		if s.Publish <= 0 {
			t.Errorf("split %+v: no publish time", s)
		}
		sum += s.Ready + s.Encode + s.Publish + s.Fetch + s.Apply + s.Wake
	}
	if sum > elapsed {
		t.Fatalf("phases add up to %s, more than the two mutations took (%s)", sum, elapsed)
	}
}

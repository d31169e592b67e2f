package topicbased

import (
	"errors"
	"fmt"
	"testing"

	"github.com/rlmm-go/rlmm"
)

// Two and three managers over one log, as brokers: leadership moves between
// them, every manager converges to the same state, a joining one is NotReady
// while it catches up, and unassigned partitions miss.
func TestBrokersShareOneLog(t *testing.T) {
	for _, brokers := range []int{2, 3} {
		t.Run(fmt.Sprintf("%d brokers", brokers), func(t *testing.T) {
			const n = 5
			base := newLog(t, n)
			tps := distinctPartitions(t, n, 4) // metadata partitions 0..3; 4 stays unused
			ms := make([]*Manager, brokers)
			for i := range ms {
				ms[i] = startManager(t, Config{Log: base})
			}
			ctx := testCtx(t)
			leaderOf := func(tpIdx, round int) int { return (tpIdx + round) % brokers }
			for round := range 3 {
				// Leadership moves: every broker hosts the partitions it leads
				// and follows the next one; it stops the rest.
				for b, m := range ms {
					var lead, follow, stop []rlmm.TopicIDPartition
					for i, tp := range tps {
						switch {
						case leaderOf(i, round) == b:
							lead = append(lead, tp)
						case leaderOf(i, round) == (b+1)%brokers:
							follow = append(follow, tp)
						default:
							stop = append(stop, tp)
						}
					}
					must(t, m.OnStopPartitions(ctx, stop))
					must(t, m.OnPartitionLeadershipChanges(ctx, lead, follow))
					for _, tp := range append(lead, follow...) {
						must(t, m.WaitReady(ctx, tp))
					}
				}
				// Each leader continues its partitions' history.
				for i, tp := range tps {
					m := ms[leaderOf(i, round)]
					for k := range 2 {
						id := uint64(round*100 + i*10 + k)
						start := int64(round*1000 + k*100)
						md := segment(tp, id, start, start+99, int64(round), start)
						addFinished(t, m, md)
						if k == 0 && round > 0 {
							// Retention deletes the previous round's first segment,
							// written by another leader.
							prev := segment(tp, uint64((round-1)*100+i*10), int64((round-1)*1000), int64((round-1)*1000+99), int64(round-1), int64((round-1)*1000))
							must(t, m.UpdateSegment(ctx, update(prev, rlmm.DeleteSegmentStarted)))
							must(t, m.UpdateSegment(ctx, update(prev, rlmm.DeleteSegmentFinished)))
						}
					}
				}
			}
			// Everyone hosts everything: all converge to the same view.
			for _, m := range ms {
				assign(t, m, tps...)
			}
			for _, m := range ms {
				waitCaughtUp(t, m, base)
			}
			want := viewOf(t, ms[0], tps)
			for b, m := range ms[1:] {
				if err := sameViews(viewOf(t, m, tps), want); err != nil {
					t.Errorf("broker %d differs from broker 0: %v", b+1, err)
				}
			}
			for _, tp := range tps {
				if v := want[tp]; len(v.Segments) != 4 {
					t.Errorf("%s: %d segments, want 4 (2 per round, 1 deleted in each later round)", tp, len(v.Segments))
				}
			}

			// A broker joining late is NotReady while it catches up.
			pl := newPausableLog(base)
			pl.Pause()
			late := startManager(t, Config{Log: pl})
			must(t, late.OnPartitionLeadershipChanges(ctx, nil, tps[:1]))
			if _, err := late.ListSegments(tps[0]); !errors.Is(err, rlmm.ErrNotReady) || late.IsReady(tps[0]) {
				t.Errorf("late broker while catching up: %v, ready=%v; want ErrNotReady", err, late.IsReady(tps[0]))
			}
			// A partition it does not host (another metadata partition) is
			// refused, never an empty answer.
			if l, err := late.ListSegments(tps[1]); len(l) != 0 || !errors.Is(err, rlmm.ErrNotAssigned) {
				t.Errorf("late broker, unhosted partition: %v, %v; want ErrNotAssigned", l, err)
			}
			pl.Resume()
			must(t, late.WaitReady(ctx, tps[0]))
			must(t, sameViews(viewOf(t, late, tps[:1]), map[rlmm.TopicIDPartition]partitionView{tps[0]: want[tps[0]]}))
		})
	}
}

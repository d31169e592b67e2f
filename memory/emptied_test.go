package memory

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"

	"github.com/rlmm-go/rlmm"
	"pgregory.net/rapid"
)

// churnEpochs copies segments 0 .. n-1 of 10 offsets each into tp, segment
// k in epoch k/perEpoch, keeping only the newest `live` of them (the older
// ones are deleted as retention does). It returns the highest finished
// offset every epoch must keep answering.
func churnEpochs(t testing.TB, m *Manager, tp rlmm.TopicIDPartition, n, perEpoch, live int) map[int32]int64 {
	t.Helper()
	want := map[int32]int64{}
	for k := range n {
		start := int64(k) * 10
		e := int32(k / perEpoch)
		addFinished(t, m, segMD(tp, k, start, start+9, ep(e, start)))
		want[e] = start + 9
		if old := k - live; old >= 0 {
			moveTo(t, m, tp, old, rlmm.DeleteSegmentFinished)
		}
	}
	return want
}

// epochCounts returns how many epochs of tp keep a whole state and how many
// keep only their highest offset.
func epochCounts(t testing.TB, m *Manager, tp rlmm.TopicIDPartition) (whole, emptied int) {
	t.Helper()
	p := m.parts.get(&tp)
	if p == nil {
		t.Fatalf("%s has no state", tp)
	}
	return len(p.epochs), p.emptied.len()
}

// An epoch whose segments are all deleted keeps its highest finished offset
// and nothing else; every other read of it is the miss of an unknown epoch.
func TestEmptiedEpochKeepsOnlyItsHighestOffset(t *testing.T) {
	const n, perEpoch, live = 3000, 10, 20
	m := New()
	want := churnEpochs(t, m, tpFoo, n, perEpoch, live)
	liveEpochs := live / perEpoch
	whole, emptied := epochCounts(t, m, tpFoo)
	if whole != liveEpochs || emptied != n/perEpoch-liveEpochs {
		t.Fatalf("after retiring %d epochs: %d epoch states and %d emptied epochs kept; want %d and %d",
			n/perEpoch-liveEpochs, whole, emptied, liveEpochs, n/perEpoch-liveEpochs)
	}
	for e, h := range want {
		if got := highest(t, m, tpFoo, e); got != h {
			t.Fatalf("HighestOffsetForEpoch(%d) = %d, want %d", e, got, h)
		}
	}
	const gone = 7 // an emptied epoch: [700, 799] of segments 70-79, all deleted
	if _, ok, err := m.SegmentForOffset(tpFoo, gone, 750); ok || err != nil {
		t.Errorf("SegmentForOffset of an emptied epoch: %t, %v", ok, err)
	}
	if _, ok, err := m.NextSegmentWithTxnIndex(tpFoo, gone, 700); ok || err != nil {
		t.Errorf("NextSegmentWithTxnIndex of an emptied epoch: %t, %v", ok, err)
	}
	if l, err := m.ListSegmentsForEpoch(tpFoo, gone); len(l) != 0 || err != nil {
		t.Errorf("ListSegmentsForEpoch of an emptied epoch: %v, %v", l, err)
	}
	if sz, err := m.RemoteLogSize(tpFoo, gone); sz != 0 || err != nil {
		t.Errorf("RemoteLogSize of an emptied epoch: %d, %v", sz, err)
	}
	v, _ := m.View(tpFoo)
	if len(v.Epochs) != n/perEpoch || v.Epochs[gone] != (EpochOffset{gone, want[gone]}) {
		t.Errorf("View lists %d epochs (want %d), epoch %d as %v", len(v.Epochs), n/perEpoch, gone, v.Epochs[gone])
	}

	t.Run("export and import keep the same shape", func(t *testing.T) {
		states := m.Export(nil)
		if got := len(states[0].HighestOffsets); got != n/perEpoch {
			t.Fatalf("Export holds %d highest offsets, want %d", got, n/perEpoch)
		}
		for _, restore := range []func(*Manager) error{
			func(f *Manager) error { return f.Import(states) },
			func(f *Manager) error {
				b, err := builderOf(&states[0])
				if err != nil {
					return err
				}
				return f.Install([]*PartitionBuilder{b})
			},
		} {
			fresh := New()
			mustOK(t, restore(fresh))
			if w, e := epochCounts(t, fresh, tpFoo); w != whole || e != emptied {
				t.Errorf("restored: %d epoch states and %d emptied; the original %d and %d", w, e, whole, emptied)
			}
			if err := equalStates(fresh.Export(nil), states); err != nil {
				t.Error(err)
			}
		}
	})

	t.Run("an emptied epoch carried again", func(t *testing.T) {
		m := New()
		want := churnEpochs(t, m, tpFoo, 100, perEpoch, live)
		// A late upload for epoch 3 ([300, 399], emptied), below its
		// highest: the highest stays.
		addFinished(t, m, segMD(tpFoo, 1000, 300, 350, ep(3, 300)))
		if got := highest(t, m, tpFoo, 3); got != want[3] {
			t.Errorf("highest after a lower re-upload = %d, want %d", got, want[3])
		}
		if got := lookupNo(t, m, tpFoo, 3, 333); got != 1000 {
			t.Errorf("lookup in the carried-again epoch = s%d, want s1000", got)
		}
		// One reaching further, then both deleted: the higher offset stays.
		addFinished(t, m, segMD(tpFoo, 1001, 300, 450, ep(3, 300)))
		moveTo(t, m, tpFoo, 1000, rlmm.DeleteSegmentFinished)
		moveTo(t, m, tpFoo, 1001, rlmm.DeleteSegmentFinished)
		if got := highest(t, m, tpFoo, 3); got != 450 {
			t.Errorf("highest after a higher re-upload = %d, want 450", got)
		}
		if w, e := epochCounts(t, m, tpFoo); w != live/perEpoch || e != 10-live/perEpoch {
			t.Errorf("%d epoch states and %d emptied, want %d and %d", w, e, live/perEpoch, 10-live/perEpoch)
		}
	})

	t.Run("an epoch never finished leaves nothing", func(t *testing.T) {
		m := New()
		addFinished(t, m, segMD(tpFoo, 1, 0, 9))
		mustOK(t, m.AddSegment(ctx, segMD(tpFoo, 2, 10, 19, ep(1, 10))))
		mustOK(t, m.UpdateSegment(ctx, upd(tpFoo, 2, rlmm.DeleteSegmentStarted)))
		mustOK(t, m.UpdateSegment(ctx, upd(tpFoo, 2, rlmm.DeleteSegmentFinished)))
		if w, e := epochCounts(t, m, tpFoo); w != 1 || e != 0 {
			t.Errorf("%d epoch states and %d emptied, want 1 and 0", w, e)
		}
		if _, ok, _ := m.HighestOffsetForEpoch(tpFoo, 1); ok {
			t.Error("an epoch without a finished segment has a highest offset")
		}
	})

	t.Run("dropped where Kafka drops the partition", func(t *testing.T) {
		m := New()
		churnEpochs(t, m, tpFoo, 100, perEpoch, live)
		churnEpochs(t, m, tpBar1, 100, perEpoch, 0) // every segment deleted
		if got := m.Partitions(); !slices.Equal(got, []rlmm.TopicIDPartition{tpBar1, tpFoo}) {
			t.Fatalf("Partitions() = %v: a partition with emptied epochs keeps them, as Kafka's cache does", got)
		}
		if w, e := epochCounts(t, m, tpBar1); w != 0 || e != 10 {
			t.Errorf("%d epoch states and %d emptied, want 0 and 10", w, e)
		}
		mustOK(t, m.PutPartitionDelete(ctx, rlmm.PartitionDelete{TopicIDPartition: tpBar1, State: rlmm.DeletePartitionFinished}))
		m.DropPartition(tpFoo)
		if got := m.Partitions(); len(got) != 0 {
			t.Errorf("after DELETE_PARTITION_FINISHED and DropPartition: %v", got)
		}
		for _, tp := range []rlmm.TopicIDPartition{tpFoo, tpBar1} {
			if _, ok, _ := m.HighestOffsetForEpoch(tp, 0); ok {
				t.Errorf("%s answers a highest offset after being dropped", tp)
			}
		}
	})
}

// compareEpochs compares, for every epoch up to maxEpoch, the reads of an
// epoch with the model (HighestOffsetForEpoch above all: an emptied epoch
// answers its highest offset), and checks that tp keeps a whole state for
// exactly the epochs its live segments carry and only the highest offset of
// the others.
func compareEpochs(mgr *Manager, mod *model, tp rlmm.TopicIDPartition, maxEpoch int32) error {
	for e := int32(0); e <= maxEpoch; e++ {
		h, ok, err := mgr.HighestOffsetForEpoch(tp, e)
		wh, wok := mod.highestFor(tp, e)
		if err != nil || ok != wok || h != wh {
			return fmt.Errorf("HighestOffsetForEpoch(%s, %d) = %d, %t, %v; model %d, %t", tp, e, h, ok, err, wh, wok)
		}
		l, err := mgr.ListSegmentsForEpoch(tp, e)
		if err != nil {
			return err
		}
		if err := equalMDs(l, mod.list(tp, e, false)); err != nil {
			return fmt.Errorf("ListSegmentsForEpoch(%s, %d): %w", tp, e, err)
		}
		if sz, err := mgr.RemoteLogSize(tp, e); err != nil || sz != mod.size(tp, e) {
			return fmt.Errorf("RemoteLogSize(%s, %d) = %d, %v; model %d", tp, e, sz, err, mod.size(tp, e))
		}
	}
	v, ok := mgr.View(tp)
	wv, wok := mod.view(tp)
	if ok != wok || (ok && !equalViews(v, wv)) {
		return fmt.Errorf("View(%s) = %+v, %t; model %+v, %t", tp, v, ok, wv, wok)
	}
	p, mp := mgr.parts.get(&tp), mod.parts[tp]
	if (p == nil) != (mp == nil) {
		return fmt.Errorf("%s: state held %t, model %t", tp, p != nil, mp != nil)
	}
	if p == nil {
		return nil
	}
	carried := map[int32]bool{}
	for _, s := range mp.segs {
		for _, le := range s.md.LeaderEpochs {
			carried[le.Epoch] = true
		}
	}
	var whole []int32
	for _, es := range p.epochs {
		whole = append(whole, es.epoch)
	}
	if want := slices.Sorted(maps.Keys(carried)); !slices.Equal(whole, want) {
		return fmt.Errorf("%s keeps epoch states %v; its live segments carry %v", tp, whole, want)
	}
	var emptied []EpochOffset
	for _, e := range slices.Sorted(maps.Keys(mp.highest)) {
		if !carried[e] {
			emptied = append(emptied, EpochOffset{e, mp.highest[e]})
		}
	}

	if got := p.emptied.mergeHighest(nil, nil, false); !slices.Equal(got, emptied) {
		return fmt.Errorf("%s keeps emptied epochs %v; model %v", tp, got, emptied)
	}
	return nil
}

// Long leader-epoch histories under retention, against the model: epochs
// advance (sometimes by more than one, sometimes mid-segment), retention
// deletes the oldest segment (or any), late uploads carry old emptied
// epochs again, and the state goes through Export/Import and
// PartitionBuilder/Install. Every epoch keeps Kafka's answers, and only
// the epochs live segments carry keep a whole state.
func TestEmptiedEpochsAgainstModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		mgr, mod := New(), newModel()
		tps := []rlmm.TopicIDPartition{tpFoo, tpBar1}
		type history struct {
			epoch int32
			end   int64 // next offset to copy
		}
		hist := map[rlmm.TopicIDPartition]*history{tpFoo: {}, tpBar1: {}}
		next := 0 // segment numbers, unique across partitions
		apply := func(op string, got, want error) {
			if sentinelOf(got) != want {
				t.Fatalf("%s: err = %v, model says %v", op, got, want)
			}
		}
		add := func(md rlmm.SegmentMetadata, finish bool) {
			apply("add "+md.String(), mgr.AddSegment(ctx, md), mod.add(md))
			if finish {
				u := upd(md.ID.TopicIDPartition, segNo(md), rlmm.CopySegmentFinished)
				apply("finish "+u.String(), mgr.UpdateSegment(ctx, u), mod.update(u))
			}
		}
		retire := func(tp rlmm.TopicIDPartition, pick func([]modelSeg) int) {
			mp := mod.parts[tp]
			if mp == nil || len(mp.segs) == 0 {
				return
			}
			md := mp.segs[pick(mp.segs)].md
			for _, st := range []rlmm.SegmentState{rlmm.DeleteSegmentStarted, rlmm.DeleteSegmentFinished} {
				u := upd(tp, segNo(md), st)
				apply("retire "+u.String(), mgr.UpdateSegment(ctx, u), mod.update(u))
			}
		}
		maxEpoch := func() int32 { return max(hist[tpFoo].epoch, hist[tpBar1].epoch) + 1 }
		t.Repeat(map[string]func(*rapid.T){
			"copy": func(t *rapid.T) {
				tp := rapid.SampledFrom(tps).Draw(t, "tp")
				h := hist[tp]
				start := h.end
				end := start + rapid.Int64Range(0, 20).Draw(t, "len")
				epochs := []rlmm.EpochStart{ep(h.epoch, start)}
				if end > start && rapid.IntRange(0, 4).Draw(t, "leaderChangeInside") == 0 {
					h.epoch += rapid.Int32Range(1, 2).Draw(t, "step")
					epochs = append(epochs, ep(h.epoch, rapid.Int64Range(start+1, end).Draw(t, "epochStart")))
				}
				next++
				add(segMD(tp, next, start, end, epochs...), rapid.IntRange(0, 4).Draw(t, "failed") > 0)
				h.end = end + 1
			},
			"leaderChange": func(t *rapid.T) {
				hist[rapid.SampledFrom(tps).Draw(t, "tp")].epoch += rapid.Int32Range(1, 3).Draw(t, "step")
			},
			"retireOldest": func(t *rapid.T) {
				retire(rapid.SampledFrom(tps).Draw(t, "tp"), func(segs []modelSeg) int {
					oldest := 0
					for k := range segs {
						if segs[k].md.StartOffset < segs[oldest].md.StartOffset {
							oldest = k
						}
					}
					return oldest
				})
			},
			"retireAny": func(t *rapid.T) {
				retire(rapid.SampledFrom(tps).Draw(t, "tp"), func(segs []modelSeg) int {
					return rapid.IntRange(0, len(segs)-1).Draw(t, "which")
				})
			},
			"lateUpload": func(t *rapid.T) {
				// An old epoch carried again, maybe reaching past its highest.
				tp := rapid.SampledFrom(tps).Draw(t, "tp")
				h := hist[tp]
				e := rapid.Int32Range(0, h.epoch).Draw(t, "oldEpoch")
				start := rapid.Int64Range(0, h.end).Draw(t, "start")
				next++
				add(segMD(tp, next, start, start+rapid.Int64Range(0, 30).Draw(t, "len"), ep(e, start)), rapid.Bool().Draw(t, "finish"))
			},
			"partitionDeleted": func(t *rapid.T) {
				if rapid.IntRange(0, 9).Draw(t, "rarely") == 0 {
					d := rlmm.PartitionDelete{TopicIDPartition: rapid.SampledFrom(tps).Draw(t, "tp"), State: rlmm.DeletePartitionFinished}
					apply("partition delete", mgr.PutPartitionDelete(ctx, d), mod.partitionDelete(d))
				}
			},
			"restore": func(t *rapid.T) {
				states := mgr.Export(nil)
				fresh := New()
				if rapid.Bool().Draw(t, "install") {
					builders := make([]*PartitionBuilder, len(states))
					for k := range states {
						b, err := builderOf(&states[k])
						if err != nil {
							t.Fatalf("builder of an Export: %v", err)
						}
						builders[k] = b
					}
					if err := fresh.Install(builders); err != nil {
						t.Fatalf("Install of an Export: %v", err)
					}
				} else if err := fresh.Import(states); err != nil {
					t.Fatalf("Import of an Export: %v", err)
				}
				mgr = fresh
			},
			"": func(t *rapid.T) {
				for _, tp := range tps {
					if err := compareEpochs(mgr, mod, tp, maxEpoch()); err != nil {
						t.Fatal(err)
					}
				}
				if err := compareEdges(mgr, mod); err != nil {
					t.Fatal(err)
				}
			},
		})
		for _, tp := range tps {
			if err := compareEpochs(mgr, mod, tp, maxEpoch()); err != nil {
				t.Fatalf("final state: %v", err)
			}
		}
	})
}

// Emptied epochs keep their offsets exactly, whatever the order they come
// in (appends, inserts that split a block, takes from anywhere), and cost a
// few bytes each when they come as retention empties them.
func TestEmptiedEpochPacking(t *testing.T) {
	var r emptiedEpochs
	offs := []int64{math.MinInt64, -1, 0, 1, 1<<32 - 1, 1 << 32, math.MaxInt64}
	for k, o := range offs {
		r.put(int32(len(offs)-k), o) // in decreasing epoch order: inserts
	}
	for k, o := range offs {
		if h, ok := r.get(int32(len(offs) - k)); !ok || h != o {
			t.Errorf("epoch %d: %d, %t; want %d", len(offs)-k, h, ok, o)
		}
	}
	if _, ok := r.take(99); ok {
		t.Error("take of an epoch not held")
	}
	for k := range offs {
		if _, ok := r.take(int32(k + 1)); !ok {
			t.Errorf("take(%d) found nothing", k+1)
		}
	}
	if r.len() != 0 || len(r.blocks) != 0 {
		t.Errorf("emptied after taking all: %d left, %d blocks", r.len(), len(r.blocks))
	}

	// Against a map, in an order that appends, inserts and takes.
	want := map[int32]int64{}
	rng := rand.New(rand.NewPCG(1, 2))
	for k := range 5000 {
		e := int32(rng.IntN(20000)) - 10000
		if k%3 == 0 {
			e = int32(10000 + k) // past every other: an append
		}
		if h, ok := want[e]; ok {
			if got, ok := r.take(e); !ok || got != h {
				t.Fatalf("take(%d) = %d, %t; want %d", e, got, ok, h)
			}
			delete(want, e)
			continue
		}
		h := rng.Int64() - math.MaxInt64/2
		r.put(e, h)
		want[e] = h
	}
	if r.len() != len(want) {
		t.Fatalf("%d emptied epochs, want %d", r.len(), len(want))
	}
	for e := int32(-10001); e <= 15001; e++ {
		h, ok := r.get(e)
		if wh, wok := want[e]; ok != wok || h != wh {
			t.Fatalf("get(%d) = %d, %t; want %d, %t", e, h, ok, wh, wok)
		}
	}
	got := r.mergeHighest(nil, nil, false)
	if len(got) != len(want) || !slices.IsSortedFunc(got, func(a, b EpochOffset) int { return int(a.Epoch - b.Epoch) }) {
		t.Fatalf("mergeHighest: %d epochs (sorted: %t), want %d sorted", len(got), slices.IsSortedFunc(got, func(a, b EpochOffset) int { return int(a.Epoch - b.Epoch) }), len(want))
	}
	for _, b := range r.blocks {
		if b.n < 1 || b.n > emptiedBlockLen {
			t.Fatalf("a block of %d epochs", b.n)
		}
	}

	// The newest emptied epoch taken back and emptied again (a segment
	// added to it, then deleted), and the last two taken in a row.
	var tail emptiedEpochs
	for e := range int32(200) {
		for range 3 {
			tail.put(e, int64(e)*77)
			if h, ok := tail.take(e); !ok || h != int64(e)*77 {
				t.Fatalf("take(%d) of the newest = %d, %t", e, h, ok)
			}
		}
		tail.put(e, int64(e)*77)
	}
	for _, e := range []int32{199, 198} {
		if h, ok := tail.take(e); !ok || h != int64(e)*77 {
			t.Fatalf("take(%d) = %d, %t", e, h, ok)
		}
	}
	tail.put(198, -5)
	for e := range int32(200) {
		want, wok := int64(e)*77, e < 198
		if e == 198 {
			want, wok = -5, true
		}
		if h, ok := tail.get(e); ok != wok || ok && h != want {
			t.Fatalf("after the churn, get(%d) = %d, %t; want %d, %t", e, h, ok, want, wok)
		}
	}

	// As retention empties them: in order, a leader change every 10
	// segments of 100 offsets.
	var seq emptiedEpochs
	const n = 100_000
	for e := range int32(n) {
		seq.put(e, int64(e)*1000+999)
	}
	bytes := int(unsafe.Sizeof(emptiedBlock{})) * cap(seq.blocks)
	for _, b := range seq.blocks {
		bytes += cap(b.deltas)
	}
	if per := float64(bytes) / n; per > 5 {
		t.Errorf("%.1f bytes per emptied epoch, want at most 5", per)
	}
}

// BenchmarkEmptiedNewestTakenBack is a deleted segment's cost in the
// emptied epochs when segments of the newest emptied epoch are added and
// deleted one by one (a retention-shaped replay): a take of the newest,
// then a put of it again, with 20 emptied epochs before it.
func BenchmarkEmptiedNewestTakenBack(b *testing.B) {
	var r emptiedEpochs
	for e := range int32(20) {
		r.put(e, int64(e)*10_000+9_999)
	}
	for b.Loop() {
		h, ok := r.take(19)
		if !ok {
			b.Fatal("the newest emptied epoch is gone")
		}
		r.put(19, h)
	}
}

package memory

import (
	"math/rand/v2"
	"testing"

	"github.com/rlmm-go/rlmm"
)

// TestIDIndexAgainstMap drives the id index with random inserts and
// removes (colliding tags included: ids counted up in one half only, and a
// tiny table that wraps) and compares every answer with a Go map.
func TestIDIndexAgainstMap(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 7))
		p := newPartition(tpFoo)
		want := map[rlmm.Uuid]int32{}
		var ids []rlmm.Uuid // every id ever used, held or not
		idOf := func() rlmm.Uuid {
			if len(ids) > 0 && rng.IntN(3) == 0 {
				return ids[rng.IntN(len(ids))]
			}
			id := rlmm.UuidFromBits(int64(rng.IntN(4)), int64(rng.IntN(400)))
			ids = append(ids, id)
			return id
		}
		for step := range 3000 {
			id := idOf()
			slot, held := want[id]
			switch {
			case !held:
				i := p.alloc()
				p.slot(i).id = id
				if !p.byID.insert(&id, i, p) {
					t.Fatalf("seed %d step %d: insert of a new id refused", seed, step)
				}
				want[id] = i
			case rng.IntN(2) == 0:
				if p.byID.insert(&id, slot, p) {
					t.Fatalf("seed %d step %d: repeated id inserted", seed, step)
				}
			default:
				p.byID.remove(&id, slot)
				p.release(slot)
				delete(want, id)
			}
			if p.byID.len() != len(want) {
				t.Fatalf("seed %d step %d: index holds %d ids, want %d", seed, step, p.byID.len(), len(want))
			}
			// Every id ever used answers as the map does.
			if step%100 == 0 || step == 2999 {
				for _, id := range ids {
					got, ok := p.byID.get(&id, p)
					w, wok := want[id]
					if ok != wok || ok && got != w {
						t.Fatalf("seed %d step %d: get(%s) = %d, %v; want %d, %v", seed, step, id, got, ok, w, wok)
					}
				}
			}
		}
	}
}

// BenchmarkIDIndexBuild inserts 1,000 random ids into a pre-sized index,
// as a snapshot load does per partition, against a pre-sized Go map.
func BenchmarkIDIndexBuild(b *testing.B) {
	const n = 1000
	p := newPartition(tpFoo)
	ids := make([]rlmm.Uuid, n)
	for i := range ids {
		ids[i] = rlmm.UuidFromBits(rand.Int64(), rand.Int64())
		p.slot(p.alloc()).id = ids[i]
	}
	b.Run("idIndex", func(b *testing.B) {
		for b.Loop() {
			var x idIndex
			x.reserve(n)
			for i := range ids {
				x.insert(&ids[i], int32(i), p)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/id")
	})
	b.Run("map", func(b *testing.B) {
		for b.Loop() {
			m := make(map[rlmm.Uuid]int32, n)
			for i := range ids {
				m[ids[i]] = int32(i)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/id")
	})
}

package memory

import (
	"math/rand/v2"
	"testing"
)

// The extra table agrees with a map after every put and del, over slots
// spread across chunks (so rows are made lazily and entries move when
// another is removed), and each entry names its own slot.
func TestExtraTableMatchesMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var tab extraTable
	tab.reserve(10, 3*chunkSize)
	model := map[int32]uint32{}
	for step := range 20000 {
		i := int32(rng.IntN(5 * chunkSize))
		if rng.IntN(3) == 0 {
			tab.del(i)
			delete(model, i)
		} else {
			x := tab.put(i)
			x.customLen = uint32(step)
			model[i] = uint32(step)
		}
		if tab.len() != len(model) {
			t.Fatalf("step %d: %d extras, want %d", step, tab.len(), len(model))
		}
		if step%500 != 0 {
			continue
		}
		for j := range int32(5 * chunkSize) {
			want, ok := model[j]
			got, has := tab.get(j)
			if has != ok || has && got.customLen != want {
				t.Fatalf("step %d: slot %d: got %+v (%v), want %d (%v)", step, j, got, has, want, ok)
			}
			if has && got.slot != j {
				t.Fatalf("step %d: slot %d's extra names slot %d", step, j, got.slot)
			}
		}
	}
	// A slot past every row, and one in a row without an entry.
	if tab.at(1<<20) != nil {
		t.Error("an extra for a slot past every row")
	}
}

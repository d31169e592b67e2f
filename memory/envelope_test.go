package memory

import (
	"math/rand/v2"
	"testing"
)

// The envelope alone, against a brute-force model: segments are painted
// newest last over [start, end]; a lookup at x must find the newest segment
// covering x.
func TestEnvelopeAgainstModel(t *testing.T) {
	cases := []struct {
		name   string
		ranges [][2]int64 // segment i covers ranges[i], painted in order
	}{
		{"disjoint in order", [][2]int64{{0, 9}, {10, 19}, {20, 29}}},
		{"newer inside older", [][2]int64{{0, 100}, {50, 80}}},
		{"same start, shorter newer", [][2]int64{{200, 300}, {200, 250}}},
		{"newer covers older", [][2]int64{{10, 20}, {0, 30}}},
		{"gap between", [][2]int64{{0, 9}, {20, 29}}},
		{"out of order", [][2]int64{{20, 29}, {0, 9}, {10, 19}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			checkEnvelope(t, c.ranges)
		})
	}
	rng := rand.New(rand.NewPCG(7, 9))
	for range 200 {
		n := rng.IntN(30) + 1
		ranges := make([][2]int64, n)
		for i := range ranges {
			s := rng.Int64N(500)
			ranges[i] = [2]int64{s, s + rng.Int64N(60)}
		}
		checkEnvelope(t, ranges)
	}
}

// checkEnvelope paints ranges (segment i = ranges[i]) and compares every
// lookup with the model.
func checkEnvelope(t *testing.T, ranges [][2]int64) {
	t.Helper()
	var v envelope
	segEnd := func(i int32) int64 { return ranges[i][1] }
	for i, r := range ranges {
		v.paint(int32(i), r[0], r[1], segEnd)
	}
	for x := int64(-1); x <= 600; x++ {
		want := int32(-1)
		for i, r := range ranges {
			if r[0] <= x && x <= r[1] {
				want = int32(i) // the newest covering one wins
			}
		}
		got := int32(-1)
		if seg, ok := v.lookup(x); ok && x <= ranges[seg][1] {
			got = seg
		}
		if got != want {
			t.Fatalf("ranges %v: lookup(%d) = segment %d, want %d (pieces %v)", ranges, x, got, want, v.pieces)
		}
	}
}

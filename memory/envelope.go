package memory

import (
	"math"
	"slices"
)

// The envelope is an epoch's lookup index: which finished segment answers
// SegmentForOffset at each offset. It knows segments only by slot number;
// where a segment's range for the epoch ends is told to it (segEnd), so it
// is tested alone (envelope_test.go).

// piece is one run of the lookup envelope of an epoch: from start on, seg is
// the newest finished segment covering the offset. A piece ends before the
// next piece's start or at seg's end for the epoch, whichever comes first.
// (A piece cut short by a newer segment is always followed by that
// segment's piece, so the end never needs storing.)
type piece struct {
	start int64
	seg   int32
}

// envelope holds the pieces of an epoch sorted by start, plus a summary
// holding the start of every summaryStride-th piece. A lookup first tries
// an index interpolated from the starts (see search); when that misses it
// binary-searches the small summary (which tends to stay in cache) and then
// reads one cache line of pieces, instead of missing the cache at every step
// of a search over all pieces.
//
// Retention deletes the oldest segment, the first piece: that drop is O(1)
// (the slice is resliced and off counts the dropped pieces, so the summary,
// which indexes pieces as they were when it was built, stays valid).
type envelope struct {
	pieces []piece
	// summary[q] is the start of the piece whose index was q*summaryStride
	// when the summary was built; that piece's index is now q*summaryStride-off.
	summary []int64
	off     int
}

const summaryStride = 4 // 16-byte pieces per 64-byte cache line

func (v *envelope) len() int { return len(v.pieces) }

// search returns the first index whose start is >= x.
func (v *envelope) search(x int64) int {
	// Offsets are dense and segments tend to be of similar size, so the
	// pieces' starts grow almost linearly: an index interpolated from the
	// first and last start usually lands on the answer, costing one cache
	// line instead of a chain of dependent loads down the summary. A wrong
	// guess is corrected by the same slope from where it landed (with
	// uneven segments the error shrinks fast), a few times at most, and
	// then the summary search decides.
	n := len(v.pieces)
	if n < 2 {
		return v.searchSummary(x)
	}
	first, last := v.pieces[0].start, v.pieces[n-1].start
	if x <= first {
		return 0
	}
	if x > last {
		return n
	}
	// first < x <= last: the answer k is in [1, n-1], with
	// pieces[k-1].start < x <= pieces[k].start. The float rounding (and
	// any overflow of the differences) only makes a guess wrong.
	scale := float64(n-1) / float64(last-first)
	k := int(float64(x-first)*scale) + 1
	for range 4 {
		k = min(max(k, 1), n-1)
		if below := v.pieces[k-1].start; below >= x {
			k -= min(max(int(float64(below-x)*scale), 1), n)
		} else if at := v.pieces[k].start; at < x {
			k += min(max(int(float64(x-at)*scale), 1), n)
		} else {
			return k
		}
	}
	return v.searchSummary(x)
}

// searchSummary is search through the summary.
func (v *envelope) searchSummary(x int64) int {
	// q: the first summary entry >= x. The loop body compiles to a
	// conditional move: no branch to mispredict on the fetch path.
	a := v.summary
	n := len(a)
	if n == 0 {
		return 0
	}
	q := 0
	for n > 1 {
		half := n >> 1
		if a[q+half-1] < x {
			q += half
		}
		n -= half
	}
	if a[q] < x {
		q++
	}
	// In summary indexes, the piece at (q-1)*stride starts below x and the
	// one at q*stride at or after it: the answer lies in between. Count the
	// pieces there that start below x.
	hi := q*summaryStride - v.off
	if hi <= 0 {
		return 0
	}
	lo := max((q-1)*summaryStride+1-v.off, 0)
	hi = min(hi, len(v.pieces))
	i := lo
	for _, pc := range v.pieces[lo:hi] {
		if pc.start < x {
			i++
		}
	}
	return i
}

// resummarize rebuilds the summary from piece i on.
func (v *envelope) resummarize(i int) {
	q := (i + v.off) / summaryStride
	if q*summaryStride < v.off {
		// The rebuild would start among dropped pieces: rebuild it all.
		q, v.off = 0, 0
	}
	v.summary = v.summary[:min(q, len(v.summary))]
	for k := q*summaryStride - v.off; k < len(v.pieces); k += summaryStride {
		v.summary = append(v.summary, v.pieces[k].start)
	}
}

// push appends pc after the last piece, keeping the summary complete: it
// holds an entry for every piece whose index plus off is a multiple of
// summaryStride (replace and resummarize keep that true), so the new piece
// needs one exactly when its own index does.
func (v *envelope) push(pc piece) {
	if (len(v.pieces)+v.off)%summaryStride == 0 {
		v.summary = append(v.summary, pc.start)
	}
	v.pieces = append(v.pieces, pc)
}

// replace replaces pieces [i, j) by add.
func (v *envelope) replace(i, j int, add []piece) {
	if i == 0 && j == 1 && len(add) == 0 && len(v.pieces) > 1 && v.off < len(v.pieces) {
		// Drop the first piece in O(1). The dropped entries of the summary
		// stay until it is rebuilt, at most about as many as live ones.
		v.pieces = v.pieces[1:]
		v.off++
		return
	}
	v.pieces = slices.Replace(v.pieces, i, j, add...)
	if len(v.pieces) == 0 {
		v.summary, v.off = v.summary[:0], 0
		return
	}
	v.resummarize(i)
}

// compact merges neighbours showing the same segment (a segment's range is
// contiguous, so the first of them reaches the second) among pieces [i, j),
// and each of them with the piece before i and after j: a replace of [i, j)
// can only have made those neighbours equal.
func (v *envelope) compact(i, j int) {
	lo, hi := max(i-1, 0), min(j+1, len(v.pieces))
	if hi-lo < 2 {
		return
	}
	merged := slices.CompactFunc(v.pieces[lo:hi], func(a, b piece) bool { return a.seg == b.seg })
	if gone := hi - lo - len(merged); gone > 0 {
		v.pieces = slices.Delete(v.pieces, lo+len(merged), hi)
		v.resummarize(lo)
	}
}

// pieceEnd returns the last offset of piece k: its segment's end for the
// epoch (segEnd says it), or the offset before the next piece's start.
func (v *envelope) pieceEnd(k int, segEnd func(seg int32) int64) int64 {
	end := segEnd(v.pieces[k].seg)
	if k+1 < v.len() && v.pieces[k+1].start-1 < end {
		end = v.pieces[k+1].start - 1
	}
	return end
}

// overlaps reports whether laying segment xi over [s, e] would cover part
// of another segment. segEnd gives each segment's end for the envelope's
// epoch. Requires s <= e.
func (v *envelope) overlaps(xi int32, s, e int64, segEnd func(seg int32) int64) bool {
	if v.pastEnd(s, segEnd) {
		return false
	}
	i, j := v.span(s, e)
	for k := i; k < j; k++ {
		if v.pieces[k].seg != xi {
			return true
		}
	}
	return i > 0 && v.pieces[i-1].seg != xi && v.pieceEnd(i-1, segEnd) >= s
}

// pastEnd reports whether offset s lies past every piece (the common case:
// segments finish in offset order, and a snapshot's restore lays them so).
func (v *envelope) pastEnd(s int64, segEnd func(seg int32) int64) bool {
	n := v.len()
	return n == 0 || v.pieces[n-1].start < s && v.pieceEnd(n-1, segEnd) < s
}

// span returns the pieces [i, j) that start within [s, e].
func (v *envelope) span(s, e int64) (i, j int) {
	i, j = v.search(s), v.len()
	if e < math.MaxInt64 {
		j = v.search(e + 1)
	}
	return i, j
}

// segments appends to dst the segment of every piece, in order (one entry
// per piece: where no segments overlap, every finished segment once).
func (v *envelope) segments(dst []int32) []int32 {
	for _, pc := range v.pieces {
		dst = append(dst, pc.seg)
	}
	return dst
}

// paint lays segment xi over [s, e] (xi is the newest). segEnd gives each
// segment's end for the envelope's epoch. Requires s <= e.
func (v *envelope) paint(xi int32, s, e int64, segEnd func(seg int32) int64) {
	if v.pastEnd(s, segEnd) {
		// xi lies wholly past every piece: appended without the two searches.
		v.push(piece{start: s, seg: xi})
		return
	}
	i, j := v.span(s, e)
	var add [2]piece
	add[0] = piece{start: s, seg: xi}
	n := 1
	if j > 0 && e < math.MaxInt64 && v.pieces[j-1].seg != xi && v.pieceEnd(j-1, segEnd) > e {
		// The segment visible at e+1 before continues after xi.
		add[1] = piece{start: e + 1, seg: v.pieces[j-1].seg}
		n = 2
	}
	v.replace(i, j, add[:n])
}

// lookup returns the segment of the piece covering x (the last piece
// starting at or before x), false when none starts at or before x. The
// caller checks that x is not past that segment's end.
func (v *envelope) lookup(x int64) (int32, bool) {
	k := v.len() - 1
	if x < math.MaxInt64 {
		k = v.search(x+1) - 1
	}
	if k < 0 {
		return 0, false
	}
	return v.pieces[k].seg, true
}

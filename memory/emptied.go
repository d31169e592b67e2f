package memory

import "slices"

// emptiedEpochs keeps what is left of the epochs of a partition that no
// live segment carries any more but that had a finished segment: their
// highest finished offset, the one answer such an epoch still gives
// (HighestOffsetForEpoch; every other read of it is a miss or zero, as for
// an epoch never seen). Leader epochs advance with every leader change and
// retention empties them one by one, so a long-lived partition has many:
// each costs 12 bytes here (two parallel arrays sorted by epoch, no
// padding), instead of a whole epochState with its envelope.
//
// Retention empties epochs in increasing order, so put appends; an epoch
// that a new segment carries again leaves (take) and becomes an epochState
// with its highest offset.
type emptiedEpochs struct {
	epochs  []int32
	highest []int64
}

func (r *emptiedEpochs) len() int { return len(r.epochs) }

// index returns where epoch e is, or would be inserted, and whether it is there.
func (r *emptiedEpochs) index(e int32) (int, bool) {
	if n := len(r.epochs); n == 0 || r.epochs[n-1] < e {
		return n, false
	}
	return slices.BinarySearch(r.epochs, e)
}

// get returns the highest finished offset of emptied epoch e.
func (r *emptiedEpochs) get(e int32) (int64, bool) {
	if i, ok := r.index(e); ok {
		return r.highest[i], true
	}
	return 0, false
}

// put records the highest finished offset of epoch e, which must not be
// held yet. Writer only, under the partition's lock.
func (r *emptiedEpochs) put(e int32, highest int64) {
	i, _ := r.index(e)
	r.epochs = slices.Insert(r.epochs, i, e)
	r.highest = slices.Insert(r.highest, i, highest)
}

// take removes epoch e, returning its highest finished offset. Writer only,
// under the partition's lock.
func (r *emptiedEpochs) take(e int32) (int64, bool) {
	i, ok := r.index(e)
	if !ok {
		return 0, false
	}
	h := r.highest[i]
	r.epochs = slices.Delete(r.epochs, i, i+1)
	r.highest = slices.Delete(r.highest, i, i+1)
	if len(r.epochs) == 0 {
		*r = emptiedEpochs{}
	}
	return h, true
}

// mergeHighest appends to dst, sorted by epoch, the highest finished offset
// of every epoch: those of live (sorted by epoch, disjoint from r's) that
// have one, and r's. With withoutHighest, a live epoch without a finished
// segment is listed with offset -1 (View's rule) instead of left out.
func (r *emptiedEpochs) mergeHighest(dst []EpochOffset, live []epochState, withoutHighest bool) []EpochOffset {
	k := 0
	for i := range live {
		es := &live[i]
		for ; k < len(r.epochs) && r.epochs[k] < es.epoch; k++ {
			dst = append(dst, EpochOffset{Epoch: r.epochs[k], Offset: r.highest[k]})
		}
		switch {
		case es.hasHighest:
			dst = append(dst, EpochOffset{Epoch: es.epoch, Offset: es.highest})
		case withoutHighest:
			dst = append(dst, EpochOffset{Epoch: es.epoch, Offset: -1})
		}
	}
	for ; k < len(r.epochs); k++ {
		dst = append(dst, EpochOffset{Epoch: r.epochs[k], Offset: r.highest[k]})
	}
	return dst
}

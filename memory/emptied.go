package memory

import (
	"cmp"
	"slices"
)

// emptiedEpochs keeps what is left of the epochs of a partition that no
// live segment carries any more but that had a finished segment: their
// highest finished offset, the one answer such an epoch still gives
// (HighestOffsetForEpoch; every other read of it is a miss or zero, as for
// an epoch never seen). Leader epochs advance with every leader change and
// retention empties them one by one, so a long-lived partition has many:
// each costs 12 bytes here (one packed record in an array sorted by
// epoch), instead of a whole epochState with its envelope.
//
// Retention empties epochs in increasing order, so put appends; an epoch
// that a new segment carries again leaves (take) and becomes an epochState
// with its highest offset.
type emptiedEpochs struct {
	list []emptiedEpoch
}

// emptiedEpoch is one emptied epoch: 12 bytes, aligned on 4 (an int64
// field would pad it to 16).
type emptiedEpoch struct {
	epoch int32
	// hi and lo are the two halves of the highest finished offset.
	hi, lo uint32
}

func packEmptied(e int32, highest int64) emptiedEpoch {
	return emptiedEpoch{epoch: e, hi: uint32(uint64(highest) >> 32), lo: uint32(highest)}
}

func (x emptiedEpoch) highest() int64 { return int64(uint64(x.hi)<<32 | uint64(x.lo)) }

func (r *emptiedEpochs) len() int { return len(r.list) }

// index returns where epoch e is, or would be inserted, and whether it is there.
func (r *emptiedEpochs) index(e int32) (int, bool) {
	if n := len(r.list); n == 0 || r.list[n-1].epoch < e {
		return n, false
	}
	return slices.BinarySearchFunc(r.list, e, func(x emptiedEpoch, t int32) int { return cmp.Compare(x.epoch, t) })
}

// get returns the highest finished offset of emptied epoch e.
func (r *emptiedEpochs) get(e int32) (int64, bool) {
	if i, ok := r.index(e); ok {
		return r.list[i].highest(), true
	}
	return 0, false
}

// put records the highest finished offset of epoch e, which must not be
// held yet. Writer only, under the partition's lock.
func (r *emptiedEpochs) put(e int32, highest int64) {
	i, _ := r.index(e)
	r.list = slices.Insert(r.list, i, packEmptied(e, highest))
}

// take removes epoch e, returning its highest finished offset. Writer only,
// under the partition's lock.
func (r *emptiedEpochs) take(e int32) (int64, bool) {
	i, ok := r.index(e)
	if !ok {
		return 0, false
	}
	h := r.list[i].highest()
	r.list = slices.Delete(r.list, i, i+1)
	if len(r.list) == 0 {
		r.list = nil
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
		for ; k < len(r.list) && r.list[k].epoch < es.epoch; k++ {
			dst = append(dst, EpochOffset{Epoch: r.list[k].epoch, Offset: r.list[k].highest()})
		}
		switch {
		case es.hasHighest:
			dst = append(dst, EpochOffset{Epoch: es.epoch, Offset: es.highest})
		case withoutHighest:
			dst = append(dst, EpochOffset{Epoch: es.epoch, Offset: -1})
		}
	}
	for ; k < len(r.list); k++ {
		dst = append(dst, EpochOffset{Epoch: r.list[k].epoch, Offset: r.list[k].highest()})
	}
	return dst
}

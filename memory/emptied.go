package memory

import (
	"encoding/binary"
	"slices"
)

// emptiedEpochs keeps what is left of the epochs of a partition that no
// live segment carries any more but that had a finished segment: their
// highest finished offset, the one answer such an epoch still gives
// (HighestOffsetForEpoch; every other read of it is a miss or zero, as for
// an epoch never seen). Leader epochs advance with every leader change and
// retention empties them one by one, so a long-lived partition has many,
// and they are kept for ever: Kafka's contract does not let a deletion
// lower an epoch's highest offset.
//
// So they are kept packed: sorted by epoch, in blocks of at most
// emptiedBlockLen, each block holding its first epoch and offset whole and
// every later one as varints of the differences from the one before (an
// epoch is usually one more than the last, an offset a segment or a few
// further: 3 to 4 bytes an epoch, against 12 for a packed record and a
// whole epochState with its envelope in Kafka's cache). A read decodes one
// block. Retention empties epochs in increasing order, so put appends to
// the last block; an epoch that a new segment carries again leaves (take,
// which re-encodes its block) and becomes an epochState with its highest
// offset.
type emptiedEpochs struct {
	blocks []emptiedBlock
	n      int
}

// emptiedBlockLen bounds a block's epochs: a read decodes at most this
// many, a change in the middle re-encodes as many.
const emptiedBlockLen = 64

// emptiedBlock is a run of emptied epochs, sorted.
type emptiedBlock struct {
	// first and firstHigh are the first epoch and its offset; last and
	// lastHigh the last (put appends after them without decoding).
	first, last         int32
	firstHigh, lastHigh int64
	n                   int32
	// lastAt is where the last epoch's delta starts in deltas, -1 when not
	// known (or n is 1): take of the last epoch then truncates deltas
	// without decoding the block. A segment added to an epoch that was
	// just emptied takes it back, and its deletion empties it again, so
	// the newest emptied epoch comes and goes once per deleted segment.
	lastAt int32
	// deltas holds, for each epoch after the first, the epoch's difference
	// from the one before (uvarint, at least 1) and the offset's (varint,
	// of the wrapped difference: any int64 pair round-trips).
	deltas []byte
}

// emptiedEpoch is one emptied epoch, unpacked.
type emptiedEpoch struct {
	epoch   int32
	highest int64
}

// appendDelta appends the encoding of e after prev.
func appendDelta(dst []byte, prev, e emptiedEpoch) []byte {
	dst = binary.AppendUvarint(dst, uint64(uint32(e.epoch-prev.epoch)))
	return binary.AppendVarint(dst, int64(uint64(e.highest)-uint64(prev.highest)))
}

// readDelta decodes the epoch after prev from b at i, returning it and the
// position after it. b was written by appendDelta.
func readDelta(b []byte, i int, prev emptiedEpoch) (emptiedEpoch, int) {
	de, k := binary.Uvarint(b[i:])
	i += k
	dh, k := binary.Varint(b[i:])
	i += k
	return emptiedEpoch{epoch: prev.epoch + int32(uint32(de)), highest: int64(uint64(prev.highest) + uint64(dh))}, i
}

// each calls fn with the block's epochs in order until fn returns false.
func (b *emptiedBlock) each(fn func(emptiedEpoch) bool) {
	x := emptiedEpoch{epoch: b.first, highest: b.firstHigh}
	if !fn(x) {
		return
	}
	for i := 0; i < len(b.deltas); {
		x, i = readDelta(b.deltas, i, x)
		if !fn(x) {
			return
		}
	}
}

// unpack appends the block's epochs to dst.
func (b *emptiedBlock) unpack(dst []emptiedEpoch) []emptiedEpoch {
	b.each(func(x emptiedEpoch) bool {
		dst = append(dst, x)
		return true
	})
	return dst
}

// packEmptied encodes xs (sorted, not empty) as one block whose deltas are
// exactly as long as they need to be.
func packEmptied(xs []emptiedEpoch) emptiedBlock {
	b := emptiedBlock{first: xs[0].epoch, firstHigh: xs[0].highest, n: int32(len(xs))}
	var buf [emptiedBlockLen * 2 * binary.MaxVarintLen64]byte
	d := buf[:0]
	b.lastAt = -1
	for k := 1; k < len(xs); k++ {
		b.lastAt = int32(len(d))
		d = appendDelta(d, xs[k-1], xs[k])
	}
	if len(d) > 0 {
		b.deltas = slices.Clone(d)
	}
	b.last, b.lastHigh = xs[len(xs)-1].epoch, xs[len(xs)-1].highest
	return b
}

func (r *emptiedEpochs) len() int { return r.n }

// block returns the index of the block that holds e or would (the last
// whose first epoch is at most e; 0 when e is before every block).
func (r *emptiedEpochs) block(e int32) int {
	i, found := slices.BinarySearchFunc(r.blocks, e, func(b emptiedBlock, t int32) int {
		switch {
		case b.first < t:
			return -1
		case b.first > t:
			return 1
		}
		return 0
	})
	if found || i == 0 {
		return i
	}
	return i - 1
}

// get returns the highest finished offset of emptied epoch e.
func (r *emptiedEpochs) get(e int32) (int64, bool) {
	if r.n == 0 {
		return 0, false
	}
	b := &r.blocks[r.block(e)]
	switch {
	case e < b.first || e > b.last:
		return 0, false
	case e == b.last: // the common case: the newest emptied epoch, taken back
		return b.lastHigh, true
	}
	var h int64
	found := false
	b.each(func(x emptiedEpoch) bool {
		if x.epoch >= e {
			if x.epoch == e {
				h, found = x.highest, true
			}
			return false
		}
		return true
	})
	return h, found
}

// put records the highest finished offset of epoch e, which must not be
// held yet. Writer only, under the partition's lock.
func (r *emptiedEpochs) put(e int32, highest int64) {
	x := emptiedEpoch{epoch: e, highest: highest}
	r.n++
	if len(r.blocks) == 0 {
		r.blocks = append(r.blocks, packEmptied([]emptiedEpoch{x}))
		return
	}
	if last := &r.blocks[len(r.blocks)-1]; e > last.last {
		if last.n < emptiedBlockLen {
			last.lastAt = int32(len(last.deltas))
			last.deltas = appendDelta(last.deltas, emptiedEpoch{epoch: last.last, highest: last.lastHigh}, x)
			last.last, last.lastHigh = e, highest
			last.n++
			if last.n == emptiedBlockLen {
				last.deltas = slices.Clip(slices.Clone(last.deltas)) // sealed: no spare capacity
			}
			return
		}
		r.blocks = append(r.blocks, packEmptied([]emptiedEpoch{x}))
		return
	}
	// In the middle: re-encode the block, split in two when full.
	i := r.block(e)
	var buf [emptiedBlockLen + 1]emptiedEpoch
	xs := r.blocks[i].unpack(buf[:0])
	k, _ := slices.BinarySearchFunc(xs, e, func(y emptiedEpoch, t int32) int { return int(int64(y.epoch) - int64(t)) })
	xs = slices.Insert(xs, k, x)
	if len(xs) <= emptiedBlockLen {
		r.blocks[i] = packEmptied(xs)
		return
	}
	half := len(xs) / 2
	r.blocks[i] = packEmptied(xs[:half])
	r.blocks = slices.Insert(r.blocks, i+1, packEmptied(xs[half:]))
}

// take removes epoch e, returning its highest finished offset. Writer only,
// under the partition's lock.
func (r *emptiedEpochs) take(e int32) (int64, bool) {
	h, ok := r.get(e)
	if !ok {
		return 0, false
	}
	r.n--
	i := r.block(e)
	b := &r.blocks[i]
	switch {
	case b.n == 1:
		// Capacity kept: an epoch emptied again refills it.
		r.blocks = slices.Delete(r.blocks, i, i+1)
	case e == b.last && b.lastAt >= 0:
		// The last epoch: the one before it is it less its delta.
		d, _ := readDelta(b.deltas, int(b.lastAt), emptiedEpoch{})
		b.last, b.lastHigh = b.last-d.epoch, int64(uint64(b.lastHigh)-uint64(d.highest))
		b.deltas = b.deltas[:b.lastAt]
		b.n--
		b.lastAt = -1
	default:
		var buf [emptiedBlockLen]emptiedEpoch
		xs := slices.DeleteFunc(b.unpack(buf[:0]), func(y emptiedEpoch) bool { return y.epoch == e })
		*b = packEmptied(xs)
	}
	return h, true
}

// mergeHighest appends to dst, sorted by epoch, the highest finished offset
// of every epoch: those of live (sorted by epoch, disjoint from r's) that
// have one, and r's. With withoutHighest, a live epoch without a finished
// segment is listed with offset -1 (View's rule) instead of left out.
func (r *emptiedEpochs) mergeHighest(dst []EpochOffset, live []epochState, withoutHighest bool) []EpochOffset {
	k := 0
	emit := func(es *epochState) {
		switch {
		case es.hasHighest:
			dst = append(dst, EpochOffset{Epoch: es.epoch, Offset: es.highest})
		case withoutHighest:
			dst = append(dst, EpochOffset{Epoch: es.epoch, Offset: -1})
		}
	}
	for i := range r.blocks {
		r.blocks[i].each(func(x emptiedEpoch) bool {
			for ; k < len(live) && live[k].epoch < x.epoch; k++ {
				emit(&live[k])
			}
			dst = append(dst, EpochOffset{Epoch: x.epoch, Offset: x.highest})
			return true
		})
	}
	for ; k < len(live); k++ {
		emit(&live[k])
	}
	return dst
}

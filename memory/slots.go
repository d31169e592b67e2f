package memory

import (
	"cmp"
	"slices"

	"github.com/rlmm-go/rlmm"
)

// This file holds a partition's storage of segments: the 64-byte slot
// record, the chunks of slots, the side table of extras and the slabs a
// bulk build carves them from. The lookup index over the slots is the
// envelope (envelope.go); the operations of a partition are in
// partition.go.

// Segments live in chunks of chunkSize slots so that growing a partition never
// copies more than one chunk while readers wait on the partition lock.
const (
	chunkBits = 8
	chunkSize = 1 << chunkBits
	chunkMask = chunkSize - 1
)

// segExtra holds what most segments do not have: leader epochs other than
// one epoch starting at the segment's start, or custom metadata. It lives
// in a side map of the partition, so that seg fits one cache line.
type segExtra struct {
	// epochs is the full epoch list (flagEpochs).
	epochs []rlmm.EpochStart
	// custom is the custom metadata (flagCustom); non-nil, maybe empty.
	custom []byte
}

// Bits of seg.flags.
const (
	flagUsed     = 1 << iota // the slot holds a live segment
	flagTxnEmpty             // TxnIndexEmpty
	flagEpochs               // the epochs are in the partition's extras
	flagCustom               // custom metadata is in the partition's extras
)

// seg is the compact form of one live segment: 64 bytes, one cache line in
// chunks that the allocator aligns. The topic partition is not stored (it is
// the partition's, interned once); the common single epoch starting at the
// segment's start is e0; anything else is in the partition's extras.
type seg struct {
	id      rlmm.Uuid
	start   int64
	end     int64
	maxTs   int64
	eventTs int64
	e0      int32
	broker  int32
	size    int32
	state   rlmm.SegmentState
	flags   uint8
}

func (s *seg) used() bool { return s.flags&flagUsed != 0 }

// epochList returns the leader epochs of slot i (s), without allocating when
// scratch has room for one entry.
func (p *partition) epochList(i int32, s *seg, scratch *[1]rlmm.EpochStart) []rlmm.EpochStart {
	if s.flags&flagEpochs != 0 {
		return p.extras[i].epochs
	}
	scratch[0] = rlmm.EpochStart{Epoch: s.e0, StartOffset: s.start}
	return scratch[:]
}

// epochRange returns the offsets [start, end] of epoch e inside slot i (s)
// (Kafka's rule: up to the next epoch's start minus one, or the segment end).
func (p *partition) epochRange(i int32, s *seg, e int32) (start, end int64, ok bool) {
	if s.flags&flagEpochs == 0 {
		if e != s.e0 {
			return 0, 0, false
		}
		return s.start, s.end, true
	}
	eps := p.extras[i].epochs
	k, found := slices.BinarySearchFunc(eps, e, cmpEpoch)
	if !found {
		return 0, 0, false
	}
	return eps[k].StartOffset, rlmm.EpochEnd(eps, k, s.end), true
}

func cmpEpoch(e rlmm.EpochStart, t int32) int { return cmp.Compare(e.Epoch, t) }

// customOf returns the custom metadata of slot i (s), nil when absent.
func (p *partition) customOf(i int32, s *seg) []byte {
	if s.flags&flagCustom == 0 {
		return nil
	}
	return p.extras[i].custom
}

// setCustom stores a private copy of c as slot i's custom metadata (nil
// stays absent, empty stays empty). Writer only, under mu.
func (p *partition) setCustom(i int32, s *seg, c []byte) {
	if c == nil {
		if s.flags&flagCustom != 0 {
			s.flags &^= flagCustom
			if s.flags&flagEpochs == 0 {
				delete(p.extras, i)
			} else {
				p.extras[i].custom = nil
			}
		}
		return
	}
	var x *segExtra
	if s.flags&(flagCustom|flagEpochs) != 0 {
		x = p.extras[i]
	} else {
		x = p.newExtra()
		p.extras[i] = x
	}
	x.custom = p.copyBytes(c)
	s.flags |= flagCustom
}

// newExtra returns a fresh segExtra: from the bulk slab while Import
// builds the partition, else a new allocation.
func (p *partition) newExtra() *segExtra {
	if b := p.bulk; b != nil && len(b.extras) > 0 {
		x := &b.extras[0]
		b.extras = b.extras[1:]
		return x
	}
	return &segExtra{}
}

// copyBytes returns a private copy of c (non-nil, maybe empty): carved from
// the bulk slab while Import builds the partition, else a new allocation.
func (p *partition) copyBytes(c []byte) []byte {
	if b := p.bulk; b != nil && len(b.bytes) >= len(c) {
		out := b.bytes[:len(c):len(c)]
		b.bytes = b.bytes[len(c):]
		copy(out, c)
		return out
	}
	return append(make([]byte, 0, len(c)), c...)
}

// copyEpochs is copyBytes for a leader-epoch list.
func (p *partition) copyEpochs(e []rlmm.EpochStart) []rlmm.EpochStart {
	if b := p.bulk; b != nil && len(b.epochs) >= len(e) {
		out := b.epochs[:len(e):len(e)]
		b.epochs = b.epochs[len(e):]
		copy(out, e)
		return out
	}
	return slices.Clone(e)
}

// bulkSlabs hold, while Import builds a partition, the memory of every
// segment's extras in a few allocations instead of two or three per
// segment. A slab lives as long as any of the segments carved from it.
type bulkSlabs struct {
	extras []segExtra
	bytes  []byte
	epochs []rlmm.EpochStart
}

// load fills slot i from md (which passed Validate). Writer only, under mu.
func (p *partition) load(i int32, md *rlmm.SegmentMetadata) {
	s := p.slot(i)
	*s = seg{
		id: md.ID.ID, start: md.StartOffset, end: md.EndOffset, maxTs: md.MaxTimestampMs,
		eventTs: md.EventTimestampMs, e0: md.LeaderEpochs[0].Epoch,
		broker: md.BrokerID, size: md.SizeInBytes, state: md.State, flags: flagUsed,
	}
	if md.TxnIndexEmpty {
		s.flags |= flagTxnEmpty
	}
	// The slot is fresh: release removed any extras it had.
	if hasExtraEpochs(md) {
		x := p.newExtra()
		x.epochs = p.copyEpochs(md.LeaderEpochs)
		p.extras[i] = x
		s.flags |= flagEpochs
	}
	p.setCustom(i, s, md.CustomMetadata)
}

// fill writes slot i into dst, reusing dst's slices: a copy the caller owns.
func (p *partition) fill(i int32, dst *rlmm.SegmentMetadata) {
	s := p.slot(i)
	epochs := dst.LeaderEpochs[:0]
	if s.flags&flagEpochs != 0 {
		epochs = append(epochs, p.extras[i].epochs...)
	} else {
		epochs = append(epochs, rlmm.EpochStart{Epoch: s.e0, StartOffset: s.start})
	}
	custom := dst.CustomMetadata
	if s.flags&flagCustom != 0 {
		custom = append(custom[:0], p.extras[i].custom...)
		if custom == nil {
			custom = []byte{}
		}
	} else {
		custom = nil
	}
	// Field by field: no temporary to copy into *dst.
	dst.ID.TopicIDPartition = p.tp
	dst.ID.ID = s.id
	dst.StartOffset, dst.EndOffset = s.start, s.end
	dst.MaxTimestampMs, dst.EventTimestampMs = s.maxTs, s.eventTs
	dst.BrokerID, dst.SizeInBytes = s.broker, s.size
	dst.LeaderEpochs, dst.CustomMetadata = epochs, custom
	dst.State, dst.TxnIndexEmpty = s.state, s.flags&flagTxnEmpty != 0
}

func (p *partition) slot(i int32) *seg { return &p.chunks[i>>chunkBits][i&chunkMask] }

// alloc returns a free slot index. Only the writer calls it, under mu.
func (p *partition) alloc() int32 {
	if n := len(p.free); n > 0 {
		i := p.free[n-1]
		p.free = p.free[:n-1]
		return i
	}
	i := p.slots
	p.slots++
	c := int(i >> chunkBits)
	if c == len(p.chunks) {
		capacity := chunkSize
		if c == 0 {
			capacity = 4 // small partitions stay small
		}
		p.chunks = append(p.chunks, make([]seg, 0, capacity))
	}
	p.chunks[c] = append(p.chunks[c], seg{})
	p.seqs = append(p.seqs, 0)
	return i
}

// reserve sizes a fresh partition for z (a bulk build): the id index, the
// slot order, every chunk and the extras get their final capacity at once
// instead of growing by appends, and the extras' memory comes from slabs
// (p.bulk, which the builder clears when the build ends). Writer only,
// before p is published.
func (p *partition) reserve(z BuildSizes) {
	n := z.Segments
	if n <= 0 {
		return
	}
	if z.Extras > 0 {
		p.bulk = &bulkSlabs{
			extras: make([]segExtra, z.Extras),
			bytes:  make([]byte, max(z.CustomBytes, 0)),
			epochs: make([]rlmm.EpochStart, max(z.ExtraEpochs, 0)),
		}
		p.extras = make(map[int32]*segExtra, z.Extras)
	}
	p.byID.reserve(n)
	p.seqs = make([]uint64, 0, n)
	p.chunks = make([][]seg, 0, (n+chunkSize-1)/chunkSize)
	for left := n; left > 0; left -= chunkSize {
		p.chunks = append(p.chunks, make([]seg, 0, min(left, chunkSize)))
	}
	// The chunks are empty, so every reader still sees no slot; alloc fills
	// them in order and appends a new chunk only past the last one.
}

// release frees slot i. Only the writer calls it, under mu.
func (p *partition) release(i int32) {
	*p.slot(i) = seg{}
	p.seqs[i] = 0
	delete(p.extras, i)
	p.free = append(p.free, i)
}

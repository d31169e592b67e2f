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

// segExtra locates what most segments do not have: leader epochs other
// than one epoch starting at the segment's start, or custom metadata. It
// lives in a side table of the partition (extras.go), so that seg fits one
// cache line, and points into the partition's arenas by position, so that
// neither the table nor the arenas hold a pointer for the collector to
// scan, however many segments carry custom metadata (as an RSM that names
// its objects there makes every segment do).
type segExtra struct {
	// epochAt and epochLen place the full epoch list in the epoch arena
	// (flagEpochs; epochLen is 0 without it). 32 bits: 2^32 entries of 12
	// bytes in one partition would be 48 GiB of epochs.
	epochAt, epochLen uint32
	// customAt and customLen place the custom metadata in the byte arena
	// (flagCustom: present, maybe empty). The arena of one partition may pass
	// 4 GiB, one value not (Kafka's bytes are at most 2^31-1 long).
	customAt  uint64
	customLen uint32
	// slot is the slot the extra is of (extraTable moves entries).
	slot int32
}

// extraArenas hold the epoch lists and custom metadata of a partition's
// slots back to back. A replaced or freed extent stays as garbage until
// the garbage outweighs what is live; then compact copies the live extents
// into fresh arenas, so the arenas stay within about twice the live size.
type extraArenas struct {
	epochs     []rlmm.EpochStart
	custom     []byte
	deadEpochs int
	deadCustom int
}

// noCustom is the empty custom metadata: present, but of no bytes.
var noCustom = []byte{}

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
		return p.extraEpochs(i)
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
	eps := p.extraEpochs(i)
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
	x := p.extras.at(i)
	if x.customLen == 0 {
		return noCustom
	}
	end := x.customAt + uint64(x.customLen)
	return p.arenas.custom[x.customAt:end:end]
}

// extraEpochs returns the epoch list of slot i, flagged flagEpochs. The
// slice is the arena's: read it under mu, before the next change.
func (p *partition) extraEpochs(i int32) []rlmm.EpochStart {
	x := p.extras.at(i)
	return p.arenas.epochs[x.epochAt : x.epochAt+x.epochLen : x.epochAt+x.epochLen]
}

// setCustom stores a private copy of c as slot i's custom metadata (nil
// stays absent, empty stays empty). Writer only, under mu.
func (p *partition) setCustom(i int32, s *seg, c []byte) {
	x := p.extras.at(i)
	had := x != nil
	if s.flags&flagCustom != 0 {
		p.arenas.deadCustom += int(x.customLen)
		x.customAt, x.customLen = 0, 0
	}
	if c == nil {
		if s.flags&flagCustom != 0 {
			s.flags &^= flagCustom
			if s.flags&flagEpochs == 0 {
				p.extras.del(i)
			}
			p.compactArenas()
		}
		return
	}
	if x == nil {
		x = p.extras.put(i)
	}
	x.customAt, x.customLen = uint64(len(p.arenas.custom)), uint32(len(c))
	p.arenas.custom = append(p.arenas.custom, c...)
	s.flags |= flagCustom
	if had {
		p.compactArenas()
	}
}

// dropExtras forgets slot i's extras (its slot is being freed). Writer
// only, under mu.
func (p *partition) dropExtras(i int32) {
	x := p.extras.at(i)
	if x == nil {
		return
	}
	p.arenas.deadEpochs += int(x.epochLen)
	p.arenas.deadCustom += int(x.customLen)
	p.extras.del(i)
	p.compactArenas()
}

// compactArenas copies the live extents into fresh arenas once an arena
// holds more garbage than live data (and enough of it to be worth a pass
// over the extras). Writer only, under mu: readers slice the arenas only
// under the read lock.
func (p *partition) compactArenas() {
	a := &p.arenas
	const minDead = 4096
	epochs := a.deadEpochs >= minDead/16 && a.deadEpochs > len(a.epochs)-a.deadEpochs
	custom := a.deadCustom >= minDead && a.deadCustom > len(a.custom)-a.deadCustom
	if !epochs && !custom {
		return
	}
	var ne []rlmm.EpochStart
	var nc []byte
	if epochs {
		ne = make([]rlmm.EpochStart, 0, len(a.epochs)-a.deadEpochs)
	}
	if custom {
		nc = make([]byte, 0, len(a.custom)-a.deadCustom)
	}
	for k := range p.extras.list {
		x := &p.extras.list[k]
		if epochs && x.epochLen > 0 {
			at := uint32(len(ne))
			ne = append(ne, a.epochs[x.epochAt:x.epochAt+x.epochLen]...)
			x.epochAt = at
		}
		if custom && x.customLen > 0 {
			at := uint64(len(nc))
			nc = append(nc, a.custom[x.customAt:x.customAt+uint64(x.customLen)]...)
			x.customAt = at
		}
	}
	if epochs {
		a.epochs, a.deadEpochs = ne, 0
	}
	if custom {
		a.custom, a.deadCustom = nc, 0
	}
}

// load fills slot i from md (which passed Validate). The slot is fresh
// (release removed any extras it had), so its extras, if it has any, are
// appended to the arenas in one entry of the table. Writer only, under mu.
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
	multi := hasExtraEpochs(md)
	if !multi && md.CustomMetadata == nil {
		return
	}
	x := p.extras.put(i)
	if multi {
		x.epochAt, x.epochLen = uint32(len(p.arenas.epochs)), uint32(len(md.LeaderEpochs))
		p.arenas.epochs = append(p.arenas.epochs, md.LeaderEpochs...)
		s.flags |= flagEpochs
	}
	if c := md.CustomMetadata; c != nil {
		x.customAt, x.customLen = uint64(len(p.arenas.custom)), uint32(len(c))
		p.arenas.custom = append(p.arenas.custom, c...)
		s.flags |= flagCustom
	}
}

// fill writes slot i into dst, reusing dst's slices: a copy the caller owns.
func (p *partition) fill(i int32, dst *rlmm.SegmentMetadata) {
	s := p.slot(i)
	epochs := dst.LeaderEpochs[:0]
	if s.flags&flagEpochs != 0 {
		epochs = append(epochs, p.extraEpochs(i)...)
	} else {
		epochs = append(epochs, rlmm.EpochStart{Epoch: s.e0, StartOffset: s.start})
	}
	custom := dst.CustomMetadata
	if s.flags&flagCustom != 0 {
		custom = append(custom[:0], p.customOf(i, s)...)
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
	if p.seqs != nil {
		p.seqs = append(p.seqs, 0)
	}
	return i
}

// reserve sizes a fresh partition for z (a bulk build): the id index, every
// chunk, the extras and their arenas get their final capacity at once
// instead of growing by appends (the seqs stay implicit: see partition.seqs).
// Writer only, before p is published.
func (p *partition) reserve(z BuildSizes) {
	n := z.Segments
	if n <= 0 {
		return
	}
	if z.Extras > 0 {
		p.extras.reserve(z.Extras, n)
		p.arenas.epochs = make([]rlmm.EpochStart, 0, max(z.ExtraEpochs, 0))
		p.arenas.custom = make([]byte, 0, max(z.CustomBytes, 0))
	}
	p.byID.reserve(n)
	// Every chunk is a window of one slab: one object for the collector
	// to mark instead of one per chunk, and one prefault for its pages.
	slab := make([]seg, n)
	prefault(slab)
	p.chunks = make([][]seg, 0, (n+chunkSize-1)/chunkSize)
	for at := 0; at < n; at += chunkSize {
		end := min(at+chunkSize, n)
		p.chunks = append(p.chunks, slab[at:at:end])
	}
	// The chunks are empty, so every reader still sees no slot; alloc fills
	// them in order and appends a new chunk only past the last one.
}

// release frees slot i. Only the writer calls it, under mu.
func (p *partition) release(i int32) {
	*p.slot(i) = seg{}
	p.ownSeqs()
	p.seqs[i] = 0
	p.dropExtras(i)
	p.free = append(p.free, i)
}

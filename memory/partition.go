package memory

import (
	"bytes"
	"cmp"
	"math"
	"slices"
	"sync"

	"github.com/rlmm-go/rlmm"
)

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
// contiguous, so the first of them reaches the second).
func (v *envelope) compact() {
	v.pieces = slices.CompactFunc(v.pieces, func(a, b piece) bool { return a.seg == b.seg })
	v.off = 0
	v.resummarize(0)
}

// epochState is the per-epoch index of a partition.
type epochState struct {
	epoch int32
	// refs counts the live segments that carry the epoch.
	refs int32
	// hasHighest/highest: Kafka's highestLogOffset, the max epoch end over
	// every FINISHED event of the epoch; it never decreases.
	hasHighest bool
	// overlapped is set once a finished segment of the epoch overlapped
	// another; until then every finished segment is exactly one piece and a
	// delete removes that piece without searching for what lies beneath.
	overlapped bool
	highest    int64
	// env is the envelope: a lookup is one search in it.
	env envelope
}

// partition is the state of one user partition. The Manager's writer lock
// serializes every change; mu keeps readers out only while a change is
// written, so reads are never blocked for longer than one event's apply.
type partition struct {
	mu sync.RWMutex
	// Every RLock writes mu's reader count: keep it off the cache lines
	// that concurrent readers of the partition read.
	_  [64]byte
	tp rlmm.TopicIDPartition
	// dead is set when the partition was dropped or replaced: a reader that
	// raced with that looks the partition up again.
	dead bool

	chunks [][]seg
	slots  int32 // slots handed out so far
	free   []int32
	byID   idIndex
	// extras holds the segExtra of the slots flagged for it.
	extras map[int32]*segExtra
	// bulk is set only while Import builds the partition (see reserve).
	bulk *bulkSlabs
	// seqs orders, per slot, the segment's last applied change within the
	// partition: the newest FINISHED segment wins a lookup, and Export lists
	// segments by it so that Import reproduces the same order. Only the
	// writer reads it, so it grows without holding readers up.
	seqs []uint64

	epochs []epochState // sorted by epoch

	del    rlmm.PartitionDelete
	hasDel bool

	seq    uint64
	counts [4]int32 // live segments by state (DELETE_SEGMENT_FINISHED is always 0)
	bytes  int64    // sum of sizes of live segments
	live   int32
}

func newPartition(tp rlmm.TopicIDPartition) *partition {
	return &partition{tp: tp, extras: make(map[int32]*segExtra)}
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

// reserveEnvelopes gives each epoch's envelope room for one piece per live
// segment carrying it (its refs: every finished one, and more only where
// segments overlap), before the finished slots are laid in one by one.
// Writer only, before p is published.
func (p *partition) reserveEnvelopes() {
	for k := range p.epochs {
		es := &p.epochs[k]
		if n := int(es.refs); n > 0 && es.env.len() == 0 {
			es.env.pieces = make([]piece, 0, n)
			es.env.summary = make([]int64, 0, n/summaryStride+1)
		}
	}
}

// release frees slot i. Only the writer calls it, under mu.
func (p *partition) release(i int32) {
	*p.slot(i) = seg{}
	p.seqs[i] = 0
	delete(p.extras, i)
	p.free = append(p.free, i)
}

// empty reports whether the partition holds nothing worth keeping.
func (p *partition) empty() bool { return p.live == 0 && len(p.epochs) == 0 && !p.hasDel }

// epochIndex returns the index of epoch e in p.epochs, or -1.
func (p *partition) epochIndex(e int32) int {
	lo, hi := 0, len(p.epochs)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if p.epochs[mid].epoch < e {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo < len(p.epochs) && p.epochs[lo].epoch == e {
		return lo
	}
	return -1
}

// epochFor returns the state of epoch e, creating it. Writer only, under mu.
func (p *partition) epochFor(e int32) *epochState {
	if i := p.epochIndex(e); i >= 0 {
		return &p.epochs[i]
	}
	i, _ := slices.BinarySearchFunc(p.epochs, e, func(s epochState, t int32) int { return cmp.Compare(s.epoch, t) })
	p.epochs = slices.Insert(p.epochs, i, epochState{epoch: e})
	return &p.epochs[i]
}

// dropEpochIfUnused removes epoch e's state once nothing refers to it and it
// never had a finished segment. Writer only, under mu.
func (p *partition) dropEpochIfUnused(e int32) {
	if i := p.epochIndex(e); i >= 0 {
		if es := &p.epochs[i]; es.refs == 0 && !es.hasHighest {
			p.epochs = slices.Delete(p.epochs, i, i+1)
		}
	}
}

// pieceEnd returns the last offset of piece k of v for epoch e.
func (p *partition) pieceEnd(v *envelope, k int, e int32) int64 {
	i := v.pieces[k].seg
	_, end, _ := p.epochRange(i, p.slot(i), e)
	if k+1 < v.len() && v.pieces[k+1].start-1 < end {
		end = v.pieces[k+1].start - 1
	}
	return end
}

// paint lays segment xi over [s, e] of epoch ep's envelope v (xi is the
// newest) and reports whether xi overlapped another segment. Requires s <= e.
func (p *partition) paint(v *envelope, ep int32, xi int32, s, e int64) bool {
	if n := v.len(); n == 0 || v.pieces[n-1].start < s && p.pieceEnd(v, n-1, ep) < s {
		// The common case (segments finish in offset order; Import of a
		// snapshot): xi lies wholly past every piece, so it is appended
		// without the two searches and overlaps nothing.
		v.push(piece{start: s, seg: xi})
		return false
	}
	i := v.search(s)
	j := v.len()
	if e < math.MaxInt64 {
		j = v.search(e + 1)
	}
	overlapped := false
	for k := i; k < j; k++ {
		if v.pieces[k].seg != xi {
			overlapped = true
			break
		}
	}
	if i > 0 && v.pieces[i-1].seg != xi && p.pieceEnd(v, i-1, ep) >= s {
		overlapped = true
	}
	var add [2]piece
	add[0] = piece{start: s, seg: xi}
	n := 1
	if j > 0 && e < math.MaxInt64 && v.pieces[j-1].seg != xi && p.pieceEnd(v, j-1, ep) > e {
		// The segment visible at e+1 before continues after xi.
		add[1] = piece{start: e + 1, seg: v.pieces[j-1].seg}
		n = 2
	}
	v.replace(i, j, add[:n])
	return overlapped
}

// find returns the slot of the newest finished segment whose range for epoch
// ep covers offset.
func (p *partition) find(ep int32, offset int64) (int32, bool) {
	ei := p.epochIndex(ep)
	if ei < 0 {
		return 0, false
	}
	v := &p.epochs[ei].env
	k := v.len() - 1 // the last piece starting at or before offset
	if offset < math.MaxInt64 {
		k = v.search(offset+1) - 1
	}
	if k < 0 {
		return 0, false
	}
	seg := v.pieces[k].seg
	if s := p.slot(seg); s.flags&flagEpochs == 0 {
		if offset > s.end { // the envelope holds seg for ep: s.e0 is ep
			return 0, false
		}
	} else if _, end, _ := p.epochRange(seg, s, ep); offset > end {
		return 0, false
	}
	return seg, true
}

// finish records that slot xi (now COPY_SEGMENT_FINISHED, with a fresh seq)
// is the newest finished segment of each of its epochs. Writer only, under mu.
func (p *partition) finish(xi int32) {
	s := p.slot(xi)
	var scratch [1]rlmm.EpochStart
	eps := p.epochList(xi, s, &scratch)
	for k, ep := range eps {
		start, end := ep.StartOffset, rlmm.EpochEnd(eps, k, s.end)
		es := p.epochFor(ep.Epoch)
		if !es.hasHighest || end > es.highest {
			es.highest, es.hasHighest = end, true
		}
		if start > end {
			continue // an empty range covers nothing (Kafka's lookup never finds it either)
		}
		if p.paint(&es.env, ep.Epoch, xi, start, end) {
			es.overlapped = true
		}
	}
}

// unfinish removes slot xi (leaving COPY_SEGMENT_FINISHED) from the envelope
// of each of its epochs, uncovering the older finished segments beneath it.
// Writer only, under mu.
func (p *partition) unfinish(xi int32) {
	s := p.slot(xi)
	var scratch [1]rlmm.EpochStart
	eps := p.epochList(xi, s, &scratch)
	for k, ep := range eps {
		start, end := ep.StartOffset, rlmm.EpochEnd(eps, k, s.end)
		if start > end {
			continue
		}
		ei := p.epochIndex(ep.Epoch)
		if ei < 0 {
			continue
		}
		es := &p.epochs[ei]
		if !es.overlapped {
			// Every finished segment of the epoch is exactly one piece.
			if i := es.env.search(start); i < es.env.len() && es.env.pieces[i].seg == xi {
				es.env.replace(i, i+1, nil)
			}
		} else {
			p.uncover(&es.env, ep.Epoch, xi, start, end)
		}
		if es.env.len() == 0 {
			es.overlapped = false
		}
	}
}

// uncover rebuilds the envelope where xi was visible from the other finished
// segments of the epoch. It scans the partition: only epochs where finished
// segments overlap take this path.
func (p *partition) uncover(v *envelope, ep int32, xi int32, s, e int64) {
	i := v.search(s)
	j := v.len()
	if e < math.MaxInt64 {
		j = v.search(e + 1)
	}
	if !slices.ContainsFunc(v.pieces[i:j], func(pc piece) bool { return pc.seg == xi }) {
		return // xi was hidden everywhere: nothing changes
	}
	// Candidates: other finished segments covering part of [s, e], oldest first.
	type cand struct {
		idx        int32
		seq        uint64
		start, end int64
	}
	var cands []cand
	for c := range p.chunks {
		chunk := p.chunks[c]
		for o := range chunk {
			sg := &chunk[o]
			idx := int32(c<<chunkBits | o)
			if !sg.used() || sg.state != rlmm.CopySegmentFinished || idx == xi {
				continue
			}
			cs, ce, ok := p.epochRange(idx, sg, ep)
			if !ok || cs > ce || ce < s || cs > e {
				continue
			}
			cands = append(cands, cand{idx, p.seqs[idx], cs, ce})
		}
	}
	slices.SortFunc(cands, func(a, b cand) int { return cmp.Compare(a.seq, b.seq) })
	region := make([]piece, 0, j-i+2)
	for k := i; k < j; k++ {
		if v.pieces[k].seg != xi {
			region = append(region, v.pieces[k])
			continue
		}
		a := v.pieces[k].start
		b := p.pieceEnd(v, k, ep)
		var sub envelope
		for _, c := range cands {
			cs, ce := max(c.start, a), min(c.end, b)
			if cs > ce {
				continue
			}
			p.paint(&sub, ep, c.idx, cs, ce)
		}
		for _, pc := range sub.pieces {
			if pc.start <= b {
				region = append(region, pc)
			}
		}
	}
	v.replace(i, j, region)
	v.compact()
}

// add inserts md (validated, state COPY_SEGMENT_STARTED or, on Import, any
// live state) as a new segment. It reports false, changing nothing the
// partition counts, when md's id is already held (only the import, which
// throws the partition away then, does not check that first). Writer only,
// under mu.
func (p *partition) add(md *rlmm.SegmentMetadata) (int32, bool) {
	i := p.alloc()
	p.load(i, md)
	s := p.slot(i)
	if !p.byID.insert(&s.id, i, p) {
		return i, false
	}
	p.seq++
	p.seqs[i] = p.seq
	for _, ep := range md.LeaderEpochs {
		p.epochFor(ep.Epoch).refs++
	}
	p.counts[s.state]++
	p.bytes += int64(s.size)
	p.live++
	return i, true
}

// update applies a validated, allowed update to slot i. Writer only, under mu.
func (p *partition) update(i int32, u *rlmm.SegmentUpdate) {
	s := p.slot(i)
	from := s.state
	s.broker = u.BrokerID
	s.eventTs = u.EventTimestampMs
	p.setCustom(i, s, u.CustomMetadata)
	s.state = u.State
	p.seq++
	p.seqs[i] = p.seq
	p.counts[from]--
	switch u.State {
	case rlmm.CopySegmentFinished:
		p.counts[u.State]++
		p.finish(i)
	case rlmm.DeleteSegmentStarted:
		p.counts[u.State]++
		if from == rlmm.CopySegmentFinished {
			p.unfinish(i)
		}
	case rlmm.DeleteSegmentFinished:
		p.remove(i)
	}
}

// remove forgets slot i entirely (DELETE_SEGMENT_FINISHED). The segment is
// not in any envelope (it left FINISHED earlier). Writer only, under mu.
func (p *partition) remove(i int32) {
	s := p.slot(i)
	var scratch [1]rlmm.EpochStart
	for _, ep := range p.epochList(i, s, &scratch) {
		if ei := p.epochIndex(ep.Epoch); ei >= 0 {
			p.epochs[ei].refs--
			p.dropEpochIfUnused(ep.Epoch)
		}
	}
	p.byID.remove(&s.id, i)
	p.bytes -= int64(s.size)
	p.live--
	p.release(i)
}

// liveSlots appends the slots of live segments carrying epoch ep (all live
// segments when all is true).
func (p *partition) liveSlots(dst []int32, ep int32, all bool) []int32 {
	for c := range p.chunks {
		chunk := p.chunks[c]
		for o := range chunk {
			s := &chunk[o]
			if !s.used() {
				continue
			}
			i := int32(c<<chunkBits | o)
			if !all {
				if _, _, ok := p.epochRange(i, s, ep); !ok {
					continue
				}
			}
			dst = append(dst, i)
		}
	}
	return dst
}

// sortForList orders slots by start offset, then end offset, then id.
func (p *partition) sortForList(idx []int32) {
	slices.SortFunc(idx, func(a, b int32) int {
		x, y := p.slot(a), p.slot(b)
		switch {
		case x.start != y.start:
			return cmp.Compare(x.start, y.start)
		case x.end != y.end:
			return cmp.Compare(x.end, y.end)
		}
		return bytes.Compare(x.id[:], y.id[:])
	})
}

// copies returns the segments of idx as values the caller owns. The epoch
// lists and custom metadata share two backing arrays, each sliced with a
// capped capacity so that an append by the caller cannot reach a neighbour.
func (p *partition) copies(idx []int32) []rlmm.SegmentMetadata {
	if len(idx) == 0 {
		return nil
	}
	nEpochs, nCustom := 0, 0
	for _, i := range idx {
		nEpochs++
		if x := p.extras[i]; x != nil {
			if x.epochs != nil {
				nEpochs += len(x.epochs) - 1
			}
			nCustom += len(x.custom)
		}
	}
	epochs := make([]rlmm.EpochStart, 0, nEpochs)
	var custom []byte
	if nCustom > 0 {
		custom = make([]byte, 0, nCustom)
	}
	out := make([]rlmm.SegmentMetadata, len(idx))
	var scratch [1]rlmm.EpochStart
	for k, i := range idx {
		s := p.slot(i)
		from := len(epochs)
		epochs = append(epochs, p.epochList(i, s, &scratch)...)
		md := &out[k]
		*md = rlmm.SegmentMetadata{
			ID:          rlmm.SegmentID{TopicIDPartition: p.tp, ID: s.id},
			StartOffset: s.start, EndOffset: s.end, MaxTimestampMs: s.maxTs, BrokerID: s.broker,
			EventTimestampMs: s.eventTs, LeaderEpochs: epochs[from:len(epochs):len(epochs)],
			SizeInBytes: s.size, State: s.state, TxnIndexEmpty: s.flags&flagTxnEmpty != 0,
		}
		if c := p.customOf(i, s); c != nil {
			cf := len(custom)
			custom = append(custom, c...)
			md.CustomMetadata = custom[cf:len(custom):len(custom)]
			if md.CustomMetadata == nil {
				md.CustomMetadata = []byte{}
			}
		}
	}
	return out
}

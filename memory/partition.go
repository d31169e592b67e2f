package memory

import (
	"bytes"
	"cmp"
	"slices"
	"sync"

	"github.com/rlmm-go/rlmm"
)

// epochState is the per-epoch index of a partition, kept while a live
// segment carries the epoch (see emptiedEpochs for what is kept after).
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
	// members holds, while overlapped, the slots of the finished segments
	// whose range for the epoch is not empty: what a delete searches for the
	// segments beneath it, instead of every slot of the partition.
	members []int32
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
	// extras holds the segExtra of the slots flagged for it, placing their
	// data in arenas.
	extras extraTable
	arenas extraArenas
	// seqs orders, per slot, the segment's last applied change within the
	// partition: the newest FINISHED segment wins a lookup, and Export lists
	// segments by it so that Import reproduces the same order. Only the
	// writer reads it (seqOf), so it grows without holding readers up. nil
	// while every change so far was an add of the next slot (a build, or a
	// fresh partition's first adds): slot i's seq is then i+1, and a
	// restore's partitions do without the 8 bytes per segment until their
	// first other change (ownSeqs).
	seqs []uint64

	// epochs holds the state of exactly the epochs that live segments
	// carry, sorted by epoch; emptied, the highest finished offset of each
	// other epoch that had a finished segment.
	epochs  []epochState
	emptied emptiedEpochs
	// epochHint is the index in epochs that epochFor found last: segments
	// come mostly in runs of one epoch, so it usually spares the search. It
	// may be stale (an insert or delete shifts epochs); epochFor checks it.
	epochHint int

	del    rlmm.PartitionDelete
	hasDel bool

	seq    uint64
	counts [4]int32 // live segments by state (DELETE_SEGMENT_FINISHED is always 0)
	bytes  int64    // sum of sizes of live segments
	live   int32
}

func newPartition(tp rlmm.TopicIDPartition) *partition {
	return &partition{tp: tp}
}

// reserveEnvelopes gives each epoch's envelope room for one piece per live
// segment carrying it (its refs: every finished one, and more only where
// segments overlap), before the finished slots are laid in one by one.
// Writer only, before p is published.
//
// The envelopes are windows of two arrays, one of pieces and one of
// summaries, each prefaulted: a partition whose segments change epoch
// every few segments has many envelopes, and one fresh allocation each
// made laying the pieces a third of the page faults of a restore. A window
// that outgrows its room is copied out by append, as any slice is.
func (p *partition) reserveEnvelopes() {
	var pieces, summaries int
	for k := range p.epochs {
		es := &p.epochs[k]
		if n := int(es.refs); n > 0 && es.env.len() == 0 {
			pieces += n
			summaries += n/summaryStride + 1
		}
	}
	if pieces == 0 {
		return
	}
	pieceSlab, summarySlab := make([]piece, pieces), make([]int64, summaries)
	prefault(pieceSlab)
	prefault(summarySlab)
	for k := range p.epochs {
		es := &p.epochs[k]
		if n := int(es.refs); n > 0 && es.env.len() == 0 {
			s := n/summaryStride + 1
			es.env.pieces, pieceSlab = pieceSlab[:0:n], pieceSlab[n:]
			es.env.summary, summarySlab = summarySlab[:0:s], summarySlab[s:]
		}
	}
}

// empty reports whether the partition holds nothing worth keeping.
func (p *partition) empty() bool {
	return p.live == 0 && len(p.epochs) == 0 && p.emptied.len() == 0 && !p.hasDel
}

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

// epochFor returns the state of epoch e, creating it (with its highest
// finished offset when e was emptied). Writer only, under mu.
func (p *partition) epochFor(e int32) *epochState {
	if h := p.epochHint; h < len(p.epochs) && p.epochs[h].epoch == e {
		return &p.epochs[h]
	}
	if i := p.epochIndex(e); i >= 0 {
		p.epochHint = i
		return &p.epochs[i]
	}
	i, _ := slices.BinarySearchFunc(p.epochs, e, func(s epochState, t int32) int { return cmp.Compare(s.epoch, t) })
	es := epochState{epoch: e}
	es.highest, es.hasHighest = p.emptied.take(e)
	p.epochs = slices.Insert(p.epochs, i, es)
	p.epochHint = i
	return &p.epochs[i]
}

// retireEpochIfEmpty removes epoch e's state once no live segment carries
// it, keeping only its highest finished offset, if it has one. Its
// envelope is empty by then: it holds only finished segments, which are
// live. Writer only, under mu.
func (p *partition) retireEpochIfEmpty(e int32) {
	if i := p.epochIndex(e); i >= 0 {
		if es := &p.epochs[i]; es.refs == 0 {
			if es.hasHighest {
				p.emptied.put(e, es.highest)
			}
			p.epochs = slices.Delete(p.epochs, i, i+1)
		}
	}
}

// highestOf returns epoch e's highest finished offset (Kafka's
// highestLogOffset), live or emptied. Under mu (read or write).
func (p *partition) highestOf(e int32) (int64, bool) {
	if i := p.epochIndex(e); i >= 0 {
		es := &p.epochs[i]
		return es.highest, es.hasHighest
	}
	return p.emptied.get(e)
}

// highestOffsets appends the highest finished offset of every epoch that
// has one, sorted by epoch.
func (p *partition) highestOffsets(dst []EpochOffset) []EpochOffset {
	return p.emptied.mergeHighest(dst, p.epochs, false)
}

// epochEnd returns the end of slot i's range for epoch ep (what the
// envelope of ep needs to know of a segment).
func (p *partition) epochEnd(i int32, ep int32) int64 {
	if s := p.slot(i); s.flags&flagEpochs == 0 && s.e0 == ep {
		return s.end // the common single epoch, without epochRange's call
	}
	_, end, _ := p.epochRange(i, p.slot(i), ep)
	return end
}

// find returns the slot of the newest finished segment whose range for epoch
// ep covers offset.
func (p *partition) find(ep int32, offset int64) (int32, bool) {
	ei := p.epochIndex(ep)
	if ei < 0 {
		return 0, false
	}
	seg, ok := p.epochs[ei].env.lookup(offset)
	if !ok {
		return 0, false
	}
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
// is the newest finished segment of each of its epochs; again says it was
// COPY_SEGMENT_FINISHED already (Kafka accepts a transition to the same
// state), so it is a member of its overlapped epochs already. Writer only,
// under mu.
func (p *partition) finish(xi int32, again bool) {
	s := p.slot(xi)
	if s.flags&flagEpochs == 0 && p.appendFinished(xi, s) {
		return
	}
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
		segEnd := func(i int32) int64 { return p.epochEnd(i, ep.Epoch) }
		if es.env.pastEnd(start, segEnd) {
			// The common case (segments finish in offset order; a restore
			// lays them so): appended, overlapping nothing.
			es.env.push(piece{start: start, seg: xi})
		} else {
			if !es.overlapped && es.env.overlaps(xi, start, end, segEnd) {
				// Until now every finished segment was exactly one piece (xi
				// too, when finished again).
				es.members = es.env.segments(es.members[:0])
				es.overlapped = true
			}
			es.env.paint(xi, start, end, segEnd)
		}
		if es.overlapped && !again {
			es.members = append(es.members, xi)
		}
	}
}

// appendFinished is finish's common case, taken without its closures and
// searches: slot xi (s) of one epoch starting at its start, whose range
// lies wholly past every piece of the epoch's envelope (segments finish in
// offset order, and a restore lays them so) in an epoch without overlaps.
// It reports false, changing nothing, when that is not the case. Writer
// only, under mu.
func (p *partition) appendFinished(xi int32, s *seg) bool {
	if s.start > s.end {
		return false
	}
	es := p.epochFor(s.e0)
	if es.overlapped {
		return false
	}
	v := &es.env
	if n := len(v.pieces); n > 0 {
		// pastEnd: the last piece ends at its segment's end for the epoch.
		if last := v.pieces[n-1]; last.start >= s.start || p.epochEnd(last.seg, s.e0) >= s.start {
			return false
		}
	}
	if !es.hasHighest || s.end > es.highest {
		es.highest, es.hasHighest = s.end, true
	}
	v.push(piece{start: s.start, seg: xi})
	return true
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
			if k := slices.Index(es.members, xi); k >= 0 {
				es.members[k] = es.members[len(es.members)-1]
				es.members = es.members[:len(es.members)-1]
			}
			p.uncover(es, xi, start, end)
		}
		if es.env.len() == 0 {
			es.overlapped, es.members = false, nil
		}
	}
}

// uncover rebuilds the envelope of es where xi (no longer one of its
// members) was visible from the other finished segments of the epoch, its
// members: only epochs where finished segments overlap take this path.
func (p *partition) uncover(es *epochState, xi int32, s, e int64) {
	v, ep := &es.env, es.epoch
	segEnd := func(i int32) int64 { return p.epochEnd(i, ep) }
	i, j := v.span(s, e)
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
	for _, idx := range es.members {
		cs, ce, _ := p.epochRange(idx, p.slot(idx), ep)
		if ce < s || cs > e {
			continue
		}
		cands = append(cands, cand{idx, p.seqOf(idx), cs, ce})
	}
	slices.SortFunc(cands, func(a, b cand) int { return cmp.Compare(a.seq, b.seq) })
	region := make([]piece, 0, j-i+2)
	for k := i; k < j; k++ {
		if v.pieces[k].seg != xi {
			region = append(region, v.pieces[k])
			continue
		}
		a := v.pieces[k].start
		b := v.pieceEnd(k, segEnd)
		var sub envelope
		for _, c := range cands {
			cs, ce := max(c.start, a), min(c.end, b)
			if cs > ce {
				continue
			}
			sub.paint(c.idx, cs, ce, segEnd)
		}
		for _, pc := range sub.pieces {
			if pc.start <= b {
				region = append(region, pc)
			}
		}
	}
	v.replace(i, j, region)
	v.compact(i, i+len(region))
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
	if p.seqs != nil {
		p.seqs[i] = p.seq
	} // else i is the next slot (alloc has no free slot while seqs is nil): its seq is i+1, p.seq
	for _, ep := range md.LeaderEpochs {
		p.epochFor(ep.Epoch).refs++
	}
	p.counts[s.state]++
	p.bytes += int64(s.size)
	p.live++
	return i, true
}

// seqOf returns slot i's seq. Writer only, under mu.
func (p *partition) seqOf(i int32) uint64 {
	if p.seqs == nil {
		return uint64(i) + 1
	}
	return p.seqs[i]
}

// ownSeqs writes out the seqs while they are implicit (seqs nil), before a
// change that is not an add of the next slot. Writer only, under mu.
func (p *partition) ownSeqs() {
	if p.seqs != nil {
		return
	}
	p.seqs = make([]uint64, p.slots, p.slots+p.slots/4+4)
	for i := range p.seqs {
		p.seqs[i] = uint64(i) + 1
	}
}

// update applies a validated, allowed update to slot i. Writer only, under mu.
func (p *partition) update(i int32, u *rlmm.SegmentUpdate) {
	s := p.slot(i)
	from := s.state
	s.broker = u.BrokerID
	s.eventTs = u.EventTimestampMs
	p.setCustom(i, s, u.CustomMetadata)
	s.state = u.State
	p.ownSeqs()
	p.seq++
	p.seqs[i] = p.seq
	p.counts[from]--
	switch u.State {
	case rlmm.CopySegmentFinished:
		p.counts[u.State]++
		p.finish(i, from == rlmm.CopySegmentFinished)
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
			p.retireEpochIfEmpty(ep.Epoch)
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
		if x, ok := p.extras.get(i); ok {
			if x.epochLen > 0 {
				nEpochs += int(x.epochLen) - 1
			}
			nCustom += int(x.customLen)
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

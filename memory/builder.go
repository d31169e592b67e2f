package memory

import (
	"fmt"

	"github.com/rlmm-go/rlmm"
)

// BuildSizes tells NewPartitionBuilder how much the partition will hold, so
// that its memory is allocated once at its final size instead of growing.
// Every field is only a hint: a builder given too little grows, one given
// too much wastes the difference (a decoder passing sizes read from a file
// should cap them by what the file can hold).
type BuildSizes struct {
	// Segments is the number of segments.
	Segments int
	// Extras is the number of segments with custom metadata or with leader
	// epochs other than one epoch starting at the segment's start offset.
	Extras int
	// ExtraEpochs is the total length of the epoch lists of the latter.
	ExtraEpochs int
	// CustomBytes is the total length of the custom metadata.
	CustomBytes int
}

// SizesOf returns the BuildSizes of segs.
func SizesOf(segs []rlmm.SegmentMetadata) BuildSizes {
	z := BuildSizes{Segments: len(segs)}
	for k := range segs {
		md := &segs[k]
		multi := hasExtraEpochs(md)
		if multi || md.CustomMetadata != nil {
			z.Extras++
		}
		if multi {
			z.ExtraEpochs += len(md.LeaderEpochs)
		}
		z.CustomBytes += len(md.CustomMetadata)
	}
	return z
}

// hasExtraEpochs reports whether md's epochs are not the common single epoch
// starting at its start offset (the compact slot cannot hold them).
func hasExtraEpochs(md *rlmm.SegmentMetadata) bool {
	return len(md.LeaderEpochs) > 1 || len(md.LeaderEpochs) == 1 && md.LeaderEpochs[0].StartOffset != md.StartOffset
}

// PartitionBuilder builds the state of one user partition piece by piece,
// for Install (and Import, which feeds one from each PartitionState):
// the same result and the same checks as Import of a PartitionState
// holding the same segments, highest offsets and delete state, without the
// caller materializing the whole state first. A snapshot decoder feeds it
// straight from the file, one reused rlmm.SegmentMetadata at a time, and
// builds several partitions on several goroutines (a builder itself is not
// safe for concurrent use).
//
// The first error is kept: every later call returns it, and the import
// refuses the builder.
type PartitionBuilder struct {
	p        *partition
	err      error
	lastHigh int32
	hasHigh  bool
	done     bool
	// installed is set by Install: the partition belongs to a Manager now.
	installed bool
}

// NewPartitionBuilder returns a builder of tp's state sized for z.
func NewPartitionBuilder(tp rlmm.TopicIDPartition, z BuildSizes) *PartitionBuilder {
	p := newPartition(tp)
	p.reserve(z)
	return &PartitionBuilder{p: p}
}

// TopicIDPartition returns the partition being built.
func (b *PartitionBuilder) TopicIDPartition() rlmm.TopicIDPartition { return b.p.tp }

func (b *PartitionBuilder) fail(err error) error {
	if b.err == nil {
		b.err = err
	}
	return b.err
}

// AddSegment adds one live segment. Segments are added in the order their
// last change was applied (Export's order), so that the newest finished
// segment wins each lookup. md must pass Validate, belong to the builder's
// partition, not be DELETE_SEGMENT_FINISHED and not repeat an id
// (rlmm.ErrInvalidArgument naming the segment). The builder keeps no
// reference to md or anything in it.
func (b *PartitionBuilder) AddSegment(md *rlmm.SegmentMetadata) error {
	if b.err != nil {
		return b.err
	}
	p := b.p
	tp := p.tp
	if b.done {
		return b.fail(fmt.Errorf("%w: import: partition %s: segment added after Finish", rlmm.ErrInvalidArgument, tp))
	}
	if err := md.Validate(); err != nil {
		return b.fail(fmt.Errorf("import: partition %s: %w", tp, err))
	}
	if md.ID.TopicIDPartition != tp {
		return b.fail(fmt.Errorf("%w: import: partition %s: segment %s belongs to %s", rlmm.ErrInvalidArgument, tp, md.ID.ID, md.ID.TopicIDPartition))
	}
	if md.State == rlmm.DeleteSegmentFinished {
		return b.fail(fmt.Errorf("%w: import: partition %s: segment %s is %s", rlmm.ErrInvalidArgument, tp, md.ID.ID, md.State))
	}
	// One index probe per segment, not a look-up then an insert: add
	// refuses a repeated id (the builder is thrown away on error).
	if _, ok := p.add(md); !ok {
		return b.fail(fmt.Errorf("%w: import: partition %s: segment %s given twice", rlmm.ErrInvalidArgument, tp, md.ID.ID))
	}
	return nil
}

// AddHighestOffset records epoch's highest finished offset (Kafka's
// highestLogOffset, which a deleted segment may have set). Epochs must come
// in increasing order; their place among the segments does not matter.
func (b *PartitionBuilder) AddHighestOffset(epoch int32, offset int64) error {
	if b.err != nil {
		return b.err
	}
	if b.hasHigh && epoch <= b.lastHigh {
		return b.fail(fmt.Errorf("%w: import: partition %s: highest offsets not sorted by epoch (epoch %d after %d)",
			rlmm.ErrInvalidArgument, b.p.tp, epoch, b.lastHigh))
	}
	b.lastHigh, b.hasHigh = epoch, true
	p := b.p
	if i := p.epochIndex(epoch); i >= 0 {
		if es := &p.epochs[i]; !es.hasHighest || offset > es.highest {
			es.highest, es.hasHighest = offset, true
		}
		return nil
	}
	// No segment added so far carries the epoch: it is emptied unless a
	// later segment does (epochFor then takes it back). Epochs come in
	// increasing order, so this appends.
	p.emptied.put(epoch, offset)
	return nil
}

// SetDelete records the partition's latest partition-delete event. It must
// pass Validate, be of the builder's partition and not be
// DELETE_PARTITION_FINISHED (which leaves no state to import).
func (b *PartitionBuilder) SetDelete(d *rlmm.PartitionDelete) error {
	if b.err != nil {
		return b.err
	}
	tp := b.p.tp
	if err := d.Validate(); err != nil {
		return b.fail(fmt.Errorf("import: %w", err))
	}
	if d.TopicIDPartition != tp {
		return b.fail(fmt.Errorf("%w: import: partition %s: delete state of %s", rlmm.ErrInvalidArgument, tp, d.TopicIDPartition))
	}
	if d.State == rlmm.DeletePartitionFinished {
		return b.fail(fmt.Errorf("%w: import: partition %s: delete state %s leaves no state to import", rlmm.ErrInvalidArgument, tp, d.State))
	}
	b.p.del, b.p.hasDel = *d, true
	return nil
}

// Finish completes the build: it lays the finished segments into the
// lookup index (the costly part, so it runs before the Manager's writer lock
// is taken). Nothing may be added afterwards. It returns the builder's
// error, if any.
func (b *PartitionBuilder) Finish() error {
	if b.err != nil || b.done {
		return b.err
	}
	b.done = true
	p := b.p
	// finish reads only the slot and the envelopes, so laying every
	// finished segment after all are in gives the result of finishing each
	// right after its add, with each envelope sized at once. Highest
	// offsets merge by maximum, so their order against this is free.
	p.reserveEnvelopes()
	// A builder never frees a slot, so the slots are in the order the
	// segments were added: each finished one is laid in that order.
	for c, chunk := range p.chunks {
		for o := range chunk {
			if chunk[o].state == rlmm.CopySegmentFinished {
				p.finish(int32(c<<chunkBits|o), false)
			}
		}
	}
	return nil
}

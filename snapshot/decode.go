package snapshot

import (
	"encoding/binary"
	"fmt"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/memory"
)

// Sink receives a decoded user partition's content; memory.PartitionBuilder
// is one. The rlmm.SegmentMetadata passed to AddSegment is reused from
// segment to segment and its custom metadata aliases the block: a sink
// copies what it keeps.
type Sink interface {
	AddSegment(md *rlmm.SegmentMetadata) error
	AddHighestOffset(epoch int32, offset int64) error
	SetDelete(d *rlmm.PartitionDelete) error
}

// DecodeBlock decodes block (its bytes as ReadBlock or ReadBlockUnchecked
// returned them, of the block blk describes) into the sink that start
// returns for its partition, given the sizes the block announces (start
// may refuse with an error, which is returned as it is). It checks the
// block's checksum (blk.CRC) as it decodes, in the same pass over the
// bytes: a block whose checksum fails is an error wrapping
// rlmm.ErrCorrupt that says so, whatever else was found, and the sink may
// have been given part of it. The block must be of blk's partition and
// segment count. An error of the sink is returned wrapped in one of
// rlmm.ErrCorrupt naming the file byte; so is every error of bad bytes.
func DecodeBlock(block []byte, blk BlockInfo, start func(tp rlmm.TopicIDPartition, z memory.BuildSizes) (Sink, error)) error {
	r := &fieldReader{b: block, base: blk.Offset, verify: true}
	err := decodeBlock(r, blk, start)
	if got := r.finishCRC(); got != blk.CRC {
		return checksumError(blk, got)
	}
	return err
}

// decodeBlock is DecodeBlock's decoding; r checks the checksum as it goes.
func decodeBlock(r *fieldReader, blk BlockInfo, start func(tp rlmm.TopicIDPartition, z memory.BuildSizes) (Sink, error)) error {
	tp := r.tp()
	var z memory.BuildSizes
	z.Segments = r.count("segment", segmentFixedBytes)
	z.Extras = r.count("extra", 4)
	z.ExtraEpochs = r.count("extra epoch", 12)
	custom := r.u64("custom bytes")
	switch {
	case r.err != nil:
		return r.err
	case tp != blk.TopicIDPartition || z.Segments != blk.Segments:
		return fmt.Errorf("%w: snapshot block at file byte %d holds %d segments of %s, the head says %d of %s",
			rlmm.ErrCorrupt, blk.Offset, z.Segments, tp, blk.Segments, blk.TopicIDPartition)
	case z.Extras > z.Segments:
		r.fail("%d segments with extras among %d", z.Extras, z.Segments)
		return r.err
	case custom > uint64(len(r.b)-r.pos):
		r.fail("custom metadata of %d bytes exceeds the remaining %d", custom, len(r.b)-r.pos)
		return r.err
	}
	z.CustomBytes = int(custom)
	sink, err := start(tp, z)
	if err != nil {
		return err
	}
	var md rlmm.SegmentMetadata
	md.ID.TopicIDPartition = tp
	var single [1]rlmm.EpochStart
	var epochs []rlmm.EpochStart
	var got memory.BuildSizes
	for range z.Segments {
		flags, ok := r.segment(&md, single[:], &epochs)
		if !ok {
			return r.err
		}
		got.Segments++
		// segment refused an epoch list of the single-epoch form, so the
		// flags say what the segment holds beyond its fixed part.
		if flags&(segEpochList|segCustom) != 0 {
			got.Extras++
			if flags&segEpochList != 0 {
				got.ExtraEpochs += len(md.LeaderEpochs)
			}
			got.CustomBytes += len(md.CustomMetadata)
		}
		if err := sink.AddSegment(&md); err != nil {
			r.fail("%v", err)
			return r.err
		}
	}
	if got != z {
		r.fail("partition %s: the block counts %+v, its segments hold %+v", tp, z, got)
		return r.err
	}
	nHigh := r.count("highest offset", 12)
	for range nHigh {
		e, o := r.i32("epoch"), r.i64("highest offset")
		if r.err != nil {
			return r.err
		}
		if err := sink.AddHighestOffset(e, o); err != nil {
			r.fail("%v", err)
			return r.err
		}
	}
	switch flag := r.u8("delete flag"); {
	case r.err != nil:
		return r.err
	case flag == 1:
		d := rlmm.PartitionDelete{TopicIDPartition: tp}
		d.State = rlmm.PartitionDeleteState(int8(r.u8("delete state")))
		d.EventTimestampMs = r.i64("delete timestamp")
		d.BrokerID = r.i32("delete broker id")
		if r.err != nil {
			return r.err
		}
		if err := sink.SetDelete(&d); err != nil {
			r.fail("%v", err)
			return r.err
		}
	case flag != 0:
		r.fail("delete flag %d is neither 0 nor 1", flag)
		return r.err
	}
	if r.pos != len(r.b) {
		r.fail("partition %s: %d trailing bytes in its block", tp, len(r.b)-r.pos)
	}
	return r.err
}

// segment decodes one segment into md (single backs a single-epoch list,
// *epochs is reused for longer ones) and returns its flags; false with
// r.err set on bad bytes.
func (r *fieldReader) segment(md *rlmm.SegmentMetadata, single []rlmm.EpochStart, epochs *[]rlmm.EpochStart) (byte, bool) {
	f := r.take("segment", segmentFixedBytes)
	if f == nil {
		return 0, false
	}
	_ = f[segmentFixedBytes-1]
	copy(md.ID.ID[:], f[0:16])
	md.StartOffset = int64(binary.LittleEndian.Uint64(f[16:]))
	md.EndOffset = int64(binary.LittleEndian.Uint64(f[24:]))
	md.MaxTimestampMs = int64(binary.LittleEndian.Uint64(f[32:]))
	md.EventTimestampMs = int64(binary.LittleEndian.Uint64(f[40:]))
	md.BrokerID = int32(binary.LittleEndian.Uint32(f[48:]))
	md.SizeInBytes = int32(binary.LittleEndian.Uint32(f[52:]))
	epoch := int32(binary.LittleEndian.Uint32(f[56:]))
	md.State = rlmm.SegmentState(int8(f[60]))
	flags := f[61]
	if flags&^(segTxnIndexEmpty|segCustom|segEpochList) != 0 {
		r.fail("segment %s: flags %#x has unknown bits", md.ID.ID, flags)
		return 0, false
	}
	md.TxnIndexEmpty = flags&segTxnIndexEmpty != 0
	if flags&segEpochList == 0 {
		single[0] = rlmm.EpochStart{Epoch: epoch, StartOffset: md.StartOffset}
		md.LeaderEpochs = single[:1]
	} else {
		n := r.count("leader epoch", 12)
		*epochs = (*epochs)[:0]
		for range n {
			*epochs = append(*epochs, rlmm.EpochStart{Epoch: r.i32("epoch"), StartOffset: r.i64("epoch start offset")})
		}
		md.LeaderEpochs = *epochs
		if r.err == nil && (epoch != 0 || singleEpoch(md)) {
			r.fail("segment %s: an epoch list where the single-epoch form applies", md.ID.ID)
		}
	}
	md.CustomMetadata = nil
	if flags&segCustom != 0 {
		md.CustomMetadata = r.take("custom metadata", int(r.u32("custom metadata length")))
	}
	return flags, r.err == nil
}

// DecodeState decodes a block into a memory.PartitionState that owns its
// memory (for tools and tests; a restart feeds memory.PartitionBuilder
// through DecodeBlock instead). It checks each segment and the delete
// state with Validate; the cache's other rules (sorted epochs, repeated
// ids) are checked by memory.Import.
func DecodeState(block []byte, blk BlockInfo) (memory.PartitionState, error) {
	c := &stateCollector{}
	err := DecodeBlock(block, blk, func(tp rlmm.TopicIDPartition, z memory.BuildSizes) (Sink, error) {
		c.ps.TopicIDPartition = tp
		if z.Segments > 0 {
			c.ps.Segments = make([]rlmm.SegmentMetadata, 0, z.Segments)
		}
		return c, nil
	})
	if err != nil {
		return memory.PartitionState{}, err
	}
	return c.ps, nil
}

// stateCollector is the Sink of DecodeState.
type stateCollector struct {
	ps memory.PartitionState
}

func (c *stateCollector) AddSegment(md *rlmm.SegmentMetadata) error {
	if err := md.Validate(); err != nil {
		return fmt.Errorf("segment %s: %w", md.ID, err)
	}
	c.ps.Segments = append(c.ps.Segments, md.Clone())
	return nil
}

func (c *stateCollector) AddHighestOffset(epoch int32, offset int64) error {
	c.ps.HighestOffsets = append(c.ps.HighestOffsets, memory.EpochOffset{Epoch: epoch, Offset: offset})
	return nil
}

func (c *stateCollector) SetDelete(d *rlmm.PartitionDelete) error {
	if err := d.Validate(); err != nil {
		return fmt.Errorf("partition %s: %w", d.TopicIDPartition, err)
	}
	dd := *d
	c.ps.Delete = &dd
	return nil
}

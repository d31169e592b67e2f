package snapshot

import (
	"encoding/binary"
	"hash/crc32"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/memory"
)

// Magic starts every snapshot file, so that a stray file is recognized as
// "not a snapshot" rather than as a corrupt one.
const Magic = "RLMMSNAP"

// Version is the layout this package writes. A future layout gets a new
// number; an unknown number is refused. Version 1 (varint fields, one
// sequential stream) was replaced by version 2 (fixed-width fields, one
// checksummed block per user partition) so that a restart decodes and
// builds the partitions on every core at once. Version 3 adds the log's id
// at the start of the head, so that a snapshot of a metadata topic that was
// deleted and created again is told apart from the new topic. Version 4
// moves the head and the block index into a footer found through a
// fixed-size trailer, so that a writer streams the blocks without knowing
// the partitions up front.
const Version uint16 = 4

// VersionHeadFirst is the older layout still read (and written by
// WriterV3): the head and the block index before the blocks.
const VersionHeadFirst uint16 = 3

// VersionWithoutLogID is the oldest layout still read: version 3 without
// the log id (Head.LogID reads as rlmm.ZeroUuid).
const VersionWithoutLogID uint16 = 2

// HeaderSize is the header of version 4: magic(8) + version(2).
const HeaderSize = 8 + 2

// TrailerSize is the trailer that ends a version 4 file: footer offset(8) +
// footer length(8) + CRC-32C of the footer(4) + magic(8).
const TrailerSize = 8 + 8 + 4 + 8

// HeadFirstHeaderSize is the header of versions 2 and 3: magic(8) +
// version(2) + CRC-32C of the head(4) + head length(8).
const HeadFirstHeaderSize = 8 + 2 + 4 + 8

// segmentFixedBytes is the fixed part of a segment: uuid(16) + 4 × i64 +
// 3 × i32 + 2 × u8.
const segmentFixedBytes = 16 + 4*8 + 3*4 + 2

// Bits of a segment's flags byte.
const (
	segTxnIndexEmpty = 1 << iota
	segCustom        // u32 length + custom metadata follow
	segEpochList     // u32 count + the epoch list follow (the epoch field is 0)
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// indexEntrySize is the length of tp's entry in the head's block index
// (version 3).
func indexEntrySize(tp rlmm.TopicIDPartition) int { return 8 + 4 + 4 + 16 + 4 + len(tp.Topic) + 4 }

// footerEntrySize is the length of tp's entry in the footer's block index
// (version 4): the version 3 entry and the block's offset.
func footerEntrySize(tp rlmm.TopicIDPartition) int { return 8 + indexEntrySize(tp) }

// headSize is the length of the head (this version's) of a snapshot of n
// metadata partitions holding tps.
func headSize(n int, tps []rlmm.TopicIDPartition) int {
	size := 16 + 4 + 8*n + 4
	for _, tp := range tps {
		size += indexEntrySize(tp)
	}
	return size
}

// singleEpoch reports whether md's epochs are one epoch starting at its
// start offset: the common case, stored in the fixed part.
func singleEpoch(md *rlmm.SegmentMetadata) bool {
	return len(md.LeaderEpochs) == 1 && md.LeaderEpochs[0].StartOffset == md.StartOffset
}

// appendBlockHead writes the first two lines of ps's block.
func appendBlockHead(b []byte, ps *memory.PartitionState) []byte {
	b = appendTP(b, ps.TopicIDPartition)
	z := memory.SizesOf(ps.Segments)
	b = binary.LittleEndian.AppendUint32(b, uint32(z.Segments))
	b = binary.LittleEndian.AppendUint32(b, uint32(z.Extras))
	b = binary.LittleEndian.AppendUint32(b, uint32(z.ExtraEpochs))
	return binary.LittleEndian.AppendUint64(b, uint64(z.CustomBytes))
}

// appendTP writes a topic partition: uuid | u32 topic length | topic | i32.
func appendTP(b []byte, tp rlmm.TopicIDPartition) []byte {
	b = append(b, tp.TopicID[:]...)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(tp.Topic)))
	b = append(b, tp.Topic...)
	return binary.LittleEndian.AppendUint32(b, uint32(tp.Partition))
}

// appendBlockTail writes what follows the segments of ps's block.
func appendBlockTail(b []byte, ps *memory.PartitionState) []byte {
	b = binary.LittleEndian.AppendUint32(b, uint32(len(ps.HighestOffsets)))
	for _, h := range ps.HighestOffsets {
		b = binary.LittleEndian.AppendUint32(b, uint32(h.Epoch))
		b = binary.LittleEndian.AppendUint64(b, uint64(h.Offset))
	}
	if ps.Delete == nil {
		return append(b, 0)
	}
	b = append(b, 1, byte(ps.Delete.State))
	b = binary.LittleEndian.AppendUint64(b, uint64(ps.Delete.EventTimestampMs))
	return binary.LittleEndian.AppendUint32(b, uint32(ps.Delete.BrokerID))
}

// appendSegment writes one segment. Its partition is implied by the
// enclosing block, so only the segment's own id is written.
func appendSegment(b []byte, m *rlmm.SegmentMetadata) []byte {
	b = append(b, m.ID.ID[:]...)
	b = binary.LittleEndian.AppendUint64(b, uint64(m.StartOffset))
	b = binary.LittleEndian.AppendUint64(b, uint64(m.EndOffset))
	b = binary.LittleEndian.AppendUint64(b, uint64(m.MaxTimestampMs))
	b = binary.LittleEndian.AppendUint64(b, uint64(m.EventTimestampMs))
	b = binary.LittleEndian.AppendUint32(b, uint32(m.BrokerID))
	b = binary.LittleEndian.AppendUint32(b, uint32(m.SizeInBytes))
	var flags byte
	var epoch int32
	if singleEpoch(m) {
		epoch = m.LeaderEpochs[0].Epoch
	} else {
		flags |= segEpochList
	}
	if m.TxnIndexEmpty {
		flags |= segTxnIndexEmpty
	}
	if m.CustomMetadata != nil {
		flags |= segCustom
	}
	b = binary.LittleEndian.AppendUint32(b, uint32(epoch))
	b = append(b, byte(m.State), flags)
	if flags&segEpochList != 0 {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(m.LeaderEpochs)))
		for _, e := range m.LeaderEpochs {
			b = binary.LittleEndian.AppendUint32(b, uint32(e.Epoch))
			b = binary.LittleEndian.AppendUint64(b, uint64(e.StartOffset))
		}
	}
	if flags&segCustom != 0 {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(m.CustomMetadata)))
		b = append(b, m.CustomMetadata...)
	}
	return b
}

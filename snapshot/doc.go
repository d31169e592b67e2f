// Package snapshot is the on-disk format of the topic-based manager's
// snapshot: the cache state of every user partition it holds and, per
// metadata partition, the offset of the last event that state reflects. A
// restart loads it and replays only the log's tail. Tools read it too (rlmm
// inspect --snapshot).
//
// # Layout (format version 4)
//
// All integers are little-endian and fixed width. A file is a header, the
// blocks as they were written, a footer (the head's data and the block
// index) and a fixed-size trailer at the very end, which locates the
// footer: as hashicorp/raft-wal seals a segment with its index in a
// footer, so that the writer streams and the reader finds the index by
// reading the file's tail.
//
//	header:  "RLMMSNAP" | u16 version (4)                      (10 bytes, HeaderSize)
//	blocks:  one per user partition, back to back from file byte 10, in the
//	         order written (block: as in version 3, below)
//	footer:  uuid(16) log id (eventlog.Log.ID; all zero: unknown)
//	         u32 metadata partition count
//	         count × i64 committed offset (-1: nothing of that metadata partition is held)
//	         u32 user partition count, then for each (the block index, in file order):
//	           u64 block offset | u64 block length | u32 CRC-32C of the block | u32 segments
//	           uuid(16) topic id | u32 topic length | topic | i32 partition
//	trailer: u64 footer offset | u64 footer length | u32 CRC-32C of the footer
//	         "RLMMSNAP"                                         (28 bytes, TrailerSize)
//
// The reader reads the header (magic, version), then the last 28 bytes: the
// trailer must end in the magic, and the footer it places must end where
// the trailer starts (footer offset + footer length = file size - 28). A
// file whose write stopped before its end (a torn file: the trailer
// missing or not matching the file) is refused there, with an error
// naming the byte. The footer's checksum covers it whole. The index's
// blocks must tile the bytes between the header and the footer exactly:
// the first starts at byte 10, each next one where the one before ends, the
// last ends at the footer's offset; each block's segment count must fit
// its length. So every byte of the file is covered by a checksum or
// checked against the others, and the index is known (each block's
// partition, segment count and place) before any block is read.
//
// # Layout (format version 3, the older one, still read)
//
//	header: "RLMMSNAP" | u16 version (3) | u32 CRC-32C of the head | u64 head length
//	head:   uuid(16) log id (eventlog.Log.ID; all zero: unknown)
//	        u32 metadata partition count
//	        count × i64 committed offset (-1: nothing of that metadata partition is held)
//	        u32 user partition count, then for each (the block index):
//	          u64 block length | u32 CRC-32C of the block | u32 segments
//	          uuid(16) topic id | u32 topic length | topic | i32 partition
//	blocks: one per user partition, in the index's order, up to the end of the file
//
// # Blocks (versions 2 to 4)
//
//	block:  uuid(16) topic id | u32 topic length | topic | i32 partition
//	        u32 segments | u32 extras | u32 extra epochs | u64 custom bytes
//	        segments × segment
//	        u32 highest offsets, each i32 epoch | i64 offset
//	        u8 0 (no delete state) or 1, then u8 state | i64 timestamp | i32 broker
//	segment: uuid(16) | i64 start | i64 end | i64 max timestamp | i64 event timestamp
//	        i32 broker | i32 size | i32 epoch | u8 state | u8 flags
//	        [flags&4 (epoch list): u32 count, each i32 epoch | i64 start offset]
//	        [flags&2 (custom metadata): u32 length | custom metadata]
//	        (flags&1: the transaction index is empty)
//
// A segment's partition is its block's. The common single leader epoch that
// starts at the segment's start offset is the fixed epoch field; any other
// epoch list is written out (with the epoch field 0). Segments come in the
// order their last change was applied (memory.Export's order), so that a
// build gives the newest finished segment each lookup, as the live cache
// did. The second line of a block counts what follows (extras: segments with
// an epoch list or custom metadata; extra epochs: the lengths of those lists
// summed; custom bytes: the custom metadata summed) so that a builder sizes
// the partition once; the decoder checks the counts against the block. A
// block without segments, highest offsets or delete state is a partition
// that was kept (hosted) with no state: topicbased writes one so that a
// restart knows it needs no rebuild.
//
// Each block has its own checksum, so blocks are read, checked and decoded
// on several goroutines, each into a buffer it reuses, without reading the
// whole file into memory first, and a damaged block costs only its own
// metadata partition (topicbased replays that one from offset 0).
//
// # Versions
//
// Version 4 differs from version 3 by where the head and the index are:
// version 3 put them before the first block, so its writer had to name
// every user partition before writing one (topicbased then exported every
// metadata partition, a copy of the whole cache, before writing), and wrote
// the head last at the start of the file (io.WriterAt). Version 4's writer
// streams: it exports and writes one metadata partition at a time and
// holds only that one's copy, and the index it keeps (one entry per user
// partition) is written at the end. Version 3 differs from version 2 only
// by the log id at the start of the head: the id a restart compares with
// its log's, so that a snapshot of a metadata topic that was deleted and
// created again under the same name is dropped even when the new topic
// already holds more events than the snapshot claims (an offset check alone
// cannot tell). Open reads versions 2, 3 and 4 (in a version 2 file the log
// id reads as zero, and nothing is compared); a restart from an older file
// writes version 4 at its next snapshot. An older build refuses a version 4
// file by its version and replays the log; WriterV3 writes version 3 for a
// downgrade.
//
// # Writing
//
// Writer streams the file through a 1 MiB buffer into an io.Writer: the
// header, each block as WriteBlock is given it (encoded one segment at a
// time), the committed offsets given by SetCommitted in any order, and at
// Finish the footer and the trailer. The file is never held whole, nor the
// state of more than the block being written. topicbased writes into an
// internal/atomicfile File, so a crash leaves the old snapshot or the new
// one (and a torn temporary file is never the snapshot).
//
// # Reading
//
// Open reads and checks the index and head (version 4: header, trailer,
// footer; versions 2 and 3: header and head: magic, version, checksum,
// every length against the file's size, committed offsets of -1 or more,
// trailing bytes). ForEachBlock reads each block and checks its checksum,
// on up to the given number of goroutines, each into a buffer it reuses,
// and hands the block to a function; ForEachBlockUnchecked does the same
// without the check, for a function that decodes the block with
// DecodeBlock, which checks the checksum as it decodes: in 64 KiB pieces
// just ahead of the decoder, while the bytes are in the CPU's cache, so a
// block is read once and passed over once (topicbased's restore, with no
// check of the whole file first). A block whose checksum fails is a
// checksum error, whatever else its bytes would have given; the sink may
// have been given part of it. Verify checks every block's checksum alone,
// for tools. DecodeBlock decodes a block into a Sink
// (memory.PartitionBuilder satisfies it), checking every count and length
// against the bytes before allocating for it; DecodeState decodes one into
// a memory.PartitionState for tools. Every error of bad bytes wraps
// rlmm.ErrCorrupt and names the file byte where it was found; nothing read
// may panic (FuzzOpen, FuzzReadFooter, FuzzReadHead and FuzzReadBlock
// check it; FuzzOpen and FuzzReadFooter decode blocks whose checksum
// fails, as a restart's decoder meets them).
//
// It uses only the standard library (hash/crc32 for CRC-32C, which uses
// the CPU's instruction) and the rlmm and memory packages.
package snapshot

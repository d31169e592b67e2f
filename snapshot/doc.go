// Package snapshot is the on-disk format of the topic-based manager's
// snapshot: the cache state of every user partition it holds and, per
// metadata partition, the offset of the last event that state reflects. A
// restart loads it and replays only the log's tail. Tools read it too (rlmm
// inspect --snapshot).
//
// # Layout (format version 3)
//
// All integers are little-endian and fixed width.
//
//	header: "RLMMSNAP" | u16 version (3) | u32 CRC-32C of the head | u64 head length
//	head:   uuid(16) log id (eventlog.Log.ID; all zero: unknown)
//	        u32 metadata partition count
//	        count × i64 committed offset (-1: nothing of that metadata partition is held)
//	        u32 user partition count, then for each (the block index):
//	          u64 block length | u32 CRC-32C of the block | u32 segments
//	          uuid(16) topic id | u32 topic length | topic | i32 partition
//	blocks: one per user partition, in the index's order, up to the end of the file
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
// the partition once; the decoder checks the counts against the block.
//
// Each block has its own checksum, so blocks are read, checked and decoded
// on several goroutines, each into a buffer it reuses, without reading the
// whole file into memory first. The index names each block's partition and
// segment count so that a reader knows the whole content, and which
// metadata partition each block belongs to, before decoding any block.
//
// Version 3 differs from version 2 only by the log id at the start of the
// head: the id a restart compares with its log's, so that a snapshot of a
// metadata topic that was deleted and created again under the same name is
// dropped even when the new topic already holds more events than the
// snapshot claims (an offset check alone cannot tell). Open reads version 2
// files too (as topicbased wrote them before; the log id reads as zero, and
// nothing is compared); an older build refuses a version 3 file by its
// version and replays the log.
//
// # Writing
//
// Writer streams the file: blocks are encoded one at a time through a
// buffered writer, and the header and head, whose block lengths and
// checksums are known only at the end, are written last at the start of
// the file (io.WriterAt). The caller names the user partitions up front
// (the head's size depends on them). topicbased writes into an
// internal/atomicfile File, so a crash leaves the old snapshot or the new
// one.
//
// # Reading
//
// Open reads and checks the header and the head (magic, version,
// checksum, every length against the file's size, committed offsets of -1
// or more, trailing bytes). Verify checks every block's checksum, and
// ForEachBlock hands each checked block to a function, on up to the given
// number of goroutines. DecodeBlock decodes a block into a Sink
// (memory.PartitionBuilder satisfies it), checking every count and length
// against the bytes before allocating for it; DecodeState decodes one into
// a memory.PartitionState for tools. Every error of bad bytes wraps
// rlmm.ErrCorrupt and names the file byte where it was found; nothing read
// may panic.
//
// It uses only the standard library (hash/crc32 for CRC-32C, which uses
// the CPU's instruction) and the rlmm and memory packages.
package snapshot

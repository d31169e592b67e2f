// Package filelog is the embedded, durable eventlog.Log: the default
// metadata log of a single machine, kept in one directory.
//
// # Layout
//
//	MANIFEST                       format name, format version, partition count, log id (JSON)
//	LOCK                           flock'ed by the process that has the log open
//	journal-<seq>.wal              the write-ahead journal since the last checkpoint
//	p-<partition>/<base>.seg       segment files of each partition, named by first offset
//
// Every record, in a segment or in the journal, is a frame: a 4-byte
// little-endian payload length, a 4-byte CRC32C (Castagnoli) and the
// payload. A segment record's payload is the value; its CRC also covers the
// record's offset, so a record in the wrong place fails its check. A journal
// record's payload is partition, offset and value; the journal's first frame
// is a header holding, per partition, the checkpoint offset: every record
// below it was fsynced to the segments before this journal became durable.
//
// # Writing: group commit through a journal
//
// Publish queues the record; one committer goroutine takes everything queued
// (up to 4 MiB), assigns offsets, writes the records to their partitions'
// segment files (page cache only), writes the same records to the journal
// with one write, and issues one fdatasync of the journal. Only then does it
// answer the callers and let subscribers see the records. So one fsync
// serves every caller of a batch, whatever partitions they wrote to: an fsync
// per partition file would cost one device flush each (about 0.1 ms here,
// serialized by the device), which caps a 50-partition log at about 12,000
// records per second. After a batch the committer waits, at most half an
// fsync, for the callers it just answered to publish again (see run in
// filelog.go): without it, concurrent publishers split into two alternating
// halves and each fsync carries half of them. When the journal reaches Options.JournalBytes, and on
// Close, the log checkpoints: it fsyncs the segment files written since the
// last checkpoint and the directories that gained files, writes a new
// journal (temporary name, fsync, rename, directory fsync: internal/atomicfile) whose header
// records the partitions' ends, and deletes the old journal.
//
// # Crash model
//
// The model is kill -9 of the process and loss of power at any instant, on
// a file system that honours fsync (ext4, xfs). The guarantees:
//
//   - A record whose Publish returned its offset survives both: it is in the
//     fsynced journal, or below a checkpoint and thus in fsynced segments.
//   - Open recovers: in each partition, from the segment holding its
//     checkpoint offset on, the first frame that is truncated or fails its
//     CRC starts a torn tail; the tail (and any later segment file) is
//     truncated and logged with the partition, offset, file and byte
//     position, then the journal's records beyond each partition's end are
//     appended again. The result is checkpointed before Open returns.
//   - A torn tail of the journal itself (the last, unacknowledged batch) is
//     dropped and logged. A bad journal frame followed by more bytes than
//     one batch can leave unsynced, a bad segment record below the
//     checkpoint, a segment that ends before the checkpoint or a gap between
//     segments is corruption, not a crash: it fails with rlmm.ErrCorrupt
//     naming the file and byte offset, never dropped silently. Open checks
//     what it scans (the journal, and each partition from its checkpoint on,
//     whose byte position the journal header records, so a cleanly closed
//     log opens without reading its data); records below the checkpoint are
//     checked when first read, and the Poll that reads a bad one fails.
//   - Unacknowledged records may or may not survive; offsets stay dense.
//   - A second process (or a second Open in this one) fails with ErrLocked;
//     the kernel releases the flock when a process dies, so a crash leaves
//     no stale lock. ReadOnly opens take no lock and write nothing.
//   - After a failed write or fsync the log refuses further publishes
//     (the state of the file is unknown after a failed fsync); reopening
//     recovers from the files.
//
// Only records below a partition's durable high-water mark are delivered to
// subscribers, so nothing a reader applied can vanish in a crash.
//
// The tests check this model: TestKill9 re-executes the test binary as a
// publisher and kills it with SIGKILL 20 times; every third round it also
// damages the files the way a power failure could (unsynced journal and
// segment bytes cut or zeroed, segment files created since the checkpoint
// removed). After each round every acknowledged record must be there,
// intact, with dense offsets. TestTornTail and TestCorruptionIsAnError
// cover each recovery rule, and FuzzReadSegment the decoders.
//
// # Why the standard library
//
// The format needs length-prefixed frames, CRC32C (hash/crc32 uses the
// CPU's instruction), pwrite, fdatasync and flock (syscall): a few hundred
// lines. The embedded stores measured for this project either keep data in
// memory and stall for hundreds of milliseconds at GC (tidwall/wal), double
// the disk use (bbolt) or pull in a large dependency tree (pebble, badger),
// and none offers partitions of dense offsets with live tailing, which this
// package would have to build on top anyway.
package filelog

package memory

import (
	"encoding/binary"
	"math/bits"

	"github.com/rlmm-go/rlmm"
)

// idIndex maps a partition's segment ids to their slots. It replaced a
// map[rlmm.Uuid]int32: building it for 1,000,000 segments (a snapshot
// load) cost about 30 ns per segment in map inserts and in clearing the
// pre-sized map's control bytes, and the map took about 28 bytes per
// segment; this table takes 16 at most and inserts in a few ns (see
// BenchmarkIDIndex and docs/bench/memory.md).
//
// It is an open-addressing table with linear probing, at most half full,
// whose entries hold the id's 32-bit hash tag and slot + 1 (0 marks an empty
// entry, so a fresh table needs no filling). The id itself stays in the
// slot: a probe compares tags, and the slot's id only when the tags match.
// Deletion shifts the following entries back (no tombstones), which the
// tags allow without reading any id.
type idIndex struct {
	entries []idEntry
	n       int
}

type idEntry struct {
	tag  uint32
	slot int32 // slot + 1; 0 = empty
}

// hashID mixes a segment id into 32 bits. Kafka's ids are random, but tests
// and other tools may count them up, so both halves are mixed.
func hashID(id *rlmm.Uuid) uint32 {
	x := binary.LittleEndian.Uint64(id[:8]) ^ bits.RotateLeft64(binary.LittleEndian.Uint64(id[8:]), 31)
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	return uint32(x)
}

// reserve sizes an empty index for n ids.
func (x *idIndex) reserve(n int) {
	size := 8
	for size < 2*n {
		size <<= 1
	}
	x.entries = newEntries(size)
}

// newEntries returns a zeroed table of size entries whose pages are
// written: an insert reads an entry before writing it (makeWritten).
func newEntries(size int) []idEntry { return makeWritten[idEntry](size) }

// len returns the number of ids held.
func (x *idIndex) len() int { return x.n }

// get returns the slot of id.
func (x *idIndex) get(id *rlmm.Uuid, p *partition) (int32, bool) {
	if x.n == 0 {
		return 0, false
	}
	tag := hashID(id)
	mask := uint32(len(x.entries) - 1)
	for i := tag & mask; ; i = (i + 1) & mask {
		e := x.entries[i]
		if e.slot == 0 {
			return 0, false
		}
		if e.tag == tag && p.slot(e.slot-1).id == *id {
			return e.slot - 1, true
		}
	}
}

// insert maps id to slot unless id is already held; it reports whether it
// inserted.
func (x *idIndex) insert(id *rlmm.Uuid, slot int32, p *partition) bool {
	if 2*(x.n+1) > len(x.entries) {
		x.grow()
	}
	tag := hashID(id)
	mask := uint32(len(x.entries) - 1)
	for i := tag & mask; ; i = (i + 1) & mask {
		e := &x.entries[i]
		if e.slot == 0 {
			*e = idEntry{tag: tag, slot: slot + 1}
			x.n++
			return true
		}
		if e.tag == tag && p.slot(e.slot-1).id == *id {
			return false
		}
	}
}

// grow doubles the table (or makes the first one).
func (x *idIndex) grow() {
	old := x.entries
	x.entries = newEntries(max(8, 2*len(old)))
	mask := uint32(len(x.entries) - 1)
	for _, e := range old {
		if e.slot == 0 {
			continue
		}
		i := e.tag & mask
		for x.entries[i].slot != 0 {
			i = (i + 1) & mask
		}
		x.entries[i] = e
	}
}

// remove forgets id, which is held in slot.
func (x *idIndex) remove(id *rlmm.Uuid, slot int32) {
	if x.n == 0 {
		return
	}
	tag := hashID(id)
	mask := uint32(len(x.entries) - 1)
	i := tag & mask
	for {
		e := x.entries[i]
		if e.slot == 0 {
			return // not held
		}
		if e.slot == slot+1 {
			break
		}
		i = (i + 1) & mask
	}
	// Backward-shift deletion: move back each following entry whose home
	// position does not lie (cyclically) in (i, j], so that every entry
	// stays reachable from its home without a tombstone.
	j := i
	for {
		j = (j + 1) & mask
		e := x.entries[j]
		if e.slot == 0 {
			break
		}
		home := e.tag & mask
		if (j > i && (home <= i || home > j)) || (j < i && home <= i && home > j) {
			x.entries[i] = e
			i = j
		}
	}
	x.entries[i] = idEntry{}
	x.n--
}

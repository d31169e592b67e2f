package memory

import (
	"encoding/binary"
	"math/bits"
	"sync/atomic"

	"github.com/rlmm-go/rlmm"
)

// shardBits splits the partition directory so that publishing a new
// partition copies only a small table.
const (
	shardBits  = 10
	shardCount = 1 << shardBits
)

// directory maps user partitions to their state. Readers look a partition up
// without any lock or atomic read-modify-write (an atomic load of the
// shard's current table); the writer (holding the Manager's writer lock)
// replaces a shard's table by a modified copy.
type directory struct {
	shards [shardCount]atomic.Pointer[dirTable]
}

// dirTable is an immutable open-addressing hash table (linear probing, at
// most half full). The hash covers the topic id and partition number; the
// topic name, which Kafka also compares, is compared on a hit only, so the
// fetch path never hashes a string.
type dirTable struct {
	mask    uint64
	entries []dirEntry
}

type dirEntry struct {
	hash uint64
	p    *partition // nil: empty
}

// hashTP mixes the topic id and partition number.
func hashTP(tp *rlmm.TopicIDPartition) uint64 {
	x := binary.LittleEndian.Uint64(tp.TopicID[:8]) ^ bits.RotateLeft64(binary.LittleEndian.Uint64(tp.TopicID[8:]), 29)
	x ^= uint64(uint32(tp.Partition)) * 0x9e3779b97f4a7c15
	x ^= x >> 32
	x *= 0xd6e8feb86659fd93
	x ^= x >> 32
	return x
}

// get returns tp's partition or nil.
func (d *directory) get(tp *rlmm.TopicIDPartition) *partition {
	h := hashTP(tp)
	t := d.shards[h>>(64-shardBits)].Load()
	if t == nil {
		return nil
	}
	for i := h & t.mask; ; i = (i + 1) & t.mask {
		e := &t.entries[i]
		if e.p == nil {
			return nil
		}
		if e.hash == h && e.p.tp == *tp {
			return e.p
		}
	}
}

// set publishes p for tp (nil removes tp). Writer only.
func (d *directory) set(tp rlmm.TopicIDPartition, p *partition) {
	h := hashTP(&tp)
	sh := &d.shards[h>>(64-shardBits)]
	var kept []*partition
	if t := sh.Load(); t != nil {
		for _, e := range t.entries {
			if e.p != nil && e.p.tp != tp {
				kept = append(kept, e.p)
			}
		}
	}
	if p != nil {
		kept = append(kept, p)
	}
	if len(kept) == 0 {
		sh.Store(nil)
		return
	}
	size := 4
	for size < 2*len(kept) {
		size *= 2
	}
	// Probes read an entry before writing it (makeWritten).
	t := &dirTable{mask: uint64(size - 1), entries: makeWritten[dirEntry](size)}
	for _, q := range kept {
		qh := hashTP(&q.tp)
		i := qh & t.mask
		for t.entries[i].p != nil {
			i = (i + 1) & t.mask
		}
		t.entries[i] = dirEntry{hash: qh, p: q}
	}
	sh.Store(t)
}

// each calls f for every partition, in no particular order.
func (d *directory) each(f func(*partition)) {
	for k := range d.shards {
		if t := d.shards[k].Load(); t != nil {
			for _, e := range t.entries {
				if e.p != nil {
					f(e.p)
				}
			}
		}
	}
}

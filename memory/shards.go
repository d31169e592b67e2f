package memory

import (
	"maps"
	"sync/atomic"

	"github.com/rlmm-go/rlmm"
)

// shardCount splits the partition directory so that publishing a new
// partition copies only a small map.
const shardCount = 256

// directory maps user partitions to their state. Readers look a partition up
// without any lock or atomic read-modify-write (an atomic load of the shard's
// current map); the writer (holding the Manager's writer lock) replaces a
// shard's map by a modified copy.
type directory struct {
	shards [shardCount]atomic.Pointer[map[rlmm.TopicIDPartition]*partition]
}

// shardOf picks a shard from the topic id and partition number, cheaply:
// no hashing of the topic name on the fetch path.
func shardOf(tp rlmm.TopicIDPartition) int {
	id := tp.TopicID
	h := uint32(tp.Partition)*0x9e3779b1 ^ uint32(id[15]) ^ uint32(id[14])<<8 ^ uint32(id[7])<<16 ^ uint32(id[6])<<24
	return int((h ^ h>>16) % shardCount)
}

// get returns tp's partition or nil.
func (d *directory) get(tp rlmm.TopicIDPartition) *partition {
	if mp := d.shards[shardOf(tp)].Load(); mp != nil {
		return (*mp)[tp]
	}
	return nil
}

// set publishes p (nil removes tp). Writer only.
func (d *directory) set(tp rlmm.TopicIDPartition, p *partition) {
	sh := &d.shards[shardOf(tp)]
	var next map[rlmm.TopicIDPartition]*partition
	if cur := sh.Load(); cur != nil {
		next = maps.Clone(*cur)
	}
	if next == nil {
		next = make(map[rlmm.TopicIDPartition]*partition, 1)
	}
	if p == nil {
		delete(next, tp)
	} else {
		next[tp] = p
	}
	sh.Store(&next)
}

// each calls f for every partition, in no particular order.
func (d *directory) each(f func(*partition)) {
	for k := range d.shards {
		if mp := d.shards[k].Load(); mp != nil {
			for _, p := range *mp {
				f(p)
			}
		}
	}
}

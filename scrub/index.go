package scrub

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"slices"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/scrub/layout"
)

// segEntry is what the index keeps of one segment: 80 bytes.
type segEntry struct {
	id       rlmm.Uuid
	start    int64
	end      int64
	dataSize int64 // -1: not recorded by the layout
	total    int64 // -1: not recorded by the layout
	seenSum  int64 // sizes of the objects claimed
	part     int32
	state    rlmm.SegmentState
	seen     layout.Set
	required layout.Set
	optional layout.Set
	dataKind layout.Kind
	stem     bool // the objects live at a custom key (Index.stemOf)
}

// partEntry is a user partition of the index.
type partEntry struct {
	tp   rlmm.TopicIDPartition
	dir  string // layout.PartitionDir
	live int    // segments in the index
}

// Index holds the segments of the metadata, keyed by segment id, as a
// layout names their objects. Build it with AddPartition and Add, then Seal;
// it is not safe for concurrent use.
type Index struct {
	layout   layout.Layout
	prefix   string
	parts    []partEntry
	segs     []segEntry
	table    []uint32 // entry index + 1; 0 is empty
	shift    uint
	stems    map[string]int32 // custom stem -> entry
	stemOf   map[int32]string
	prefixes map[string]bool // custom prefixes to list besides the layout's
	warnings []string
	sealed   bool
}

// NewIndex returns an empty index for layout l; segments is a capacity hint.
func NewIndex(l layout.Layout, segments int) *Index {
	return &Index{layout: l, prefix: l.Prefix(), segs: make([]segEntry, 0, segments)}
}

// Layout returns the index's layout.
func (x *Index) Layout() layout.Layout { return x.layout }

// AddPartition adds a user partition and returns its handle for Add.
func (x *Index) AddPartition(tp rlmm.TopicIDPartition) int32 {
	x.parts = append(x.parts, partEntry{tp: tp, dir: x.layout.PartitionDir(tp)})
	return int32(len(x.parts) - 1)
}

// Add adds segment m of partition p (a handle from AddPartition). Segments
// in DELETE_SEGMENT_FINISHED are ignored: their objects are orphans. Custom
// metadata the layout cannot decode is reported by Warnings and the
// computed key is used.
func (x *Index) Add(p int32, m *rlmm.SegmentMetadata) {
	if m.State == rlmm.DeleteSegmentFinished {
		return
	}
	part := &x.parts[p]
	e, err := x.layout.Expect(part.tp, m)
	if err != nil {
		x.warnings = append(x.warnings, fmt.Sprintf("%s segment %s: %v (using the computed key)", part.tp, m.ID.ID, err))
	}
	x.segs = append(x.segs, segEntry{id: m.ID.ID, start: m.StartOffset, end: m.EndOffset, dataSize: e.DataSize,
		total: e.TotalSize, part: p, state: m.State, required: e.Required, optional: e.Optional,
		dataKind: e.DataKind, stem: e.Stem != ""})
	part.live++
	if e.Stem != "" {
		i := int32(len(x.segs) - 1)
		if x.stems == nil {
			x.stems, x.stemOf, x.prefixes = map[string]int32{}, map[int32]string{}, map[string]bool{}
		}
		x.stems[e.Stem], x.stemOf[i] = i, e.Stem
		x.prefixes[e.Prefix] = true
	}
}

// Seal builds the id table; call it once, after the last Add.
func (x *Index) Seal() {
	n := max(2*len(x.segs), 16)
	x.shift = uint(64 - bits.Len(uint(n-1)))
	x.table = make([]uint32, 1<<(64-x.shift))
	mask := uint64(len(x.table) - 1)
	for i := range x.segs {
		for h := hashID(&x.segs[i].id) >> x.shift; ; h = (h + 1) & mask {
			if x.table[h] == 0 {
				x.table[h] = uint32(i + 1)
				break
			}
			if x.segs[x.table[h]-1].id == x.segs[i].id {
				x.warnings = append(x.warnings, fmt.Sprintf("segment id %s appears in %s and %s: the second is ignored",
					x.segs[i].id, x.parts[x.segs[x.table[h]-1].part].tp, x.parts[x.segs[i].part].tp))
				x.parts[x.segs[i].part].live--
				break
			}
		}
	}
	x.sealed = true
}

// Segments returns the number of segments added.
func (x *Index) Segments() int { return len(x.segs) }

// Prefixes returns the key prefixes to list: the layout's, then those of
// custom keys (each once, sorted).
func (x *Index) Prefixes() []string {
	custom := make([]string, 0, len(x.prefixes))
	for p := range x.prefixes {
		if p != x.prefix {
			custom = append(custom, p)
		}
	}
	slices.Sort(custom)
	return append([]string{x.prefix}, custom...)
}

// Warnings returns what the index could not take as given (undecodable
// custom metadata, a segment id in two partitions).
func (x *Index) Warnings() []string { return x.warnings }

// hashID mixes the id's two halves (ids are random, but tests and tools may
// make sequential ones) into the high bits Seal and lookup use.
func hashID(id *rlmm.Uuid) uint64 {
	a := binary.LittleEndian.Uint64(id[:8])
	b := binary.LittleEndian.Uint64(id[8:])
	return (a ^ bits.RotateLeft64(b, 29)) * 0x9E3779B97F4A7C15
}

// lookup returns the entry index of id, or -1.
func (x *Index) lookup(id *rlmm.Uuid) int32 {
	mask := uint64(len(x.table) - 1)
	for h := hashID(id) >> x.shift; ; h = (h + 1) & mask {
		s := x.table[h]
		if s == 0 {
			return -1
		}
		if x.segs[s-1].id == *id {
			return int32(s - 1)
		}
	}
}

// key returns the key of the k object of entry i (custom stem or computed).
func (x *Index) key(i int32, k layout.Kind) string {
	s := &x.segs[i]
	if s.stem {
		return x.stemOf[i] + "." + x.layout.Kinds()[k]
	}
	m := rlmm.SegmentMetadata{ID: rlmm.SegmentID{TopicIDPartition: x.parts[s.part].tp, ID: s.id}, StartOffset: s.start}
	return x.layout.Key(x.parts[s.part].tp, &m, k)
}

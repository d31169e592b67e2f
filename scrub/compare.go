package scrub

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/scrub/layout"
	"github.com/rlmm-go/rlmm/scrub/store"
)

// unrecognized is the partition key of orphans whose key names none.
const unrecognized = "(unrecognized keys)"

// finding ties an orphan or mismatch to its partition while comparing.
type orphanAt struct {
	part string // rlmm.TopicIDPartition.String() or unrecognized
	o    Orphan
}

type mismatchAt struct {
	part int32
	m    Mismatch
}

// Comparer compares listed objects with an Index. Observe every object,
// then call Report once. It is not safe for concurrent use.
type Comparer struct {
	x          *Index
	now        time.Time
	objects    int64
	bytes      int64
	orphans    []orphanAt
	mismatches []mismatchAt
	// exclude is a key prefix whose objects are not compared (rlmm
	// repair's quarantine): counted in excluded, never findings.
	exclude       string
	excluded      int64
	excludedBytes int64
	// last is the entry of the last object found (-1 none): a listing in
	// key order names the same segment several times in a row, then the
	// next one, which the index holds next, so most objects are found
	// without a hash lookup.
	last int32
}

// NewComparer returns a comparer of the sealed index x; ages are measured
// from now.
func NewComparer(x *Index, now time.Time) *Comparer {
	if !x.sealed {
		x.Seal()
	}
	return &Comparer{x: x, now: now, last: -1}
}

// Exclude sets a key prefix whose objects are counted apart and never
// compared: where rlmm repair quarantines orphans, so that what it moved
// is not found again as an orphan (or as an unrecognized key). An empty
// prefix excludes nothing.
func (c *Comparer) Exclude(prefix string) { c.exclude = prefix }

// ObservePage observes every object of a listed page.
func (c *Comparer) ObservePage(page []store.Object) {
	for i := range page {
		c.Observe(&page[i])
	}
}

// Observe compares one listed object.
func (c *Comparer) Observe(o *store.Object) {
	if c.exclude != "" && strings.HasPrefix(o.Key, c.exclude) {
		c.excluded++
		c.excludedBytes += o.Size
		return
	}
	c.objects++
	c.bytes += o.Size
	x := c.x
	l := x.layout
	if len(x.stems) > 0 {
		if dot := strings.LastIndexByte(o.Key, '.'); dot > 0 {
			if i, ok := x.stems[o.Key[:dot]]; ok {
				if k, ok := l.KindOf(o.Key[dot+1:]); ok {
					c.claim(i, k, o)
					return
				}
			}
		}
	}
	r, ok := l.Parse(o.Key)
	if !ok {
		c.orphan(unrecognized, o, ReasonUnrecognized, "", true)
		return
	}
	i := c.find(&r.SegmentID)
	if i < 0 {
		c.orphan(r.TopicIDPartition().String(), o, ReasonNotInMetadata, r.SegmentID.String(), false)
		return
	}
	s := &x.segs[i]
	if s.stem || r.Prefix != x.prefix || r.StartOffset != s.start || r.Dir != x.parts[s.part].dir {
		if s.state != rlmm.CopySegmentFinished {
			// An object of the copy or the deletion, if misplaced: for
			// WithoutObjects (a finished segment's report is unchanged).
			s.seen = s.seen.With(r.Kind)
		}
		c.orphan(r.TopicIDPartition().String(), o, ReasonMisplaced, r.SegmentID.String(), true)
		return
	}
	c.claim(i, r.Kind, o)
}

// find returns the entry of id, or -1: the last entry found or the one
// after it when either is id, else a lookup.
func (c *Comparer) find(id *rlmm.Uuid) int32 {
	segs := c.x.segs
	if l := c.last; l >= 0 {
		if segs[l].id == *id {
			return l
		}
		if int(l+1) < len(segs) && segs[l+1].id == *id {
			c.last = l + 1
			return l + 1
		}
	}
	i := c.x.lookup(id)
	if i >= 0 {
		c.last = i
	}
	return i
}

// claim records object o as the k object of entry i.
func (c *Comparer) claim(i int32, k layout.Kind, o *store.Object) {
	s := &c.x.segs[i]
	tp := c.x.parts[s.part].tp
	switch {
	case s.state == rlmm.CopySegmentStarted:
		// Marked seen all the same: WithoutObjects tells a copy
		// that left objects from one that left none.
		s.seen = s.seen.With(k)
		c.orphan(tp.String(), o, ReasonCopyStarted, s.id.String(), true)
		return
	case s.seen.Has(k):
		c.orphan(tp.String(), o, ReasonDuplicate, s.id.String(), true)
		return
	}
	s.seen = s.seen.With(k)
	s.seenSum += o.Size
	if k == s.dataKind && s.dataSize >= 0 && o.Size != s.dataSize {
		c.mismatches = append(c.mismatches, mismatchAt{s.part, Mismatch{Kind: MismatchSize, SegmentID: s.id.String(),
			Key: o.Key, Expected: s.dataSize, Actual: o.Size}})
	}
}

func (c *Comparer) orphan(part string, o *store.Object, reason, id string, protected bool) {
	c.orphans = append(c.orphans, orphanAt{part, Orphan{Key: o.Key, Size: o.Size, Modified: o.Modified,
		AgeMs: c.now.Sub(o.Modified).Milliseconds(), Reason: reason, SegmentID: id, Protected: protected}})
}

// Report checks every live segment against what was observed and returns
// the findings.
func (c *Comparer) Report() *Report {
	x := c.x
	byPart := map[string]*PartitionReport{}
	get := func(name string) *PartitionReport {
		pr := byPart[name]
		if pr == nil {
			pr = &PartitionReport{TopicIDPartition: name}
			byPart[name] = pr
		}
		return pr
	}
	rep := &Report{Layout: x.layout.Name(), Warnings: slices.Clone(x.warnings)}
	rep.Summary.Objects, rep.Summary.Bytes = c.objects, c.bytes
	rep.Summary.Excluded, rep.Summary.ExcludedBytes = c.excluded, c.excludedBytes
	names := make([]string, len(x.parts))
	for p := range x.parts {
		names[p] = x.parts[p].tp.String()
		rep.Summary.LiveSegments += x.parts[p].live
	}
	rep.Summary.Partitions = len(x.parts)
	kinds := len(x.layout.Kinds())
	for i := range x.segs {
		s := &x.segs[i]
		if s.state != rlmm.CopySegmentFinished && s.state != rlmm.DeleteSegmentStarted {
			continue
		}
		need := s.required &^ s.seen
		if need == 0 {
			if s.total >= 0 && s.seenSum != s.total {
				pr := get(names[s.part])
				pr.Mismatches = append(pr.Mismatches, Mismatch{Kind: MismatchSize, SegmentID: s.id.String(),
					Expected: s.total, Actual: s.seenSum})
			}
			continue
		}
		var keys []string
		if need.Has(s.dataKind) {
			keys = append(keys, x.key(int32(i), s.dataKind))
		}
		for k := range layout.Kind(kinds) {
			if need.Has(k) && k != s.dataKind {
				keys = append(keys, x.key(int32(i), k))
			}
		}
		pr := get(names[s.part])
		if need.Has(s.dataKind) {
			pr.Missing = append(pr.Missing, Missing{SegmentID: s.id.String(), State: s.state.String(),
				StartOffset: s.start, EndOffset: s.end, Keys: keys})
		} else {
			pr.Mismatches = append(pr.Mismatches, Mismatch{Kind: MismatchPartial, SegmentID: s.id.String(), MissingKeys: keys})
		}
	}
	for _, m := range c.mismatches {
		pr := get(names[m.part])
		pr.Mismatches = append(pr.Mismatches, m.m)
	}
	for _, o := range c.orphans {
		pr := get(o.part)
		pr.Orphans = append(pr.Orphans, o.o)
		pr.OrphanBytes += o.o.Size
	}
	live := map[string]int{}
	for p := range x.parts {
		live[names[p]] += x.parts[p].live
	}
	for name, pr := range byPart {
		pr.LiveSegments = live[name]
		slices.SortFunc(pr.Missing, func(a, b Missing) int { return cmp.Compare(a.StartOffset, b.StartOffset) })
		slices.SortFunc(pr.Orphans, func(a, b Orphan) int { return strings.Compare(a.Key, b.Key) })
		slices.SortStableFunc(pr.Mismatches, func(a, b Mismatch) int {
			return cmp.Or(strings.Compare(a.Kind, b.Kind), strings.Compare(a.SegmentID, b.SegmentID), strings.Compare(a.Key, b.Key))
		})
		rep.Summary.Missing += len(pr.Missing)
		rep.Summary.Orphans += len(pr.Orphans)
		rep.Summary.OrphanBytes += pr.OrphanBytes
		rep.Summary.Mismatches += len(pr.Mismatches)
		for _, o := range pr.Orphans {
			if o.Protected {
				rep.Summary.ProtectedOrphans++
			}
		}
		if pr.Missing == nil {
			pr.Missing = []Missing{}
		}
		if pr.Orphans == nil {
			pr.Orphans = []Orphan{}
		}
		if pr.Mismatches == nil {
			pr.Mismatches = []Mismatch{}
		}
		rep.Partitions = append(rep.Partitions, *pr)
	}
	slices.SortFunc(rep.Partitions, func(a, b PartitionReport) int {
		am, bm := len(a.Missing) > 0, len(b.Missing) > 0
		if am != bm {
			if am {
				return -1
			}
			return 1
		}
		return strings.Compare(a.TopicIDPartition, b.TopicIDPartition)
	})
	if rep.Warnings == nil {
		rep.Warnings = []string{}
	}
	if rep.Partitions == nil {
		rep.Partitions = []PartitionReport{}
	}
	return rep
}

// WithoutObjects returns the segments in state of which no object was
// observed (at the key the layout computes, at a custom one, or misplaced),
// in index order. For COPY_SEGMENT_STARTED: copies that died before
// writing, or whose objects were deleted; for DELETE_SEGMENT_STARTED:
// deletions that removed every object and did not record it. Call it after
// the last Observe.
func (c *Comparer) WithoutObjects(state rlmm.SegmentState) []rlmm.SegmentID {
	var out []rlmm.SegmentID
	x := c.x
	for i := range x.segs {
		s := &x.segs[i]
		if s.state == state && s.seen == 0 {
			out = append(out, rlmm.SegmentID{TopicIDPartition: x.parts[s.part].tp, ID: s.id})
		}
	}
	return out
}

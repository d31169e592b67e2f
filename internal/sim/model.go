package sim

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"

	"github.com/rlmm-go/rlmm"
)

// partitionModel is the expected remote log metadata of one user partition,
// together with the simulated local log that produces it. Deliberately
// simple: a slice of live segments scanned linearly.
type partitionModel struct {
	tp       rlmm.TopicIDPartition
	topic    int // index of the topic
	replicas []int32
	leader   int32
	// epochs is the leader epoch history of the local log: each epoch and
	// its first offset, ascending.
	epochs []rlmm.EpochStart
	// logEnd is the next offset the local log will get; copiedEnd the first
	// offset not yet copied to remote storage.
	logEnd, copiedEnd int64
	// segs are the segments not yet DELETE_SEGMENT_FINISHED.
	segs []rlmm.SegmentMetadata
	// ever maps every segment id ever added to its latest metadata, so a
	// lagging follower's answer can be recognised as once true.
	ever map[rlmm.Uuid]rlmm.SegmentMetadata
	// deleteState is the partition delete state; deleted is set once
	// DELETE_PARTITION_FINISHED dropped everything.
	deleteState    rlmm.PartitionDeleteState
	hasDeleteState bool
	deleted        bool
	// catchUp is set when leadership moved: the new leader must have
	// applied the partition's latest events before it mutates it.
	catchUp bool
}

func (p *partitionModel) epoch() int32 { return p.epochs[len(p.epochs)-1].Epoch }

// segmentEpochs returns the leader epochs of the local log that intersect
// [start, end], the first clamped to start: the segment's epoch map.
func (p *partitionModel) segmentEpochs(start, end int64) []rlmm.EpochStart {
	var out []rlmm.EpochStart
	for i, e := range p.epochs {
		next := int64(1<<63 - 1)
		if i+1 < len(p.epochs) {
			next = p.epochs[i+1].StartOffset
		}
		if e.StartOffset > end || next <= start {
			continue
		}
		out = append(out, rlmm.EpochStart{Epoch: e.Epoch, StartOffset: max(e.StartOffset, start)})
	}
	return out
}

// add records a new segment (COPY_SEGMENT_STARTED).
func (p *partitionModel) add(m rlmm.SegmentMetadata) {
	m = m.Clone()
	p.segs = append(p.segs, m)
	p.ever[m.ID.ID] = m
}

// update applies an update the way Kafka's createWithUpdates does: broker,
// event time, custom metadata (replaced) and state come from the update.
// DELETE_SEGMENT_FINISHED removes the segment.
func (p *partitionModel) update(u rlmm.SegmentUpdate) error {
	for i := range p.segs {
		m := &p.segs[i]
		if m.ID != u.ID {
			continue
		}
		m.BrokerID, m.EventTimestampMs, m.State = u.BrokerID, u.EventTimestampMs, u.State
		m.CustomMetadata = nil
		if u.CustomMetadata != nil {
			m.CustomMetadata = append([]byte{}, u.CustomMetadata...)
		}
		p.ever[m.ID.ID] = m.Clone()
		if u.State == rlmm.DeleteSegmentFinished {
			p.segs = slices.Delete(p.segs, i, i+1)
		}
		return nil
	}
	return fmt.Errorf("model: update of unknown segment %s", u.ID.ID)
}

// putDelete records a partition delete state; FINISHED drops the segments.
func (p *partitionModel) putDelete(st rlmm.PartitionDeleteState) {
	p.deleteState, p.hasDeleteState = st, true
	if st == rlmm.DeletePartitionFinished {
		p.segs = nil
		p.deleted = true
	}
}

// expectedList returns the live segments in the Manager's list order.
func (p *partitionModel) expectedList() []rlmm.SegmentMetadata {
	out := make([]rlmm.SegmentMetadata, len(p.segs))
	for i := range p.segs {
		out[i] = p.segs[i].Clone()
	}
	slices.SortFunc(out, func(a, b rlmm.SegmentMetadata) int {
		return cmp.Or(cmp.Compare(a.StartOffset, b.StartOffset), cmp.Compare(a.EndOffset, b.EndOffset),
			bytes.Compare(a.ID.ID[:], b.ID.ID[:]))
	})
	return out
}

// epochRange computes, without the rlmm helpers, the offsets of epoch inside
// segment m: its start, and the next epoch's start minus one or the
// segment's end.
func epochRange(m *rlmm.SegmentMetadata, epoch int32) (int64, int64, bool) {
	for i, e := range m.LeaderEpochs {
		if e.Epoch != epoch {
			continue
		}
		end := m.EndOffset
		if i+1 < len(m.LeaderEpochs) {
			end = m.LeaderEpochs[i+1].StartOffset - 1
		}
		return e.StartOffset, end, true
	}
	return 0, 0, false
}

func covers(m *rlmm.SegmentMetadata, epoch int32, offset int64) bool {
	s, e, ok := epochRange(m, epoch)
	return ok && s <= offset && offset <= e
}

// finishedCovering returns the ids of the live COPY_SEGMENT_FINISHED
// segments whose range for epoch holds offset.
func (p *partitionModel) finishedCovering(epoch int32, offset int64) []rlmm.Uuid {
	var ids []rlmm.Uuid
	for i := range p.segs {
		if p.segs[i].State == rlmm.CopySegmentFinished && covers(&p.segs[i], epoch, offset) {
			ids = append(ids, p.segs[i].ID.ID)
		}
	}
	return ids
}

// highestFinished returns, per leader epoch carried by a live finished
// segment, the highest offset finished segments cover in it.
func (p *partitionModel) highestFinished() map[int32]int64 {
	out := map[int32]int64{}
	for i := range p.segs {
		m := &p.segs[i]
		if m.State != rlmm.CopySegmentFinished {
			continue
		}
		for _, e := range m.LeaderEpochs {
			if _, end, ok := epochRange(m, e.Epoch); ok {
				if cur, seen := out[e.Epoch]; !seen || end > cur {
					out[e.Epoch] = end
				}
			}
		}
	}
	return out
}

func (p *partitionModel) finishedCount() int {
	n := 0
	for i := range p.segs {
		if p.segs[i].State == rlmm.CopySegmentFinished {
			n++
		}
	}
	return n
}

// oldestFinished returns the finished segment with the lowest start offset.
func (p *partitionModel) oldestFinished() (rlmm.SegmentMetadata, bool) {
	var best *rlmm.SegmentMetadata
	for i := range p.segs {
		m := &p.segs[i]
		if m.State == rlmm.CopySegmentFinished && (best == nil || m.StartOffset < best.StartOffset) {
			best = m
		}
	}
	if best == nil {
		return rlmm.SegmentMetadata{}, false
	}
	return best.Clone(), true
}

// diffSegments describes the first difference between a broker's list and
// the model's, or returns "" when they are equal.
func diffSegments(got, want []rlmm.SegmentMetadata) string {
	for i := 0; i < len(got) && i < len(want); i++ {
		if !got[i].Equal(&want[i]) {
			return fmt.Sprintf("segment #%d differs:\n      broker: %s\n      model:  %s", i, got[i], want[i])
		}
	}
	switch {
	case len(got) > len(want):
		return fmt.Sprintf("%d segments, model has %d; first extra: %s", len(got), len(want), got[len(want)])
	case len(got) < len(want):
		return fmt.Sprintf("%d segments, model has %d; first missing: %s", len(got), len(want), want[len(got)])
	}
	return ""
}

package view

import (
	"cmp"
	"slices"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/memory"
)

// bytesPerGiB is the unit object stores bill storage in (a GB-month is
// 2^30 bytes kept for a month).
const bytesPerGiB = 1 << 30

// Size is the remote storage one topic, or one of its partitions, holds:
// the segments not yet DELETE_SEGMENT_FINISHED, as the broker's
// remoteLogSize counts them (a segment still being copied or deleted
// occupies storage too).
type Size struct {
	Topic   string `json:"topic"`
	TopicID string `json:"topicId"`
	// Partition is -1 in a topic's row.
	Partition int32 `json:"partition"`
	// Partitions counts the topic's partitions with remote segments (1 in
	// a partition's row).
	Partitions  int   `json:"partitions"`
	Segments    int   `json:"segments"`
	RemoteBytes int64 `json:"remoteBytes"`
	// OldestOffset is the lowest start offset of a finished segment (-1
	// when none is finished); OldestTimestampMs the lowest largest
	// timestamp of one (the age of the oldest remote data; -1 when none).
	OldestOffset      int64 `json:"oldestOffset"`
	OldestTimestampMs int64 `json:"oldestTimestampMs"`
	// MonthlyCost is RemoteBytes in GiB times the price per GiB-month
	// given to Sizes (0 without a price).
	MonthlyCost float64 `json:"monthlyCost,omitempty"`
}

// Scanner calls fn with every live segment of a user partition; false
// when it holds none (memory.Manager and topicbased.Manager are Scanners).
type Scanner interface {
	EachSegment(tp rlmm.TopicIDPartition, fn func(*memory.SegmentFacts)) bool
}

// Sizes returns the remote storage of every topic in b (of every partition
// too when byPartition), sorted by topic then partition, each row priced
// at pricePerGiBMonth (0: no estimate). keep filters the partitions (nil:
// all). A partition whose segments are all deleted has no row.
func Sizes(b *Builder, byPartition bool, pricePerGiBMonth float64, keep func(rlmm.TopicIDPartition) bool) []Size {
	parts := b.Partitions()
	if keep != nil {
		parts = slices.DeleteFunc(parts, func(tp rlmm.TopicIDPartition) bool { return !keep(tp) })
	}
	return SizesOf(parts, b.cache, byPartition, pricePerGiBMonth)
}

// SizesOf is Sizes of the partitions parts of s: the one rule of a remote
// size, which inspect --sizes and rlmm serve's gauges both use. Every
// segment counts in Segments and RemoteBytes; only finished ones in the
// oldest offset and timestamp.
func SizesOf(parts []rlmm.TopicIDPartition, s Scanner, byPartition bool, pricePerGiBMonth float64) []Size {
	topics := map[rlmm.Uuid]*Size{}
	var rows []Size
	for _, tp := range parts {
		p := Size{Topic: tp.Topic, TopicID: tp.TopicID.String(), Partition: tp.Partition, Partitions: 1, OldestOffset: -1, OldestTimestampMs: -1}
		s.EachSegment(tp, func(m *memory.SegmentFacts) {
			p.Segments++
			p.RemoteBytes += int64(m.SizeInBytes)
			if m.State != rlmm.CopySegmentFinished {
				return
			}
			if p.OldestOffset < 0 || m.StartOffset < p.OldestOffset {
				p.OldestOffset = m.StartOffset
			}
			if p.OldestTimestampMs < 0 || m.MaxTimestampMs < p.OldestTimestampMs {
				p.OldestTimestampMs = m.MaxTimestampMs
			}
		})
		if p.Segments == 0 {
			continue
		}
		t := topics[tp.TopicID]
		if t == nil {
			t = &Size{Topic: tp.Topic, TopicID: p.TopicID, Partition: -1, OldestOffset: -1, OldestTimestampMs: -1}
			topics[tp.TopicID] = t
		}
		t.Partitions++
		t.Segments += p.Segments
		t.RemoteBytes += p.RemoteBytes
		t.OldestOffset = lowest(t.OldestOffset, p.OldestOffset)
		t.OldestTimestampMs = lowest(t.OldestTimestampMs, p.OldestTimestampMs)
		if byPartition {
			rows = append(rows, p)
		}
	}
	for _, t := range topics {
		rows = append(rows, *t)
	}
	for i := range rows {
		rows[i].MonthlyCost = float64(rows[i].RemoteBytes) / bytesPerGiB * pricePerGiBMonth
	}
	slices.SortFunc(rows, func(x, y Size) int {
		return cmp.Or(cmp.Compare(x.Topic, y.Topic), cmp.Compare(x.TopicID, y.TopicID), cmp.Compare(x.Partition, y.Partition))
	})
	return rows
}

// lowest returns the lower of a and b, -1 standing for none.
func lowest(a, b int64) int64 {
	switch {
	case a < 0:
		return b
	case b < 0:
		return a
	}
	return min(a, b)
}

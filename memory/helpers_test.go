package memory

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/rlmm-go/rlmm"
)

var (
	ctx = context.Background()
	// tpFoo and tpFooRenamed share the topic id and partition but differ in
	// name: Kafka (and rlmm) treat them as different partitions.
	tpFoo        = rlmm.TopicIDPartition{TopicID: rlmm.UuidFromBits(1, 2), Topic: "foo", Partition: 0}
	tpFooRenamed = rlmm.TopicIDPartition{TopicID: rlmm.UuidFromBits(1, 2), Topic: "bar", Partition: 0}
	tpBar1       = rlmm.TopicIDPartition{TopicID: rlmm.UuidFromBits(3, 4), Topic: "bar", Partition: 1}
)

// sid names segment n of tp.
func sid(tp rlmm.TopicIDPartition, n int) rlmm.SegmentID {
	return rlmm.SegmentID{TopicIDPartition: tp, ID: rlmm.UuidFromBits(0x5e9, int64(n))}
}

// ep is one leader epoch entry.
func ep(epoch int32, start int64) rlmm.EpochStart {
	return rlmm.EpochStart{Epoch: epoch, StartOffset: start}
}

// seg returns segment n of tp, COPY_SEGMENT_STARTED, [start, end], with the
// given epochs (default: epoch 0 from start) and a size of end-start+1.
func segMD(tp rlmm.TopicIDPartition, n int, start, end int64, epochs ...rlmm.EpochStart) rlmm.SegmentMetadata {
	if len(epochs) == 0 {
		epochs = []rlmm.EpochStart{ep(0, start)}
	}
	return rlmm.SegmentMetadata{
		ID: sid(tp, n), StartOffset: start, EndOffset: end, MaxTimestampMs: -1, BrokerID: 1,
		EventTimestampMs: 1000 + int64(n), LeaderEpochs: epochs, SizeInBytes: int32(end - start + 1),
		State: rlmm.CopySegmentStarted,
	}
}

// upd moves segment n of tp to state.
func upd(tp rlmm.TopicIDPartition, n int, state rlmm.SegmentState) rlmm.SegmentUpdate {
	return rlmm.SegmentUpdate{ID: sid(tp, n), EventTimestampMs: 2000 + int64(n), State: state, BrokerID: 2}
}

// mustOK fails the test at once on a non-nil error.
func mustOK(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
}

// addFinished adds md and moves it to COPY_SEGMENT_FINISHED.
func addFinished(t testing.TB, m *Manager, md rlmm.SegmentMetadata) {
	t.Helper()
	mustOK(t, m.AddSegment(ctx, md))
	mustOK(t, m.UpdateSegment(ctx, rlmm.SegmentUpdate{ID: md.ID, EventTimestampMs: md.EventTimestampMs, State: rlmm.CopySegmentFinished, BrokerID: md.BrokerID}))
}

// moveTo applies the updates that take segment n of tp from STARTED to state.
func moveTo(t testing.TB, m *Manager, tp rlmm.TopicIDPartition, n int, state rlmm.SegmentState) {
	t.Helper()
	path := map[rlmm.SegmentState][]rlmm.SegmentState{
		rlmm.CopySegmentStarted:    nil,
		rlmm.CopySegmentFinished:   {rlmm.CopySegmentFinished},
		rlmm.DeleteSegmentStarted:  {rlmm.CopySegmentFinished, rlmm.DeleteSegmentStarted},
		rlmm.DeleteSegmentFinished: {rlmm.CopySegmentFinished, rlmm.DeleteSegmentStarted, rlmm.DeleteSegmentFinished},
	}[state]
	for _, s := range path {
		mustOK(t, m.UpdateSegment(ctx, upd(tp, n, s)))
	}
}

// segNo recovers n from a segment id made by sid.
func segNo(md rlmm.SegmentMetadata) int { return int(md.ID.ID.LeastSignificantBits()) }

// segNos lists the segment numbers of mds in order.
func segNos(mds []rlmm.SegmentMetadata) []int {
	out := make([]int, 0, len(mds))
	for _, md := range mds {
		out = append(out, segNo(md))
	}
	return out
}

// lookupNo returns the number of the segment SegmentForOffset finds, -1 for a miss.
func lookupNo(t testing.TB, m *Manager, tp rlmm.TopicIDPartition, epoch int32, offset int64) int {
	t.Helper()
	md, ok, err := m.SegmentForOffset(tp, epoch, offset)
	mustOK(t, err)
	if !ok {
		return -1
	}
	if md.State != rlmm.CopySegmentFinished {
		t.Fatalf("lookup(%d, %d) returned a segment in %s", epoch, offset, md.State)
	}
	return segNo(md)
}

// highest returns HighestOffsetForEpoch, -1 for a miss.
func highest(t testing.TB, m *Manager, tp rlmm.TopicIDPartition, epoch int32) int64 {
	t.Helper()
	off, ok, err := m.HighestOffsetForEpoch(tp, epoch)
	mustOK(t, err)
	if !ok {
		return -1
	}
	return off
}

// sameError reports whether two errors are both nil or have the same text
// and sentinel.
func sameError(a, b error) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	for _, s := range []error{rlmm.ErrInvalidArgument, rlmm.ErrInvalidTransition, rlmm.ErrUnknownSegment, rlmm.ErrClosed} {
		if errors.Is(a, s) != errors.Is(b, s) {
			return false
		}
	}
	return a.Error() == b.Error()
}

// equalMDs compares two segment lists element by element.
func equalMDs(a, b []rlmm.SegmentMetadata) error {
	if len(a) != len(b) {
		return fmt.Errorf("length %d != %d: %v vs %v", len(a), len(b), segNos(a), segNos(b))
	}
	for i := range a {
		if !a[i].Equal(&b[i]) {
			return fmt.Errorf("element %d differs:\n got %v\nwant %v", i, a[i], b[i])
		}
	}
	return nil
}

// equalStates compares two exports.
func equalStates(a, b []PartitionState) error {
	if len(a) != len(b) {
		return fmt.Errorf("%d partitions != %d", len(a), len(b))
	}
	for i := range a {
		if a[i].TopicIDPartition != b[i].TopicIDPartition {
			return fmt.Errorf("partition %d: %s != %s", i, a[i].TopicIDPartition, b[i].TopicIDPartition)
		}
		if err := equalMDs(a[i].Segments, b[i].Segments); err != nil {
			return fmt.Errorf("partition %s segments: %w", a[i].TopicIDPartition, err)
		}
		if !slices.Equal(a[i].HighestOffsets, b[i].HighestOffsets) {
			return fmt.Errorf("partition %s highest offsets: %v != %v", a[i].TopicIDPartition, a[i].HighestOffsets, b[i].HighestOffsets)
		}
		if (a[i].Delete == nil) != (b[i].Delete == nil) || (a[i].Delete != nil && *a[i].Delete != *b[i].Delete) {
			return fmt.Errorf("partition %s delete: %v != %v", a[i].TopicIDPartition, a[i].Delete, b[i].Delete)
		}
	}
	return nil
}

// checkMembers checks every overlapped epoch's members of mgr: exactly the
// finished slots whose range for the epoch is not empty, each once.
func checkMembers(mgr *Manager) error {
	for _, tp := range mgr.Partitions() {
		if err := checkPartitionMembers(mgr, tp); err != nil {
			return err
		}
	}
	return nil
}

func checkPartitionMembers(mgr *Manager, tp rlmm.TopicIDPartition) error {
	p := mgr.lookup(tp)
	if p == nil {
		return nil
	}
	defer p.mu.RUnlock()
	for k := range p.epochs {
		es := &p.epochs[k]
		if !es.overlapped {
			if len(es.members) != 0 {
				return fmt.Errorf("%s epoch %d: not overlapped but %d members", tp, es.epoch, len(es.members))
			}
			continue
		}
		var want []int32
		for i := range p.slots {
			s := p.slot(i)
			if !s.used() || s.state != rlmm.CopySegmentFinished {
				continue
			}
			if cs, ce, ok := p.epochRange(i, s, es.epoch); ok && cs <= ce {
				want = append(want, i)
			}
		}
		got := slices.Sorted(slices.Values(es.members))
		if !slices.Equal(got, want) {
			return fmt.Errorf("%s epoch %d: members %v, the finished slots carrying it %v", tp, es.epoch, got, want)
		}
	}
	return nil
}

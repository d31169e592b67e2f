package eventlogtest

import (
	"context"
	"errors"
	"testing"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/eventlog"
)

// Truncater is implemented by a log under test that can delete the records
// of a partition below an offset, as Kafka's retention and DeleteRecords do
// (memlog.Log.DeleteRecordsBefore; kafkalog's tests wrap the log with one
// that calls DeleteRecords). The suite's rules about the log start offset
// run fully only on such a log; on another one they check that the start
// stays at 0.
type Truncater interface {
	DeleteRecordsBefore(ctx context.Context, partition int32, offset int64) error
}

// truncater returns l as a Truncater, or skips the test (saying why) when
// it is not one.
func truncater(t *testing.T, l eventlog.Log) Truncater {
	t.Helper()
	tr, ok := l.(Truncater)
	if !ok {
		t.Skipf("%T cannot delete records (it is no eventlogtest.Truncater), so its log start offset never moves", l)
	}
	return tr
}

// deleteBefore calls DeleteRecordsBefore and fails the test on error.
func deleteBefore(t *testing.T, tr Truncater, p int32, offset int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), deliveryTimeout)
	defer cancel()
	if err := tr.DeleteRecordsBefore(ctx, p, offset); err != nil {
		t.Fatalf("DeleteRecordsBefore(%d, %d): %v", p, offset, err)
	}
}

// startOffsets calls StartOffsets and fails the test on error.
func startOffsets(t *testing.T, l eventlog.Log, ps []int32) []int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), deliveryTimeout)
	defer cancel()
	so, err := l.StartOffsets(ctx, ps)
	if err != nil {
		t.Fatalf("StartOffsets(%v): %v", ps, err)
	}
	if len(so) != len(ps) {
		t.Fatalf("StartOffsets(%v) returned %d offsets, want %d", ps, len(so), len(ps))
	}
	return so
}

// equalOffsets reports whether got and want hold the same offsets.
func equalOffsets(got, want []int64) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if got[i] != want[i] {
			return false
		}
	}
	return true
}

// testStartOffsets: the log start offset is 0 until records are deleted,
// then the first offset held (the high-water mark when all are deleted);
// deleting moves neither the high-water mark nor later offsets.
func testStartOffsets(t *testing.T, open Open) {
	l := openLog(t, open, 3)
	all := []int32{0, 1, 2}
	if so := startOffsets(t, l, all); !equalOffsets(so, []int64{0, 0, 0}) {
		t.Fatalf("empty log: start offsets %v, want [0 0 0]", so)
	}
	publishN(t, l, 0, 0, 5)
	publishN(t, l, 1, 0, 2)
	if so := startOffsets(t, l, all); !equalOffsets(so, []int64{0, 0, 0}) {
		t.Fatalf("nothing deleted: start offsets %v, want [0 0 0]", so)
	}
	if _, err := l.StartOffsets(context.Background(), []int32{3}); !errors.Is(err, rlmm.ErrInvalidArgument) {
		t.Errorf("StartOffsets of partition 3 of 3: got %v, want rlmm.ErrInvalidArgument", err)
	}
	if so := startOffsets(t, l, []int32{}); len(so) != 0 {
		t.Errorf("StartOffsets of no partition: %v, want []", so)
	}
	tr := truncater(t, l)
	deleteBefore(t, tr, 0, 3)
	deleteBefore(t, tr, 1, 2) // every record of partition 1
	if so := startOffsets(t, l, []int32{2, 1, 0}); !equalOffsets(so, []int64{0, 2, 3}) {
		t.Fatalf("after deleting: start offsets of [2 1 0] %v, want [0 2 3]", so)
	}
	if hw := highWaterMarks(t, l, all); !equalOffsets(hw, []int64{5, 2, 0}) {
		t.Fatalf("deleting moved the high-water marks: %v, want [5 2 0]", hw)
	}
	if off := publish(t, l, 1, value(1, 2)); off != 2 {
		t.Fatalf("after deleting every record of partition 1, the next gets offset %d, want 2", off)
	}
}

// testAddBelowStart: Add below the log start delivers from the start (the
// first record's offset shows the gap) instead of waiting or skipping; a
// partition with every record deleted delivers the next record appended.
func testAddBelowStart(t *testing.T, open Open) {
	l := openLog(t, open, 2)
	publishN(t, l, 0, 0, 6)
	publishN(t, l, 1, 0, 3)
	tr := truncater(t, l)
	deleteBefore(t, tr, 0, 4)
	deleteBefore(t, tr, 1, 3)

	sub := subscribe(t, l)
	add(t, sub, 0, 1)
	add(t, sub, 1, 0)
	got := byPartition(pollUntil(t, sub, 2, deliveryTimeout))
	if len(got[1]) != 0 {
		t.Fatalf("partition 1 has no record left but delivered %v", got[1])
	}
	checkSequence(t, 0, got[0], 4) // offsets 4, 5: the first one above 1 shows [1, 4) is gone
	if extra := pollQuiet(t, sub, quietPeriod); len(extra) != 0 {
		t.Fatalf("delivered more than the records held: %d more, the first partition %d offset %d", len(extra), extra[0].Partition, extra[0].Offset)
	}
	publishN(t, l, 1, 3, 1)
	publishN(t, l, 0, 6, 1)
	got = byPartition(pollUntil(t, sub, 2, deliveryTimeout))
	checkSequence(t, 1, got[1], 3)
	checkSequence(t, 0, got[0], 6)
}

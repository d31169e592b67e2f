package cursor

import (
	"context"
	"errors"
	"iter"
	"testing"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/eventlog"
)

// anyPartition is a partition check that accepts every partition.
func anyPartition(int32) error { return nil }

// TestPollAdvancesPastLastRecordOfEachPartition checks the position rule on
// record orders a log may return: grouped by partition or interleaved.
func TestPollAdvancesPastLastRecordOfEachPartition(t *testing.T) {
	tests := []struct {
		name string
		recs []eventlog.Record
		want map[int32]int64
	}{
		{"one partition", []eventlog.Record{{Partition: 0, Offset: 3}, {Partition: 0, Offset: 4}}, map[int32]int64{0: 5, 1: 0}},
		{"grouped", []eventlog.Record{{Partition: 1, Offset: 0}, {Partition: 0, Offset: 3}, {Partition: 0, Offset: 4}}, map[int32]int64{0: 5, 1: 1}},
		{"interleaved", []eventlog.Record{{Partition: 0, Offset: 3}, {Partition: 1, Offset: 0}, {Partition: 0, Offset: 4}}, map[int32]int64{0: 5, 1: 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := New("testlog", anyPartition, func(iter.Seq2[int32, int64]) ([]eventlog.Record, <-chan struct{}, error) {
				return tc.recs, nil, nil
			})
			defer s.Close()
			if err := s.Add(0, 3); err != nil {
				t.Fatal(err)
			}
			if err := s.Add(1, 0); err != nil {
				t.Fatal(err)
			}
			got, err := s.Poll(context.Background())
			if err != nil || len(got) != len(tc.recs) {
				t.Fatalf("Poll = %d records, %v; want %d", len(got), err, len(tc.recs))
			}
			s.mu.Lock()
			seen := make(map[int32]int64, len(s.next))
			for p, o := range s.next {
				seen[p] = o
			}
			s.mu.Unlock()
			for p, o := range tc.want {
				if seen[p] != o {
					t.Errorf("partition %d next offset %d, want %d (all: %v)", p, seen[p], o, seen)
				}
			}
		})
	}
}

// TestClosedSetRefusesWithPrefixedErrClosed checks that each call on a
// closed set wraps rlmm.ErrClosed, and that Close wakes a waiting Poll.
func TestClosedSetRefusesWithPrefixedErrClosed(t *testing.T) {
	never := make(chan struct{})
	s := New("testlog", anyPartition, func(iter.Seq2[int32, int64]) ([]eventlog.Record, <-chan struct{}, error) {
		return nil, never, nil
	})
	done := make(chan error, 1)
	go func() {
		_, err := s.Poll(context.Background())
		done <- err
	}()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, rlmm.ErrClosed) {
		t.Errorf("waiting Poll after Close: %v, want ErrClosed", err)
	}
	for name, err := range map[string]error{"add": s.Add(0, 0), "remove": s.Remove(0)} {
		if !errors.Is(err, rlmm.ErrClosed) || err.Error()[:8] != "testlog:" {
			t.Errorf("%s after Close: %v, want testlog: ... ErrClosed", name, err)
		}
	}
	if err := s.Add(0, -1); !errors.Is(err, rlmm.ErrInvalidArgument) {
		t.Errorf("add at a negative offset: %v, want ErrInvalidArgument", err)
	}
}

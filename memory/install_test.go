package memory

import (
	"context"
	"errors"
	"testing"

	"github.com/rlmm-go/rlmm"
)

// builtOf returns a builder fed with seg (finished or not, as given).
func builtOf(t *testing.T, tp rlmm.TopicIDPartition, segs ...rlmm.SegmentMetadata) *PartitionBuilder {
	t.Helper()
	b := NewPartitionBuilder(tp, SizesOf(segs))
	for k := range segs {
		mustOK(t, b.AddSegment(&segs[k]))
	}
	return b
}

// Install publishes what the builders built, replacing each partition's
// state, exactly as Import of the same states does.
func TestInstallReplacesLikeImport(t *testing.T) {
	m := New()
	ctx := context.Background()
	mustOK(t, m.AddSegment(ctx, segMD(tpBar1, 9, 0, 9)))
	mustOK(t, m.AddSegment(ctx, segMD(tpFoo, 1, 0, 9)))
	done := builtOf(t, tpFoo, segMD(tpFoo, 2, 10, 19), segMD(tpFoo, 3, 20, 29))
	mustOK(t, done.Finish()) // finished by the caller, as a loader does
	mustOK(t, m.Install([]*PartitionBuilder{done, NewPartitionBuilder(tpBar1, BuildSizes{})}))

	want := New()
	mustOK(t, want.Import([]PartitionState{{TopicIDPartition: tpFoo, Segments: []rlmm.SegmentMetadata{segMD(tpFoo, 2, 10, 19), segMD(tpFoo, 3, 20, 29)}}}))
	mustOK(t, equalStates(m.Export(nil), want.Export(nil)))
	if got := m.Partitions(); len(got) != 1 || got[0] != tpFoo {
		t.Errorf("Partitions() = %v; want only %s (an empty builder removes its partition)", got, tpFoo)
	}
}

// Install refuses, changing nothing, builders that failed, repeat a
// partition or were installed before.
func TestInstallRefuses(t *testing.T) {
	failed := NewPartitionBuilder(tpFoo, BuildSizes{})
	bad := segMD(tpFoo, 1, 10, 5) // end before start
	if err := failed.AddSegment(&bad); err == nil {
		t.Fatal("AddSegment accepted a segment that fails Validate")
	}
	installed := NewPartitionBuilder(tpBar1, BuildSizes{})
	mustOK(t, New().Install([]*PartitionBuilder{installed}))
	cases := []struct {
		name     string
		builders func(t *testing.T) []*PartitionBuilder
	}{
		{"failed builder", func(*testing.T) []*PartitionBuilder { return []*PartitionBuilder{failed} }},
		{"nil builder", func(*testing.T) []*PartitionBuilder { return []*PartitionBuilder{nil} }},
		{"partition twice", func(t *testing.T) []*PartitionBuilder {
			return []*PartitionBuilder{builtOf(t, tpFoo, segMD(tpFoo, 1, 0, 9)), builtOf(t, tpFoo, segMD(tpFoo, 2, 10, 19))}
		}},
		{"installed before", func(*testing.T) []*PartitionBuilder { return []*PartitionBuilder{installed} }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := New()
			mustOK(t, m.AddSegment(context.Background(), segMD(tpFoo, 7, 0, 9)))
			before := m.Export(nil)
			if err := m.Install(c.builders(t)); !errors.Is(err, rlmm.ErrInvalidArgument) {
				t.Errorf("Install: %v; want ErrInvalidArgument", err)
			}
			mustOK(t, equalStates(m.Export(nil), before))
		})
	}
}

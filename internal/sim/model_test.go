package sim

import (
	"slices"
	"testing"

	"github.com/rlmm-go/rlmm"
)

func TestSegmentEpochs(t *testing.T) {
	p := &partitionModel{epochs: []rlmm.EpochStart{{Epoch: 0, StartOffset: 0}, {Epoch: 1, StartOffset: 100}, {Epoch: 3, StartOffset: 250}}}
	tests := []struct {
		name       string
		start, end int64
		want       []rlmm.EpochStart
	}{
		{"inside the first epoch", 10, 50, []rlmm.EpochStart{{Epoch: 0, StartOffset: 10}}},
		{"ending at an epoch's last offset", 0, 99, []rlmm.EpochStart{{Epoch: 0, StartOffset: 0}}},
		{"starting at an epoch boundary", 100, 120, []rlmm.EpochStart{{Epoch: 1, StartOffset: 100}}},
		{"spanning two epochs", 50, 150, []rlmm.EpochStart{{Epoch: 0, StartOffset: 50}, {Epoch: 1, StartOffset: 100}}},
		{"spanning three epochs", 90, 300, []rlmm.EpochStart{{Epoch: 0, StartOffset: 90}, {Epoch: 1, StartOffset: 100}, {Epoch: 3, StartOffset: 250}}},
		{"in the open last epoch", 400, 500, []rlmm.EpochStart{{Epoch: 3, StartOffset: 400}}},
	}
	for _, tc := range tests {
		if got := p.segmentEpochs(tc.start, tc.end); !slices.Equal(got, tc.want) {
			t.Errorf("%s: segmentEpochs(%d, %d) = %v, want %v", tc.name, tc.start, tc.end, got, tc.want)
		}
	}
}

func TestModelLifecycle(t *testing.T) {
	tp := rlmm.TopicIDPartition{TopicID: rlmm.UuidFromBits(1, 2), Topic: "t", Partition: 0}
	p := &partitionModel{tp: tp, ever: map[rlmm.Uuid]rlmm.SegmentMetadata{}}
	seg := func(n int64, start, end int64, epochs ...rlmm.EpochStart) rlmm.SegmentMetadata {
		return rlmm.SegmentMetadata{ID: rlmm.SegmentID{TopicIDPartition: tp, ID: rlmm.UuidFromBits(9, n)}, StartOffset: start,
			EndOffset: end, LeaderEpochs: epochs, State: rlmm.CopySegmentStarted}
	}
	a := seg(1, 0, 99, rlmm.EpochStart{Epoch: 0, StartOffset: 0}, rlmm.EpochStart{Epoch: 1, StartOffset: 60})
	b := seg(2, 100, 199, rlmm.EpochStart{Epoch: 1, StartOffset: 100})
	p.add(b)
	p.add(a)
	if len(p.finishedCovering(1, 150)) != 0 {
		t.Fatal("a STARTED segment must not cover an offset")
	}
	for _, id := range []rlmm.SegmentID{a.ID, b.ID} {
		if err := p.update(rlmm.SegmentUpdate{ID: id, State: rlmm.CopySegmentFinished, CustomMetadata: []byte{7}, BrokerID: 3}); err != nil {
			t.Fatal(err)
		}
	}
	if got := p.expectedList(); len(got) != 2 || got[0].ID != a.ID || got[1].BrokerID != 3 || string(got[1].CustomMetadata) != "\x07" {
		t.Fatalf("expectedList = %v, want a then b, updated", got)
	}
	if got := p.finishedCovering(1, 60); len(got) != 1 || got[0] != a.ID.ID {
		t.Fatalf("finishedCovering(1, 60) = %v, want segment a", got)
	}
	if got := p.finishedCovering(0, 60); len(got) != 0 {
		t.Fatalf("offset 60 is epoch 1 in segment a, yet epoch 0 covers it: %v", got)
	}
	if h := p.highestFinished(); h[0] != 59 || h[1] != 199 {
		t.Fatalf("highestFinished = %v, want 0:59 1:199", h)
	}
	if old, ok := p.oldestFinished(); !ok || old.ID != a.ID {
		t.Fatalf("oldestFinished = %v, %v; want a", old.ID, ok)
	}
	for _, st := range []rlmm.SegmentState{rlmm.DeleteSegmentStarted, rlmm.DeleteSegmentFinished} {
		if err := p.update(rlmm.SegmentUpdate{ID: a.ID, State: st}); err != nil {
			t.Fatal(err)
		}
	}
	if p.finishedCount() != 1 || len(p.segs) != 1 {
		t.Fatalf("after deleting a: %d finished, %d live; want 1, 1", p.finishedCount(), len(p.segs))
	}
	if err := p.update(rlmm.SegmentUpdate{ID: a.ID, State: rlmm.DeleteSegmentFinished}); err == nil {
		t.Fatal("an update of a deleted segment must fail in the model")
	}
	if _, known := p.ever[a.ID.ID]; !known {
		t.Fatal("a deleted segment must stay known to recognise lagging follower answers")
	}
	p.putDelete(rlmm.DeletePartitionFinished)
	if !p.deleted || len(p.expectedList()) != 0 {
		t.Fatal("DELETE_PARTITION_FINISHED must drop every segment")
	}
}

func TestDiffSegments(t *testing.T) {
	tp := rlmm.TopicIDPartition{Topic: "t"}
	m := func(n int64) rlmm.SegmentMetadata {
		return rlmm.SegmentMetadata{ID: rlmm.SegmentID{TopicIDPartition: tp, ID: rlmm.UuidFromBits(0, n)}, LeaderEpochs: []rlmm.EpochStart{{}}}
	}
	changed := m(2)
	changed.State = rlmm.CopySegmentFinished
	tests := []struct {
		name      string
		got, want []rlmm.SegmentMetadata
		same      bool
	}{
		{"both empty", nil, nil, true},
		{"equal", []rlmm.SegmentMetadata{m(1), m(2)}, []rlmm.SegmentMetadata{m(1), m(2)}, true},
		{"a field differs", []rlmm.SegmentMetadata{m(1), changed}, []rlmm.SegmentMetadata{m(1), m(2)}, false},
		{"one extra", []rlmm.SegmentMetadata{m(1), m(2)}, []rlmm.SegmentMetadata{m(1)}, false},
		{"one missing", []rlmm.SegmentMetadata{m(1)}, []rlmm.SegmentMetadata{m(1), m(2)}, false},
	}
	for _, tc := range tests {
		if d := diffSegments(tc.got, tc.want); (d == "") != tc.same {
			t.Errorf("%s: diffSegments = %q, want same=%v", tc.name, d, tc.same)
		}
	}
}

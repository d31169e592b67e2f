package topicbased

import (
	"cmp"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/eventlog/memlog"
)

// model is the deliberately simple truth the manager is checked against: the
// state the log's events produce, segments in a map scanned linearly.
type model struct {
	parts map[rlmm.TopicIDPartition]*modelPartition
}

type modelPartition struct {
	segs    map[rlmm.Uuid]rlmm.SegmentMetadata
	highest map[int32]int64
}

func (md *model) part(tp rlmm.TopicIDPartition) *modelPartition {
	p := md.parts[tp]
	if p == nil {
		p = &modelPartition{segs: map[rlmm.Uuid]rlmm.SegmentMetadata{}, highest: map[int32]int64{}}
		md.parts[tp] = p
	}
	return p
}

// add returns the error class the state machine gives, applying on success.
func (md *model) add(s rlmm.SegmentMetadata) error {
	p := md.part(s.ID.TopicIDPartition)
	if cur, ok := p.segs[s.ID.ID]; ok {
		if cur.State == rlmm.CopySegmentStarted {
			return nil
		}
		return rlmm.ErrInvalidTransition
	}
	p.segs[s.ID.ID] = s.Clone()
	return nil
}

func (md *model) update(u rlmm.SegmentUpdate) error {
	p := md.part(u.ID.TopicIDPartition)
	cur, ok := p.segs[u.ID.ID]
	if !ok {
		return rlmm.ErrUnknownSegment
	}
	if !rlmm.CanTransition(cur.State, u.State) {
		return rlmm.ErrInvalidTransition
	}
	if u.State == rlmm.DeleteSegmentFinished {
		delete(p.segs, u.ID.ID)
		return nil
	}
	next, _ := cur.WithUpdate(u)
	p.segs[u.ID.ID] = next
	if u.State == rlmm.CopySegmentFinished {
		for _, e := range next.LeaderEpochs {
			_, end, _ := next.EpochRange(e.Epoch)
			if h, ok := p.highest[e.Epoch]; !ok || end > h {
				p.highest[e.Epoch] = end
			}
		}
	}
	return nil
}

func (md *model) partitionDelete(d rlmm.PartitionDelete) {
	if d.State == rlmm.DeletePartitionFinished {
		delete(md.parts, d.TopicIDPartition)
	}
}

func (md *model) list(tp rlmm.TopicIDPartition, epoch int32, all bool) []rlmm.SegmentMetadata {
	var out []rlmm.SegmentMetadata
	if p := md.parts[tp]; p != nil {
		for _, s := range p.segs {
			if _, _, ok := s.EpochRange(epoch); all || ok {
				out = append(out, s)
			}
		}
	}
	slices.SortFunc(out, func(a, b rlmm.SegmentMetadata) int {
		return cmp.Or(cmp.Compare(a.StartOffset, b.StartOffset), cmp.Compare(a.EndOffset, b.EndOffset),
			slices.Compare(a.ID.ID[:], b.ID.ID[:]))
	})
	return out
}

// rapidUniverse: four user partitions, two sharing a metadata partition.
func rapidUniverse(t testing.TB) []rlmm.TopicIDPartition {
	shared, mp := sharingPartitions(t, 3, 2)
	others := distinctPartitions(t, 3, 3)
	out := slices.Clone(shared)
	for i, tp := range others {
		if int32(i) != mp {
			out = append(out, tp)
		}
	}
	return out
}

// rapidSegment is segment k of tp: a fixed shape, so a re-add after a
// deletion is the same segment again. Segments overlap and span epochs.
func rapidSegment(tp rlmm.TopicIDPartition, k int) rlmm.SegmentMetadata {
	start := int64(k) * 50
	md := segment(tp, uint64(k)+uint64(tp.Partition)*1000, start, start+99, int64(k/2), start, int64(k/2+1), start+60)
	md.TxnIndexEmpty = k%3 != 0
	return md
}

// errCheckNotReady ends a check whose partition turned NotReady.
var errCheckNotReady = errors.New("not ready")

type rapidSystem struct {
	log      *memlog.Log
	dir      string
	m        *Manager // the manager under test: restarted, reassigned
	other    *Manager // another broker on the same log, hosting everything
	model    *model
	universe []rlmm.TopicIDPartition
	hosted   map[rlmm.TopicIDPartition]bool
	// foreign: the other broker wrote since m last caught up, so m's plain
	// reads may lag the model.
	foreign bool
}

func (s *rapidSystem) start(t *rapid.T) {
	m, err := Start(context.Background(), Config{Log: s.log, SnapshotDir: s.dir, SnapshotInterval: -1})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	s.m = m
	var hosted []rlmm.TopicIDPartition
	for tp, h := range s.hosted {
		if h {
			hosted = append(hosted, tp)
		}
	}
	if err := m.OnPartitionLeadershipChanges(context.Background(), hosted, nil); err != nil {
		t.Fatalf("assign after restart: %v", err)
	}
}

// assigned reports whether tp is hosted: the manager keeps its state.
func (s *rapidSystem) assigned(tp rlmm.TopicIDPartition) bool {
	return s.hosted[tp]
}

// checkRead: every read is ErrNotReady, ErrNotAssigned for a partition not
// hosted, or equal to the model. After writes of the other broker, m first catches
// up (Sync): its plain reads may lag another broker's writes, as in Kafka.
// A read may turn NotReady between two reads of one check (a metadata
// partition replayed because the snapshot's state of one of its partitions
// could not be built): the check of tp ends there.
func (s *rapidSystem) check(t *rapid.T, tp rlmm.TopicIDPartition) {
	if s.foreign && s.assigned(tp) {
		if err := s.m.Sync(context.Background(), tp); err != nil {
			t.Fatalf("%s: Sync: %v", tp, err)
		}
	}
	defer func() {
		if r := recover(); r != nil && r != errCheckNotReady {
			panic(r)
		}
	}()
	notReady := func(err error) {
		if errors.Is(err, rlmm.ErrNotReady) {
			if !s.assigned(tp) {
				t.Fatalf("%s: ErrNotReady for an unassigned partition", tp)
			}
			panic(errCheckNotReady)
		}
	}
	got, err := s.m.ListSegments(tp)
	notReady(err)
	if !s.assigned(tp) {
		if len(got) != 0 || !errors.Is(err, rlmm.ErrNotAssigned) {
			t.Fatalf("%s: unhosted partition: %d segments, %v; want ErrNotAssigned", tp, len(got), err)
		}
		return
	}
	if err != nil {
		t.Fatalf("%s: ListSegments: %v", tp, err)
	}
	if err := sameSegments(got, s.model.list(tp, 0, true)); err != nil {
		t.Fatalf("%s: ListSegments: %v", tp, err)
	}
	mp := s.model.parts[tp]
	for epoch := int32(0); epoch <= 4; epoch++ {
		byEpoch, err := s.m.ListSegmentsForEpoch(tp, epoch)
		notReady(err)
		if err != nil {
			t.Fatalf("ListSegmentsForEpoch: %v", err)
		}
		want := s.model.list(tp, epoch, false)
		if err := sameSegments(byEpoch, want); err != nil {
			t.Fatalf("%s: ListSegmentsForEpoch(%d): %v", tp, epoch, err)
		}
		var size int64
		for _, w := range want {
			size += int64(w.SizeInBytes)
		}
		got, err := s.m.RemoteLogSize(tp, epoch)
		notReady(err)
		if err != nil || got != size {
			t.Fatalf("%s: RemoteLogSize(%d) = %d, %v; want %d", tp, epoch, got, err, size)
		}
		h, ok, err := s.m.HighestOffsetForEpoch(tp, epoch)
		notReady(err)
		var wantH int64
		wantOK := false
		if mp != nil {
			wantH, wantOK = mp.highest[epoch]
		}
		if err != nil || ok != wantOK || h != wantH {
			t.Fatalf("%s: HighestOffsetForEpoch(%d) = %d, %v, %v; want %d, %v", tp, epoch, h, ok, err, wantH, wantOK)
		}
		for off := int64(0); off < 400; off += 17 {
			seg, ok, err := s.m.SegmentForOffset(tp, epoch, off)
			notReady(err)
			if err != nil {
				t.Fatalf("SegmentForOffset: %v", err)
			}
			covering := false
			for _, w := range want {
				if a, b, _ := w.EpochRange(epoch); w.State == rlmm.CopySegmentFinished && off >= a && off <= b {
					covering = true
					if ok && w.ID == seg.ID && !w.Equal(&seg) {
						t.Fatalf("%s: SegmentForOffset(%d, %d) = %v; the model has %v", tp, epoch, off, seg, w)
					}
				}
			}
			if ok != covering {
				t.Fatalf("%s: SegmentForOffset(%d, %d) found=%v; a finished segment covers it: %v", tp, epoch, off, ok, covering)
			}
			if ok {
				if a, b, in := seg.EpochRange(epoch); seg.State != rlmm.CopySegmentFinished || !in || off < a || off > b {
					t.Fatalf("%s: SegmentForOffset(%d, %d) returned %v, which does not cover it", tp, epoch, off, seg)
				}
			}
		}
	}
}

func TestRapidAgainstModel(t *testing.T) {
	universe := rapidUniverse(t)
	rapid.Check(t, func(t *rapid.T) {
		dir, err := os.MkdirTemp("", "rlmm-rapid-")
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = os.RemoveAll(dir) }()
		s := &rapidSystem{log: memlog.New(3), dir: dir, model: &model{parts: map[rlmm.TopicIDPartition]*modelPartition{}},
			universe: universe, hosted: map[rlmm.TopicIDPartition]bool{}}
		defer func() { _ = s.log.Close() }()
		s.start(t)
		defer func() { _ = s.m.Close() }()
		other, err := Start(context.Background(), Config{Log: s.log})
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = other.Close() }()
		s.other = other
		ctx := context.Background()
		if err := other.OnPartitionLeadershipChanges(ctx, universe, nil); err != nil {
			t.Fatal(err)
		}
		pickTP := func(t *rapid.T) rlmm.TopicIDPartition {
			return rapid.SampledFrom(universe).Draw(t, "tp")
		}
		mutation := func(t *rapid.T, tp rlmm.TopicIDPartition, err, want error) {
			if !s.assigned(tp) {
				if !errors.Is(err, rlmm.ErrNotAssigned) {
					t.Fatalf("mutation of unassigned %s: %v; want ErrNotAssigned", tp, err)
				}
				return
			}
			if !isErr(err, want) {
				t.Fatalf("mutation of %s: %v; want %v", tp, err, want)
			}
		}
		t.Repeat(map[string]func(*rapid.T){
			"add": func(t *rapid.T) {
				tp := pickTP(t)
				md := rapidSegment(tp, rapid.IntRange(0, 6).Draw(t, "k"))
				var want error
				if s.assigned(tp) {
					want = s.model.add(md)
				}
				mutation(t, tp, s.m.AddSegment(ctx, md), want)
			},
			"update": func(t *rapid.T) {
				tp := pickTP(t)
				md := rapidSegment(tp, rapid.IntRange(0, 6).Draw(t, "k"))
				st := rlmm.SegmentState(rapid.IntRange(1, 3).Draw(t, "state"))
				u := update(md, st)
				var want error
				if s.assigned(tp) {
					want = s.model.update(u)
				}
				mutation(t, tp, s.m.UpdateSegment(ctx, u), want)
			},
			"partitionDelete": func(t *rapid.T) {
				tp := pickTP(t)
				d := rlmm.PartitionDelete{TopicIDPartition: tp, State: rlmm.PartitionDeleteState(rapid.IntRange(0, 2).Draw(t, "state"))}
				if s.assigned(tp) {
					s.model.partitionDelete(d)
				}
				mutation(t, tp, s.m.PutPartitionDelete(ctx, d), nil)
			},
			"otherBroker": func(t *rapid.T) {
				// Another broker copies or deletes a segment of any partition.
				tp := pickTP(t)
				md := rapidSegment(tp, rapid.IntRange(0, 6).Draw(t, "k"))
				var err, want error
				if rapid.Bool().Draw(t, "add") {
					want = s.model.add(md)
					err = s.other.AddSegment(ctx, md)
				} else {
					u := update(md, rlmm.SegmentState(rapid.IntRange(1, 3).Draw(t, "state")))
					want = s.model.update(u)
					err = s.other.UpdateSegment(ctx, u)
				}
				if !isErr(err, want) {
					t.Fatalf("other broker's mutation of %s: %v; want %v", tp, err, want)
				}
				s.foreign = true
			},
			"host": func(t *rapid.T) {
				tp := pickTP(t)
				s.hosted[tp] = true
				if err := s.m.OnPartitionLeadershipChanges(ctx, nil, []rlmm.TopicIDPartition{tp}); err != nil {
					t.Fatal(err)
				}
			},
			"stop": func(t *rapid.T) {
				tp := pickTP(t)
				s.hosted[tp] = false
				if err := s.m.OnStopPartitions(ctx, []rlmm.TopicIDPartition{tp}); err != nil {
					t.Fatal(err)
				}
			},
			"snapshot": func(t *rapid.T) {
				if err := s.m.WriteSnapshot(ctx); err != nil {
					t.Fatal(err)
				}
			},
			"restart": func(t *rapid.T) {
				if rapid.Bool().Draw(t, "flush") {
					if err := s.m.ShutdownAndFlush(ctx); err != nil {
						t.Fatal(err)
					}
				} else if err := s.m.Close(); err != nil {
					t.Fatal(err)
				}
				s.start(t)
			},
			"corruptSnapshot": func(t *rapid.T) {
				path := filepath.Join(s.dir, SnapshotFileName)
				b, err := os.ReadFile(path)
				if err != nil {
					t.Skip("no snapshot yet")
				}
				i := rapid.IntRange(0, len(b)-1).Draw(t, "byte")
				b[i] ^= byte(rapid.IntRange(1, 255).Draw(t, "xor"))
				if err := os.WriteFile(path, b, 0o644); err != nil {
					t.Fatal(err)
				}
			},
			"breakSnapshotState": func(t *rapid.T) {
				// Checksums valid, one segment invalid: the restart loads the
				// snapshot and replays that segment's metadata partition.
				path := filepath.Join(s.dir, SnapshotFileName)
				b, err := os.ReadFile(path)
				if err != nil {
					t.Skip("no snapshot yet")
				}
				snap, err := decodeSnapshot(b)
				if err != nil {
					t.Skip("snapshot already damaged")
				}
				var segs []*rlmm.SegmentMetadata
				for i := range snap.states {
					for j := range snap.states[i].Segments {
						segs = append(segs, &snap.states[i].Segments[j])
					}
				}
				if len(segs) == 0 {
					t.Skip("no segment in the snapshot")
				}
				seg := segs[rapid.IntRange(0, len(segs)-1).Draw(t, "segment")]
				seg.EndOffset = seg.StartOffset - 1
				if err := os.WriteFile(path, encodeSnapshot(snap), 0o644); err != nil {
					t.Fatal(err)
				}
			},
			"": func(t *rapid.T) {
				for _, tp := range universe {
					s.check(t, tp)
				}
				s.foreign = false
			},
		})
	})
}

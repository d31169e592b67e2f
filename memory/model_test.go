package memory

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/rlmm-go/rlmm"
	"pgregory.net/rapid"
)

// The reference model: the rules of the package doc written as plainly as
// possible, a list of segments per partition scanned linearly on every read.

type modelSeg struct {
	md  rlmm.SegmentMetadata
	seq int // when the segment last changed state: the newest finished wins
}

type modelPart struct {
	segs    []modelSeg
	highest map[int32]int64
	del     *rlmm.PartitionDelete
}

type model struct {
	parts map[rlmm.TopicIDPartition]*modelPart
	seq   int
}

func newModel() *model { return &model{parts: map[rlmm.TopicIDPartition]*modelPart{}} }

func (m *model) part(tp rlmm.TopicIDPartition) *modelPart {
	p := m.parts[tp]
	if p == nil {
		p = &modelPart{highest: map[int32]int64{}}
		m.parts[tp] = p
	}
	return p
}

// tidy forgets a partition that holds nothing.
func (m *model) tidy(tp rlmm.TopicIDPartition) {
	if p := m.parts[tp]; p != nil && len(p.segs) == 0 && len(p.highest) == 0 && p.del == nil {
		delete(m.parts, tp)
	}
}

func (m *model) find(id rlmm.SegmentID) (*modelPart, int) {
	p := m.parts[id.TopicIDPartition]
	if p == nil {
		return nil, -1
	}
	for i := range p.segs {
		if p.segs[i].md.ID == id {
			return p, i
		}
	}
	return p, -1
}

// add returns the sentinel the Manager must return.
func (m *model) add(md rlmm.SegmentMetadata) error {
	if md.Validate() != nil || md.State != rlmm.CopySegmentStarted {
		return rlmm.ErrInvalidArgument
	}
	if p, i := m.find(md.ID); i >= 0 {
		if p.segs[i].md.State == rlmm.CopySegmentStarted {
			return nil
		}
		return rlmm.ErrInvalidTransition
	}
	m.seq++
	p := m.part(md.ID.TopicIDPartition)
	p.segs = append(p.segs, modelSeg{md: md.Clone(), seq: m.seq})
	return nil
}

func (m *model) update(u rlmm.SegmentUpdate) error {
	if u.Validate() != nil {
		return rlmm.ErrInvalidArgument
	}
	p, i := m.find(u.ID)
	if i < 0 {
		return rlmm.ErrUnknownSegment
	}
	if !rlmm.CanTransition(p.segs[i].md.State, u.State) {
		return rlmm.ErrInvalidTransition
	}
	md, err := p.segs[i].md.WithUpdate(u)
	if err != nil {
		panic(err)
	}
	m.seq++
	p.segs[i] = modelSeg{md: md, seq: m.seq}
	switch u.State {
	case rlmm.CopySegmentFinished:
		for _, e := range md.LeaderEpochs {
			_, end, _ := md.EpochRange(e.Epoch)
			if h, ok := p.highest[e.Epoch]; !ok || end > h {
				p.highest[e.Epoch] = end
			}
		}
	case rlmm.DeleteSegmentFinished:
		p.segs = slices.Delete(p.segs, i, i+1)
		m.tidy(u.ID.TopicIDPartition)
	}
	return nil
}

func (m *model) partitionDelete(d rlmm.PartitionDelete) error {
	if d.Validate() != nil {
		return rlmm.ErrInvalidArgument
	}
	if d.State == rlmm.DeletePartitionFinished {
		delete(m.parts, d.TopicIDPartition)
		return nil
	}
	m.part(d.TopicIDPartition).del = &d
	return nil
}

func (m *model) lookup(tp rlmm.TopicIDPartition, epoch int32, offset int64) (rlmm.SegmentMetadata, bool) {
	best := -1
	var out rlmm.SegmentMetadata
	if p := m.parts[tp]; p != nil {
		for _, s := range p.segs {
			start, end, ok := s.md.EpochRange(epoch)
			if s.md.State == rlmm.CopySegmentFinished && ok && start <= offset && offset <= end && s.seq > best {
				best, out = s.seq, s.md
			}
		}
	}
	return out, best >= 0
}

func (m *model) highestFor(tp rlmm.TopicIDPartition, epoch int32) (int64, bool) {
	if p := m.parts[tp]; p != nil {
		h, ok := p.highest[epoch]
		return h, ok
	}
	return 0, false
}

func (m *model) list(tp rlmm.TopicIDPartition, epoch int32, all bool) []rlmm.SegmentMetadata {
	var out []rlmm.SegmentMetadata
	if p := m.parts[tp]; p != nil {
		for _, s := range p.segs {
			if _, _, ok := s.md.EpochRange(epoch); all || ok {
				out = append(out, s.md)
			}
		}
	}
	slices.SortFunc(out, func(a, b rlmm.SegmentMetadata) int {
		return cmp.Or(cmp.Compare(a.StartOffset, b.StartOffset), cmp.Compare(a.EndOffset, b.EndOffset), bytes.Compare(a.ID.ID[:], b.ID.ID[:]))
	})
	return out
}

func (m *model) size(tp rlmm.TopicIDPartition, epoch int32) int64 {
	var n int64
	for _, md := range m.list(tp, epoch, false) {
		n += int64(md.SizeInBytes)
	}
	return n
}

func (m *model) nextTxn(tp rlmm.TopicIDPartition, epoch int32, offset int64) (rlmm.SegmentMetadata, bool) {
	md, ok := m.lookup(tp, epoch, offset)
	for ok && md.TxnIndexEmpty {
		_, end, _ := md.EpochRange(epoch)
		md, ok = m.lookup(tp, epoch, max(end, md.EndOffset)+1)
	}
	return md, ok
}

func (m *model) view(tp rlmm.TopicIDPartition) (PartitionView, bool) {
	p := m.parts[tp]
	if p == nil {
		return PartitionView{}, false
	}
	v := PartitionView{TopicIDPartition: tp, StartOffset: -1, EndOffset: -1, Delete: p.del}
	epochs := map[int32]int64{}
	for e, h := range p.highest {
		epochs[e] = h
	}
	for _, s := range p.segs {
		v.SegmentsByState[s.md.State]++
		v.RemoteBytes += int64(s.md.SizeInBytes)
		if v.StartOffset < 0 || s.md.StartOffset < v.StartOffset {
			v.StartOffset = s.md.StartOffset
		}
		v.EndOffset = max(v.EndOffset, s.md.EndOffset)
		for _, e := range s.md.LeaderEpochs {
			if _, ok := epochs[e.Epoch]; !ok {
				epochs[e.Epoch] = -1
			}
		}
	}
	v.Epochs = []EpochOffset{}
	for _, e := range slices.Sorted(maps.Keys(epochs)) {
		v.Epochs = append(v.Epochs, EpochOffset{Epoch: e, Offset: epochs[e]})
	}
	return v, true
}

func (m *model) partitions() []rlmm.TopicIDPartition {
	return slices.SortedFunc(maps.Keys(m.parts), compareTP)
}

// sentinelOf names which sentinel err wraps (nil for nil).
func sentinelOf(err error) error {
	for _, s := range []error{rlmm.ErrInvalidArgument, rlmm.ErrInvalidTransition, rlmm.ErrUnknownSegment, rlmm.ErrClosed} {
		if errors.Is(err, s) {
			return s
		}
	}
	return err
}

// readGrid bounds the reads compared exhaustively.
var (
	modelTPs     = []rlmm.TopicIDPartition{tpFoo, tpFooRenamed, tpBar1}
	modelEpochs  = []int32{0, 1, 2, 3, 4}
	modelOffsetH = int64(48)
)

// compareRead compares one (tp, epoch, offset) read of every kind.
func compareRead(mgr *Manager, mod *model, tp rlmm.TopicIDPartition, epoch int32, offset int64) error {
	got, ok, err := mgr.SegmentForOffset(tp, epoch, offset)
	want, wok := mod.lookup(tp, epoch, offset)
	if err != nil || ok != wok || (ok && !got.Equal(&want)) {
		return fmt.Errorf("SegmentForOffset(%s, %d, %d) = %v, %t, %v; model %v, %t", tp, epoch, offset, got, ok, err, want, wok)
	}
	var into rlmm.SegmentMetadata
	ok, err = mgr.SegmentForOffsetInto(tp, epoch, offset, &into)
	if err != nil || ok != wok || (ok && !into.Equal(&want)) {
		return fmt.Errorf("SegmentForOffsetInto(%s, %d, %d) = %v, %t, %v; model %v, %t", tp, epoch, offset, into, ok, err, want, wok)
	}
	got, ok, err = mgr.NextSegmentWithTxnIndex(tp, epoch, offset)
	want, wok = mod.nextTxn(tp, epoch, offset)
	if err != nil || ok != wok || (ok && !got.Equal(&want)) {
		return fmt.Errorf("NextSegmentWithTxnIndex(%s, %d, %d) = %v, %t, %v; model %v, %t", tp, epoch, offset, got, ok, err, want, wok)
	}
	return nil
}

// comparePartition compares every per-partition and per-epoch read of tp.
func comparePartition(mgr *Manager, mod *model, tp rlmm.TopicIDPartition) error {
	all, err := mgr.ListSegments(tp)
	if err != nil {
		return err
	}
	if err := equalMDs(all, mod.list(tp, 0, true)); err != nil {
		return fmt.Errorf("ListSegments(%s): %w", tp, err)
	}
	for _, e := range modelEpochs {
		l, err := mgr.ListSegmentsForEpoch(tp, e)
		if err != nil {
			return err
		}
		if err := equalMDs(l, mod.list(tp, e, false)); err != nil {
			return fmt.Errorf("ListSegmentsForEpoch(%s, %d): %w", tp, e, err)
		}
		h, ok, err := mgr.HighestOffsetForEpoch(tp, e)
		wh, wok := mod.highestFor(tp, e)
		if err != nil || ok != wok || h != wh {
			return fmt.Errorf("HighestOffsetForEpoch(%s, %d) = %d, %t, %v; model %d, %t", tp, e, h, ok, err, wh, wok)
		}
		sz, err := mgr.RemoteLogSize(tp, e)
		if err != nil || sz != mod.size(tp, e) {
			return fmt.Errorf("RemoteLogSize(%s, %d) = %d, %v; model %d", tp, e, sz, err, mod.size(tp, e))
		}
	}
	v, ok := mgr.View(tp)
	wv, wok := mod.view(tp)
	if ok != wok || (ok && !equalViews(v, wv)) {
		return fmt.Errorf("View(%s) = %+v, %t; model %+v, %t", tp, v, ok, wv, wok)
	}
	return nil
}

func equalViews(a, b PartitionView) bool {
	delEq := (a.Delete == nil) == (b.Delete == nil) && (a.Delete == nil || *a.Delete == *b.Delete)
	return delEq && a.TopicIDPartition == b.TopicIDPartition && a.SegmentsByState == b.SegmentsByState &&
		a.RemoteBytes == b.RemoteBytes && a.StartOffset == b.StartOffset && a.EndOffset == b.EndOffset &&
		slices.Equal(a.Epochs, b.Epochs)
}

// compareAll compares every read in the grid.
func compareAll(mgr *Manager, mod *model) error {
	if got, want := mgr.Partitions(), mod.partitions(); !slices.Equal(got, want) {
		return fmt.Errorf("Partitions() = %v, model %v", got, want)
	}
	for _, tp := range modelTPs {
		if err := comparePartition(mgr, mod, tp); err != nil {
			return err
		}
		for _, e := range modelEpochs {
			for o := int64(-2); o <= modelOffsetH; o++ {
				if err := compareRead(mgr, mod, tp, e, o); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// compareEdges compares lookups at the edges of every live segment's epoch
// ranges, where envelopes change.
func compareEdges(mgr *Manager, mod *model) error {
	for _, tp := range mod.partitions() {
		for _, s := range mod.parts[tp].segs {
			for _, e := range s.md.LeaderEpochs {
				start, end, _ := s.md.EpochRange(e.Epoch)
				for _, o := range []int64{start - 1, start, (start + end) / 2, end, end + 1} {
					if err := compareRead(mgr, mod, tp, e.Epoch, o); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}

// Generators. Small domains so that ids collide, segments overlap and
// epochs repeat.

func genTP(t *rapid.T) rlmm.TopicIDPartition {
	// Mostly one partition, so that segments meet.
	return rapid.SampledFrom([]rlmm.TopicIDPartition{tpFoo, tpFoo, tpFoo, tpFoo, tpFoo, tpFooRenamed, tpBar1}).Draw(t, "tp")
}

func genCustom(t *rapid.T, label string) []byte {
	switch rapid.IntRange(0, 2).Draw(t, label) {
	case 0:
		return nil
	case 1:
		return []byte{}
	}
	return rapid.SliceOfN(rapid.Byte(), 1, 4).Draw(t, label+"Bytes")
}

func genSegment(t *rapid.T) rlmm.SegmentMetadata {
	tp := genTP(t)
	start := rapid.Int64Range(0, 24).Draw(t, "start")
	end := start + rapid.Int64Range(0, 12).Draw(t, "len")
	n := rapid.IntRange(1, 3).Draw(t, "epochs")
	epoch := rapid.Int32Range(0, 1).Draw(t, "epoch0")
	epochs := []rlmm.EpochStart{{Epoch: epoch, StartOffset: start}}
	for k := 1; k < n; k++ {
		epoch += rapid.Int32Range(1, 2).Draw(t, "epochStep")
		prev := epochs[k-1].StartOffset
		epochs = append(epochs, rlmm.EpochStart{Epoch: epoch, StartOffset: rapid.Int64Range(min(prev+1, end), end).Draw(t, "epochStart")})
	}
	state := rlmm.CopySegmentStarted
	// One segment in ten breaks a rule: Kafka's (rejected) or only the
	// stricter sanity rules (accepted, and must still be served right).
	switch rapid.IntRange(0, 19).Draw(t, "odd") {
	case 0:
		start = -1 - start
	case 1:
		end = start - 1
	case 2:
		epochs = nil
	case 3:
		epochs = append(epochs, epochs[len(epochs)-1]) // duplicate epoch
	case 4:
		state = rlmm.SegmentState(rapid.IntRange(1, 4).Draw(t, "state"))
	case 5, 6:
		// Epoch starts outside the segment or decreasing: Kafka accepts them.
		for k := range epochs {
			epochs[k].StartOffset = rapid.Int64Range(start-2, end+2).Draw(t, "oddEpochStart")
		}
	}
	return rlmm.SegmentMetadata{
		ID: sid(tp, rapid.IntRange(0, 5).Draw(t, "id")), StartOffset: start, EndOffset: end,
		MaxTimestampMs: rapid.Int64Range(-1, 9).Draw(t, "maxTs"), BrokerID: rapid.Int32Range(0, 2).Draw(t, "broker"),
		EventTimestampMs: rapid.Int64Range(0, 9).Draw(t, "ts"), LeaderEpochs: epochs,
		SizeInBytes: rapid.Int32Range(-1, 100).Draw(t, "size"), CustomMetadata: genCustom(t, "custom"),
		State: state, TxnIndexEmpty: rapid.Bool().Draw(t, "txnEmpty"),
	}
}

func genUpdate(t *rapid.T) rlmm.SegmentUpdate {
	return rlmm.SegmentUpdate{
		ID:               sid(genTP(t), rapid.IntRange(0, 5).Draw(t, "id")),
		EventTimestampMs: rapid.Int64Range(0, 9).Draw(t, "ts"),
		CustomMetadata:   genCustom(t, "custom"),
		// Mostly the three valid targets; 0 (STARTED) and 4 are invalid.
		State:    rlmm.SegmentState(rapid.SampledFrom([]int8{1, 1, 2, 2, 3, 3, 0, 4}).Draw(t, "state")),
		BrokerID: rapid.Int32Range(0, 2).Draw(t, "broker"),
	}
}

// updateExisting updates a segment that exists, mostly to its next state
// in the lifecycle, to reach deep states often.
func updateExisting(t *rapid.T, mgr *Manager, mod *model, checkErr func(string, error, error, error)) {
	var segs []rlmm.SegmentMetadata
	for _, tp := range mod.partitions() {
		for _, s := range mod.parts[tp].segs {
			segs = append(segs, s.md)
		}
	}
	if len(segs) == 0 {
		return // nothing to update yet
	}
	u := genUpdate(t)
	md := rapid.SampledFrom(segs).Draw(t, "existing")
	u.ID = md.ID
	if rapid.IntRange(0, 3).Draw(t, "natural") > 0 {
		u.State = map[rlmm.SegmentState]rlmm.SegmentState{
			rlmm.CopySegmentStarted:   rlmm.CopySegmentFinished,
			rlmm.CopySegmentFinished:  rlmm.DeleteSegmentStarted,
			rlmm.DeleteSegmentStarted: rlmm.DeleteSegmentFinished,
		}[md.State]
	}
	check := mgr.CheckUpdateSegment(u)
	checkErr("update "+u.String(), mgr.UpdateSegment(ctx, u), check, mod.update(u))
}

func TestManagerAgainstModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		mgr, mod := New(), newModel()
		checkErr := func(op string, got, check, want error) {
			if sentinelOf(got) != want {
				t.Fatalf("%s: err = %v, model says %v", op, got, want)
			}
			if !sameError(got, check) {
				t.Fatalf("%s: Check said %v, the mutation %v", op, check, got)
			}
			var te *rlmm.TransitionError
			if errors.Is(got, rlmm.ErrInvalidTransition) && !errors.As(got, &te) {
				t.Fatalf("%s: %v is not a *rlmm.TransitionError", op, got)
			}
		}
		t.Repeat(map[string]func(*rapid.T){
			"add": func(t *rapid.T) {
				md := genSegment(t)
				check := mgr.CheckAddSegment(md)
				checkErr("add "+md.String(), mgr.AddSegment(ctx, md), check, mod.add(md))
			},
			"update": func(t *rapid.T) {
				u := genUpdate(t)
				check := mgr.CheckUpdateSegment(u)
				checkErr("update "+u.String(), mgr.UpdateSegment(ctx, u), check, mod.update(u))
			},
			"updateExisting":  func(t *rapid.T) { updateExisting(t, mgr, mod, checkErr) },
			"advanceExisting": func(t *rapid.T) { updateExisting(t, mgr, mod, checkErr) },
			"addAndFinish": func(t *rapid.T) {
				md := genSegment(t)
				check := mgr.CheckAddSegment(md)
				checkErr("add "+md.String(), mgr.AddSegment(ctx, md), check, mod.add(md))
				u := genUpdate(t)
				u.ID, u.State = md.ID, rlmm.CopySegmentFinished
				check = mgr.CheckUpdateSegment(u)
				checkErr("update "+u.String(), mgr.UpdateSegment(ctx, u), check, mod.update(u))
			},
			"partitionDelete": func(t *rapid.T) {
				d := rlmm.PartitionDelete{
					TopicIDPartition: genTP(t),
					State:            rlmm.PartitionDeleteState(rapid.SampledFrom([]int8{0, 0, 0, 1, 1, 1, 2, 3}).Draw(t, "state")),
					EventTimestampMs: rapid.Int64Range(0, 9).Draw(t, "ts"),
					BrokerID:         rapid.Int32Range(0, 2).Draw(t, "broker"),
				}
				check := mgr.CheckPartitionDelete(d)
				checkErr("partition delete "+d.String(), mgr.PutPartitionDelete(ctx, d), check, mod.partitionDelete(d))
			},
			"dropPartition": func(t *rapid.T) {
				if rapid.IntRange(0, 3).Draw(t, "rarely") == 0 {
					tp := genTP(t)
					mgr.DropPartition(tp)
					delete(mod.parts, tp)
				}
			},
			"read": func(t *rapid.T) {
				tp := genTP(t)
				e := rapid.SampledFrom(modelEpochs).Draw(t, "epoch")
				o := rapid.Int64Range(-2, modelOffsetH).Draw(t, "offset")
				if err := compareRead(mgr, mod, tp, e, o); err != nil {
					t.Fatal(err)
				}
			},
			"exportImport": func(t *rapid.T) {
				states := mgr.Export(nil)
				fresh := New()
				if err := fresh.Import(states); err != nil {
					t.Fatalf("Import of an Export: %v", err)
				}
				if err := equalStates(fresh.Export(nil), states); err != nil {
					t.Fatalf("Export after Import differs: %v", err)
				}
				// Re-importing one partition into the live manager changes nothing.
				tp := genTP(t)
				if err := mgr.Import(mgr.Export(func(x rlmm.TopicIDPartition) bool { return x == tp })); err != nil {
					t.Fatalf("partial re-import: %v", err)
				}
				if err := compareAll(fresh, mod); err != nil {
					t.Fatalf("after Export/Import: %v", err)
				}
				mgr = fresh // continue on the imported copy: later events must behave alike
			},
			"exportInstall": func(t *rapid.T) {
				// Continue on a copy built as a snapshot loader builds it:
				// each partition fed into a PartitionBuilder, then installed.
				fresh := New()
				states := mgr.Export(nil)
				builders := make([]*PartitionBuilder, len(states))
				for k := range states {
					b, err := builderOf(&states[k])
					if err != nil {
						t.Fatalf("builder of an Export: %v", err)
					}
					builders[k] = b
				}
				if err := fresh.Install(builders); err != nil {
					t.Fatalf("Install of an Export: %v", err)
				}
				mgr = fresh
			},
			"": func(t *rapid.T) {
				if got, want := mgr.Partitions(), mod.partitions(); !slices.Equal(got, want) {
					t.Fatalf("Partitions() = %v, model %v", got, want)
				}
				for _, tp := range modelTPs {
					if err := comparePartition(mgr, mod, tp); err != nil {
						t.Fatal(err)
					}
				}
				if err := compareEdges(mgr, mod); err != nil {
					t.Fatal(err)
				}
				if err := checkMembers(mgr); err != nil {
					t.Fatal(err)
				}
			},
		})
		if err := compareAll(mgr, mod); err != nil {
			t.Fatalf("final state: %v", err)
		}
	})

}

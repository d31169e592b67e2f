package fault

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/topicbased"
)

// Two managers, as two brokers, over one metadata topic while nodes of the
// cluster are killed and restarted and the leadership of the user
// partitions moves between the managers. Clients write through the current
// leader of a partition and read (Sync, then ListSegments) through either
// manager; porcupine checks the recorded history against a sequential model
// of the segment states, one segment at a time.
//
// The model is written here rather than shared with topicbased's
// linearizability test: that one lives in a _test.go file of topicbased
// (which this package cannot import, and whose internals another branch
// owns), and this history needs two things it lacks: operations whose
// outcome is unknown (a call that timed out after publishing may take
// effect at any later time, so porcupine must allow both outcomes:
// NondeterministicModel), and a partition of the history by segment, so
// that thousands of operations check in seconds.

const (
	linPartitions = 4 // user partitions
	linSegments   = 3 // segments per user partition
	linClients    = 8
	linCallWait   = 8 * time.Second
)

// linState is one segment's state: -1 absent, else its rlmm.SegmentState.
type linState int8

type linInput struct {
	op    string // "add", "update", "read"
	seg   int    // index of the segment, partition*linSegments + k
	state rlmm.SegmentState
}

type linOutput struct {
	verdict string   // "ok", "transition", "unknown", "maybe"
	read    linState // for reads
}

// linStep is the sequential specification: the verdict a mutation gets in
// state s and the state after it.
func linStep(s linState, in linInput) (string, linState) {
	switch in.op {
	case "add":
		switch {
		case s < 0:
			return "ok", linState(rlmm.CopySegmentStarted)
		case s == linState(rlmm.CopySegmentStarted):
			return "ok", s
		}
		return "transition", s
	case "update":
		switch {
		case s < 0:
			return "unknown", s
		case !rlmm.CanTransition(rlmm.SegmentState(s), in.state):
			return "transition", s
		case in.state == rlmm.DeleteSegmentFinished:
			return "ok", -1
		}
		return "ok", linState(in.state)
	}
	return "", s
}

var linModel = porcupine.NondeterministicModel{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		bySeg := map[int][]porcupine.Operation{}
		for _, op := range history {
			seg := op.Input.(linInput).seg
			bySeg[seg] = append(bySeg[seg], op)
		}
		out := make([][]porcupine.Operation, 0, len(bySeg))
		for _, ops := range bySeg {
			out = append(out, ops)
		}
		return out
	},
	Init: func() []interface{} { return []interface{}{linState(-1)} },
	Step: func(st, in, out interface{}) []interface{} {
		s, i, o := st.(linState), in.(linInput), out.(linOutput)
		if i.op == "read" {
			if o.read == s {
				return []interface{}{s}
			}
			return nil
		}
		verdict, next := linStep(s, i)
		switch {
		case o.verdict == "maybe" && next != s:
			return []interface{}{s, next}
		case o.verdict == "maybe", o.verdict == verdict:
			return []interface{}{next}
		}
		return nil
	},
	Equal: func(a, b interface{}) bool { return a.(linState) == b.(linState) },
	DescribeOperation: func(in, out interface{}) string {
		i, o := in.(linInput), out.(linOutput)
		if i.op == "read" {
			return fmt.Sprintf("read(%d) -> %d", i.seg, o.read)
		}
		return fmt.Sprintf("%s(%d, %s) -> %s", i.op, i.seg, i.state, o.verdict)
	},
}

// linVerdict maps a mutation's error to the model's verdict; "" means the
// call is dropped from the history (nothing was published), err != nil a
// broken promise.
func linVerdict(err error) (string, error) {
	switch {
	case err == nil:
		return "ok", nil
	case errors.Is(err, rlmm.ErrInvalidTransition):
		return "transition", nil
	case errors.Is(err, rlmm.ErrUnknownSegment):
		return "unknown", nil
	}
	switch classify(err) {
	case resultMaybe:
		return "maybe", nil
	case resultNotRecorded:
		return "", nil
	}
	return "", fmt.Errorf("the error does not say whether the event may be recorded: %w", err)
}

// linRecorder collects the history and the figures.
type linRecorder struct {
	base    time.Time
	mu      sync.Mutex
	history []porcupine.Operation
	counts  map[string]int
	broken  []error
}

func (r *linRecorder) add(op porcupine.Operation, what string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.history = append(r.history, op)
	r.counts[what]++
}

func (r *linRecorder) count(what string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.counts[what]++
}

func (r *linRecorder) fail(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.broken) < 10 {
		r.broken = append(r.broken, err)
	}
	r.counts["broken"]++
}

// linClient runs random operations until stop and records them.
func linClient(client int, rec *linRecorder, stop *atomic.Bool, managers [2]*topicbased.Manager, leader *[linPartitions]atomic.Int32, segs []rlmm.SegmentMetadata) {
	rng := rand.New(rand.NewPCG(uint64(client), uint64(time.Now().UnixNano())))
	for !stop.Load() {
		seg := rng.IntN(len(segs))
		p := seg / linSegments
		in := linInput{seg: seg}
		switch r := rng.IntN(10); {
		case r < 3:
			in.op = "add"
		case r < 8:
			in.op = "update"
			in.state = rlmm.SegmentState(1 + rng.IntN(3))
		default:
			in.op = "read"
		}
		ctx, cancel := context.WithTimeout(context.Background(), linCallWait)
		call := time.Since(rec.base).Nanoseconds()
		if in.op == "read" {
			m := managers[rng.IntN(2)]
			tp := segs[seg].ID.TopicIDPartition
			var list []rlmm.SegmentMetadata
			err := m.Sync(ctx, tp)
			if err == nil {
				list, err = m.ListSegments(tp)
			}
			ret := time.Since(rec.base).Nanoseconds()
			cancel()
			if err != nil {
				rec.count("read failed")
				continue
			}
			// One read of each segment of the partition, at the same time.
			for k := range linSegments {
				i := p*linSegments + k
				out := linOutput{read: -1}
				for _, s := range list {
					if s.ID == segs[i].ID {
						out.read = linState(s.State)
					}
				}
				rec.add(porcupine.Operation{ClientId: client, Input: linInput{op: "read", seg: i}, Call: call, Output: out, Return: ret}, "read")
			}
			continue
		}
		m := managers[leader[p].Load()]
		var err error
		if in.op == "add" {
			err = m.AddSegment(ctx, segs[seg])
		} else {
			err = m.UpdateSegment(ctx, update(segs[seg], in.state))
		}
		ret := time.Since(rec.base).Nanoseconds()
		cancel()
		verdict, broken := linVerdict(err)
		switch {
		case broken != nil:
			rec.fail(fmt.Errorf("client %d: %s of segment %d: %w", client, in.op, seg, broken))
		case verdict == "":
			rec.count("dropped")
		default:
			rec.add(porcupine.Operation{ClientId: client, Input: in, Call: call, Output: linOutput{verdict: verdict}, Return: ret}, verdict)
		}
	}
}

// syncedView syncs m with every partition of tps and lists its segments.
func syncedView(t *testing.T, m *topicbased.Manager, tps []rlmm.TopicIDPartition) map[rlmm.TopicIDPartition][]rlmm.SegmentMetadata {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	out := map[rlmm.TopicIDPartition][]rlmm.SegmentMetadata{}
	for _, tp := range tps {
		must(t, m.Sync(ctx, tp))
		list, err := m.ListSegments(tp)
		must(t, err)
		out[tp] = list
	}
	return out
}

// sameViews reports the first difference between two views.
func sameViews(got, want map[rlmm.TopicIDPartition][]rlmm.SegmentMetadata) error {
	for tp, w := range want {
		g := got[tp]
		if len(g) != len(w) {
			return fmt.Errorf("%s: %d segments, want %d", tp, len(g), len(w))
		}
		for i := range w {
			if !g[i].Equal(&w[i]) {
				return fmt.Errorf("%s: segment %d is %v, want %v", tp, i, g[i], w[i])
			}
		}
	}
	return nil
}

// TestLinModel checks the checker on small histories (no cluster needed): it
// must accept what the rules allow, including either outcome of a call that
// may be recorded, and reject a stale read, a lost acknowledgement and a
// verdict the state cannot give.
func TestLinModel(t *testing.T) {
	op := func(client int, in linInput, out linOutput, call, ret int64) porcupine.Operation {
		return porcupine.Operation{ClientId: client, Input: in, Output: out, Call: call, Return: ret}
	}
	add := linInput{op: "add", seg: 0}
	finish := linInput{op: "update", seg: 0, state: rlmm.CopySegmentFinished}
	read := linInput{op: "read", seg: 0}
	ok, maybe := linOutput{verdict: "ok"}, linOutput{verdict: "maybe"}
	sees := func(s linState) linOutput { return linOutput{read: s} }
	started, finished := linState(rlmm.CopySegmentStarted), linState(rlmm.CopySegmentFinished)
	tests := []struct {
		name    string
		history []porcupine.Operation
		want    bool
	}{
		{"add then read", []porcupine.Operation{op(0, add, ok, 0, 1), op(1, read, sees(started), 2, 3)}, true},
		{"stale read after an acknowledged add", []porcupine.Operation{op(0, add, ok, 0, 1), op(1, read, sees(-1), 2, 3)}, false},
		{"concurrent read may see either", []porcupine.Operation{op(0, add, ok, 0, 3), op(1, read, sees(-1), 1, 2)}, true},
		{"maybe recorded, seen", []porcupine.Operation{op(0, add, maybe, 0, 100), op(1, read, sees(started), 2, 3)}, true},
		{"maybe recorded, not seen", []porcupine.Operation{op(0, add, maybe, 0, 100), op(1, read, sees(-1), 2, 3)}, true},
		{"maybe recorded, seen then gone", []porcupine.Operation{
			op(0, add, maybe, 0, 100), op(1, read, sees(started), 2, 3), op(1, read, sees(-1), 4, 5)}, false},
		{"finish of an absent segment acknowledged", []porcupine.Operation{op(0, finish, ok, 0, 1)}, false},
		{"finish refused as unknown after the add", []porcupine.Operation{
			op(0, add, ok, 0, 1), op(1, finish, linOutput{verdict: "unknown"}, 2, 3)}, false},
		{"add, finish, read finished", []porcupine.Operation{
			op(0, add, ok, 0, 1), op(0, finish, ok, 2, 3), op(1, read, sees(finished), 4, 5)}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := porcupine.CheckOperations(linModel.ToModel(), tc.history); got != tc.want {
				t.Fatalf("linearizable = %v, want %v", got, tc.want)
			}
		})
	}
}

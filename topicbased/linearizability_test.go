package topicbased

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/rlmm-go/rlmm"
)

// Linearizability of the topic-based manager, checked with porcupine:
// several goroutines on two managers over one log add and update three
// segments, delete the partition, and read (Sync, then ListSegments). Every
// mutation's verdict and every read must fit one sequential order that
// respects real time.

const linSegments = 3

// linState is the state of the three segments: -1 absent, else the state.
type linState [linSegments]int8

type linInput struct {
	op    string // "add", "update", "deletePartition", "read"
	seg   int
	state rlmm.SegmentState
}

type linOutput struct {
	verdict string   // "ok", "transition", "unknown"
	read    linState // for reads
}

func verdictOf(err error) (string, error) {
	switch {
	case err == nil:
		return "ok", nil
	case errors.Is(err, rlmm.ErrInvalidTransition):
		return "transition", nil
	case errors.Is(err, rlmm.ErrUnknownSegment):
		return "unknown", nil
	}
	return "", err
}

var linModel = porcupine.Model{
	Init: func() interface{} { return linState{-1, -1, -1} },
	Step: func(st, in, out interface{}) (bool, interface{}) {
		s, i, o := st.(linState), in.(linInput), out.(linOutput)
		switch i.op {
		case "read":
			return o.read == s, s
		case "deletePartition":
			return o.verdict == "ok", linState{-1, -1, -1}
		case "add":
			switch cur := s[i.seg]; {
			case cur < 0:
				s[i.seg] = int8(rlmm.CopySegmentStarted)
				return o.verdict == "ok", s
			case cur == int8(rlmm.CopySegmentStarted):
				return o.verdict == "ok", s
			default:
				return o.verdict == "transition", s
			}
		case "update":
			cur := s[i.seg]
			switch {
			case cur < 0:
				return o.verdict == "unknown", s
			case !rlmm.CanTransition(rlmm.SegmentState(cur), i.state):
				return o.verdict == "transition", s
			case i.state == rlmm.DeleteSegmentFinished:
				s[i.seg] = -1
			default:
				s[i.seg] = int8(i.state)
			}
			return o.verdict == "ok", s
		}
		return false, s
	},
	DescribeOperation: func(in, out interface{}) string {
		i, o := in.(linInput), out.(linOutput)
		if i.op == "read" {
			return fmt.Sprintf("read -> %v", o.read)
		}
		return fmt.Sprintf("%s(%d, %s) -> %s", i.op, i.seg, i.state, o.verdict)
	},
}

func TestLinearizableAcrossTwoManagers(t *testing.T) {
	l := newLog(t, 3)
	tp := topicPartition("lin", 5, 0)
	managers := []*Manager{startManager(t, Config{Log: l}), startManager(t, Config{Log: l})}
	for _, m := range managers {
		assign(t, m, tp)
	}
	segs := make([]rlmm.SegmentMetadata, linSegments)
	for k := range segs {
		segs[k] = segment(tp, uint64(k), int64(k)*100, int64(k)*100+99)
	}
	const clientsPerManager, opsPerClient = 3, 40
	base := time.Now()
	var mu sync.Mutex
	var history []porcupine.Operation
	var wg sync.WaitGroup
	errs := make(chan error, 2*clientsPerManager)
	for mi, m := range managers {
		for c := range clientsPerManager {
			client := mi*clientsPerManager + c
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(client), 42))
				ctx := context.Background()
				for range opsPerClient {
					in := linInput{seg: rng.IntN(linSegments)}
					switch r := rng.IntN(20); {
					case r < 5:
						in.op = "add"
					case r < 14:
						in.op = "update"
						in.state = rlmm.SegmentState(1 + rng.IntN(3))
					case r < 15:
						in.op = "deletePartition"
					default:
						in.op = "read"
					}
					call := time.Since(base).Nanoseconds()
					var out linOutput
					var err error
					switch in.op {
					case "add":
						err = m.AddSegment(ctx, segs[in.seg])
					case "update":
						err = m.UpdateSegment(ctx, update(segs[in.seg], in.state))
					case "deletePartition":
						err = m.PutPartitionDelete(ctx, rlmm.PartitionDelete{TopicIDPartition: tp, State: rlmm.DeletePartitionFinished})
					case "read":
						out.read = linState{-1, -1, -1}
						if err = m.Sync(ctx, tp); err == nil {
							var list []rlmm.SegmentMetadata
							list, err = m.ListSegments(tp)
							for _, s := range list {
								for k := range segs {
									if s.ID == segs[k].ID {
										out.read[k] = int8(s.State)
									}
								}
							}
						}
					}
					ret := time.Since(base).Nanoseconds()
					if in.op != "read" {
						out.verdict, err = verdictOf(err)
					}
					if err != nil {
						errs <- fmt.Errorf("client %d: %s: %w", client, in.op, err)
						return
					}
					mu.Lock()
					history = append(history, porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret})
					mu.Unlock()
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	res := porcupine.CheckOperationsTimeout(linModel, history, 30*time.Second)
	switch res {
	case porcupine.Ok:
	case porcupine.Unknown:
		t.Fatalf("porcupine could not decide within its timeout (%d operations)", len(history))
	default:
		t.Fatalf("history of %d operations is not linearizable", len(history))
	}
	// The check must have seen real work: some mutations succeeded.
	ok := 0
	for _, op := range history {
		if o := op.Output.(linOutput); op.Input.(linInput).op != "read" && o.verdict == "ok" {
			ok++
		}
	}
	if ok == 0 {
		t.Fatal("no mutation succeeded; the history checks nothing")
	}
}

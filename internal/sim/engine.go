package sim

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rlmm-go/rlmm/topicbased"
)

// roundMs is the simulated time between two rounds.
const roundMs = 60_000

// broker is one simulated broker: its manager (nil while stopped) and the
// directory of its snapshot.
type broker struct {
	id  int32
	mgr *topicbased.Manager
	dir string
}

// engine is the state of one Run.
type engine struct {
	cfg     Config
	brokers []*broker
	parts   []*partitionModel
	master  *rand.Rand // bookkeeping decisions, used by one goroutine at a time
	baseMs  int64

	mu          sync.Mutex // guards the fields below
	mutLat      []time.Duration
	lookLat     []time.Duration
	differences []string
	done, total int64
	phase       string

	mutations, lookups, notReady, stale atomic.Int64
	lookupErrors                        atomic.Int64
	copied, failed, retired, multiEpoch atomic.Int64
	moves                               int64
	busy                                time.Duration
}

// Run plays the simulation described by cfg and returns its report. A
// mutation that fails, or a broker that cannot start, ends the run with an
// error; disagreements with the model are collected in Report.Differences.
// Run starts and closes its brokers; it does not close cfg.Log.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	// The simulated clock ends about now: round r happens Rounds-r minutes ago.
	e := &engine{cfg: c, master: rand.New(rand.NewPCG(uint64(c.Seed), 0x5eed)),
		baseMs: time.Now().UnixMilli() - int64(c.Rounds+1)*roundMs}
	defer e.closeBrokers()
	return e.run(ctx)
}

func (e *engine) run(ctx context.Context) (*Report, error) {
	c := &e.cfg
	started := time.Now()
	e.layout()
	if err := e.startBrokers(ctx); err != nil {
		return nil, err
	}
	// One broker is down for one round, a rolling restart; the topic is
	// deleted while it is down, so its restart replays the deletion.
	stopRound := max(1, c.Rounds/2)
	restartRound := stopRound + 1
	deleteRound := stopRound
	stopped := int32(e.master.IntN(c.Brokers))
	// Progress units: a partition's round, a deleted partition, a
	// partition checked on a broker at the end.
	all, gone := int64(len(e.parts)), int64(0)
	for _, p := range e.parts {
		if p.topic == c.Topics-1 {
			gone++
		}
	}
	units := int64(deleteRound)*all + int64(c.Rounds-deleteRound)*(all-gone) + gone + int64(c.Brokers)*all
	e.setProgress(0, units, "starting")
	var restart Restart
	for r := range c.Rounds {
		if r == stopRound {
			if err := e.stopBroker(ctx, stopped); err != nil {
				return nil, err
			}
		}
		if r == deleteRound {
			if err := e.deleteTopic(ctx, c.Topics-1); err != nil {
				return nil, err
			}
		}
		if r == restartRound {
			var err error
			if restart, err = e.restartBroker(ctx, stopped); err != nil {
				return nil, err
			}
		}
		if err := e.rollAndMove(ctx); err != nil {
			return nil, err
		}
		if err := e.round(ctx, r); err != nil {
			return nil, err
		}
	}
	if err := e.finalCheck(ctx); err != nil {
		return nil, err
	}
	ms := e.measure(ctx)
	rep := e.report(restart, ms)
	rep.DurationSec = time.Since(started).Seconds()
	return rep, nil
}

// measurements are what the end of a run measures, for the report.
type measurements struct {
	burst     int64 // reads of the lookup burst
	burstTime time.Duration
	events    int64 // records in the log
	rejected  int64 // events the live brokers skipped
	heap      float64
	holdings  []Holding // per live broker, before heapPerSegment closes one
}

// measure runs the last steps of a run, in this order: the lookup burst
// (its reads checked like any other), the collection of the events the
// brokers skipped (each one a difference), the count of the log's records,
// and last the heap per segment, which closes the broker it measures.
func (e *engine) measure(ctx context.Context) measurements {
	var ms measurements
	ms.burst, ms.burstTime = e.lookupBurst(ctx)
	for _, b := range e.brokers {
		if b.mgr != nil {
			ms.holdings = append(ms.holdings, e.holdingOf(b))
			st := b.mgr.Stats()
			ms.rejected += int64(st.Rejected + st.Undecodable)
			for _, r := range b.mgr.Rejected() {
				e.addDifference("broker %d rejected the event at metadata partition %d, offset %d (%s): %v", b.id, r.Partition, r.Offset, r.Reason, r.Err)
			}
		}
	}
	if n, err := e.events(ctx); err == nil {
		ms.events = n
	} else {
		e.addDifference("%v", err)
	}
	ms.heap = e.heapPerSegment()
	return ms
}

func (e *engine) setProgress(done, total int64, phase string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if total > 0 {
		e.total = total
	}
	e.done = done
	e.phase = phase
	if e.cfg.Progress != nil {
		e.cfg.Progress(e.done, e.total, e.phase)
	}
}

func (e *engine) step(phase string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.done++
	if e.done > e.total {
		e.total = e.done
	}
	e.phase = phase
	if e.cfg.Progress != nil {
		e.cfg.Progress(e.done, e.total, e.phase)
	}
}

// events returns the number of records in the log.
func (e *engine) events(ctx context.Context) (int64, error) {
	n := e.cfg.Log.Partitions()
	parts := make([]int32, n)
	for i := range parts {
		parts[i] = int32(i)
	}
	hwms, err := e.cfg.Log.HighWaterMarks(ctx, parts)
	if err != nil {
		return 0, fmt.Errorf("reading the log's high-water marks: %w", err)
	}
	var total int64
	for _, h := range hwms {
		total += h
	}
	return total, nil
}

// report gathers the figures of the run and of ms into a Report; it
// changes nothing.
func (e *engine) report(restart Restart, ms measurements) *Report {
	c := &e.cfg
	rep := &Report{Seed: c.Seed, Brokers: c.Brokers, Topics: c.Topics, Partitions: len(e.parts), Rounds: c.Rounds,
		MetadataPartitions: c.Log.Partitions(), Restart: restart, DeletedTopic: fmt.Sprintf("topic-%d", c.Topics-1),
		Events: ms.events, Rejected: ms.rejected, HeapBytesPerSegment: ms.heap, Holdings: ms.holdings}
	for _, p := range e.parts {
		rep.LiveSegments += int64(len(p.segs))
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	rep.Mutations = e.mutations.Load()
	if e.busy > 0 {
		rep.MutationsPerSec = float64(rep.Mutations) / e.busy.Seconds()
	}
	rep.MutationLatency = summarize(slices.Clone(e.mutLat))
	rep.Lookups = e.lookups.Load() + ms.burst
	if ms.burstTime > 0 {
		rep.LookupsPerSec = float64(ms.burst) / ms.burstTime.Seconds()
	}
	rep.LookupLatency = summarize(slices.Clone(e.lookLat))
	rep.NotReadyRetries = e.notReady.Load()
	rep.LookupErrors = e.lookupErrors.Load()
	rep.StaleFollowerReads = e.stale.Load()
	rep.SegmentsCopied, rep.CopiesFailed, rep.SegmentsRetired = e.copied.Load(), e.failed.Load(), e.retired.Load()
	rep.MultiEpochSegments = e.multiEpoch.Load()
	rep.LeaderMoves = e.moves
	rep.Differences = slices.Clone(e.differences)
	if rep.Differences == nil {
		rep.Differences = []string{}
	}
	rep.OK = len(rep.Differences) == 0 && rep.Rejected == 0
	return rep
}

// heapPerSegment closes the live broker whose cache holds the most
// segments and divides the heap this releases by those segments.
func (e *engine) heapPerSegment() float64 {
	var best *broker
	var bestSegs int64
	for _, b := range e.brokers {
		if b.mgr == nil {
			continue
		}
		// Count what the cache really holds.
		n := b.mgr.Stats().CachedSegments
		if best == nil || n > bestSegs {
			best, bestSegs = b, n
		}
	}
	if best == nil || bestSegs == 0 {
		return 0
	}
	before := heapAlloc()
	_ = best.mgr.Close()
	best.mgr = nil
	after := heapAlloc()
	if after >= before {
		return 0
	}
	return float64(before-after) / float64(bestSegs)
}

func heapAlloc() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

package fence

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rlmm-go/rlmm"
)

// Config is a fence's settings.
type Config struct {
	// Client reaches the Kafka cluster whose metadata names the leaders
	// (the metadata log's client).
	Client *kgo.Client
	// BrokerID is this server's broker; negative builds no fence (New
	// returns nil).
	BrokerID int32
	// Timeout bounds one round of Metadata requests; 0 means 2 s.
	Timeout time.Duration
	// Logger receives a warning when the metadata cannot be had (at most
	// once a minute per topic); nil discards it.
	Logger *slog.Logger
	// Registerer, when set, gets the fence's counters:
	// rlmm_leader_fence_refusals_total and
	// rlmm_leader_fence_unanswered_rounds_total.
	Registerer prometheus.Registerer
}

// warnEvery spaces a topic's warnings that its metadata cannot be had:
// every check of it asks again, and would say so each time.
const warnEvery = time.Minute

// Fence checks a user partition's leader against the cluster's metadata
// before a segment mutation is published. Safe for concurrent use.
//
// Answers are never reused once their round is over: an answer kept even a
// second could admit a deposed leader just after the election, or refuse
// the new one. Checks at once share the round under way, and a refusal
// comes only from a round begun after its check (see Check).
type Fence struct {
	cfg Config
	// ask is one round of Metadata requests (askBrokers); tests replace it.
	ask func(ctx context.Context, topic string) (map[int32][]Answer, error)
	now func() time.Time // for spacing the warnings

	// refusals counts the mutations refused; unanswered the rounds no
	// broker answered (their topic's mutations published unfenced).
	refusals, unanswered prometheus.Counter

	mu       sync.Mutex // guards the fields below
	begun    uint64     // rounds begun; the last one's id
	inFlight map[string]*round
	warned   map[string]time.Time // by topic: the last warning
	joined   int                  // checks that joined a round under way (tests)
}

// round is one round's answers for a topic: done is closed when they are
// in (the checks that joined it wait for it).
type round struct {
	id      uint64
	done    chan struct{}
	answers map[int32][]Answer // by partition
	err     error
}

// New returns a fence, or nil when cfg has no client or no broker id (a
// nil *Fence's Check publishes everything).
func New(cfg Config) *Fence {
	if cfg.Client == nil || cfg.BrokerID < 0 {
		return nil
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 2 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	f := &Fence{cfg: cfg, now: time.Now, inFlight: map[string]*round{}, warned: map[string]time.Time{},
		refusals: prometheus.NewCounter(prometheus.CounterOpts{Name: "rlmm_leader_fence_refusals_total",
			Help: "Segment mutations (COPY_SEGMENT_STARTED, DELETE_SEGMENT_STARTED) refused because the cluster names another leader of their partition: this broker was deposed."}),
		unanswered: prometheus.NewCounter(prometheus.CounterOpts{Name: "rlmm_leader_fence_unanswered_rounds_total",
			Help: "Rounds of Metadata requests no broker answered for the topic: the mutations that asked were published unfenced."}),
	}
	f.ask = f.askBrokers
	if cfg.Registerer != nil {
		cfg.Registerer.MustRegister(f.refusals, f.unanswered)
	}
	return f
}

// Check returns nil if this broker may publish a segment mutation for tp,
// or an error wrapping rlmm.ErrNotLeader (Decide). Metadata that cannot
// be had publishes (see the package doc). A check that joined a round
// begun before it, whose answers refuse, asks a round of its own before
// refusing: a broker that has just become the leader is not refused on
// answers older than its check.
func (f *Fence) Check(ctx context.Context, tp rlmm.TopicIDPartition) error {
	if f == nil {
		return nil
	}
	f.mu.Lock()
	before := f.begun
	f.mu.Unlock()
	r, err := f.roundAfter(ctx, tp.Topic, 0)
	if err != nil {
		return err // the caller's context ended
	}
	decide := func(r *round) error {
		if r.err != nil {
			return nil // counted and said in roundAfter
		}
		return Decide(tp, f.cfg.BrokerID, r.answers[tp.Partition])
	}
	err = decide(r)
	if err != nil && r.id <= before {
		if r, err = f.roundAfter(ctx, tp.Topic, before); err != nil {
			return err
		}
		err = decide(r)
	}
	if err != nil {
		f.refusals.Inc()
	}
	return err
}

// roundAfter returns the answers of a round of topic whose id is above
// after: the one under way if it is, else a new one.
func (f *Fence) roundAfter(ctx context.Context, topic string, after uint64) (*round, error) {
	f.mu.Lock()
	r := f.inFlight[topic]
	mine := r == nil || r.id <= after
	if mine {
		f.begun++
		r = &round{id: f.begun, done: make(chan struct{})}
		f.inFlight[topic] = r
	} else {
		f.joined++
	}
	f.mu.Unlock()
	if mine {
		r.answers, r.err = f.ask(ctx, topic)
		f.mu.Lock()
		if f.inFlight[topic] == r {
			delete(f.inFlight, topic)
		}
		warn := false
		if r.err != nil {
			now := f.now()
			if last, ok := f.warned[topic]; !ok || now.Sub(last) >= warnEvery {
				f.warned[topic], warn = now, true
			}
		}
		f.mu.Unlock()
		if r.err != nil {
			f.unanswered.Inc()
		}
		if warn {
			f.cfg.Logger.Warn("fence: the cluster's metadata could not be had; the topic's segment mutations are published unfenced meanwhile",
				"topic", topic, "error", r.err)
		}
		close(r.done)
	}
	select {
	case <-r.done:
		return r, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// askBrokers sends a Metadata request for topic to every broker the client has
// discovered at once (to its seed brokers when it has discovered none
// yet) and gathers the partitions' leaders. A broker that does not answer
// within the round's Timeout is left out: the deposed leader's own broker
// is often the one a partition keeps silent, and the round must not hang
// on it, nor depend on it answering first. It fails only when no broker
// answered for the topic. The goroutines it starts all send their reply
// before it returns.
func (f *Fence) askBrokers(ctx context.Context, topic string) (map[int32][]Answer, error) {
	// The round serves every Check waiting for it: the caller's
	// cancellation does not end it, its Timeout does.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), f.cfg.Timeout)
	defer cancel()
	// One request per send: the client sets the version on it.
	newReq := func() *kmsg.MetadataRequest {
		req := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(topic)
		req.Topics = append(req.Topics, rt)
		req.AllowAutoTopicCreation = false // asking must never create a user topic
		return req
	}

	got := map[int32][]Answer{}
	var lastErr error
	answered := false
	take := func(resp kmsg.Response, err error) {
		if err != nil {
			lastErr = err
			return
		}
		m, ok := resp.(*kmsg.MetadataResponse)
		if !ok {
			return
		}
		for _, t := range m.Topics {
			if t.Topic == nil || *t.Topic != topic {
				continue
			}
			if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
				lastErr = err
				continue
			}
			answered = true
			for _, p := range t.Partitions {
				got[p.Partition] = append(got[p.Partition], Answer{Leader: p.Leader, LeaderEpoch: p.LeaderEpoch})
			}
		}
	}
	brokers := f.cfg.Client.DiscoveredBrokers()
	if len(brokers) == 0 {
		// A client that has not met the cluster yet knows only its seeds.
		brokers = f.cfg.Client.SeedBrokers()
	}
	type reply struct {
		resp kmsg.Response
		err  error
	}
	replies := make(chan reply, len(brokers))
	for _, b := range brokers {
		go func() {
			resp, err := b.Request(ctx, newReq())
			replies <- reply{resp, err}
		}()
	}
	for range brokers {
		r := <-replies
		take(r.resp, r.err)
	}
	if !answered {
		if lastErr == nil {
			lastErr = kerr.UnknownTopicOrPartition
		}
		return nil, lastErr
	}
	return got, nil
}

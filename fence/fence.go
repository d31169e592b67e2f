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
	// TTL is how long one topic's answers are reused; 0 means 1 s.
	TTL time.Duration
	// Timeout bounds one round of Metadata requests; 0 means 2 s.
	Timeout time.Duration
	// Logger receives a warning when the metadata cannot be had; nil
	// discards it.
	Logger *slog.Logger
	// Registerer, when set, gets the fence's counters:
	// rlmm_leader_fence_refusals_total and
	// rlmm_leader_fence_unanswered_rounds_total.
	Registerer prometheus.Registerer
}

// Fence checks a user partition's leader against the cluster's metadata
// before a segment mutation is published. Safe for concurrent use.
type Fence struct {
	cfg Config
	now func() time.Time // tests move the clock

	// refusals counts the mutations refused; unanswered the rounds no
	// broker answered (their topic's mutations published unfenced).
	refusals, unanswered prometheus.Counter

	mu     sync.Mutex
	topics map[string]*topicAnswers
}

// topicAnswers are one round's answers for a topic: done is closed when
// they are in (a concurrent Check waits for the round under way).
type topicAnswers struct {
	done    chan struct{}
	at      time.Time
	answers map[int32][]Answer // by partition
	err     error
}

// New returns a fence, or nil when cfg has no client or no broker id (a
// nil *Fence's Check publishes everything).
func New(cfg Config) *Fence {
	if cfg.Client == nil || cfg.BrokerID < 0 {
		return nil
	}
	if cfg.TTL <= 0 {
		cfg.TTL = time.Second
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 2 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	f := &Fence{cfg: cfg, now: time.Now, topics: map[string]*topicAnswers{},
		refusals: prometheus.NewCounter(prometheus.CounterOpts{Name: "rlmm_leader_fence_refusals_total",
			Help: "Segment mutations (COPY_SEGMENT_STARTED, DELETE_SEGMENT_STARTED) refused because the cluster names another leader of their partition: this broker was deposed."}),
		unanswered: prometheus.NewCounter(prometheus.CounterOpts{Name: "rlmm_leader_fence_unanswered_rounds_total",
			Help: "Rounds of Metadata requests no broker answered for the topic: its segment mutations were published unfenced until the next round."}),
	}
	if cfg.Registerer != nil {
		cfg.Registerer.MustRegister(f.refusals, f.unanswered)
	}
	return f
}

// Check returns nil if this broker may publish a segment mutation for tp,
// or an error wrapping rlmm.ErrNotLeader (Decide). Metadata that cannot
// be had publishes (see the package doc).
func (f *Fence) Check(ctx context.Context, tp rlmm.TopicIDPartition) error {
	if f == nil {
		return nil
	}
	ta, err := f.answersFor(ctx, tp.Topic)
	if err != nil {
		return err // the caller's context ended
	}
	if ta.err != nil {
		return nil // said once per round, in answersFor
	}
	err = Decide(tp, f.cfg.BrokerID, ta.answers[tp.Partition])
	if err != nil {
		f.refusals.Inc()
	}
	return err
}

// answersFor returns topic's answers, fetched at most once per TTL.
func (f *Fence) answersFor(ctx context.Context, topic string) (*topicAnswers, error) {
	f.mu.Lock()
	ta := f.topics[topic]
	if ta != nil {
		select {
		case <-ta.done:
			if f.now().Sub(ta.at) >= f.cfg.TTL {
				ta = nil
			}
		default: // a round is under way: wait for it
		}
	}
	mine := ta == nil
	if mine {
		ta = &topicAnswers{done: make(chan struct{})}
		f.topics[topic] = ta
	}
	f.mu.Unlock()
	if mine {
		ta.answers, ta.err = f.ask(ctx, topic)
		ta.at = f.now()
		if ta.err != nil {
			f.unanswered.Inc()
			f.cfg.Logger.Warn("fence: the cluster's metadata could not be had; the topic's segment mutations are published unfenced for a while",
				"topic", topic, "for", f.cfg.TTL, "error", ta.err)
		}
		close(ta.done)
	}
	select {
	case <-ta.done:
		return ta, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// ask sends a Metadata request for topic to every broker the client has
// discovered at once (to its seed brokers when it has discovered none
// yet) and gathers the partitions' leaders. A broker that does not answer
// within the round's Timeout is left out: the deposed leader's own broker
// is often the one a partition keeps silent, and the round must not hang
// on it, nor depend on it answering first. It fails only when no broker
// answered for the topic. The goroutines it starts all send their reply
// before it returns.
func (f *Fence) ask(ctx context.Context, topic string) (map[int32][]Answer, error) {
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

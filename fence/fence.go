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
// Every check asks its own round, begun after the mutation arrived: an
// answer kept even a second, or shared with a check that came later, could
// admit a deposed leader's mutation just after the election, or refuse the
// new leader's first copy.
type Fence struct {
	cfg Config
	now func() time.Time // for spacing the warnings

	// refusals counts the mutations refused; unanswered the rounds no
	// broker answered (their mutations published unfenced).
	refusals, unanswered prometheus.Counter

	mu     sync.Mutex           // guards warned
	warned map[string]time.Time // by topic: the last warning
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
	f := &Fence{cfg: cfg, now: time.Now, warned: map[string]time.Time{},
		refusals: prometheus.NewCounter(prometheus.CounterOpts{Name: "rlmm_leader_fence_refusals_total",
			Help: "Segment mutations (COPY_SEGMENT_STARTED, DELETE_SEGMENT_STARTED) refused because the cluster names another leader of their partition: this broker was deposed."}),
		unanswered: prometheus.NewCounter(prometheus.CounterOpts{Name: "rlmm_leader_fence_unanswered_rounds_total",
			Help: "Rounds of Metadata requests no broker answered for the topic: the mutations that asked were published unfenced."}),
	}
	if cfg.Registerer != nil {
		cfg.Registerer.MustRegister(f.refusals, f.unanswered)
	}
	return f
}

// Check returns nil if this broker may publish a segment mutation for tp,
// or an error wrapping rlmm.ErrNotLeader (Decide). Metadata that cannot
// be had publishes (see the package doc); ctx's end is returned.
func (f *Fence) Check(ctx context.Context, tp rlmm.TopicIDPartition) error {
	if f == nil {
		return nil
	}
	answers, err := f.ask(ctx, tp.Topic)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err != nil {
		f.unanswered.Inc()
		if f.warnNow(tp.Topic) {
			f.cfg.Logger.Warn("fence: the cluster's metadata could not be had; the topic's segment mutations are published unfenced meanwhile",
				"topic", tp.Topic, "error", err)
		}
		return nil
	}
	if err := Decide(tp, f.cfg.BrokerID, answers[tp.Partition]); err != nil {
		f.refusals.Inc()
		return err
	}
	return nil
}

// warnNow says whether topic's warning is due (warnEvery since the last).
func (f *Fence) warnNow(topic string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.now()
	if last, ok := f.warned[topic]; ok && now.Sub(last) < warnEvery {
		return false
	}
	f.warned[topic] = now
	return true
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
	ctx, cancel := context.WithTimeout(ctx, f.cfg.Timeout)
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

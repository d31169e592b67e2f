package server

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/topicbased"
)

// Config configures New. Every field is optional.
type Config struct {
	// Logger receives the server's logs; nil discards them.
	Logger *slog.Logger
	// Version, BrokerID, MetadataPartitions and LogDescription are what
	// ServerInfo answers ("kafka TOPIC at BOOTSTRAP" or "embedded log DIR").
	Version            string
	BrokerID           int32
	MetadataPartitions int32
	LogDescription     string
	// Sizes bounds the remote size gauges OpsHandler serves; the zero value
	// turns their per-topic and per-partition series off.
	Sizes SizeMetrics
	// testAPIVersion is the api_version ServerInfo states; 0 means
	// APIVersion. Only this package's tests set it, to play a server of
	// another version.
	testAPIVersion int32
	// Hosted is the broker's assignment, recorded and persisted by the
	// server (OpenHosted); nil keeps it in memory only.
	Hosted *Hosted
}

// Endpoint is one listener and what its callers must present.
type Endpoint struct {
	// Listener accepts the connections (ListenUnix, ListenTCP).
	Listener net.Listener
	// TLS, when set, makes the endpoint speak TLS with it (client
	// certificates are verified if it says so: TLSConfig does).
	TLS *tls.Config
	// Token, when set, must be presented in every connection's hello
	// (BrokerHello.token), compared in constant time.
	Token []byte
}

// Server serves the broker's frames (rpc/brokerframe) over a
// topicbased.Manager that may come later: it accepts calls as soon as it
// serves, before the manager is up (reads then answer NOT_READY, mutations
// wait within their deadline; assignment changes are recorded in the hosted
// set at once and handed to the manager as it comes up), so a broker plugin
// can connect at once while the log is opened and the snapshot loaded.
// Create it with New.
type Server struct {
	cfg    Config
	logger *slog.Logger
	svc    *service

	mgr atomic.Pointer[topicbased.Manager]
	// fence, when set (SetLeaderFence), is asked before a broker's copy or
	// deletion start is published.
	fence  atomic.Pointer[LeaderFence]
	up     chan struct{} // closed by SetManager
	upOnce sync.Once
	// assignMu orders the assignment changes and SetManager's hand-over of
	// the hosted set, so the manager sees every change after the set.
	assignMu sync.Mutex

	mu       sync.Mutex
	framed   []*framedServer // Serve's listeners
	stopping chan struct{}   // closed by Stop
	stopOnce sync.Once
	wg       sync.WaitGroup
	errs     chan error // Serve errors of the endpoints, buffered

	stats *prometheus.Registry // statsCollector, served by OpsHandler
}

// LeaderFence returns nil if this broker may publish a segment mutation
// for the user partition, or an error wrapping rlmm.ErrNotLeader when the
// cluster names another leader (package fence).
type LeaderFence func(context.Context, rlmm.TopicIDPartition) error

// SetLeaderFence makes the server ask fence before it publishes a
// broker's COPY_SEGMENT_STARTED (an add) or DELETE_SEGMENT_STARTED; a
// refusal publishes nothing and answers NOT_LEADER (retriable). Set it
// before SetManager; nil (the default) checks nothing.
func (s *Server) SetLeaderFence(fence LeaderFence) {
	if fence == nil {
		s.fence.Store(nil)
		return
	}
	s.fence.Store(&fence)
}

// checkLeader asks the fence, if any, about a mutation of tp.
func (s *Server) checkLeader(ctx context.Context, tp rlmm.TopicIDPartition) error {
	if f := s.fence.Load(); f != nil {
		return (*f)(ctx, tp)
	}
	return nil
}

// New returns a server with no manager and no endpoint yet.
func New(cfg Config) *Server {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Hosted == nil {
		cfg.Hosted, _ = OpenHosted("") // in memory: never fails
	}
	s := &Server{cfg: cfg, logger: cfg.Logger, up: make(chan struct{}), stopping: make(chan struct{}), errs: make(chan error, 8)}
	s.svc = &service{s: s}
	s.stats = prometheus.NewRegistry()
	s.stats.MustRegister(statsCollector{s: s}, &sizeCollector{s: s, cfg: cfg.Sizes})
	return s
}

// SetManager installs the manager the calls run on, after handing it the
// hosted set (Config.Hosted) so that it consumes the broker's partitions
// before any read reaches it; calls waiting for it go on. Only the first
// call has an effect. The server never closes it.
func (s *Server) SetManager(m *topicbased.Manager) {
	s.upOnce.Do(func() {
		s.assignMu.Lock()
		defer s.assignMu.Unlock()
		if hosted := s.cfg.Hosted.List(); len(hosted) > 0 {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			if err := m.OnPartitionLeadershipChanges(ctx, hosted, nil); err != nil {
				s.logger.Error("server: handing the manager the hosted set failed", "partitions", len(hosted), "error", err)
			} else {
				s.logger.Info("server: the manager hosts the recorded partitions", "partitions", len(hosted))
			}
			cancel()
		}
		s.mgr.Store(m)
		close(s.up)
	})
}

// Manager returns the installed manager, or nil.
func (s *Server) Manager() *topicbased.Manager { return s.mgr.Load() }

// waitManager returns the manager once it is installed: an error wrapping
// rlmm.ErrTimeout if ctx ends first, rlmm.ErrClosed if the server stops.
// Either way nothing was published.
func (s *Server) waitManager(ctx context.Context) (*topicbased.Manager, error) {
	if m := s.mgr.Load(); m != nil {
		return m, nil
	}
	select {
	case <-s.up:
		return s.mgr.Load(), nil
	case <-s.stopping:
		return nil, notPublished{fmt.Errorf("rlmm serve stopped before its manager was up: %w", rlmm.ErrClosed)}
	case <-ctx.Done():
		return nil, notPublished{fmt.Errorf("%w: rlmm serve is still starting (opening the metadata log, loading the snapshot); nothing was published: %w",
			rlmm.ErrTimeout, context.Cause(ctx))}
	}
}

// Errors receives the error of an endpoint that stopped serving on its own.
func (s *Server) Errors() <-chan error { return s.errs }

// Stop stops every endpoint: each listener is closed and every open
// connection with it (a call being answered finishes or fails its write;
// a mutation or an assignment change waiting is cancelled, calls waiting
// for the manager return ErrClosed, readiness watches end), and Stop
// returns once every connection's goroutine has, or when ctx ends (then
// with goroutines still ending, which it says). The manager is not closed.
func (s *Server) Stop(ctx context.Context) {
	s.stopOnce.Do(func() { close(s.stopping) })
	s.mu.Lock()
	fss := s.framed
	s.framed = nil
	s.mu.Unlock()
	for _, fs := range fss {
		fs.stop()
	}
	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		s.logger.Warn("server: stop ran out of time; connections' goroutines are still ending")
		<-done
	}
}

// admit registers a listener's server for Stop (register, under mu) and
// counts its goroutine in wg, unless Stop began: then ErrClosed naming ep's
// address.
func (s *Server) admit(ep Endpoint, register func()) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.stopping:
		return fmt.Errorf("server: serve %s: %w", ep.Listener.Addr(), rlmm.ErrClosed)
	default:
	}
	register()
	s.wg.Add(1)
	return nil
}

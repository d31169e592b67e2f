package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/rpc/rlmmpb"
	"github.com/rlmm-go/rlmm/topicbased"
)

// DefaultBatchSize is how many segments one SegmentBatch of a streamed list
// carries.
const DefaultBatchSize = 512

// flowWindow is the HTTP/2 flow-control window of every stream and of every
// connection the server accepts: fixed, so that grpc-go does not estimate the
// bandwidth-delay product with a PING per request (see Serve).
const flowWindow = 1 << 20

// Config configures New. Every field is optional.
type Config struct {
	// Logger receives the server's logs; nil discards them.
	Logger *slog.Logger
	// BatchSize is the number of segments per SegmentBatch; 0 means
	// DefaultBatchSize.
	BatchSize int
	// Version, BrokerID, MetadataPartitions and LogDescription are what
	// ServerInfo answers ("kafka TOPIC at BOOTSTRAP" or "embedded log DIR").
	Version            string
	BrokerID           int32
	MetadataPartitions int32
	LogDescription     string
	// Sizes bounds the remote size gauges OpsHandler serves; the zero value
	// turns their per-topic and per-partition series off.
	Sizes SizeMetrics
	// APIVersion is the api_version ServerInfo states; 0 means APIVersion.
	// Only tests set it (rlmm serve's hidden --test-api-version), to play a
	// server of another version.
	APIVersion int32
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
	// Token, when set, must be presented by every call as metadata
	// "authorization: Bearer <token>".
	Token []byte
}

// Server serves the RPC over a topicbased.Manager that may come later: it
// accepts calls as soon as it serves, before the manager is up (reads then
// answer NOT_READY, IsReady false, mutations wait within their deadline;
// assignment changes are recorded in the hosted set at once and handed to
// the manager as it comes up), so a broker plugin can connect at once while the
// log is opened and the snapshot loaded. Create it with New.
type Server struct {
	cfg    Config
	logger *slog.Logger
	svc    *service

	mgr    atomic.Pointer[topicbased.Manager]
	up     chan struct{} // closed by SetManager
	upOnce sync.Once
	// assignMu orders the assignment changes and SetManager's hand-over of
	// the hosted set, so the manager sees every change after the set.
	assignMu sync.Mutex

	mu     sync.Mutex
	grpcs  []*grpc.Server
	framed []*framedServer // ServeFramed's listeners
	// lookupSocket is the framed lookup socket's path ServerInfo states
	// (the last ServeFramed's), or "".
	lookupSocket string
	stopping     chan struct{} // closed by Stop
	stopOnce     sync.Once
	wg           sync.WaitGroup
	lookups      sync.WaitGroup // the receivers of open lookup streams
	errs         chan error     // Serve errors of the endpoints, buffered

	stats *prometheus.Registry // statsCollector, served by OpsHandler
}

// New returns a server with no manager and no endpoint yet.
func New(cfg Config) *Server {
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = DefaultBatchSize
	}
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

// SetManager installs the manager the RPCs run on, after handing it the
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

// Serve starts serving ep in the background. Its Serve error, if it stops
// for another reason than Stop, is sent to Errors.
func (s *Server) Serve(ep Endpoint) error {
	var opts []grpc.ServerOption
	if ep.TLS != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(ep.TLS)))
	}
	if len(ep.Token) > 0 {
		a := tokenAuth{token: ep.Token}
		opts = append(opts, grpc.ChainUnaryInterceptor(a.unary), grpc.ChainStreamInterceptor(a.stream))
	}
	// A pool of handler goroutines instead of one new goroutine per call:
	// a few µs off the lookup round trip (BENCHMARKS.md, rlmm serve).
	// One more than GOMAXPROCS: a plugin's lookup stream (SegmentForOffsetStream)
	// keeps the worker that runs its handler for the life of the connection.
	opts = append(opts, grpc.NumStreamWorkers(uint32(runtime.GOMAXPROCS(0))+1))
	// Fixed flow-control windows (at least 64 KiB each) turn grpc-go's BDP
	// estimation off. With it on, every request's DATA frame made the server
	// send a connection WINDOW_UPDATE and a BDP PING, and the client's PING
	// ack came back as a read of its own: two more frames and one more
	// wake-up per call on each side, most of rlmm serve's CPU per lookup
	// under grpc-java (BENCHMARKS.md, "Broker plugin"). 1 MiB per stream and
	// per connection lets a streamed list run without waiting for updates.
	opts = append(opts, grpc.InitialWindowSize(flowWindow), grpc.InitialConnWindowSize(flowWindow))
	// Stop, too, returns only when every handler has: a lookup stream's
	// handler registers its receiver in s.lookups, which Stop waits for after.
	opts = append(opts, grpc.WaitForHandlers(true))
	// The lookup stream decodes its requests itself (rawMessage); everything
	// else as the proto codec does.
	opts = append(opts, grpc.ForceServerCodecV2(newServerCodec()))
	g := grpc.NewServer(opts...)
	rlmmpb.RegisterRemoteLogMetadataServer(g, s.svc)
	if err := s.admit(ep, func() { s.grpcs = append(s.grpcs, g) }); err != nil {
		return err
	}
	go func() {
		defer s.wg.Done()
		if err := g.Serve(ep.Listener); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			select {
			case s.errs <- fmt.Errorf("server: serving %s: %w", ep.Listener.Addr(), err):
			default:
			}
		}
	}()
	s.logger.Info("server: serving", "address", ep.Listener.Addr().String(), "network", ep.Listener.Addr().Network(),
		"tls", ep.TLS != nil, "token", len(ep.Token) > 0)
	return nil
}

// Errors receives the error of an endpoint that stopped serving on its own.
func (s *Server) Errors() <-chan error { return s.errs }

// Stop stops every endpoint: gracefully (in-flight calls finish, no new
// ones) until ctx ends, then forcibly. Calls waiting for the manager return
// ErrClosed, open lookup streams (SegmentForOffsetStream) end with
// UNAVAILABLE (CLOSED), and framed lookup connections (ServeFramed) are
// closed. The listeners are closed; the manager is not.
func (s *Server) Stop(ctx context.Context) {
	s.stopOnce.Do(func() { close(s.stopping) })
	s.mu.Lock()
	gs := s.grpcs
	s.grpcs = nil
	fss := s.framed
	s.framed = nil
	s.mu.Unlock()
	// A framed connection has no call to finish but the one lookup it is
	// answering: closed at once, as open lookup streams are ended.
	for _, fs := range fss {
		fs.stop()
	}
	done := make(chan struct{})
	go func() {
		for _, g := range gs {
			g.GracefulStop()
		}
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		s.logger.Warn("server: graceful stop ran out of time; closing the remaining calls")
		for _, g := range gs {
			g.Stop()
		}
		<-done
	}
	s.wg.Wait()
	s.lookups.Wait()
}

// admit registers a listener's server for Stop (register, under mu) and
// counts its goroutine in wg, unless Stop began: then ErrClosed naming ep's
// address. One rule for the gRPC and the framed servers.
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

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/eventlog"
	"github.com/rlmm-go/rlmm/eventlog/filelog"
	"github.com/rlmm-go/rlmm/eventlog/kafkalog"
	"github.com/rlmm-go/rlmm/fence"
	"github.com/rlmm-go/rlmm/server"
	"github.com/rlmm-go/rlmm/topicbased"
)

// serveOptions are the flags of rlmm serve.
type serveOptions struct {
	dir        string
	kafka      *kafkalog.FlagValues
	properties string

	snapshotDir      string
	logDir           string
	snapshotInterval time.Duration
	brokerID         int32
	consumeWait      time.Duration

	socket      string
	listenTCP   string
	allowRemote bool
	tlsCert     string
	tlsKey      string
	tlsClientCA string
	tokenFile   string

	metricsListen   string
	sizes           server.SizeMetrics
	logFormat       string
	logLevel        string
	readyFile       string
	shutdownTimeout time.Duration
	exitWithStdin   bool
	servingProcs    int
}

// defaultSocketName is the socket's name in the snapshot directory when
// --socket is not given.
const defaultSocketName = "rlmm.sock"

func newServeCmd() *cobra.Command {
	o := &serveOptions{}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the remote log metadata of one broker (the sidecar of the broker plugin)",
		Long: `serve runs the topic-based manager for one Kafka broker over the cluster's
__remote_log_metadata topic (--kafka, or bootstrap.servers in --properties) or
over the embedded log of --dir, with its snapshot in --snapshot-dir (default
<--log-dir>.rlmm/snapshots, beside the broker's log directory, never inside it),
and serves every RemoteLogMetadataManager method to the broker's rlmm plugin
as framed protobuf messages (rpc/brokerframe, proto/rlmm/v1/rlmm.proto).

Callers: a Unix socket (--socket, default <snapshot-dir>/rlmm.sock) created
with mode 0600; TCP only with --listen-tcp, on loopback unless --allow-remote,
and only with a bearer token (--token-file) and/or TLS with verified client
certificates (--listen-tls-cert, --listen-tls-key, --listen-tls-client-ca);
TCP speaks the same frames as the socket, the token in each connection's hello.
A second server on the same socket or snapshot directory is refused, naming
the holder's pid.

The socket accepts calls at once; reads answer NOT_READY, and no partition is
ready, until the log is open and the assigned metadata partitions are caught up.
SIGTERM or SIGINT: in-flight calls finish (bounded by --shutdown-timeout), a
final snapshot is written, exit 0. Logs go to stderr (--log-format, --log-level).

The metadata partition count is --kafka-partitions, else
remote.log.metadata.topic.num.partitions of --properties, else 50 (Kafka's
default), also for --dir: it must match the cluster's, since it decides which
metadata partition holds each user partition.

Exit status: 0 after SIGTERM or SIGINT (or the end of stdin with
--exit-with-stdin) and the final snapshot; 3 when a flag or setting is
refused (the message names it: bad flags, a --properties key or value, a file
a setting names that cannot be read, a setting the cluster refuses such as a
partition count other than the topic's): the same settings fail again, and the
broker plugin stops at this code instead of restarting; 2 when it could not
run for another reason (an unreachable cluster, a socket or snapshot directory
held by another server, naming its pid, a final snapshot that failed).`,
		Example: `  rlmm serve --kafka 127.0.0.1:9092 --log-dir /var/lib/kafka/data --broker-id 1 --socket /run/rlmm/broker1.sock
  rlmm serve --properties /etc/kafka/rlmm.properties --snapshot-dir /var/lib/rlmm --metrics-listen 127.0.0.1:9464
  rlmm serve --dir ./rlmm-log --snapshot-dir ./rlmm-snap --ready-file ./ready`,
		Args: func(cmd *cobra.Command, args []string) error {
			if err := cobra.NoArgs(cmd, args); err != nil {
				return settingsRefused(usageErrorf("%v", err))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error { return settingsRefused(runServe(cmd, o)) },
	}
	cmd.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error { return settingsRefused(flagError(cmd, err)) })
	f := cmd.Flags()
	f.StringVar(&o.dir, "dir", "", "directory of the embedded metadata log (created if missing), instead of --kafka")
	o.kafka = kafkalog.RegisterFlags(f)
	f.StringVar(&o.properties, "properties", "", "file of Kafka-style remote.log.metadata.* and (remote.log.metadata.common.client.)* client settings")
	f.StringVar(&o.snapshotDir, "snapshot-dir", "", "snapshot directory, held with a lock file (default: <--log-dir>.rlmm/snapshots)")
	f.StringVar(&o.logDir, "log-dir", "", "the broker's log.dir; the default snapshot directory is <log-dir>.rlmm/snapshots, beside it (a broker refuses to start with a directory in log.dir that is not a partition's log)")
	f.DurationVar(&o.snapshotInterval, "snapshot-interval", topicbased.DefaultSnapshotInterval, "how often a snapshot is written when the metadata changed (negative: only at shutdown)")
	f.Int32Var(&o.brokerID, "broker-id", -1, "the broker's broker.id (reported by ServerInfo; a hello naming another broker is refused)")
	f.DurationVar(&o.consumeWait, "consume-wait", 0, "bound of a mutation's waits (default: remote.log.metadata.consume.wait.ms of --properties, or 2m)")
	f.StringVar(&o.socket, "socket", "", "Unix socket to serve on (default: <snapshot-dir>/"+defaultSocketName+")")
	f.StringVar(&o.listenTCP, "listen-tcp", "", "also serve on this TCP address (needs --token-file or TLS with --listen-tls-client-ca)")
	f.BoolVar(&o.allowRemote, "allow-remote", false, "allow a non-loopback --listen-tcp / --metrics-listen address (TCP then needs TLS)")
	f.StringVar(&o.tlsCert, "listen-tls-cert", "", "PEM certificate of the TCP endpoint")
	f.StringVar(&o.tlsKey, "listen-tls-key", "", "PEM key of the TCP endpoint")
	f.StringVar(&o.tlsClientCA, "listen-tls-client-ca", "", "PEM CA certificates that verify the TCP callers' client certificates (required with TLS unless --token-file)")
	f.StringVar(&o.tokenFile, "token-file", "", "file holding the token TCP callers must send in their hello")
	f.StringVar(&o.metricsListen, "metrics-listen", "", "HTTP address of /metrics, /healthz and /readyz (default: off; loopback unless --allow-remote)")
	f.IntVar(&o.sizes.TopicsLimit, "metrics-topics-limit", server.DefaultTopicsLimit, "remote size gauges: the topics (the largest by remote bytes) with their own topic label; the rest are summed under topic=\"_other\" (0: no per-topic series)")
	f.IntVar(&o.sizes.PartitionsLimit, "metrics-partitions-limit", 0, "remote size gauges per partition: the largest partitions with their own labels, the rest summed under _other (default 0: none)")
	f.DurationVar(&o.sizes.MaxAge, "metrics-sizes-max-age", 15*time.Second, "remote size gauges: a scrape reuses the last computation if it is younger than this (0: every scrape scans the hosted partitions' segments)")
	f.StringVar(&o.logFormat, "log-format", "text", "log format on stderr: text or json")
	f.StringVar(&o.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	f.StringVar(&o.readyFile, "ready-file", "", "file written (atomically) once the socket accepts calls: pid=, socket=, tcp=, metrics= lines")
	f.DurationVar(&o.shutdownTimeout, "shutdown-timeout", 10*time.Second, "bound of the stop of the endpoints, and of the final snapshot, at SIGTERM")
	f.IntVar(&o.servingProcs, "serving-procs", 1, "Go processors (GOMAXPROCS) once the snapshot's state is built: restoring uses every core, serving calls runs cheaper on one; 0 leaves GOMAXPROCS as it is, and so does GOMAXPROCS set in the environment")
	f.BoolVar(&o.exitWithStdin, "exit-with-stdin", false, "also stop as on SIGTERM when standard input reaches its end (a parent that holds the pipe and dies, even by kill -9, stops the server)")
	_ = cmd.MarkFlagDirname("dir")
	_ = cmd.MarkFlagDirname("snapshot-dir")
	_ = cmd.MarkFlagDirname("log-dir")
	_ = cmd.MarkFlagFilename("properties")
	return cmd
}

// serveLog is the metadata log serve runs on, how to open it and what
// ServerInfo calls it.
type serveLog struct {
	kafka       *kafkalog.Config // nil: the embedded log
	dir         string
	partitions  int32
	consumeWait time.Duration
	describe    string
	// ignored are the --properties keys of Kafka's own manager that rlmm
	// takes without using (kafkalog.IgnoredProperties), logged at start.
	ignored []string
}

// resolveLog decides the log from the flags and --properties; every error
// names the flag or setting.
func (o *serveOptions) resolveLog(cmd *cobra.Command) (*serveLog, error) {
	var kc kafkalog.Config
	var ignored []string
	if o.properties != "" {
		props, err := readProperties(o.properties)
		if err != nil {
			return nil, usageErrorf("%v", err)
		}
		if kc, err = kafkalog.ParseProperties(props); err != nil {
			return nil, usageErrorf("--properties %s: %v", o.properties, err)
		}
		ignored = kafkalog.IgnoredProperties(props)
	}
	flags := cmd.Flags()
	if o.kafka.Partitions < 0 || o.kafka.Partitions > kafkalog.MaxFlagPartitions {
		return nil, usageErrorf("--kafka-partitions is %d, must be 0 to %d", o.kafka.Partitions, kafkalog.MaxFlagPartitions)
	}
	if o.kafka.Partitions > 0 {
		kc.NumPartitions = o.kafka.Partitions
	}
	if kc.NumPartitions == 0 {
		// Kafka's default; fixed here so the partitioner always matches.
		kc.NumPartitions = kafkalog.DefaultNumPartitions
	}
	sl := &serveLog{partitions: kc.NumPartitions, consumeWait: kc.ConsumeWait, ignored: ignored}
	if o.consumeWait < 0 || o.consumeWait > maxTimeout {
		return nil, usageErrorf("--consume-wait %s: must be 0 (the default) to %s", o.consumeWait, maxTimeout)
	}
	if o.consumeWait > 0 {
		sl.consumeWait = o.consumeWait
	}
	useKafka := o.kafka.Enabled() || len(kc.BootstrapServers) > 0
	if o.dir != "" {
		if useKafka {
			return nil, usageErrorf("give either --dir or --kafka (or bootstrap.servers in --properties), not both")
		}
		sl.dir = o.dir
		sl.describe = "embedded log " + o.dir
		return sl, nil
	}
	if !useKafka {
		return nil, usageErrorf("give --kafka host:port (or bootstrap.servers in --properties) or --dir DIR: the metadata log to serve")
	}
	if o.kafka.Enabled() {
		fc, err := o.kafka.Config()
		if err != nil {
			return nil, usageErrorf("%v", err)
		}
		kc.BootstrapServers = fc.BootstrapServers
		if securityFlagsChanged(flags.Changed) {
			// The flags replace every security setting of --properties
			// (PEM files only: the JKS/PKCS12 stores and Kerberos, whose
			// passwords must not be on a command line, come from
			// --properties alone).
			kc.TLSEnable, kc.TLSCAFile, kc.TLSCertFile, kc.TLSKeyFile = fc.TLSEnable, fc.TLSCAFile, fc.TLSCertFile, fc.TLSKeyFile
			kc.TLSInsecureSkipVerify = fc.TLSInsecureSkipVerify
			kc.SASLMechanism, kc.SASLUser, kc.SASLPassword = fc.SASLMechanism, fc.SASLUser, fc.SASLPassword
			kc.TLSKeyStoreLocation, kc.TLSKeyStorePassword, kc.TLSKeyPassword = "", "", ""
			kc.TLSTrustStoreLocation, kc.TLSTrustStorePassword = "", ""
			kc.SASLKerberosServiceName, kc.SASLKerberosPrincipal, kc.SASLKerberosKeyTab, kc.SASLKerberosConfig = "", "", "", ""
		}
	}
	kc.Topic = o.kafka.Topic
	sl.kafka = &kc
	sl.describe = fmt.Sprintf("kafka %s at %s", kc.Topic, strings.Join(kc.BootstrapServers, ","))
	return sl, nil
}

func securityFlagsChanged(changed func(string) bool) bool {
	for _, name := range []string{"tls", "tls-ca", "tls-cert", "tls-key", "tls-insecure-skip-verify", "sasl-mechanism", "sasl-user", "sasl-password"} {
		if changed(name) {
			return true
		}
	}
	return false
}

// Retries of opening the metadata topic, as Kafka's manager retries its
// initialization (remote.log.metadata.initialization.retry.interval.ms and
// .retry.max.timeout.ms, whose defaults these are).
const (
	openRetryInterval = 100 * time.Millisecond
	openRetryMaxWait  = 2 * time.Minute
)

// open opens the log: the Kafka topic (created if missing, as Kafka's
// manager does) or the embedded log (created if missing).
//
// A broker starts its RLMM before its own listener serves (a Kafka 4.3.1
// broker's listener opened 11 s after configure on a loaded 2-core
// machine), and a cluster's first broker cannot create the topic with its
// replication factor until the others have registered: so a cluster that
// does not answer, or refuses
// the topic for now, is retried (the socket answers NOT_READY meanwhile) for
// up to openRetryMaxWait, as Kafka's manager does. A bad setting
// (rlmm.ErrInvalidArgument, e.g. a partition count that does not match the
// topic) fails at once.
func (sl *serveLog) open(ctx context.Context, logger *slog.Logger) (eventlog.Log, error) {
	if sl.kafka != nil {
		c := *sl.kafka
		c.Logger = logger
		deadline := time.Now().Add(openRetryMaxWait)
		for attempt := 1; ; attempt++ {
			l, err := kafkalog.Open(ctx, c)
			if err == nil {
				return l, nil
			}
			if errors.Is(err, rlmm.ErrInvalidArgument) || ctx.Err() != nil || time.Now().After(deadline) {
				return nil, fmt.Errorf("opening the metadata topic (attempt %d): %w", attempt, err)
			}
			logger.Warn("serve: opening the metadata topic failed; retrying", "attempt", attempt,
				"retry_in", openRetryInterval, "gives_up_in", time.Until(deadline).Round(time.Second), "err", err)
			select {
			case <-ctx.Done():
				return nil, fmt.Errorf("opening the metadata topic: %w", ctx.Err())
			case <-time.After(openRetryInterval):
			}
		}
	}
	if err := os.MkdirAll(sl.dir, 0o700); err != nil {
		return nil, fmt.Errorf("--dir: %w", err)
	}
	l, err := filelog.Open(sl.dir, filelog.Options{Partitions: sl.partitions, Logger: logger})
	if err != nil {
		return nil, explainFilelog(err, sl.dir)
	}
	return l, nil
}

// newLogger builds the slog logger of --log-format and --log-level.
func (o *serveOptions) newLogger(w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(o.logLevel)); err != nil {
		return nil, usageErrorf("--log-level %q: want debug, info, warn or error", o.logLevel)
	}
	opts := &slog.HandlerOptions{Level: level}
	switch o.logFormat {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, usageErrorf("--log-format %q: want text or json", o.logFormat)
}

// tcpEndpoint checks the TCP flags: TCP needs a token or TLS with client
// certificates, and TLS when remote callers are allowed; plaintext TCP
// without a token is refused.
func (o *serveOptions) tcpEndpoint() (server.Endpoint, error) {
	var ep server.Endpoint
	tlsAsked := o.tlsCert != "" || o.tlsKey != "" || o.tlsClientCA != ""
	if o.listenTCP == "" {
		if tlsAsked || o.tokenFile != "" {
			return ep, usageErrorf("--listen-tls-*/--token-file apply to --listen-tcp, which is not given")
		}
		return ep, nil
	}
	if tlsAsked {
		if o.tlsClientCA == "" && o.tokenFile == "" {
			return ep, usageErrorf("--listen-tcp with TLS needs --listen-tls-client-ca (verified client certificates) or --token-file: TLS alone lets anyone call")
		}
		c, err := server.TLSConfig(o.tlsCert, o.tlsKey, o.tlsClientCA)
		if err != nil {
			return ep, usageErrorf("--listen-tls-cert/--listen-tls-key/--listen-tls-client-ca: %v", err)
		}
		ep.TLS = c
	}
	if o.tokenFile != "" {
		tok, err := server.ReadToken(o.tokenFile)
		if err != nil {
			return ep, usageErrorf("--token-file: %v", err)
		}
		ep.Token = tok
	}
	if ep.TLS == nil && ep.Token == nil {
		return ep, usageErrorf("--listen-tcp %s without --token-file or TLS (--listen-tls-cert, --listen-tls-key, --listen-tls-client-ca) is refused: anyone could delete segment metadata", o.listenTCP)
	}
	if o.allowRemote && ep.TLS == nil {
		return ep, usageErrorf("--allow-remote needs TLS on --listen-tcp (--listen-tls-cert, --listen-tls-key): a token would cross the network in the clear")
	}
	l, err := server.ListenTCP(o.listenTCP, o.allowRemote)
	if err != nil {
		if errors.Is(err, rlmm.ErrInvalidArgument) {
			return ep, usageErrorf("--listen-tcp: %v (--allow-remote allows it)", err)
		}
		return ep, couldNotRun(err)
	}
	ep.Listener = l
	return ep, nil
}

// dirs resolves the snapshot directory and the socket path.
func (o *serveOptions) dirs() (snapshotDir, socket string, err error) {
	snapshotDir = o.snapshotDir
	if snapshotDir == "" {
		if o.logDir == "" {
			return "", "", usageErrorf("give --snapshot-dir DIR, or --log-dir (the broker's log.dir) to use <log-dir>.rlmm/snapshots")
		}
		snapshotDir = defaultSnapshotDir(o.logDir)
	}
	socket = o.socket
	if socket == "" {
		socket = filepath.Join(snapshotDir, defaultSocketName)
	}
	if len(socket) > server.MaxSocketPath {
		return "", "", usageErrorf("--socket %s is %d bytes, longer than the %d a Unix socket path allows; give a shorter --socket", socket, len(socket), server.MaxSocketPath)
	}
	return snapshotDir, socket, nil
}

func runServe(cmd *cobra.Command, o *serveOptions) error {
	logger, err := o.newLogger(cmd.ErrOrStderr())
	if err != nil {
		return err
	}
	sl, err := o.resolveLog(cmd)
	if err != nil {
		return err
	}
	if len(sl.ignored) > 0 {
		logger.Info("serve: settings of Kafka's own manager that rlmm does not use", "keys", sl.ignored)
	}
	snapshotDir, socket, err := o.dirs()
	if err != nil {
		return err
	}
	if o.shutdownTimeout <= 0 || o.shutdownTimeout > maxTimeout {
		return usageErrorf("--shutdown-timeout %s: must be positive and at most %s", o.shutdownTimeout, maxTimeout)
	}
	if o.snapshotInterval > maxTimeout {
		return usageErrorf("--snapshot-interval %s: must be at most %s (negative: only at shutdown)", o.snapshotInterval, maxTimeout)
	}
	if err := checkServingProcs(o.servingProcs); err != nil {
		return err
	}
	if o.sizes.TopicsLimit < 0 || o.sizes.TopicsLimit > maxSizeSeries {
		return usageErrorf("--metrics-topics-limit %d: must be 0..%d", o.sizes.TopicsLimit, maxSizeSeries)
	}
	if o.sizes.PartitionsLimit < 0 || o.sizes.PartitionsLimit > maxSizeSeries {
		return usageErrorf("--metrics-partitions-limit %d: must be 0..%d", o.sizes.PartitionsLimit, maxSizeSeries)
	}
	if o.sizes.MaxAge < 0 || o.sizes.MaxAge > time.Hour {
		return usageErrorf("--metrics-sizes-max-age %s: must be 0..1h", o.sizes.MaxAge)
	}
	if o.metricsListen != "" {
		if _, _, err := net.SplitHostPort(o.metricsListen); err != nil {
			return usageErrorf("--metrics-listen %q: %v", o.metricsListen, err)
		}
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if o.exitWithStdin {
		var cancel context.CancelCauseFunc
		ctx, cancel = context.WithCancelCause(ctx)
		defer cancel(nil)
		go func() {
			// Ends with the process if stdin never closes; it holds nothing.
			_, _ = io.Copy(io.Discard, cmd.InOrStdin())
			cancel(errors.New("standard input closed"))
		}()
	}

	lock, err := server.LockDir(snapshotDir)
	if err != nil {
		return couldNotRun(fmt.Errorf("--snapshot-dir: %w", err))
	}
	defer lock.Close()
	if lock.ReadOnly {
		logger.Warn("serve: the snapshot directory is read-only: serving from the last snapshot and the log; snapshots are written again once it is writable",
			"dir", snapshotDir)
	}

	tcp, err := o.tcpEndpoint()
	if err != nil {
		return err
	}
	unix, err := server.ListenUnix(ctx, socket)
	if err != nil {
		if tcp.Listener != nil {
			tcp.Listener.Close()
		}
		return couldNotRun(fmt.Errorf("--socket: %w", err))
	}
	reg := prometheus.NewRegistry()
	// The Go collector also exports the runtime's live heap
	// (go_gc_heap_live_bytes: what the last GC found reachable), the
	// figure comparable with a JVM's heap after a full GC.
	reg.MustRegister(collectors.NewGoCollector(collectors.WithGoCollectorRuntimeMetrics(
		collectors.GoRuntimeMetricsRule{Matcher: regexp.MustCompile(`^/gc/heap/live:bytes$`)})),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	// The broker's assignment as the last server recorded it: the manager
	// consumes those partitions before the first call. One that cannot be
	// read is said and started over: the broker's next changes rebuild it.
	hostedPath := filepath.Join(snapshotDir, server.HostedFileName)
	hosted, err := server.OpenHosted(hostedPath)
	if err != nil {
		logger.Error("serve: the recorded hosted set cannot be read; starting with none", "path", hostedPath, "error", err)
		if err := os.Rename(hostedPath, hostedPath+".unreadable"); err != nil {
			logger.Warn("serve: moving the unreadable hosted set aside failed", "error", err)
		}
		if hosted, err = server.OpenHosted(hostedPath); err != nil {
			hosted = nil // kept in memory only
		}
	}
	srv := server.New(server.Config{
		Logger: logger, Version: version(), BrokerID: o.brokerID,
		MetadataPartitions: sl.partitions, LogDescription: sl.describe, Sizes: o.sizes,
		Hosted: hosted,
	})
	r := &serveRun{o: o, logger: logger, srv: srv, socket: socket}
	defer r.stopServing()
	if err := r.startEndpoints(unix, tcp, reg); err != nil {
		return err
	}

	// The log and the manager come up behind the socket, which already
	// answers (NOT_READY until then).
	log, err := sl.open(ctx, logger)
	if err != nil {
		if ctx.Err() != nil {
			logger.Info("serve: stopped while opening the metadata log")
			return nil
		}
		if errors.Is(err, rlmm.ErrInvalidArgument) {
			// A setting the cluster refuses (the topic's partition count, a
			// store's password): the same settings fail the same way again.
			return &statusError{code: exitSettingsRefused, err: err, usage: true}
		}
		return couldNotRun(err)
	}
	defer log.Close()
	// A deposed leader's broker still runs its RemoteLogManager: the
	// fence refuses its copies' and deletions' starts for partitions the
	// cluster says another broker leads. No Kafka or no --broker-id, no fence.
	if kl, ok := log.(interface{ Client() *kgo.Client }); ok {
		if f := fence.New(fence.Config{Client: kl.Client(), BrokerID: o.brokerID, Logger: logger, Registerer: reg}); f != nil {
			srv.SetLeaderFence(f.Check)
			logger.Info("serve: segment mutations are fenced by the cluster's partition leaders", "broker_id", o.brokerID)
		}
	}
	mgr, err := topicbased.Start(ctx, topicbased.Config{
		Log: log, SnapshotDir: snapshotDir, SnapshotInterval: o.snapshotInterval,
		ConsumeWait: sl.consumeWait, Logger: logger, Metrics: server.NewMetrics(reg),
	})
	if err != nil {
		if ctx.Err() != nil {
			logger.Info("serve: stopped while starting the manager")
			return nil
		}
		return couldNotRun(fmt.Errorf("starting the manager: %w", err))
	}
	srv.SetManager(mgr)
	narrowProcsWhenRestored(ctx, mgr.Restored(), o.servingProcs, logger)
	logger.Info("serve: manager up", "log", sl.describe, "metadata_partitions", sl.partitions, "snapshot_dir", snapshotDir,
		"snapshot_segments", mgr.Stats().SnapshotSegments)

	var serveErr error
	select {
	case <-ctx.Done():
		logger.Info("serve: stopping", "cause", context.Cause(ctx))
	case serveErr = <-srv.Errors():
		logger.Error("serve: an endpoint failed; stopping", "err", serveErr)
	}
	r.stopServing()
	flushCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), o.shutdownTimeout)
	defer cancel()
	start := time.Now()
	if err := mgr.ShutdownAndFlush(flushCtx); err != nil {
		return fmt.Errorf("final snapshot in %s: %w", snapshotDir, err)
	}
	logger.Info("serve: final snapshot written", "dir", snapshotDir, "took", time.Since(start))
	if serveErr != nil {
		return serveErr
	}
	return nil
}

// serveRun holds what runServe started, to stop it once.
type serveRun struct {
	o       *serveOptions
	logger  *slog.Logger
	srv     *server.Server
	socket  string
	ops     *http.Server
	opsDone chan struct{}
	stopped bool
}

// startEndpoints serves the socket (and TCP), starts the ops listener and
// writes the ready file. Both endpoints speak the broker's frames
// (rpc/brokerframe); TCP with TLS when asked, and the token in each
// connection's hello when it has one.
func (r *serveRun) startEndpoints(unix net.Listener, tcp server.Endpoint, reg *prometheus.Registry) error {
	if err := r.srv.Serve(server.Endpoint{Listener: unix}); err != nil {
		unix.Close()
		if tcp.Listener != nil {
			tcp.Listener.Close()
		}
		return couldNotRun(err)
	}
	lines := []string{fmt.Sprintf("pid=%d", os.Getpid()), "socket=" + r.socket}
	if tcp.Listener != nil {
		if err := r.srv.Serve(tcp); err != nil {
			tcp.Listener.Close()
			return couldNotRun(err)
		}
		lines = append(lines, "tcp="+tcp.Listener.Addr().String())
	}
	if r.o.metricsListen != "" {
		l, err := server.ListenTCP(r.o.metricsListen, r.o.allowRemote)
		if err != nil {
			if errors.Is(err, rlmm.ErrInvalidArgument) {
				return usageErrorf("--metrics-listen: %v (--allow-remote allows it)", err)
			}
			return couldNotRun(fmt.Errorf("--metrics-listen: %w", err))
		}
		r.ops = &http.Server{Handler: r.srv.OpsHandler(reg), ReadHeaderTimeout: 10 * time.Second}
		r.opsDone = make(chan struct{})
		go func() {
			defer close(r.opsDone)
			if err := r.ops.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
				r.logger.Error("serve: metrics listener failed", "err", err)
			}
		}()
		lines = append(lines, "metrics="+l.Addr().String())
		r.logger.Info("serve: operations endpoint", "address", l.Addr().String())
	}
	r.logger.Info("serve: accepting calls", "socket", r.socket)
	if r.o.readyFile != "" {
		if err := writeFileAtomic(r.o.readyFile, []byte(strings.Join(lines, "\n")+"\n")); err != nil {
			return couldNotRun(fmt.Errorf("--ready-file: %w", err))
		}
	}
	return nil
}

// stopServing stops the endpoints (bounded), the ops listener and removes the
// ready file. Idempotent.
func (r *serveRun) stopServing() {
	if r.stopped {
		return
	}
	r.stopped = true
	ctx, cancel := context.WithTimeout(context.Background(), r.o.shutdownTimeout)
	defer cancel()
	r.srv.Stop(ctx)
	if r.ops != nil {
		if err := r.ops.Shutdown(ctx); err != nil {
			_ = r.ops.Close()
		}
		<-r.opsDone
	}
	if r.o.readyFile != "" {
		_ = os.Remove(r.o.readyFile)
	}
}

// writeFileAtomic writes path through a temporary file in its directory
// and a rename, so a reader sees all of it or nothing.
func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// defaultSnapshotDir is the snapshot directory of a server given the
// broker's log.dir: beside it, never inside it, since a broker takes every
// directory in log.dir for a partition's log and will not start on one
// named otherwise. The plugin's work directory is the same <log.dir>.rlmm.
func defaultSnapshotDir(logDir string) string {
	return filepath.Join(filepath.Clean(logDir)+".rlmm", "snapshots")
}

package org.rlmm.plugin;

import io.grpc.Deadline;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.StreamObserver;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.server.log.remote.storage.RemoteLogMetadataManager;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadata;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadataUpdate;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentState;
import org.apache.kafka.server.log.remote.storage.RemotePartitionDeleteMetadata;
import org.apache.kafka.server.log.remote.storage.RemoteStorageException;
import org.rlmm.plugin.proto.AddSegmentRequest;
import org.rlmm.plugin.proto.HighestOffsetForEpochReply;
import org.rlmm.plugin.proto.HighestOffsetForEpochRequest;
import org.rlmm.plugin.proto.IsReadyRequest;
import org.rlmm.plugin.proto.LeadershipChangesRequest;
import org.rlmm.plugin.proto.ListSegmentsRequest;
import org.rlmm.plugin.proto.MutationReply;
import org.rlmm.plugin.proto.NextSegmentWithTxnIndexRequest;
import org.rlmm.plugin.proto.PutPartitionDeleteRequest;
import org.rlmm.plugin.proto.RemoteLogMetadataGrpc;
import org.rlmm.plugin.proto.RemoteLogSizeRequest;
import org.rlmm.plugin.proto.SegmentBatch;
import org.rlmm.plugin.proto.SegmentForOffsetRequest;
import org.rlmm.plugin.proto.SegmentMetadata;
import org.rlmm.plugin.proto.SegmentReply;
import org.rlmm.plugin.proto.ServerInfoReply;
import org.rlmm.plugin.proto.ServerInfoRequest;
import org.rlmm.plugin.proto.StopPartitionsRequest;
import org.rlmm.plugin.proto.UpdateSegmentRequest;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * rlmm as the RemoteLogMetadataManager of an Apache Kafka 4.x broker: a thin gRPC client of
 * {@code rlmm serve} (proto/rlmm/v1/rlmm.proto), which runs rlmm's topic-based manager over the
 * cluster's {@code __remote_log_metadata} topic. Nothing here decides a segment's state: every
 * method is one call to the server, whose verdict comes back as Kafka's own exceptions.
 *
 * <p>By default {@link #configure} starts the server as a child process on a Unix socket and
 * returns without waiting for it (as Kafka's own manager initializes in the background): calls
 * wait for it within their deadlines, {@link #isReady} answers false until it answers, and a
 * setting the child refuses is logged at ERROR and fails every call naming it. It restarts the
 * child when it dies and stops it at {@link #close}; every child, the first and each restarted
 * one, gets the partitions this broker holds before any call goes through, and a read of a
 * partition the server does not hold is an exception, never an empty answer ({@link Errors}).
 * {@link #isReady} reads the readiness the server pushes ({@link ReadinessWatch}). With {@code rlmm.serve.socket} or {@code rlmm.serve.address} it connects to a
 * server that is already running. Mutations return futures completed from the gRPC callback;
 * reads block with a deadline ({@code rlmm.serve.call.timeout.ms}); the fetch path's lookup by
 * (epoch, offset) travels on one long-lived stream of the channel ({@link LookupStream}). The settings are in
 * plugin/README.md.
 */
public class RlmmRemoteLogMetadataManager implements RemoteLogMetadataManager {
    private static final Logger LOG = LoggerFactory.getLogger(RlmmRemoteLogMetadataManager.class);

    /**
     * The version of rlmm serve's API (proto/rlmm/v1/rlmm.proto) this plugin speaks: every server
     * it reaches must state the same api_version in ServerInfo (server.APIVersion in the Go code)
     * before any call goes through; one of another version is refused naming both, and the broker
     * is stopped as when the child refuses its settings.
     */
    public static final int API_VERSION = 1;

    /**
     * For tests only (not among the settings of plugin/README.md's table; logged at WARN when set):
     * how long the plugin waits, each time a child answers, before it hands that child the broker's
     * partitions (reads wait for the hand-over meanwhile), and before it sends each leadership
     * change of the broker (reads of the partitions it assigns reach a server that does not hold
     * them yet meanwhile). It holds open the windows in which a read could reach a server without
     * its partition, so a test can show that none is answered "nothing".
     */
    static final String TEST_ASSIGN_DELAY = "rlmm.serve.test.assign.delay.ms";

    private final Object assignLock = new Object();
    /** The partitions this broker holds, true for a leader: handed to a restarted server again. */
    private final Map<TopicIdPartition, Boolean> assigned = new LinkedHashMap<>();

    private volatile PluginConfig cfg;
    /** {@link #TEST_ASSIGN_DELAY}; zero unless a test sets it. */
    private volatile Duration testAssignDelay = Duration.ZERO;
    private volatile Channels.Conn conn;
    private volatile RemoteLogMetadataGrpc.RemoteLogMetadataBlockingStub blocking;
    private volatile RemoteLogMetadataGrpc.RemoteLogMetadataStub async;
    private volatile LookupStream lookups;
    /** The readiness the server pushes; isReady reads only this. */
    private volatile ReadinessWatch readiness;
    /** Lookups by (epoch, offset) as unary calls instead of on the stream (the benchmark's A/B). */
    private volatile boolean unaryLookups;
    private ExecutorService callbacks;
    private Assigner assigner;
    private ServeProcess child;
    /** Completed while the server answers; replaced by an incomplete one while a child restarts. */
    private volatile CompletableFuture<Void> gate = CompletableFuture.completedFuture(null);
    private volatile String gateReason = "";
    /** Reads that found the gate closed since it last opened (logged when the next child gets the partitions). */
    private final java.util.concurrent.atomic.AtomicLong readsHeld = new java.util.concurrent.atomic.AtomicLong();
    /** Reads of partitions assigned here that the server refused NOT_ASSIGNED (logged by the test hook). */
    private final java.util.concurrent.atomic.AtomicLong refusedAssigned = new java.util.concurrent.atomic.AtomicLong();
    private volatile boolean closed;
    private volatile int stoppedExit = -1;
    /** The plugin's metrics in the broker's JMX ({@link RlmmMetrics}); null when not registered. */
    private volatile RlmmMetrics metrics;
    private volatile long lastReadyWarning = System.nanoTime() - TimeUnit.MINUTES.toNanos(1);

    /** Instantiated by the broker (public no-argument constructor). */
    public RlmmRemoteLogMetadataManager() {}

    @Override
    public synchronized void configure(Map<String, ?> configs) {
        long began = System.nanoTime();
        if (closed) {
            throw new IllegalStateException("rlmm plugin: configure after close");
        }
        if (cfg != null) {
            LOG.info("rlmm plugin: already configured (server {}); ignoring this call", cfg.target());
            return;
        }
        PluginConfig c = PluginConfig.parse(configs);
        testAssignDelay = testAssignDelay(configs);
        if (!testAssignDelay.isZero()) {
            LOG.warn("rlmm plugin: {}={}: a test setting; every child gets the broker's partitions that much later",
                    TEST_ASSIGN_DELAY, testAssignDelay.toMillis());
        }
        if (!c.ignoredSettings.isEmpty()) {
            LOG.info("rlmm plugin: settings of Kafka's own manager that rlmm does not use: {}", c.ignoredSettings);
        }
        callbacks = Executors.newCachedThreadPool(Channels.daemon("rlmm-plugin-callback"));
        Channels.Conn cn;
        try {
            cn = Channels.open(c);
        } catch (RuntimeException e) {
            callbacks.shutdownNow();
            throw e;
        }
        conn = cn;
        assigner = new Assigner(LOG, c.restartBackoff, c.restartBackoffMax);
        blocking = RemoteLogMetadataGrpc.newBlockingStub(cn.channel);
        async = RemoteLogMetadataGrpc.newStub(cn.channel);
        lookups = new LookupStream(blocking.getChannel(), blocking.getCallOptions(), LOG, c.target());
        readiness = new ReadinessWatch(blocking.getChannel(), blocking.getCallOptions(), LOG, c.target(),
                c.restartBackoff, c.restartBackoffMax);
        readiness.start();
        metrics = RlmmMetrics.register(c.brokerId, LOG, this::upGauge,
                () -> readiness.counts()[0], () -> readiness.counts()[1]);
        cfg = c;
        if (c.mode != PluginConfig.Mode.SPAWN) {
            Optional<ServerInfoReply> info = serverInfo(c.callTimeout);
            String mismatch = info.map(i -> versionMismatch(i, c)).orElse(null);
            if (mismatch != null) {
                fail(mismatch);
            } else if (info.isPresent()) {
                LOG.info("rlmm plugin: connected to rlmm serve {} at {} (pid {}, {}, broker id {})", info.get().getVersion(),
                        c.target(), info.get().getPid(), info.get().getLog(), info.get().getBrokerId());
                serverIdentity = identity(info.get());
            } else {
                LOG.warn("rlmm plugin: rlmm serve at {} does not answer yet; calls wait up to {} ms for it",
                        c.target(), c.callTimeout.toMillis());
            }
            if (mismatch == null) {
                watchServer(c);
            }
            return;
        }
        gate = new CompletableFuture<>();
        gateReason = "rlmm serve is starting";
        ServeProcess p = new ServeProcess(c, LOG, new ServeProcess.Hooks() {
            @Override
            public Optional<Long> probe(Duration timeout) throws ServeProcess.Refused {
                cn.channel.resetConnectBackoff();
                Optional<ServerInfoReply> info = serverInfo(timeout);
                String mismatch = info.map(i -> versionMismatch(i, c)).orElse(null);
                if (mismatch != null) {
                    throw new ServeProcess.Refused(mismatch);
                }
                return info.map(ServerInfoReply::getPid);
            }

            @Override
            public void ready(long pid, boolean restart) throws RemoteStorageException {
                handOver(pid, restart);
            }

            @Override
            public void lost(String why) {
                readiness.clear();
                synchronized (assignLock) {
                    gateReason = why + ", restarting";
                    if (gate.isDone()) {
                        gate = new CompletableFuture<>();
                    }
                }
            }

            @Override
            public void failed(String why) {
                fail(why);
            }

            @Override
            public void started(long pid) {
                RlmmMetrics m = metrics;
                if (m != null) {
                    m.starts.incrementAndGet();
                }
            }

            @Override
            public void error(String why) {
                RlmmMetrics m = metrics;
                if (m != null) {
                    m.error();
                }
            }
        });
        try {
            p.start();
        } catch (RemoteStorageException e) {
            p.close();
            assigner.close();
            readiness.close();
            shutdownConnection();
            if (metrics != null) {
                metrics.close();
                metrics = null;
            }
            cfg = null;
            throw new KafkaException(e.getMessage(), e);
        }
        child = p;
        LOG.info("rlmm plugin: configured in {} ms; rlmm serve starts in the background (calls wait up to {} ms for it)",
                TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - began), c.callTimeout.toMillis());
    }

    /**
     * The refusal of a server that states another API version than {@link #API_VERSION}, naming
     * both; null when it matches.
     */
    private static String versionMismatch(ServerInfoReply info, PluginConfig c) {
        if (info.getApiVersion() == API_VERSION) {
            return null;
        }
        return "rlmm serve " + info.getVersion() + " (pid " + info.getPid() + ") at " + c.target() + " speaks API version "
                + info.getApiVersion() + (info.getApiVersion() == 0 ? " (older than the version handshake)" : "")
                + ", but this plugin speaks API version " + API_VERSION
                + ": refused (use the rlmm binary of the plugin's own jar, or a plugin jar of the server's release)";
    }

    /**
     * No server will be used (a refused setting or API version, the init timeout): every call
     * fails naming why from now on, {@link #isReady} answers false, and the broker is stopped as
     * Kafka's own manager stops it when it cannot initialize ({@link BrokerExit}).
     */
    private void fail(String why) {
        synchronized (assignLock) {
            gateReason = why;
            CompletableFuture<Void> failed = new CompletableFuture<>();
            failed.completeExceptionally(new RemoteStorageException("rlmm plugin: " + why));
            gate.completeExceptionally(new RemoteStorageException("rlmm plugin: " + why));
            gate = failed;
        }
        failure = why;
        RlmmMetrics m = metrics;
        if (m != null) {
            m.failed = true;
            m.error();
        }
        if (!closed) {
            BrokerExit.exit(LOG, why);
        }
    }

    private volatile String failure;

    /**
     * The child-up gauge: 1 while calls go through to a server that answers (started by this
     * plugin: the gate is open; connect mode: the channel is connected).
     */
    private long upGauge() {
        if (closed || failure != null) {
            return 0;
        }
        PluginConfig c = cfg;
        if (c != null && c.mode != PluginConfig.Mode.SPAWN) {
            Channels.Conn cn = conn;
            return cn != null && cn.channel.getState(false) == io.grpc.ConnectivityState.READY ? 1 : 0;
        }
        CompletableFuture<Void> g = gate;
        return g.isDone() && !g.isCompletedExceptionally() ? 1 : 0;
    }

    /** The plugin's metrics (for tests); null when not registered. */
    RlmmMetrics metrics() {
        return metrics;
    }

    /** Records one call of kind rpc that began at began (System.nanoTime()). */
    private void timed(String rpc, long began, boolean failed) {
        RlmmMetrics m = metrics;
        if (m != null) {
            m.call(rpc, System.nanoTime() - began, failed);
        }
    }

    /** Why this instance will use no server (it stopped the broker), or null (for tests). */
    String failure() {
        return failure;
    }

    /** How often connect mode asks the server who it is, to notice a restarted one. */
    static final Duration SERVER_WATCH_INTERVAL = Duration.ofSeconds(1);

    /** Connect mode: the pid and start time of the server last seen; null before the first answer. */
    private volatile String serverIdentity;
    private java.util.concurrent.ScheduledExecutorService serverWatch;

    private static String identity(ServerInfoReply info) {
        return info.getPid() + "@" + info.getStartedUnixMs();
    }

    /**
     * Connect mode ({@code rlmm.serve.socket}, {@code rlmm.serve.address}): asks the server who it
     * is every {@link #SERVER_WATCH_INTERVAL}. A server with another pid or start time than the one
     * seen last is a new one (restarted by whoever runs it), which knows no assignment: calls wait
     * (the gate closes) while it is handed the partitions the broker holds, as a restarted child is.
     * Its API version is checked first, as every server's.
     */
    private void watchServer(PluginConfig c) {
        serverWatch = Executors.newSingleThreadScheduledExecutor(Channels.daemon("rlmm-plugin-server-watch"));
        serverWatch.scheduleWithFixedDelay(() -> {
            try {
                checkServer(c);
            } catch (RuntimeException e) {
                LOG.warn("rlmm plugin: watching rlmm serve at {}: {}", c.target(), e.toString());
            }
        }, SERVER_WATCH_INTERVAL.toMillis(), SERVER_WATCH_INTERVAL.toMillis(), TimeUnit.MILLISECONDS);
    }

    private void checkServer(PluginConfig c) {
        if (closed || failure != null) {
            return;
        }
        Optional<ServerInfoReply> info = serverInfo(c.callTimeout);
        if (info.isEmpty()) {
            return;
        }
        String mismatch = versionMismatch(info.get(), c);
        if (mismatch != null) {
            fail(mismatch);
            return;
        }
        String id = identity(info.get());
        String last = serverIdentity;
        if (id.equals(last)) {
            return;
        }
        serverIdentity = id;
        boolean anyAssigned;
        synchronized (assignLock) {
            anyAssigned = !assigned.isEmpty();
        }
        if (last == null && !anyAssigned) {
            return; // the first server seen, and nothing to hand it yet
        }
        LOG.warn("rlmm plugin: rlmm serve at {} is a new server (pid {}, started at {} ms; was {}): handing it this"
                + " broker's partitions before calls go through", c.target(), info.get().getPid(),
                info.get().getStartedUnixMs(), last == null ? "none seen" : last);
        synchronized (assignLock) {
            gateReason = "rlmm serve at " + c.target() + " restarted";
            if (gate.isDone() && !gate.isCompletedExceptionally()) {
                gate = new CompletableFuture<>();
            }
        }
        try {
            handOver(info.get().getPid(), true);
        } catch (RemoteStorageException e) {
            LOG.warn("rlmm plugin: handing partitions to the new rlmm serve at {} failed: {}; trying again", c.target(),
                    e.getMessage());
            serverIdentity = last; // the next check sees the new server again
        }
    }

    /** {@link #TEST_ASSIGN_DELAY} of the broker's settings: zero when absent. */
    private static Duration testAssignDelay(Map<String, ?> configs) {
        Object v = configs.get(TEST_ASSIGN_DELAY);
        if (v == null) {
            return Duration.ZERO;
        }
        try {
            long ms = Long.parseLong(String.valueOf(v).trim());
            if (ms >= 0) {
                return Duration.ofMillis(ms);
            }
        } catch (NumberFormatException e) {
            // below
        }
        throw new org.apache.kafka.common.config.ConfigException(TEST_ASSIGN_DELAY, v, "not a number of milliseconds (0 or more)");
    }

    /**
     * Waits until the server answers (the child started, or came back), at most {@code timeout};
     * false when it did not, or when it refused its settings (for tests and tools that need the
     * child up before they look at it).
     */
    boolean awaitServer(Duration timeout) throws InterruptedException {
        try {
            gate.get(timeout.toNanos(), TimeUnit.NANOSECONDS);
            return true;
        } catch (TimeoutException | ExecutionException e) {
            return false;
        }
    }

    /**
     * Hands a child that now answers (the first one, and every restarted one) the partitions this
     * broker holds, then lets calls through: no read reaches a child before the broker's
     * assignment does, so none is refused for it. It tries until the server takes them (it may
     * still be opening its log) or the child dies; the broker's own assignment calls meanwhile
     * only record and queue (see {@link Assigner}), so they are never held up, and what they
     * queue reaches the server after this set (each change again, in order: the set is what they
     * recorded so far, so the server ends at the broker's latest assignment).
     */
    private void handOver(long pid, boolean restart) throws RemoteStorageException {
        String child = (restart ? "the restarted" : "the new") + " rlmm serve pid " + pid;
        if (!testAssignDelay.isZero()) {
            LOG.warn("rlmm plugin: {}: waiting {} ms before handing {} the broker's partitions",
                    TEST_ASSIGN_DELAY, testAssignDelay.toMillis(), child);
            try {
                Thread.sleep(testAssignDelay.toMillis());
            } catch (InterruptedException ie) {
                Thread.currentThread().interrupt();
                throw new RemoteStorageException("rlmm plugin: interrupted while handing partitions to " + child);
            }
        }
        Set<TopicIdPartition> leaders = new HashSet<>();
        Set<TopicIdPartition> followers = new HashSet<>();
        synchronized (assignLock) {
            assigned.forEach((tp, leader) -> (leader ? leaders : followers).add(tp));
        }
        if (leaders.isEmpty() && followers.isEmpty()) {
            LOG.info("rlmm plugin: {} answers; the broker assigned no partitions yet ({} reads waited for it)",
                    child, readsHeld.getAndSet(0));
        } else {
            LeadershipChangesRequest req = LeadershipChangesRequest.newBuilder()
                    .addAllLeaders(Convert.partitions(leaders))
                    .addAllFollowers(Convert.partitions(followers))
                    .build();
            long pause = cfg.restartBackoff.toMillis();
            while (true) {
                try {
                    blocking.withDeadlineAfter(cfg.callTimeout.toMillis(), TimeUnit.MILLISECONDS).withWaitForReady()
                            .onPartitionLeadershipChanges(req);
                    break;
                } catch (StatusRuntimeException e) {
                    boolean gone = cfg.mode == PluginConfig.Mode.SPAWN
                            ? !ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false)
                            : !serverInfo(cfg.callTimeout).map(i -> i.getPid() == pid).orElse(false);
                    if (closed || gone) {
                        throw new RemoteStorageException("rlmm plugin: handing partitions to rlmm serve pid " + pid
                                + " failed: it is gone", e);
                    }
                    LOG.warn("rlmm plugin: {} did not take this broker's {} partitions yet ({}); retrying in {} ms",
                            child, leaders.size() + followers.size(),
                            Errors.map(e, "handing partitions", cfg.target()).getMessage(), pause);
                    try {
                        Thread.sleep(pause);
                    } catch (InterruptedException ie) {
                        Thread.currentThread().interrupt();
                        throw new RemoteStorageException("rlmm plugin: interrupted while handing partitions to " + child);
                    }
                    pause = Math.min(pause * 2, cfg.restartBackoffMax.toMillis());
                }
            }
            LOG.info("rlmm plugin: handed {} leader and {} follower partitions to {} ({} reads waited for them)",
                    leaders.size(), followers.size(), child, readsHeld.getAndSet(0));
        }
        synchronized (assignLock) {
            gate.complete(null);
        }
    }

    private Optional<ServerInfoReply> serverInfo(Duration timeout) {
        try {
            return Optional.of(blocking.withDeadlineAfter(timeout.toMillis(), TimeUnit.MILLISECONDS)
                    .serverInfo(ServerInfoRequest.getDefaultInstance()));
        } catch (StatusRuntimeException e) {
            // The probe loop retries; say once per distinct reason why the server did not
            // answer, with the cause (a transport that cannot even connect shows here).
            // (A deadline's description carries timings, so the code and cause tell reasons apart.)
            String why = e.getStatus().getCode() + (e.getCause() == null ? "" : " " + e.getCause());
            if (!why.equals(lastProbeFailure)) {
                lastProbeFailure = why;
                LOG.info("rlmm plugin: ServerInfo to {} failed: {}", cfg == null ? "rlmm serve" : cfg.target(),
                        e.getStatus(), e.getCause());
            }
            return Optional.empty();
        }
    }

    private volatile String lastProbeFailure = "";

    private PluginConfig config() {
        PluginConfig c = cfg;
        if (closed) {
            throw new IllegalStateException("rlmm plugin: this instance is closed");
        }
        if (c == null) {
            throw new IllegalStateException("rlmm plugin: not configured");
        }
        return c;
    }

    /** Waits for the gate (a restarting child) until the deadline; the wait counts against it. */
    private void awaitGate(PluginConfig c, Deadline deadline, Supplier<String> what) throws RemoteStorageException {
        CompletableFuture<Void> g = gate;
        if (g.isDone() && !g.isCompletedExceptionally()) {
            return;
        }
        try {
            g.get(Math.max(0, deadline.timeRemaining(TimeUnit.NANOSECONDS)), TimeUnit.NANOSECONDS);
        } catch (TimeoutException e) {
            throw new RemoteStorageException(what.get() + " failed: rlmm serve at " + c.target() + " did not come back within "
                    + c.callTimeout.toMillis() + " ms (" + gateReason + ")");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new RemoteStorageException(what.get() + " interrupted while rlmm serve at " + c.target() + " restarts");
        } catch (ExecutionException e) {
            throw new RemoteStorageException(what.get() + " failed: " + e.getCause().getMessage(), e.getCause());
        }
    }

    private RemoteLogMetadataGrpc.RemoteLogMetadataBlockingStub read(Supplier<String> what, Deadline deadline)
            throws RemoteStorageException {
        PluginConfig c = config();
        awaitGate(c, deadline, what);
        return stub(deadline);
    }

    /**
     * One attempt of a read, bounded by the read's deadline: a failed call is thrown as its
     * {@link StatusRuntimeException} (mapped by {@link #readAcrossRestarts}).
     */
    private interface ReadAttempt<T> {
        T run(Deadline deadline) throws RemoteStorageException;
    }

    /** The stub of a unary read: the read's deadline, and wait-for-ready (the child may be restarting). */
    private RemoteLogMetadataGrpc.RemoteLogMetadataBlockingStub stub(Deadline deadline) {
        return blocking.withDeadline(deadline).withWaitForReady();
    }

    /** Whether tp is in this plugin's record of the partitions the broker assigned to it. */
    private boolean assignedHere(TopicIdPartition tp) {
        synchronized (assignLock) {
            return assigned.containsKey(tp);
        }
    }

    /**
     * Runs a read of tp and maps its failure ({@link Errors#map(Throwable, String, String, Errors.Call)},
     * with whether the broker assigned tp here). A server refuses a read of a partition it does not
     * host (NOT_ASSIGNED) instead of answering "nothing", so an answer is always the partition's
     * own. One case is asked again rather than thrown: NOT_ASSIGNED of an assigned partition from a
     * call that set off before the child died and reached its successor (sent with wait-for-ready)
     * before the plugin handed it the broker's partitions. The gate, the child's generation, has
     * then changed; once the new gate is open the new child holds them, and the answer comes from
     * there, so a restart of the child costs the broker a slower read, not a retriable error. The
     * retries share the call's one bound.
     */
    private <T> T readAcrossRestarts(String rpc, TopicIdPartition tp, Supplier<String> what, ReadAttempt<T> attempt)
            throws RemoteStorageException {
        long began = System.nanoTime();
        boolean ok = false;
        try {
            T r = readAcrossRestarts(tp, what, attempt);
            ok = true;
            return r;
        } finally {
            timed(rpc, began, !ok);
        }
    }

    private <T> T readAcrossRestarts(TopicIdPartition tp, Supplier<String> what, ReadAttempt<T> attempt)
            throws RemoteStorageException {
        PluginConfig c = config();
        Deadline deadline = callDeadline();
        while (true) {
            CompletableFuture<Void> g = gate;
            if (!g.isDone()) {
                readsHeld.incrementAndGet();
            }
            awaitGate(c, deadline, what);
            g = gate;
            try {
                return attempt.run(deadline);
            } catch (StatusRuntimeException e) {
                boolean here = assignedHere(tp);
                boolean notAssigned = Errors.kind(e) == org.rlmm.plugin.proto.ErrorKind.NOT_ASSIGNED;
                if (here && gate != g && notAssigned && !deadline.isExpired()) {
                    continue;
                }
                if (here && notAssigned) {
                    refusedAssigned.incrementAndGet();
                }
                throw Errors.rethrow(e, what.get(), c.target(),
                        here ? Errors.Call.READ_ASSIGNED : Errors.Call.READ_NOT_ASSIGNED);
            }
        }
    }

    // ---- mutations -------------------------------------------------------------------------

    @Override
    public CompletableFuture<Void> addRemoteLogSegmentMetadata(RemoteLogSegmentMetadata metadata)
            throws RemoteStorageException {
        Objects.requireNonNull(metadata, "remoteLogSegmentMetadata can not be null");
        if (metadata.state() != RemoteLogSegmentState.COPY_SEGMENT_STARTED) {
            throw new IllegalArgumentException("Given remoteLogSegmentMetadata should have state as "
                    + RemoteLogSegmentState.COPY_SEGMENT_STARTED + " but it contains state as: " + metadata.state());
        }
        AddSegmentRequest req = AddSegmentRequest.newBuilder().setSegment(Convert.segment(metadata)).build();
        return mutate("add", "adding segment " + metadata.remoteLogSegmentId(),
                (stub, obs) -> stub.addSegment(req, obs));
    }

    @Override
    public CompletableFuture<Void> updateRemoteLogSegmentMetadata(RemoteLogSegmentMetadataUpdate update)
            throws RemoteStorageException {
        Objects.requireNonNull(update, "remoteLogSegmentMetadataUpdate can not be null");
        if (update.state() == RemoteLogSegmentState.COPY_SEGMENT_STARTED) {
            throw new IllegalArgumentException("Given remoteLogSegmentMetadata should not have the state as: "
                    + RemoteLogSegmentState.COPY_SEGMENT_STARTED);
        }
        UpdateSegmentRequest req = UpdateSegmentRequest.newBuilder().setUpdate(Convert.update(update)).build();
        return mutate("update", "updating segment " + update.remoteLogSegmentId() + " to " + update.state(),
                (stub, obs) -> stub.updateSegment(req, obs));
    }

    @Override
    public CompletableFuture<Void> putRemotePartitionDeleteMetadata(RemotePartitionDeleteMetadata metadata)
            throws RemoteStorageException {
        Objects.requireNonNull(metadata, "remotePartitionDeleteMetadata can not be null");
        PutPartitionDeleteRequest req = PutPartitionDeleteRequest.newBuilder()
                .setDelete(Convert.partitionDelete(metadata)).build();
        return mutate("partition-delete", "recording " + metadata.state() + " of partition " + metadata.topicIdPartition(),
                (stub, obs) -> stub.putPartitionDelete(req, obs));
    }

    private interface AsyncCall {
        void start(RemoteLogMetadataGrpc.RemoteLogMetadataStub stub, StreamObserver<MutationReply> observer);
    }

    /** Sends a mutation once the gate is open; the future completes from the gRPC callback. */
    private CompletableFuture<Void> mutate(String rpc, String what, AsyncCall call) {
        long began = System.nanoTime();
        CompletableFuture<Void> f = mutate(what, call);
        f.whenComplete((v, err) -> timed(rpc, began, err != null));
        return f;
    }

    private CompletableFuture<Void> mutate(String what, AsyncCall call) {
        PluginConfig c = config();
        Deadline deadline = Deadline.after(c.mutationTimeout.toNanos(), TimeUnit.NANOSECONDS);
        CompletableFuture<Void> result = new CompletableFuture<>();
        Runnable send = () -> call.start(async.withDeadline(deadline).withWaitForReady(), new StreamObserver<>() {
            @Override
            public void onNext(MutationReply value) {}

            @Override
            public void onError(Throwable t) {
                Exception e = Errors.map(t, what, c.target(), Errors.Call.MUTATION);
                settle(result, () -> result.completeExceptionally(e));
            }

            @Override
            public void onCompleted() {
                settle(result, () -> result.complete(null));
            }
        });
        CompletableFuture<Void> g = gate;
        if (g.isDone() && !g.isCompletedExceptionally()) {
            send.run();
            return result;
        }
        // A copy: orTimeout completes the future it is called on, and the gate is shared.
        g.copy().orTimeout(Math.max(1, deadline.timeRemaining(TimeUnit.MILLISECONDS)), TimeUnit.MILLISECONDS)
                .whenComplete((v, err) -> {
                    Throwable cause = err instanceof java.util.concurrent.CompletionException && err.getCause() != null
                            ? err.getCause() : err;
                    if (cause instanceof TimeoutException) {
                        result.completeExceptionally(new RemoteStorageException(what + " failed: rlmm serve at "
                                + c.target() + " did not come back within " + c.mutationTimeout.toMillis()
                                + " ms (" + gateReason + ")"));
                    } else if (cause != null) {
                        result.completeExceptionally(new RemoteStorageException(what + " failed: " + cause.getMessage(), cause));
                    } else {
                        send.run();
                    }
                });
        return result;
    }

    /**
     * Completes a mutation's future. The gRPC callback runs on the channel's I/O thread (the
     * channel has a direct executor: one thread hand-off less per call); a caller waiting in
     * get() is woken from there, but stages chained on the future run on the plugin's callback
     * pool, never on the I/O thread, so they cannot stall the channel.
     */
    private void settle(CompletableFuture<Void> f, Runnable completion) {
        if (f.getNumberOfDependents() == 0) {
            completion.run();
        } else {
            try {
                callbacks.execute(completion);
            } catch (java.util.concurrent.RejectedExecutionException closing) {
                completion.run();
            }
        }
    }

    // ---- reads -----------------------------------------------------------------------------

    /**
     * A unary read bounded by a timed wait of the caller's own thread instead of a gRPC deadline.
     * A deadline costs a timer on Netty's event loop and another in rlmm serve (its grpc-timeout
     * header) with every call, each waking a thread that then has nothing to do: about 20 µs of the
     * lookup's round trip (docs/BENCHMARKS.md, "Broker plugin"). When the wait ends the call is
     * cancelled and fails as a deadline would, with DEADLINE_EXCEEDED. A failed call is thrown as
     * its status, for the caller to map.
     */
    private <Q, R> R timedRead(MethodDescriptor<Q, R> method, Q request, Supplier<String> what, Deadline deadline)
            throws RemoteStorageException {
        PluginConfig c = config();
        awaitGate(c, deadline, what);
        Future<R> f = ClientCalls.futureUnaryCall(
                blocking.getChannel().newCall(method, blocking.getCallOptions().withWaitForReady()), request);
        try {
            return f.get(Math.max(0, deadline.timeRemaining(TimeUnit.NANOSECONDS)), TimeUnit.NANOSECONDS);
        } catch (TimeoutException e) {
            f.cancel(true);
            throw Status.DEADLINE_EXCEEDED
                    .withDescription("no answer within " + c.callTimeout.toMillis() + " ms").asRuntimeException();
        } catch (InterruptedException e) {
            f.cancel(true);
            Thread.currentThread().interrupt();
            throw new RemoteStorageException(what.get() + " interrupted", e);
        } catch (ExecutionException e) {
            if (e.getCause() instanceof StatusRuntimeException s) {
                throw s;
            }
            throw new RemoteStorageException(what.get() + " failed: " + e.getCause(), e.getCause());
        }
    }

    private Deadline callDeadline() {
        return Deadline.after(config().callTimeout.toNanos(), TimeUnit.NANOSECONDS);
    }

    /**
     * The fetch path's lookup: on the channel's lookup stream ({@link LookupStream}), or as a unary
     * call when the server has no stream (an older rlmm serve). Either way the wait is bounded by
     * the caller's own thread, and a failure maps as the unary call's would.
     */
    @Override
    public Optional<RemoteLogSegmentMetadata> remoteLogSegmentMetadata(TopicIdPartition tp, int epochForOffset, long offset)
            throws RemoteStorageException {
        return lookup(tp, epochForOffset, offset, unaryLookups);
    }

    /** {@link #remoteLogSegmentMetadata}, through the unary call when {@code unary} (tests, benchmark). */
    Optional<RemoteLogSegmentMetadata> lookup(TopicIdPartition tp, int epochForOffset, long offset, boolean unary)
            throws RemoteStorageException {
        Objects.requireNonNull(tp, "topicIdPartition can not be null");
        Supplier<String> what = () -> "lookup of offset " + offset + " in epoch " + epochForOffset + " of " + tp;
        SegmentForOffsetRequest req = SegmentForOffsetRequest.newBuilder()
                .setTopicIdPartition(Convert.partition(tp))
                .setLeaderEpoch(epochForOffset)
                .setOffset(offset)
                .build();
        SegmentReply r = readAcrossRestarts("lookup", tp, what, deadline -> unary || lookups.unimplemented()
                ? timedRead(RemoteLogMetadataGrpc.getSegmentForOffsetMethod(), req, what, deadline)
                : streamRead(req, what, deadline));
        return r.getFound() ? Optional.of(Convert.segment(r.getSegment())) : Optional.empty();
    }

    /**
     * A lookup on the stream, waited for as {@link #timedRead} waits: the caller's own timed wait,
     * after which the lookup is dropped and fails with DEADLINE_EXCEEDED (thrown as its status).
     */
    private SegmentReply streamRead(SegmentForOffsetRequest req, Supplier<String> what, Deadline deadline)
            throws RemoteStorageException {
        PluginConfig c = config();
        awaitGate(c, deadline, what);
        LookupStream.Call call = lookups.send(req);
        try {
            return call.await(Math.max(0, deadline.timeRemaining(TimeUnit.NANOSECONDS)));
        } catch (TimeoutException e) {
            call.abandon();
            throw Status.DEADLINE_EXCEEDED
                    .withDescription("no answer within " + c.callTimeout.toMillis() + " ms").asRuntimeException();
        } catch (InterruptedException e) {
            call.abandon();
            Thread.currentThread().interrupt();
            throw new RemoteStorageException(what.get() + " interrupted", e);
        } catch (StatusRuntimeException e) {
            if (e.getStatus().getCode() == Status.Code.UNIMPLEMENTED && lookups.unimplemented()) {
                return timedRead(RemoteLogMetadataGrpc.getSegmentForOffsetMethod(), req, what, deadline);
            }
            throw e;
        }
    }

    /** Makes {@link #remoteLogSegmentMetadata} use the unary call (the benchmark's A/B switch). */
    void unaryLookups(boolean unary) {
        unaryLookups = unary;
    }

    /** How many lookup streams this instance opened (for tests). */
    int lookupStreamsOpened() {
        LookupStream l = lookups;
        return l == null ? 0 : l.opened();
    }

    @Override
    public Optional<Long> highestOffsetForEpoch(TopicIdPartition tp, int leaderEpoch) throws RemoteStorageException {
        Objects.requireNonNull(tp, "topicIdPartition can not be null");
        Supplier<String> what = () -> "highest offset of epoch " + leaderEpoch + " of " + tp;
        HighestOffsetForEpochRequest req = HighestOffsetForEpochRequest.newBuilder()
                .setTopicIdPartition(Convert.partition(tp))
                .setLeaderEpoch(leaderEpoch)
                .build();
        HighestOffsetForEpochReply r = readAcrossRestarts("highest-offset", tp, what, d -> stub(d).highestOffsetForEpoch(req));
        return r.getFound() ? Optional.of(r.getOffset()) : Optional.empty();
    }

    @Override
    public Iterator<RemoteLogSegmentMetadata> listRemoteLogSegments(TopicIdPartition tp) throws RemoteStorageException {
        Objects.requireNonNull(tp, "topicIdPartition can not be null");
        return list(tp, () -> "list of the segments of " + tp,
                ListSegmentsRequest.newBuilder().setTopicIdPartition(Convert.partition(tp)).build());
    }

    @Override
    public Iterator<RemoteLogSegmentMetadata> listRemoteLogSegments(TopicIdPartition tp, int leaderEpoch)
            throws RemoteStorageException {
        Objects.requireNonNull(tp, "topicIdPartition can not be null");
        return list(tp, () -> "list of the segments of epoch " + leaderEpoch + " of " + tp,
                ListSegmentsRequest.newBuilder().setTopicIdPartition(Convert.partition(tp)).setLeaderEpoch(leaderEpoch).build());
    }

    /**
     * Reads the whole stream before returning: a failure (unknown partition, not ready, a server
     * gone mid-stream) is thrown from this call as Kafka's exception, and no stream stays open
     * when the caller stops iterating early.
     */
    private Iterator<RemoteLogSegmentMetadata> list(TopicIdPartition tp, Supplier<String> what, ListSegmentsRequest req)
            throws RemoteStorageException {
        List<RemoteLogSegmentMetadata> out = readAcrossRestarts("list", tp, what, d -> {
            List<RemoteLogSegmentMetadata> segments = new ArrayList<>();
            Iterator<SegmentBatch> batches = stub(d).listSegments(req);
            while (batches.hasNext()) {
                for (SegmentMetadata m : batches.next().getSegmentsList()) {
                    segments.add(Convert.segment(m));
                }
            }
            return segments;
        });
        return Collections.unmodifiableList(out).iterator();
    }

    @Override
    public long remoteLogSize(TopicIdPartition tp, int leaderEpoch) throws RemoteStorageException {
        Objects.requireNonNull(tp, "topicIdPartition can not be null");
        Supplier<String> what = () -> "remote log size of epoch " + leaderEpoch + " of " + tp;
        RemoteLogSizeRequest req = RemoteLogSizeRequest.newBuilder()
                .setTopicIdPartition(Convert.partition(tp))
                .setLeaderEpoch(leaderEpoch)
                .build();
        return readAcrossRestarts("remote-log-size", tp, what, d -> stub(d).remoteLogSize(req)).getSizeInBytes();
    }

    @Override
    public Optional<RemoteLogSegmentMetadata> nextSegmentWithTxnIndex(TopicIdPartition tp, int epoch, long offset)
            throws RemoteStorageException {
        Objects.requireNonNull(tp, "topicIdPartition can not be null");
        Supplier<String> what = () -> "next segment with a transaction index from offset " + offset + " in epoch " + epoch + " of " + tp;
        NextSegmentWithTxnIndexRequest req = NextSegmentWithTxnIndexRequest.newBuilder()
                .setTopicIdPartition(Convert.partition(tp))
                .setLeaderEpoch(epoch)
                .setOffset(offset)
                .build();
        SegmentReply r = readAcrossRestarts("next-txn-index", tp, what, d -> stub(d).nextSegmentWithTxnIndex(req));
        return r.getFound() ? Optional.of(Convert.segment(r.getSegment())) : Optional.empty();
    }

    /**
     * Whether the partition's metadata is ready, as the server last said on its readiness stream
     * ({@link ReadinessWatch}): a read of memory, never a call, since the broker asks for each of
     * its partitions from its tiering threads. False while the child starts or restarts, while
     * the stream is not open, and for a partition the server does not host (yet); the broker asks
     * again on its next task run. Only against an older rlmm serve without the stream does it ask
     * with a call.
     */
    @Override
    public boolean isReady(TopicIdPartition tp) {
        Objects.requireNonNull(tp, "topicIdPartition can not be null");
        PluginConfig c = config();
        CompletableFuture<Void> g = gate;
        if (!g.isDone() || g.isCompletedExceptionally()) {
            return false;
        }
        ReadinessWatch w = readiness;
        if (!w.unimplemented()) {
            return w.ready(tp);
        }
        try {
            return blocking.withDeadlineAfter(c.callTimeout.toMillis(), TimeUnit.MILLISECONDS)
                    .isReady(IsReadyRequest.newBuilder().setTopicIdPartition(Convert.partition(tp)).build())
                    .getReady();
        } catch (StatusRuntimeException e) {
            long now = System.nanoTime();
            if (now - lastReadyWarning > TimeUnit.SECONDS.toNanos(30)) {
                lastReadyWarning = now; // at most one line per 30 s: the broker asks for every partition, often
                LOG.warn("rlmm plugin: isReady({}) answers false: {}", tp, Errors.map(e, "isReady", c.target()).getMessage());
            }
            return false;
        }
    }

    /** The readiness stream (for tests). */
    ReadinessWatch readinessWatch() {
        return readiness;
    }

    // ---- assignment ------------------------------------------------------------------------

    /**
     * Records the change and hands it to the server in the background, in order (see
     * {@link Assigner}): this is called from the broker's metadata thread, which must not wait
     * for a server that is starting. The broker waits for {@link #isReady} before it copies.
     */
    @Override
    public void onPartitionLeadershipChanges(Set<TopicIdPartition> leaderPartitions, Set<TopicIdPartition> followerPartitions) {
        Objects.requireNonNull(leaderPartitions, "leaderPartitions can not be null");
        Objects.requireNonNull(followerPartitions, "followerPartitions can not be null");
        PluginConfig c = config();
        LeadershipChangesRequest req = LeadershipChangesRequest.newBuilder()
                .addAllLeaders(Convert.partitions(leaderPartitions))
                .addAllFollowers(Convert.partitions(followerPartitions))
                .build();
        String what = "leadership change of " + leaderPartitions.size() + " leader and " + followerPartitions.size()
                + " follower partitions";
        synchronized (assignLock) {
            leaderPartitions.forEach(tp -> assigned.put(tp, true));
            followerPartitions.forEach(tp -> assigned.put(tp, false));
            boolean[] held = {testAssignDelay.isZero()};
            assigner.submit(change("leadership", what, () -> {
                if (!held[0]) {
                    held[0] = true;
                    holdBackForTest(what);
                }
                read(() -> what, callDeadline()).onPartitionLeadershipChanges(req);
                if (!testAssignDelay.isZero()) {
                    LOG.warn("rlmm plugin: {}: the {} reached rlmm serve ({} reads of partitions assigned here were"
                            + " refused NOT_ASSIGNED so far)", TEST_ASSIGN_DELAY, what, refusedAssigned.get());
                }
            }));
        }
    }

    /** {@link #TEST_ASSIGN_DELAY}: waits on the assigner's thread before a leadership change is sent. */
    private void holdBackForTest(String what) throws RemoteStorageException {
        LOG.warn("rlmm plugin: {}: holding back the {} for {} ms", TEST_ASSIGN_DELAY, what, testAssignDelay.toMillis());
        try {
            Thread.sleep(testAssignDelay.toMillis());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new RemoteStorageException("rlmm plugin: interrupted while holding back the " + what);
        }
    }

    /** Like {@link #onPartitionLeadershipChanges}: recorded at once, handed over in the background. */
    @Override
    public void onStopPartitions(Set<TopicIdPartition> partitions) {
        Objects.requireNonNull(partitions, "partitions can not be null");
        config();
        StopPartitionsRequest req = StopPartitionsRequest.newBuilder().addAllPartitions(Convert.partitions(partitions)).build();
        String what = "stopping " + partitions.size() + " partitions";
        synchronized (assignLock) {
            partitions.forEach(assigned::remove);
            assigner.submit(change("stop", what, () -> read(() -> what, callDeadline()).onStopPartitions(req)));
        }
    }

    private interface Call {
        void run() throws RemoteStorageException;
    }

    private Assigner.Change change(String rpc, String what, Call call) {
        return new Assigner.Change() {
            @Override
            public void send() throws Exception {
                long began = System.nanoTime();
                boolean ok = false;
                try {
                    call.run();
                    ok = true;
                } catch (StatusRuntimeException e) {
                    throw Errors.map(e, what, cfg.target());
                } finally {
                    timed(rpc, began, !ok);
                }
            }

            @Override
            public String describe() {
                return what;
            }
        };
    }

    /** Whether every assignment change so far has reached the server (for tests). */
    boolean assignmentsSent() {
        return assigner == null || assigner.idle();
    }

    // ---- lifecycle -------------------------------------------------------------------------

    /** The pid of the child this instance started, or -1 (connect mode, or none alive). */
    long childPid() {
        ServeProcess p = child;
        return p == null ? -1 : p.pid();
    }

    /** The exit code of the child close() stopped (-1: none), for tests. */
    int stoppedChildExitCode() {
        return stoppedExit;
    }

    /** Stops the child (SIGTERM, then SIGKILL after rlmm.serve.stop.timeout.ms) and the channel; idempotent. */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        gate.completeExceptionally(new IllegalStateException("rlmm plugin: closed"));
        if (assigner != null) {
            assigner.close();
        }
        if (readiness != null) {
            readiness.close();
        }
        if (serverWatch != null) {
            serverWatch.shutdownNow();
        }
        if (child != null) {
            child.close();
            stoppedExit = child.lastExitCode();
            child = null;
        }
        shutdownConnection();
        RlmmMetrics m = metrics;
        if (m != null) {
            m.close();
        }
        LOG.info("rlmm plugin: closed");
    }

    private void shutdownConnection() {
        Channels.Conn cn = conn;
        if (cn != null) {
            cn.close();
        }
        if (callbacks != null) {
            callbacks.shutdownNow();
        }
    }
}

package org.rlmm.plugin;

import io.grpc.Deadline;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.server.log.remote.storage.RemoteStorageException;
import org.rlmm.plugin.proto.ServerInfoReply;
import org.slf4j.Logger;

/**
 * Keeps one {@link Session} open to a server that passed the handshake, and opens the next one
 * when its server dies or is replaced: in spawn mode through {@link ServeProcess}'s hooks (a child
 * started, answering, died), in connect mode by asking the server at the address who it is every
 * {@link #SERVER_WATCH_INTERVAL} (another pid or start time is a new server, restarted by whoever
 * runs it). Calls wait for the current session ({@link #await}, {@link #whenReady}); between two
 * generations there is none, so a call waits (within its bound) rather than reach a server that
 * does not hold the broker's partitions yet.
 *
 * <p>It also keeps the record of the partitions the broker assigned (true for a leader), which
 * every new session is handed before calls go to it, and gives up for good (a refused setting or
 * API version, the init timeout) by failing every wait and stopping the broker ({@link BrokerExit}).
 */
final class Supervisor implements AutoCloseable {
    /** How often connect mode asks the server who it is, to notice a restarted one. */
    static final Duration SERVER_WATCH_INTERVAL = Duration.ofSeconds(1);

    private final PluginConfig cfg;
    private final Logger log;
    private final int apiVersion;
    private final Listener listener;
    private final Object lock = new Object();
    /** The partitions this broker holds, true for a leader: handed to every new session. */
    private final Map<TopicIdPartition, Boolean> assigned = new LinkedHashMap<>();
    private final AtomicInteger generations = new AtomicInteger();
    private final AtomicInteger lookupStreams = new AtomicInteger();
    private final AtomicInteger framedConnections = new AtomicInteger();
    /** Framed mutation connections the sessions opened (for tests). */
    private final AtomicInteger framedMutationConnections = new AtomicInteger();
    /** Reads that found no session since the last one opened (logged when the next one opens). */
    private final AtomicLong readsHeld = new AtomicLong();
    /** Completed with the open session; replaced by an incomplete one between generations. */
    private volatile CompletableFuture<Session> ready = new CompletableFuture<>();
    /** The session a server is being probed or handed the partitions on; not yet open to calls. */
    private Session pending;
    private volatile String waitReason = "rlmm serve is starting";
    private volatile String failure;
    private volatile boolean closed;
    private ServeProcess child;
    private ScheduledExecutorService serverWatch;
    /** Connect mode: the pid and start time of the server last handed the partitions. */
    private volatile String serverIdentity;
    private volatile int stoppedExit = -1;

    /** What the owner hears of the server's life (for the metrics). */
    interface Listener {
        /** A listener that does nothing (the metrics are not registered). */
        Listener NONE = new Listener() {
            @Override
            public void started() {}

            @Override
            public void error() {}

            @Override
            public void failed() {}
        };

        /** A child process was started. */
        void started();

        /** Something went wrong (logged at ERROR). */
        void error();

        /** The plugin gave up. */
        void failed();
    }

    Supervisor(PluginConfig cfg, Logger log, int apiVersion, Listener listener) {
        this.cfg = cfg;
        this.log = log;
        this.apiVersion = apiVersion;
        this.listener = listener;
    }

    /**
     * Starts the first generation: in spawn mode the child (in the background: configure does not
     * wait for it), in connect mode one ServerInfo within the call timeout, then the watch.
     *
     * @throws RemoteStorageException when the child's directory or binary cannot be prepared
     */
    void start() throws RemoteStorageException {
        if (cfg.mode == PluginConfig.Mode.SPAWN) {
            ServeProcess p = new ServeProcess(cfg, log, new ChildHooks());
            try {
                p.start();
            } catch (RemoteStorageException e) {
                p.close();
                throw e;
            }
            child = p;
            return;
        }
        waitReason = "rlmm serve at " + cfg.target() + " does not answer yet";
        Optional<ServerInfoReply> info = pendingSession().serverInfo(cfg.callTimeout);
        if (info.isPresent()) {
            log.info("rlmm plugin: connected to rlmm serve {} at {} (pid {}, {}, broker id {})", info.get().getVersion(),
                    cfg.target(), info.get().getPid(), info.get().getLog(), info.get().getBrokerId());
            checkServer(info.get());
        } else {
            log.warn("rlmm plugin: rlmm serve at {} does not answer yet; calls wait up to {} ms for it",
                    cfg.target(), cfg.callTimeout.toMillis());
        }
        if (failure == null) {
            serverWatch = Executors.newSingleThreadScheduledExecutor(Channels.daemon("rlmm-plugin-server-watch"));
            serverWatch.scheduleWithFixedDelay(this::watch, SERVER_WATCH_INTERVAL.toMillis(),
                    SERVER_WATCH_INTERVAL.toMillis(), TimeUnit.MILLISECONDS);
        }
    }

    // ---- what calls see --------------------------------------------------------------------

    /**
     * The open session, waited for until the deadline (the wait counts against it).
     *
     * @param boundMs the call's bound, for the message of one that ran out
     */
    Session await(Deadline deadline, Supplier<String> what, long boundMs) throws RemoteStorageException {
        CompletableFuture<Session> f = ready;
        if (f.isDone() && !f.isCompletedExceptionally()) {
            return f.getNow(null);
        }
        readsHeld.incrementAndGet();
        try {
            return f.get(Math.max(0, deadline.timeRemaining(TimeUnit.NANOSECONDS)), TimeUnit.NANOSECONDS);
        } catch (TimeoutException e) {
            throw Errors.notInTime(what.get(), cfg.target(), boundMs, waitReason());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw Errors.interrupted(what.get() + " (waiting for rlmm serve at " + cfg.target() + ")", e);
        } catch (ExecutionException e) {
            throw Errors.storage(what.get() + " failed: " + e.getCause().getMessage(), e.getCause());
        }
    }

    /**
     * The open session as a future that fails with the call's exception after boundMs: a
     * mutation's, which must not block the broker's thread. Completed at once while one is open.
     */
    CompletableFuture<Session> whenReady(String what, long boundMs) {
        CompletableFuture<Session> f = ready;
        if (f.isDone() && !f.isCompletedExceptionally()) {
            return f;
        }
        CompletableFuture<Session> out = new CompletableFuture<>();
        // A copy: orTimeout completes the future it is called on, and the shared one is not ours.
        f.copy().orTimeout(Math.max(1, boundMs), TimeUnit.MILLISECONDS).whenComplete((s, err) -> {
            Throwable cause = err instanceof java.util.concurrent.CompletionException && err.getCause() != null
                    ? err.getCause() : err;
            if (cause instanceof TimeoutException) {
                out.completeExceptionally(Errors.notInTime(what, cfg.target(), boundMs, waitReason()));
            } else if (cause != null) {
                out.completeExceptionally(Errors.storage(what + " failed: " + cause.getMessage(), cause));
            } else {
                out.complete(s);
            }
        });
        return out;
    }

    /** The open session, or null between generations (isReady answers false then). */
    Session current() {
        CompletableFuture<Session> f = ready;
        return f.isDone() && !f.isCompletedExceptionally() ? f.getNow(null) : null;
    }

    /**
     * Whether calls go to a server that answers: a session is open (and, in connect mode, its
     * channel is connected), and the plugin did not give up. The child-up gauge.
     */
    boolean up() {
        Session s = failure == null ? current() : null;
        return s != null && (cfg.mode == PluginConfig.Mode.SPAWN || s.connected());
    }

    /** Why calls wait: the generation's state, and what the server last answered ServerInfo. */
    private String waitReason() {
        String why = waitReason;
        Session p;
        synchronized (lock) {
            p = pending;
        }
        String probe = p == null ? "" : p.lastProbeFailure();
        return probe.isEmpty() ? why : why + "; ServerInfo: " + probe;
    }

    // ---- the broker's assignment -----------------------------------------------------------

    /** Records a leadership change; {@code then} runs under the same lock (to queue it in order). */
    void recordLeadership(Set<TopicIdPartition> leaders, Set<TopicIdPartition> followers, Runnable then) {
        synchronized (lock) {
            leaders.forEach(tp -> assigned.put(tp, true));
            followers.forEach(tp -> assigned.put(tp, false));
            then.run();
        }
    }

    /** Records stopped partitions; {@code then} runs under the same lock. */
    void recordStop(Set<TopicIdPartition> partitions, Runnable then) {
        synchronized (lock) {
            partitions.forEach(assigned::remove);
            then.run();
        }
    }

    /** Whether tp is in the record of the partitions the broker assigned here. */
    boolean assignedHere(TopicIdPartition tp) {
        synchronized (lock) {
            return assigned.containsKey(tp);
        }
    }

    // ---- generations -----------------------------------------------------------------------

    private Session pendingSession() {
        synchronized (lock) {
            if (pending == null || pending.closed()) {
                pending = new Session(cfg, log, generations.incrementAndGet(), lookupStreams, framedConnections,
                        framedMutationConnections);
            }
            return pending;
        }
    }

    /**
     * The handshake's last step on the pending session, then opens it to calls: the broker's
     * partitions handed over (the snapshot taken now; changes recorded later are queued behind it
     * by the {@link Assigner}, so the server ends at the broker's latest assignment).
     */
    private void open(Session s, long pid, boolean restart, java.util.function.BooleanSupplier gone)
            throws RemoteStorageException {
        String who = (restart ? "the restarted" : "the new") + " rlmm serve pid " + pid;
        holdBackHandOver(who);
        Map<TopicIdPartition, Boolean> snapshot;
        synchronized (lock) {
            snapshot = new LinkedHashMap<>(assigned);
        }
        s.handOver(snapshot, pid, who, gone);
        synchronized (lock) {
            if (closed || failure != null || s.closed()) {
                return; // the plugin closed or gave up meanwhile: no call goes to s
            }
            if (pending == s) {
                pending = null;
            }
            if (ready.isDone()) {
                ready = new CompletableFuture<>();
            }
            ready.complete(s);
        }
        log.info("rlmm plugin: calls go to {} ({} reads waited for it)", who, readsHeld.getAndSet(0));
    }

    /**
     * {@link PluginConfig#TEST_ASSIGN_DELAY}: waits that long before a new session is handed the
     * broker's partitions (who: the server), holding open the window in which a read could reach
     * a server without its partition; nothing when the setting is absent. brokertest/window_test.go
     * reads the log line.
     */
    private void holdBackHandOver(String who) throws RemoteStorageException {
        Duration d = cfg.testAssignDelay;
        if (!d.isZero()) {
            log.warn("rlmm plugin: {}: waiting {} ms before handing {} the broker's partitions", PluginConfig.TEST_ASSIGN_DELAY,
                    d.toMillis(), who);
            testSleep(d, "handing " + who + " the broker's partitions");
        }
    }

    /** {@link PluginConfig#TEST_ASSIGN_DELAY} before the broker's change what is sent (logged for window_test.go). */
    void holdBackChange(String what) throws RemoteStorageException {
        Duration d = cfg.testAssignDelay;
        if (!d.isZero()) {
            log.warn("rlmm plugin: {}: holding back the {} for {} ms", PluginConfig.TEST_ASSIGN_DELAY, what, d.toMillis());
            testSleep(d, "holding back the " + what);
        }
    }

    private static void testSleep(Duration d, String what) throws RemoteStorageException {
        try {
            Thread.sleep(d.toMillis());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw Errors.interrupted("rlmm plugin: " + what, e);
        }
    }

    /** The open session's server is gone: calls wait for the next generation. */
    private void lost(String why) {
        Session old;
        synchronized (lock) {
            waitReason = why + ", restarting";
            old = current();
            if (ready.isDone() && !ready.isCompletedExceptionally()) {
                ready = new CompletableFuture<>();
            }
        }
        if (old != null) {
            old.close();
        }
    }

    /**
     * No server will be used (a refused setting or API version, the init timeout): every call
     * fails naming why from now on, and the broker is stopped as Kafka's own manager stops it when
     * it cannot initialize ({@link BrokerExit}).
     */
    private void fail(String why) {
        Session old;
        synchronized (lock) {
            waitReason = why;
            failure = why;
            old = current();
            CompletableFuture<Session> failed = new CompletableFuture<>();
            failed.completeExceptionally(Errors.gaveUp(why));
            ready.completeExceptionally(Errors.gaveUp(why));
            ready = failed;
        }
        if (old != null) {
            old.close();
        }
        listener.failed();
        if (!closed) {
            BrokerExit.exit(log, why);
        }
    }

    /** Why this instance will use no server (it stopped the broker), or null. */
    String failure() {
        return failure;
    }

    /** What ServeProcess asks and tells of the child's life. */
    private final class ChildHooks implements ServeProcess.Hooks {
        @Override
        public Optional<Long> probe(Duration timeout) throws RemoteStorageException {
            Session s = pendingSession();
            Optional<ServerInfoReply> info = s.serverInfo(timeout);
            if (info.isPresent()) {
                s.checkVersion(info.get(), apiVersion);
            }
            return info.map(ServerInfoReply::getPid);
        }

        @Override
        public void ready(long pid, boolean restart) throws RemoteStorageException {
            Session s;
            synchronized (lock) {
                s = pending;
            }
            if (s == null) {
                throw Errors.storage("rlmm plugin: no session to rlmm serve pid " + pid);
            }
            open(s, pid, restart, () -> !ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false));
        }

        @Override
        public void lost(String why) {
            Supervisor.this.lost(why);
        }

        @Override
        public void failed(String why) {
            fail(why);
        }

        @Override
        public void started(long pid) {
            listener.started();
        }

        @Override
        public void error(String why) {
            listener.error();
        }
    }

    // ---- connect mode ----------------------------------------------------------------------

    private void watch() {
        try {
            if (closed || failure != null) {
                return;
            }
            Session s = current();
            Optional<ServerInfoReply> info = (s != null ? s : pendingSession()).serverInfo(cfg.callTimeout);
            info.ifPresent(this::checkServer);
        } catch (RuntimeException e) {
            log.warn("rlmm plugin: watching rlmm serve at {}: {}", cfg.target(), e.toString());
        }
    }

    private static String identity(ServerInfoReply info) {
        return info.getPid() + "@" + info.getStartedUnixMs();
    }

    /**
     * Connect mode: a server that answered. Its API version is checked first, as every server's;
     * one not seen before (another pid or start time) is a new generation, handed the broker's
     * partitions before calls go to it, as a restarted child is.
     */
    private void checkServer(ServerInfoReply info) {
        String mismatch = Errors.versionMismatch(info, cfg.target(), apiVersion);
        if (mismatch != null) {
            fail(mismatch);
            return;
        }
        String id = identity(info);
        String last = serverIdentity;
        if (id.equals(last)) {
            return;
        }
        if (last != null) {
            log.warn("rlmm plugin: rlmm serve at {} is a new server (pid {}, started at {} ms; was {}): handing it this"
                    + " broker's partitions before calls go through", cfg.target(), info.getPid(), info.getStartedUnixMs(),
                    last);
            lost("rlmm serve at " + cfg.target() + " restarted");
        }
        Session s = pendingSession();
        long pid = info.getPid();
        try {
            open(s, pid, last != null,
                    () -> !s.serverInfo(cfg.callTimeout).map(i -> identity(i).equals(id)).orElse(false));
            serverIdentity = id;
        } catch (RemoteStorageException e) {
            log.warn("rlmm plugin: handing partitions to the rlmm serve at {} failed: {}; trying again", cfg.target(),
                    e.getMessage());
        }
    }

    // ---- for tests and the facade ------------------------------------------------------------

    /** The pid of the child started, or -1 (connect mode, or none alive). */
    long childPid() {
        ServeProcess p = child;
        return p == null ? -1 : p.pid();
    }

    /** The exit code of the child close() stopped (-1: none). */
    int stoppedChildExitCode() {
        return stoppedExit;
    }

    /** How many lookup streams the plugin's sessions opened. */
    int lookupStreamsOpened() {
        return lookupStreams.get();
    }

    /** How many framed lookup connections the sessions opened (for tests). */
    int framedConnectionsOpened() {
        return framedConnections.get();
    }

    /** How many framed mutation connections the sessions opened (for tests). */
    int framedMutationConnectionsOpened() {
        return framedMutationConnections.get();
    }

    /** Waits until a session is open, at most timeout; false when none opened or the plugin gave up. */
    boolean awaitOpen(Duration timeout) throws InterruptedException {
        try {
            ready.get(timeout.toNanos(), TimeUnit.NANOSECONDS);
            return true;
        } catch (TimeoutException | ExecutionException e) {
            return false;
        }
    }

    /** Stops the watch, the child (SIGTERM, then SIGKILL) and every session; idempotent. */
    @Override
    public void close() {
        Session open;
        Session p;
        synchronized (lock) {
            if (closed) {
                return;
            }
            closed = true;
            open = current();
            p = pending;
            pending = null;
            ready.completeExceptionally(Errors.closed());
            CompletableFuture<Session> done = new CompletableFuture<>();
            done.completeExceptionally(Errors.closed());
            ready = done;
        }
        if (serverWatch != null) {
            serverWatch.shutdownNow();
        }
        if (child != null) {
            child.close();
            stoppedExit = child.lastExitCode();
            child = null;
        }
        if (open != null) {
            open.close();
        }
        if (p != null) {
            p.close();
        }
    }
}

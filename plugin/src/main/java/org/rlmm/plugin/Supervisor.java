package org.rlmm.plugin;

import java.io.IOException;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
import java.util.function.Supplier;
import org.apache.kafka.server.log.remote.storage.RemoteStorageException;
import org.rlmm.plugin.proto.BrokerReply;
import org.rlmm.plugin.proto.BrokerRequest;
import org.rlmm.plugin.proto.ErrorKind;
import org.rlmm.plugin.proto.Purpose;
import org.slf4j.Logger;

/**
 * Keeps the plugin's {@link Link} to the server that answers, as a small state machine:
 *
 * <pre>
 *   STARTING   --child answers the hello-->          UP
 *   UP         --child died / another server-->      RESTARTING
 *   RESTARTING --child answers the hello-->          UP
 *   STARTING, RESTARTING --refused setting or version, init timeout--> FAILED (the broker stops)
 *   any        --close-->                            CLOSED
 * </pre>
 *
 * <p>Spawn mode's transitions come from {@link ServeProcess}; connect mode's from the open link's
 * watch connection (it ends when its server goes) and a hello every {@link #SERVER_WATCH_INTERVAL}
 * until a server answers. The server owns the assignment, so a new one needs nothing handed over.
 */
final class Supervisor implements AutoCloseable, ServeProcess.Hooks {
    /** How often connect mode says the hello while no server answers. */
    static final Duration SERVER_WATCH_INTERVAL = Duration.ofSeconds(1);

    /** The states. */
    enum State { STARTING, UP, RESTARTING, FAILED, CLOSED }

    /** What the owner hears of the server's life and of each call (the metrics). */
    interface Listener {
        /** A child process was started. */
        default void started() {}

        /** Something went wrong (logged at ERROR). */
        default void error() {}

        /** The plugin gave up. */
        default void failed() {}

        /** One call of kind rpc took nanos, and failed or not. */
        default void call(String rpc, long nanos, boolean failed) {}
    }

    /** The pause before a call whose connection broke is tried again on a server not seen gone. */
    private static final long RETRY_PAUSE_NANOS = TimeUnit.MILLISECONDS.toNanos(20);

    private final PluginConfig cfg;
    private final Logger log;
    private final Wire.Endpoint ep;
    private final Listener listener;
    private final Object lock = new Object();
    private State state = State.STARTING;
    /** Completed with the open link while UP; replaced by an incomplete one otherwise. */
    private volatile CompletableFuture<Link> ready = new CompletableFuture<>();
    private volatile String waitReason = "rlmm serve is starting";
    private ServeProcess child;
    private ScheduledExecutorService serverWatch;
    /** Calls that found no open link since the last one opened (logged when the next one opens). */
    private final java.util.concurrent.atomic.AtomicLong held = new java.util.concurrent.atomic.AtomicLong();

    Supervisor(PluginConfig cfg, Logger log, Wire.Endpoint ep, Listener listener) {
        this.cfg = cfg;
        this.log = log;
        this.ep = ep;
        this.listener = listener;
    }

    /**
     * Starts the child (in the background) or, in connect mode, the watch of the server.
     *
     * @throws RemoteStorageException when the child's directory or binary cannot be prepared
     */
    void start() throws RemoteStorageException {
        if (cfg.mode == PluginConfig.Mode.SPAWN) {
            ServeProcess p = new ServeProcess(cfg, log, this, listener);
            try {
                p.start();
            } catch (RemoteStorageException e) {
                p.close();
                throw e;
            }
            child = p;
            return;
        }
        serverWatch = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "rlmm-plugin-server-watch");
            t.setDaemon(true);
            return t;
        });
        serverWatch.scheduleWithFixedDelay(this::watch, 0, SERVER_WATCH_INTERVAL.toMillis(), TimeUnit.MILLISECONDS);
    }

    State state() {
        synchronized (lock) {
            return state;
        }
    }

    /**
     * The one call primitive: waits for UP, sends req and reads its reply in this thread, all
     * within boundMs, and maps a refusal ({@link Errors}). A call whose server died under it runs
     * again on the next one, unless it is a mutation that may have reached the server. more gets
     * a list's earlier replies; reset runs before each try.
     */
    BrokerReply call(String rpc, Purpose p, BooleanSupplier changeWaiting, boolean noPartition, Supplier<String> what,
            BrokerRequest.Builder req, long boundMs, Consumer<BrokerReply> more, Runnable reset) throws RemoteStorageException {
        boolean mutation = p == Purpose.PURPOSE_MUTATE;
        long began = System.nanoTime();
        long due = began + TimeUnit.MILLISECONDS.toNanos(boundMs);
        boolean ok = false;
        boolean onSuccessor = false;
        try {
            while (true) {
                Link l = await(due, what, boundMs);
                boolean waiting = changeWaiting.getAsBoolean();
                reset.run();
                BrokerReply r;
                try {
                    r = l.call(p, req, due, more);
                } catch (Link.Broken b) {
                    long left = due - System.nanoTime();
                    if (b.deadline || left <= 0 || mutation && b.sent) {
                        throw Errors.broken(b, what.get(), cfg.target(), boundMs, mutation);
                    }
                    // Its server died or restarts under it (not seen yet, maybe): asked again, on
                    // the next server, within the same bound.
                    if (!gone(l)) {
                        pause(Math.min(left, RETRY_PAUSE_NANOS), what);
                    }
                    onSuccessor = true;
                    continue;
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw Errors.interrupted(what.get(), e);
                }
                // A read moved to the next server because its own died is answered once that one
                // caught up, within the same bound: a restart costs a slower read, not an error.
                if (r.hasError() && onSuccessor && !mutation && r.getError().getKind() == ErrorKind.NOT_READY
                        && due - System.nanoTime() > RETRY_PAUSE_NANOS) {
                    pause(RETRY_PAUSE_NANOS, what);
                    continue;
                }
                if (r.hasError()) {
                    Errors.Call kind = mutation ? Errors.Call.MUTATION : noPartition ? Errors.Call.OTHER
                            : waiting ? Errors.Call.READ_WAITING : Errors.Call.READ;
                    throw Errors.rethrow(r.getError(), what.get(), cfg.target(), kind);
                }
                ok = true;
                return r;
            }
        } finally {
            listener.call(rpc, System.nanoTime() - began, !ok);
        }
    }

    private static void pause(long nanos, Supplier<String> what) throws RemoteStorageException {
        try {
            TimeUnit.NANOSECONDS.sleep(nanos);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw Errors.interrupted(what.get(), e);
        }
    }

    /** The open link, waited for until dueNanos (System.nanoTime()). */
    Link await(long dueNanos, Supplier<String> what, long boundMs) throws RemoteStorageException {
        CompletableFuture<Link> f = ready;
        if (f.isDone() && !f.isCompletedExceptionally()) {
            return f.getNow(null);
        }
        held.incrementAndGet();
        try {
            return f.get(Math.max(0, dueNanos - System.nanoTime()), TimeUnit.NANOSECONDS);
        } catch (TimeoutException e) {
            throw Errors.notInTime(what.get(), cfg.target(), boundMs, waitReason);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw Errors.interrupted(what.get() + " (waiting for rlmm serve at " + cfg.target() + ")", e);
        } catch (ExecutionException e) {
            throw new RemoteStorageException(what.get() + " failed: " + e.getCause().getMessage(), e.getCause());
        }
    }

    /** The open link, or null when not UP (isReady answers false then). */
    Link current() {
        CompletableFuture<Link> f = ready;
        return f.isDone() && !f.isCompletedExceptionally() ? f.getNow(null) : null;
    }

    /** Whether calls go to a server that answers (the child-up gauge). */
    boolean up() {
        return state() == State.UP;
    }

    /** Whether the server of link l is gone (spawn mode: its process is dead). */
    boolean gone(Link l) {
        return l.closed() || cfg.mode == PluginConfig.Mode.SPAWN
                && !ProcessHandle.of(l.pid()).map(ProcessHandle::isAlive).orElse(false);
    }

    /** Opens a connection and says the hello: null when the server does not answer. */
    @Override
    public Wire probe(Duration timeout) throws Errors.Refused {
        try {
            return Wire.open(ep, Purpose.PURPOSE_READ, (int) Math.min(Integer.MAX_VALUE, timeout.toMillis()));
        } catch (IOException e) {
            waitReason = "rlmm serve at " + cfg.target() + " does not answer (" + e.getMessage() + ")";
            return null;
        }
    }

    /** UP on the server that answered w's hello. */
    @Override
    public void ready(Wire w, boolean restart) {
        // Spawn mode learns of a gone server from its process; connect mode from the link's watch.
        Link l = new Link(ep, w, log, cfg.ms(PluginConfig.CALL_TIMEOUT).toMillis(),
                cfg.mode == PluginConfig.Mode.SPAWN ? null : this::lost);
        synchronized (lock) {
            if (state == State.CLOSED || state == State.FAILED || l.closed()) {
                l.close();
                return;
            }
            state = State.UP;
            if (ready.isDone()) {
                ready = new CompletableFuture<>();
            }
            ready.complete(l);
        }
        // test/broker/window_test.go reads this line.
        log.info("rlmm plugin: calls go to {} rlmm serve pid {} at {} ({} calls waited for it)", restart ? "the restarted" : "the new",
                l.pid(), cfg.target(), held.getAndSet(0));
    }

    /** UP -> RESTARTING: calls wait for the next server. */
    @Override
    public void lost(String why) {
        Link old;
        synchronized (lock) {
            if (state == State.CLOSED || state == State.FAILED) {
                return;
            }
            state = State.RESTARTING;
            waitReason = why + ", restarting";
            old = current();
            if (ready.isDone()) {
                ready = new CompletableFuture<>();
            }
        }
        if (old != null) {
            old.close();
        }
    }

    /**
     * FAILED: no server will be used (a refused setting or version, the init timeout); every call
     * fails naming why, and the broker is stopped as Kafka's own manager stops it when it cannot
     * initialize ({@link BrokerExit}).
     */
    @Override
    public void failed(String why) {
        Link old;
        boolean wasClosed;
        synchronized (lock) {
            wasClosed = state == State.CLOSED;
            if (!wasClosed) {
                state = State.FAILED;
            }
            waitReason = why;
            old = current();
            CompletableFuture<Link> failed = new CompletableFuture<>();
            failed.completeExceptionally(Errors.gaveUp(why));
            ready.completeExceptionally(Errors.gaveUp(why));
            ready = failed;
        }
        if (old != null) {
            old.close();
        }
        listener.failed();
        if (!wasClosed) {
            BrokerExit.exit(log, why);
        }
    }

    /** Connect mode, until a server answers: its Link then watches it ({@link #lost} when it goes). */
    private void watch() {
        if (state() != State.STARTING && state() != State.RESTARTING) {
            return;
        }
        try {
            Wire w = probe(cfg.ms(PluginConfig.CALL_TIMEOUT));
            if (w != null) {
                ready(w, state() == State.RESTARTING);
            }
        } catch (Errors.Refused e) {
            failed(e.getMessage());
        }
    }

    /** CLOSED: stops the watch, the child (SIGTERM, then SIGKILL) and the link; idempotent. */
    @Override
    public void close() {
        Link open;
        synchronized (lock) {
            if (state == State.CLOSED) {
                return;
            }
            state = State.CLOSED;
            open = current();
            ready.completeExceptionally(Errors.misuse("this instance is closed"));
            CompletableFuture<Link> done = new CompletableFuture<>();
            done.completeExceptionally(Errors.misuse("this instance is closed"));
            ready = done;
        }
        if (serverWatch != null) {
            serverWatch.shutdownNow();
        }
        if (child != null) {
            child.close();
            child = null;
        }
        if (open != null) {
            open.close();
        }
    }
}

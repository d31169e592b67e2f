package org.rlmm.plugin;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Predicate;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.server.log.remote.storage.RemoteStorageException;
import org.rlmm.plugin.proto.BrokerReply;
import org.rlmm.plugin.proto.BrokerRequest;
import org.rlmm.plugin.proto.ErrorKind;
import org.rlmm.plugin.proto.Purpose;
import org.slf4j.Logger;

/**
 * The life of the server the plugin calls, as one small state machine run by one thread of its own
 * ("rlmm-plugin-supervisor"), and the one call primitive that waits for it:
 *
 * <pre>
 *   STARTING   --a server answers the hello-->                              UP
 *   UP         --its link ends (watch connection), or the child exits-->    RESTARTING
 *   RESTARTING --a server answers the hello-->                              UP
 *   STARTING   --no answer within rlmm.serve.init.timeout.ms of configure--> FAILED
 *   STARTING, RESTARTING --settings refused (exit code 3), another version,
 *                         token refused-->                                  FAILED (the broker stops)
 *   any        --close-->                                                   CLOSED
 * </pre>
 *
 * <p>Finding a server is one try: in spawn mode a child is started (its properties file, binary
 * and socket directory prepared at {@link #start}) and asked the hello every 20 ms until it
 * answers, exits, or the init timeout passes (then it is stopped); in connect mode the address is
 * asked every second. A failed try is logged at ERROR and the next one comes after the restart
 * backoff. Calls wait for UP within their own bounds. The server owns the broker's assignment, so a
 * new one needs nothing handed over. Secrets go to a child only through its 0600 properties file;
 * its stdin is a pipe from this JVM, so it stops when its broker dies.
 */
final class Supervisor implements AutoCloseable {
    /** The states. */
    enum State { STARTING, UP, RESTARTING, FAILED, CLOSED }

    /** rlmm serve's exit code for a refused flag or setting (cmd/rlmm): the same settings fail again. */
    static final int EXIT_SETTINGS_REFUSED = 3;
    /** How often a try asks the hello: a starting child, a server at connect mode's address. */
    private static final Duration CHILD_POLL = Duration.ofMillis(20);
    private static final Duration SERVER_POLL = Duration.ofSeconds(1);
    /** A server that was up this long restarts after the first backoff again. */
    private static final Duration STABLE = Duration.ofSeconds(60);
    /** The pause before a call whose connection broke is asked again. */
    private static final long RETRY_PAUSE_NANOS = TimeUnit.MILLISECONDS.toNanos(20);
    private static final Pattern LEVEL = Pattern.compile("(?:level=|\"level\":\")(DEBUG|INFO|WARN|ERROR)");

    private final PluginConfig cfg;
    private final Logger log;
    private final Wire.Endpoint ep;
    private final RlmmMetrics metrics;
    /** Whether a read's partition has an assignment change the server has not acknowledged ({@link Outbox#waiting}). */
    private final Predicate<TopicIdPartition> changeWaiting;
    private final boolean spawn;
    private final Path propertiesFile;
    private final Wire.Watchdog dog;
    private final Thread thread = new Thread(this::run, "rlmm-plugin-supervisor");
    /** The state: written while holding this, read by anyone (the child-up gauge). */
    volatile State state = State.STARTING;
    /** Completed with the open link while UP; replaced by an incomplete one otherwise, a failed one at the end. */
    private volatile CompletableFuture<Link> ready = new CompletableFuture<>();
    private volatile String waitReason = "rlmm serve is starting";
    private volatile Process process;
    /** The child's last lines of output, for the log when it dies. */
    private final Deque<String> tail = new ArrayDeque<>();
    /** Calls that found no open link since the last one opened (logged when the next one opens). */
    private final AtomicLong held = new AtomicLong();

    Supervisor(PluginConfig cfg, Logger log, Wire.Endpoint ep, RlmmMetrics metrics, Predicate<TopicIdPartition> changeWaiting) {
        this.cfg = cfg;
        this.log = log;
        this.ep = ep;
        this.metrics = metrics;
        this.changeWaiting = changeWaiting;
        this.spawn = cfg.mode == PluginConfig.Mode.SPAWN;
        this.propertiesFile = spawn ? cfg.workDir.resolve("serve.properties") : null;
        long callMs = cfg.ms(PluginConfig.CALL_TIMEOUT).toMillis();
        this.dog = new Wire.Watchdog(TimeUnit.MILLISECONDS.toNanos(Math.max(1, Math.min(50, callMs / 20))));
        thread.setDaemon(true);
    }

    /**
     * Prepares a child's work directory, binary and properties file (spawn mode), and starts the
     * supervisor thread; returns without waiting for a server.
     *
     * @throws RemoteStorageException when the work directory or the binary cannot be prepared
     */
    void start() throws RemoteStorageException {
        if (spawn) {
            try {
                Files.createDirectories(cfg.workDir);
                Files.setPosixFilePermissions(cfg.workDir, PosixFilePermissions.fromString("rwx------"));
                SocketPath.prepare(cfg.socket.getParent(), cfg.workDir);
                if (cfg.bundledBinary()) {
                    boolean wrote = BinaryExtractor.install(cfg.binary, System.getProperty("os.name"), System.getProperty("os.arch"),
                            BinaryExtractor.class.getClassLoader());
                    log.info("rlmm plugin: {} the jar's rlmm binary at {}", wrote ? "extracted" : "reusing", cfg.binary);
                }
                writeProperties();
            } catch (IOException e) {
                throw new RemoteStorageException("rlmm plugin: cannot prepare " + cfg.workDir + ": " + e.getMessage(), e);
            }
        }
        thread.start();
    }

    // ---- the state machine's thread --------------------------------------------------------

    /** STARTING or RESTARTING: a try to find a server; UP until its link ends; again after the backoff. */
    private void run() {
        long initDue = System.nanoTime() + cfg.initTimeout().toNanos();
        Backoff backoff = new Backoff(cfg.ms(PluginConfig.RESTART_BACKOFF), cfg.ms(PluginConfig.RESTART_BACKOFF_MAX));
        while (state == State.STARTING || state == State.RESTARTING) {
            boolean first = state == State.STARTING;
            if (first && System.nanoTime() - initDue >= 0) {
                failed("rlmm serve did not become ready within " + cfg.initTimeout().toMillis() + " ms of configure ("
                        + PluginConfig.INIT_TIMEOUT + "); the last try: " + waitReason);
                return;
            }
            Link link;
            try {
                link = find(first ? initDue : System.nanoTime() + cfg.initTimeout().toNanos());
            } catch (Errors.Refused e) {
                failed(e.getMessage());
                return;
            } catch (RemoteStorageException e) {
                stopChild();
                if (state == State.CLOSED) {
                    return;
                }
                waitReason = e.getMessage();
                metrics.error();
                log.error("{}; next try in {} ms", waitReason, backoff.peek().toMillis());
                if (!backoff.sleep(Duration.ofNanos(first ? initDue - System.nanoTime() : Long.MAX_VALUE))) {
                    return;
                }
                continue;
            }
            if (!up(link, first)) {
                return;
            }
            long began = System.nanoTime();
            String why;
            try {
                why = link.ended.get(); // its watch connection ends with its server: a child's exit closes it
                Process p = process;
                if (p != null && p.waitFor(1, TimeUnit.SECONDS)) {
                    why = "rlmm serve pid " + p.pid() + " exited with code " + p.exitValue();
                }
            } catch (InterruptedException | ExecutionException e) {
                return; // close
            }
            if (!lost(link, why)) {
                return;
            }
            if (System.nanoTime() - began > STABLE.toNanos()) {
                backoff.reset();
            }
            log.error("rlmm plugin: {}; finding it again in {} ms{}", why, backoff.peek().toMillis(),
                    spawn ? "; its last output:\n" + tailText() : "");
            if (!backoff.sleep()) {
                return;
            }
        }
    }

    /**
     * One try: starts a child (spawn mode) and asks the hello until a server answers, by dueNanos;
     * throws {@link Errors.Refused} (not tried again) when the server refused the plugin or the
     * plugin the server, or the child refused its settings.
     */
    private Link find(long dueNanos) throws RemoteStorageException {
        Process p = spawn ? startChild() : null;
        int helloMs = (int) Math.min(spawn ? 500 : 60_000, cfg.ms(PluginConfig.CALL_TIMEOUT).toMillis());
        while (state != State.CLOSED) {
            if (p != null && !p.isAlive()) {
                String why = "rlmm serve exited with code " + p.exitValue() + " before it answered on " + cfg.target()
                        + "; its last output:\n" + tailText();
                if (p.exitValue() == EXIT_SETTINGS_REFUSED) {
                    throw new Errors.Refused("rlmm serve refused its settings (exit code " + EXIT_SETTINGS_REFUSED + "): " + why);
                }
                throw new RemoteStorageException("rlmm plugin: " + why);
            }
            Wire w = null;
            try {
                w = Wire.open(ep, dog, Purpose.PURPOSE_READ, helloMs);
            } catch (IOException e) {
                waitReason = "rlmm serve at " + cfg.target() + " does not answer (" + e.getMessage() + ")";
            }
            if (w != null && (p == null || w.server.getPid() == p.pid())) {
                return new Link(ep, dog, w, log, (int) Math.min(Integer.MAX_VALUE, cfg.ms(PluginConfig.CALL_TIMEOUT).toMillis()));
            } else if (w != null) {
                w.close(); // another server took the socket: not this child
            }
            if (System.nanoTime() - dueNanos > 0) {
                String who = p == null ? "no rlmm serve answered" : "rlmm serve pid " + p.pid() + " did not answer";
                throw new RemoteStorageException("rlmm plugin: " + who + " on " + cfg.target() + " within " + cfg.initTimeout().toMillis()
                        + " ms (" + PluginConfig.INIT_TIMEOUT + ")" + (p == null ? "" : "; its last output:\n" + tailText()));
            }
            try {
                Thread.sleep((spawn ? CHILD_POLL : SERVER_POLL).toMillis());
            } catch (InterruptedException e) {
                break;
            }
        }
        throw new RemoteStorageException("rlmm plugin: closed while finding rlmm serve");
    }

    /** UP on link; false when closed meanwhile. */
    private boolean up(Link link, boolean first) {
        synchronized (this) {
            if (state != State.STARTING && state != State.RESTARTING) {
                link.close();
                return false;
            }
            state = State.UP;
            ready.complete(link); // incomplete until now: calls waiting for a server have it
        }
        // test/broker/window_test.go reads this line.
        log.info("rlmm plugin: calls go to the {} rlmm serve pid {} at {} ({} calls waited for it)", first ? "new" : "restarted",
                link.pid, cfg.target(), held.getAndSet(0));
        return true;
    }

    /** UP to RESTARTING: calls wait for the next server; the child, if alive, is stopped. False when closed meanwhile. */
    private boolean lost(Link link, String why) {
        synchronized (this) {
            if (state != State.UP) {
                return false;
            }
            state = State.RESTARTING;
            waitReason = why + ", restarting";
            ready = new CompletableFuture<>();
        }
        link.close();
        stopChild();
        metrics.error();
        return true;
    }

    /**
     * FAILED: no server will be used (a refused setting or version, the init timeout); every call
     * fails naming why, and the broker is stopped as Kafka's own manager stops it when it cannot
     * initialize ({@link BrokerExit}).
     */
    private void failed(String why) {
        stopChild();
        synchronized (this) {
            if (state == State.CLOSED) {
                return;
            }
            state = State.FAILED;
            waitReason = why;
            CompletableFuture<Link> was = ready;
            ready = CompletableFuture.failedFuture(Errors.gaveUp(why));
            was.completeExceptionally(Errors.gaveUp(why));
        }
        metrics.failed();
        BrokerExit.exit(log, why);
    }

    // ---- the child -------------------------------------------------------------------------

    /** The child's command line: no secret on it. */
    List<String> command() {
        List<String> c = new ArrayList<>(List.of(cfg.binary.toString(), "serve", "--socket", cfg.socket.toString(),
                "--broker-id", Integer.toString(cfg.brokerId()), "--snapshot-dir", cfg.snapshotDir().toString(), "--exit-with-stdin"));
        if (cfg.path(PluginConfig.EMBEDDED_DIR) == null) {
            c.addAll(List.of("--properties", propertiesFile.toString()));
        } else {
            // The embedded log takes no client settings; the two that still apply go as flags.
            c.addAll(List.of("--dir", cfg.path(PluginConfig.EMBEDDED_DIR).toString()));
            String partitions = cfg.kafkaSettings.get(PluginConfig.KAFKA_PREFIX + "topic.num.partitions");
            if (partitions != null) {
                c.addAll(List.of("--kafka-partitions", partitions));
            }
            String wait = cfg.kafkaSettings.get(PluginConfig.CONSUME_WAIT);
            if (wait != null) {
                c.addAll(List.of("--consume-wait", wait + "ms"));
            }
        }
        c.addAll(cfg.extraArgs());
        return c;
    }

    private void writeProperties() throws IOException {
        removeProperties(); // a crashed broker's file, or a half-written one
        if (cfg.path(PluginConfig.EMBEDDED_DIR) != null) {
            return;
        }
        Path tmp = propertiesFile.resolveSibling("serve.properties.tmp");
        Files.createFile(tmp, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
        try (Writer w = Files.newBufferedWriter(tmp, StandardCharsets.UTF_8)) {
            w.write("# Kafka's remote.log.metadata.* settings as the broker passed them, for rlmm serve --properties.\n");
            for (Map.Entry<String, String> e : cfg.kafkaSettings.entrySet()) {
                w.write(e.getKey() + "=" + e.getValue() + "\n");
            }
        }
        Files.move(tmp, propertiesFile, StandardCopyOption.ATOMIC_MOVE);
    }

    private void removeProperties() {
        for (Path p : List.of(propertiesFile, propertiesFile.resolveSibling("serve.properties.tmp"))) {
            try {
                Files.deleteIfExists(p);
            } catch (IOException e) {
                log.warn("rlmm plugin: cannot remove {} (it holds the child's passwords): {}", p, e.toString());
            }
        }
    }

    /** Starts a child with a thread that logs its output. */
    private Process startChild() throws RemoteStorageException {
        List<String> cmd = command();
        synchronized (tail) {
            tail.clear();
        }
        Process p;
        try {
            p = new ProcessBuilder(cmd).directory(cfg.workDir.toFile()).redirectErrorStream(true).start();
        } catch (IOException e) {
            throw new RemoteStorageException("rlmm plugin: cannot start " + String.join(" ", cmd) + ": " + e.getMessage(), e);
        }
        process = p;
        if (state == State.CLOSED) {
            stopChild(); // close may have missed it
        }
        log.info("rlmm plugin: started rlmm serve pid {}: {}", p.pid(), String.join(" ", cmd));
        metrics.started();
        Thread pump = new Thread(() -> pump(p), "rlmm-serve-" + p.pid() + "-output");
        pump.setDaemon(true);
        pump.start();
        return p;
    }

    /** Logs the child's output, line by line, at the level each line names; keeps the last 20 lines. */
    private void pump(Process p) {
        try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
            for (String line; (line = r.readLine()) != null; ) {
                synchronized (tail) {
                    if (tail.size() == 20) {
                        tail.removeFirst();
                    }
                    tail.addLast(line);
                }
                Matcher m = LEVEL.matcher(line);
                switch (m.find() ? m.group(1) : "INFO") {
                    case "ERROR" -> log.error("rlmm serve[{}]: {}", p.pid(), line);
                    case "WARN" -> log.warn("rlmm serve[{}]: {}", p.pid(), line);
                    case "DEBUG" -> log.debug("rlmm serve[{}]: {}", p.pid(), line);
                    default -> log.info("rlmm serve[{}]: {}", p.pid(), line);
                }
            }
        } catch (IOException e) {
            // The pipe closes when the child exits.
        }
    }

    private String tailText() {
        synchronized (tail) {
            return tail.isEmpty() ? "(none)" : String.join("\n", tail);
        }
    }

    /** SIGTERM (the child writes its final snapshot), then SIGKILL after the stop timeout. */
    private void stopChild() {
        Process p = process;
        if (p == null || !p.isAlive()) {
            return;
        }
        // Through the handle: Process.destroy() would also close the output's pipe, and the
        // child's last lines (its final snapshot) would die of SIGPIPE.
        p.toHandle().destroy();
        long stopMs = cfg.ms(PluginConfig.STOP_TIMEOUT).toMillis();
        try {
            if (!p.waitFor(stopMs, TimeUnit.MILLISECONDS)) {
                log.warn("rlmm plugin: rlmm serve pid {} did not stop within {} ms of SIGTERM ({}); killing it", p.pid(), stopMs,
                        PluginConfig.STOP_TIMEOUT);
                p.toHandle().destroyForcibly();
                p.waitFor(stopMs, TimeUnit.MILLISECONDS);
            }
        } catch (InterruptedException e) {
            p.toHandle().destroyForcibly();
            Thread.currentThread().interrupt();
        }
        log.info("rlmm plugin: rlmm serve pid {} stopped{}", p.pid(), p.isAlive() ? " (still alive!)" : " with code " + p.exitValue());
    }

    // ---- calls -----------------------------------------------------------------------------

    /**
     * The one call primitive: waits for UP, sends req and reads its reply in this thread, all
     * within the bound of its purpose, and maps a refusal once ({@link Errors}). A call whose
     * connection broke is asked again (of the next server, when its own is gone) within the same
     * bound, unless it is a mutation that may have reached the server. tp is the partition a read
     * names (null: none); a list's replies before the last go to more.
     */
    BrokerReply call(String rpc, Purpose p, TopicIdPartition tp, Supplier<String> what, BrokerRequest.Builder req,
            List<BrokerReply> more) throws RemoteStorageException {
        boolean mutation = p == Purpose.PURPOSE_MUTATE;
        long boundMs = (mutation ? cfg.mutationTimeout() : cfg.ms(PluginConfig.CALL_TIMEOUT)).toMillis();
        long began = System.nanoTime();
        long due = began + TimeUnit.MILLISECONDS.toNanos(boundMs);
        boolean ok = false;
        boolean again = false;
        try {
            while (true) {
                Link l = await(due, what, boundMs);
                // Asked before each try: a change acknowledged while the call is on its way does not
                // turn its NOT_ASSIGNED into "not found".
                Errors.Call kind = mutation ? Errors.Call.MUTATION : tp == null ? Errors.Call.OTHER
                        : changeWaiting.test(tp) ? Errors.Call.READ_WAITING : Errors.Call.READ;
                if (more != null) {
                    more.clear();
                }
                BrokerReply r;
                try {
                    r = l.call(p, req, due, more);
                } catch (Link.Broken b) {
                    if (Thread.currentThread().isInterrupted()) {
                        throw Errors.interrupted(what.get(), b);
                    }
                    if (b.deadline || mutation && b.sent || due - System.nanoTime() <= RETRY_PAUSE_NANOS) {
                        throw Errors.broken(b, what.get(), cfg.target(), boundMs, mutation);
                    }
                    again = pause(what);
                    continue;
                }
                if (r.hasError()) {
                    // A read asked again because its server died is answered once the next one
                    // caught up, within the same bound: a restart costs a slower read, not an error.
                    if (again && !mutation && r.getError().getKind() == ErrorKind.NOT_READY
                            && due - System.nanoTime() > RETRY_PAUSE_NANOS) {
                        pause(what);
                        continue;
                    }
                    throw Errors.rethrow(r.getError(), what.get(), cfg.target(), kind);
                }
                ok = true;
                return r;
            }
        } finally {
            metrics.call(rpc, System.nanoTime() - began, !ok);
        }
    }

    private static boolean pause(Supplier<String> what) throws RemoteStorageException {
        try {
            TimeUnit.NANOSECONDS.sleep(RETRY_PAUSE_NANOS);
            return true;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw Errors.interrupted(what.get(), e);
        }
    }

    /** The open link, waited for until dueNanos (System.nanoTime()). */
    private Link await(long dueNanos, Supplier<String> what, long boundMs) throws RemoteStorageException {
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

    /** CLOSED: stops the thread, the child (SIGTERM, then SIGKILL), the link and the watchdog; idempotent. */
    @Override
    public void close() {
        Link open;
        synchronized (this) {
            if (state == State.CLOSED) {
                return;
            }
            state = State.CLOSED;
            open = current();
            CompletableFuture<Link> was = ready;
            ready = CompletableFuture.failedFuture(Errors.misuse("this instance is closed"));
            was.completeExceptionally(Errors.misuse("this instance is closed"));
        }
        thread.interrupt();
        stopChild();
        try {
            thread.join(1000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        stopChild(); // one the thread started while it stopped
        if (open != null) {
            open.close();
        }
        dog.close();
        if (spawn) {
            removeProperties();
        }
    }
}

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
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.kafka.server.log.remote.storage.RemoteStorageException;
import org.slf4j.Logger;

/**
 * Starts and supervises one {@code rlmm serve} child: writes its properties file into the
 * plugin's private directory, then, on its own thread (the broker's start does not wait for it),
 * starts the child, forwards its output to the plugin's logger, waits until it answers, restarts
 * it (with a doubling backoff, logged) when it dies or does not answer, and stops it at
 * {@link #close} (SIGTERM, then SIGKILL after the stop timeout). A child left behind by a
 * previous broker process (its pid file names a live rlmm serve on the same socket) is stopped
 * before a new one starts. A child that refuses its settings (exit {@link #EXIT_SETTINGS_REFUSED}),
 * a server the owner refuses ({@link Errors.Refused}: another API version), and a first child that does not
 * answer within {@code rlmm.serve.init.timeout.ms} are not started again: the owner hears of it
 * through {@link Hooks#failed}, and stops the broker.
 *
 * <p>Secrets (the key and trust store passwords, the JAAS line's password) reach the child only
 * through its properties file: mode 0600 in the private directory (itself 0700), rewritten at
 * every start (a file a crash left behind is removed first), removed at {@link #close}, and
 * named, not quoted, on the command line. The embedded log takes no client settings: no file is
 * written for it.
 */
final class ServeProcess implements AutoCloseable {
    /** What the owner does around a child's life. */
    interface Hooks {
        /**
         * Asks the server whether it answers; returns its pid, or empty when it does not yet.
         *
         * @throws Errors.Refused when the server answers but the owner will not use it (another API version)
         */
        Optional<Long> probe(Duration timeout) throws RemoteStorageException;

        /** The child answers (first start or restart); called before calls may go to it. */
        void ready(long pid, boolean restart) throws Exception;

        /** The child died; calls must wait for the next {@link #ready}. */
        void lost(String why);

        /**
         * No child runs, and none will until the broker is reconfigured: a child refused a flag or
         * setting (the message names it), the owner refused the server ({@link Errors.Refused}), or the
         * first child did not answer within the init timeout.
         */
        void failed(String why);

        /** A child process was started (each start, the first too). */
        default void started(long pid) {}

        /** Something went wrong with the child (logged at ERROR): for the last-error metric. */
        default void error(String why) {}
    }

    /** A child that lived this long before dying restarts after the initial backoff again. */
    private static final Duration STABLE = Duration.ofSeconds(60);
    private static final int TAIL_LINES = 20;
    private static final Pattern LEVEL = Pattern.compile("(?:level=|\"level\":\")(DEBUG|INFO|WARN|ERROR)");

    private final PluginConfig cfg;
    private final Logger log;
    private final Hooks hooks;
    private final Path pidFile;
    private final Path propertiesFile;
    private final Deque<String> tail = new ArrayDeque<>();
    private final Object lock = new Object();
    private Process process;
    private Thread supervisor;
    private volatile boolean closing;
    private volatile int lastExit = -1;

    /** The exit code of the child stopped last (-1: none stopped yet). */
    int lastExitCode() {
        return lastExit;
    }

    ServeProcess(PluginConfig cfg, Logger log, Hooks hooks) {
        this.cfg = cfg;
        this.log = log;
        this.hooks = hooks;
        this.pidFile = cfg.workDir.resolve("serve.pid");
        this.propertiesFile = cfg.workDir.resolve("serve.properties");
    }

    /** The command line of the child. */
    List<String> command() {
        List<String> c = new ArrayList<>();
        c.add(cfg.binary.toString());
        c.add("serve");
        c.add("--socket");
        c.add(cfg.socket.toString());
        c.add("--broker-id");
        c.add(Integer.toString(cfg.brokerId));
        c.add("--snapshot-dir");
        c.add(cfg.snapshotDir.toString());
        // The child's stdin is a pipe from this JVM: it stops when the broker dies, even by kill -9.
        c.add("--exit-with-stdin");
        if (cfg.embeddedDir != null) {
            // The embedded log takes no Kafka client settings (serve refuses a properties file
            // without bootstrap.servers); the two that still apply go as flags.
            c.add("--dir");
            c.add(cfg.embeddedDir.toString());
            String partitions = cfg.kafkaSettings.get("remote.log.metadata.topic.num.partitions");
            if (partitions != null) {
                c.add("--kafka-partitions");
                c.add(partitions);
            }
            String wait = cfg.kafkaSettings.get(PluginConfig.CONSUME_WAIT);
            if (wait != null) {
                c.add("--consume-wait");
                c.add(wait + "ms");
            }
        } else {
            c.add("--properties");
            c.add(propertiesFile.toString());
        }
        c.addAll(cfg.extraArgs);
        return c;
    }


    /**
     * rlmm serve's exit code for a refused flag or setting (cmd/rlmm/exitcode.go:
     * exitSettingsRefused): the same settings fail again, so the child is not restarted. Every
     * other early exit (2: could not run, such as an unreachable cluster) is retried.
     */
    static final int EXIT_SETTINGS_REFUSED = 3;


    /**
     * Writes the child's directory and properties file, then returns: the first child starts,
     * and is waited for, on the supervisor thread ({@link Hooks#ready} says when it answers).
     *
     * @throws RemoteStorageException when the private directory cannot be prepared
     */
    void start() throws RemoteStorageException {
        try {
            prepareDirectories();
            installBinary();
            writeProperties();
        } catch (IOException e) {
            throw Errors.storage("rlmm plugin: cannot prepare " + cfg.workDir + ": " + e.getMessage(), e);
        }
        Thread t = new Thread(this::run, "rlmm-plugin-supervisor");
        t.setDaemon(true);
        synchronized (lock) {
            supervisor = t;
        }
        t.start();
    }

    /** The supervisor thread: the first start (retried until it answers), then {@link #supervise}. */
    private void run() {
        long began = System.nanoTime();
        long initDeadline = began + cfg.initTimeout.toNanos();
        stopOrphan();
        Backoff backoff = new Backoff(cfg.restartBackoff, cfg.restartBackoffMax);
        String last = "none started yet";
        while (!closing) {
            if (System.nanoTime() - initDeadline >= 0) {
                fail("rlmm serve did not become ready within " + cfg.initTimeout.toMillis() + " ms of configure ("
                        + PluginConfig.INIT_TIMEOUT + "); the last try: " + last);
                return;
            }
            try {
                long pid = spawnAndAwait(initDeadline);
                hooks.ready(pid, false);
                log.info("rlmm plugin: rlmm serve pid {} ready {} ms after configure", pid,
                        TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - began));
                break;
            } catch (Exception e) {
                if (closing) {
                    return;
                }
                if (fatal(e)) {
                    return;
                }
                last = e.getMessage();
                hooks.error(last);
                log.error("rlmm plugin: {}; next try in {} ms", e.getMessage(), backoff.peek().toMillis());
            }
            if (!backoff.sleep(Duration.ofNanos(initDeadline - System.nanoTime())) || closing) {
                return;
            }
        }
        supervise();
    }

    /**
     * Whether a failed start ends the supervision (the child is stopped and the owner told): a
     * refused setting, or a server the owner refused. Anything else is retried.
     */
    private boolean fatal(Exception e) {
        if (e instanceof Errors.ExitedEarly x && x.code == EXIT_SETTINGS_REFUSED) {
            fail("rlmm serve refused its settings (exit code " + EXIT_SETTINGS_REFUSED + "): " + e.getMessage());
            return true;
        }
        if (e instanceof Errors.Refused) {
            stopChild();
            fail(e.getMessage());
            return true;
        }
        stopChild();
        return false;
    }

    private void fail(String why) {
        stopChild();
        hooks.error(why);
        failedWith = why;
        hooks.failed(why);
    }

    private volatile String failedWith;

    /** Why no child runs for good (a refused setting or server, the init timeout), or null. */
    String failure() {
        return failedWith;
    }

    /** The pid of the running child, or -1. */
    long pid() {
        synchronized (lock) {
            return process != null && process.isAlive() ? process.pid() : -1;
        }
    }

    private void prepareDirectories() throws IOException {
        Files.createDirectories(cfg.workDir);
        try {
            Files.setPosixFilePermissions(cfg.workDir, PosixFilePermissions.fromString("rwx------"));
        } catch (UnsupportedOperationException e) {
            // Not a POSIX file system: the socket's own mode (0600) still guards it.
            return;
        }
        Path socketDir = cfg.socket.getParent();
        if (socketDir == null) {
            return;
        }
        if (socketDir.startsWith(cfg.workDir)) {
            Files.createDirectories(socketDir);
            Files.setPosixFilePermissions(socketDir, PosixFilePermissions.fromString("rwx------"));
        } else {
            // A socket path too long for Linux: the per-user runtime directory, owner and mode checked.
            SocketPath.prepare(socketDir, cfg.workDir);
        }
    }

    /** Extracts the jar's rlmm binary into the work directory, unless an intact copy is there. */
    private void installBinary() throws IOException {
        BinaryExtractor.Bundled b = cfg.bundledBinary;
        if (b == null) {
            return; // rlmm.serve.binary names the binary: used as it is
        }
        long began = System.nanoTime();
        boolean wrote;
        try {
            wrote = b.install(cfg.binary);
        } catch (IOException e) {
            throw new IOException("extracting the jar's rlmm binary (" + b.platform + ") to " + cfg.binary + ": "
                    + e.getMessage(), e);
        }
        log.info("rlmm plugin: {} the jar's rlmm binary for {} at {} (SHA-256 {}, {} ms)", wrote ? "extracted" : "reusing",
                b.platform, cfg.binary, b.sha256, TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - began));
    }

    private void writeProperties() throws IOException {
        Path tmp = propertiesFile.resolveSibling("serve.properties.tmp");
        // A previous broker process that crashed left its file (and maybe a half-written one).
        Files.deleteIfExists(tmp);
        Files.deleteIfExists(propertiesFile);
        if (cfg.embeddedDir != null) {
            return; // the embedded log's child takes flags only
        }
        Files.createFile(tmp, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
        try (Writer w = Files.newBufferedWriter(tmp, StandardCharsets.UTF_8)) {
            w.write("# Written by rlmm's broker plugin for `rlmm serve --properties`: Kafka's\n");
            w.write("# remote.log.metadata.* settings as the broker passed them, passwords included (mode 0600).\n");
            w.write("# Rewritten at every start, removed when the plugin closes.\n");
            for (Map.Entry<String, String> e : cfg.kafkaSettings.entrySet()) {
                w.write(e.getKey() + "=" + e.getValue() + "\n");
            }
        }
        Files.move(tmp, propertiesFile, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    }

    /** Stops a child that a previous broker process left running on the same socket. */
    private void stopOrphan() {
        long pid;
        try {
            if (!Files.isRegularFile(pidFile)) {
                return;
            }
            pid = Long.parseLong(new String(Files.readAllBytes(pidFile), StandardCharsets.UTF_8).trim());
        } catch (IOException | NumberFormatException e) {
            log.warn("rlmm plugin: ignoring unreadable pid file {}: {}", pidFile, e.toString());
            return;
        }
        Optional<ProcessHandle> h = ProcessHandle.of(pid);
        if (h.isEmpty() || !h.get().isAlive()) {
            return;
        }
        String cmdline = h.get().info().commandLine().orElse("");
        if (!cmdline.contains(" serve ") || !cmdline.contains(cfg.socket.toString())) {
            return; // the pid was reused by another program
        }
        log.warn("rlmm plugin: stopping rlmm serve pid {} left running by a previous broker process ({})", pid, cmdline);
        h.get().destroy();
        try {
            h.get().onExit().get(cfg.stopTimeout.toMillis(), TimeUnit.MILLISECONDS);
        } catch (Exception e) {
            log.warn("rlmm plugin: pid {} did not stop within {} ms of SIGTERM; killing it", pid, cfg.stopTimeout.toMillis());
            h.get().destroyForcibly();
            try {
                h.get().onExit().get(cfg.stopTimeout.toMillis(), TimeUnit.MILLISECONDS);
            } catch (Exception e2) {
                log.error("rlmm plugin: pid {} survived SIGKILL for {} ms", pid, cfg.stopTimeout.toMillis());
            }
        }
    }

    /** Starts a child and waits until it answers; the child is stopped again on failure. */
    private long spawnAndAwait(long initDeadline) throws RemoteStorageException {
        List<String> cmd = command();
        Process p;
        synchronized (lock) {
            if (closing) {
                throw Errors.storage("rlmm plugin: closed while starting rlmm serve");
            }
            tail.clear();
            try {
                p = new ProcessBuilder(cmd)
                        .directory(cfg.workDir.toFile())
                        .redirectErrorStream(true)
                        .redirectInput(ProcessBuilder.Redirect.PIPE)
                        .start();
            } catch (IOException e) {
                throw Errors.storage("rlmm plugin: cannot start " + String.join(" ", cmd) + ": " + e.getMessage(), e);
            }
            process = p;
        }
        log.info("rlmm plugin: started rlmm serve pid {}: {}", p.pid(), String.join(" ", cmd));
        hooks.started(p.pid());
        try {
            Files.write(pidFile, Long.toString(p.pid()).getBytes(StandardCharsets.UTF_8));
        } catch (IOException e) {
            log.warn("rlmm plugin: cannot write {}: {}", pidFile, e.toString());
        }
        Thread pump = new Thread(() -> pump(p), "rlmm-serve-" + p.pid() + "-output");
        pump.setDaemon(true);
        pump.start();

        long deadline = System.nanoTime() + cfg.startTimeout.toNanos();
        boolean initBound = initDeadline - deadline < 0;
        if (initBound) {
            deadline = initDeadline; // the first child: within what is left of the init timeout
        }
        while (true) {
            if (!p.isAlive()) {
                int code = p.exitValue();
                joinQuietly(pump);
                throw new Errors.ExitedEarly("rlmm plugin: rlmm serve exited with code " + code
                        + " before it answered on " + cfg.target() + "; its last output:\n" + tailText(), code);
            }
            if (closing) {
                stopChild();
                throw Errors.storage("rlmm plugin: closed while starting rlmm serve");
            }
            Optional<Long> pid = hooks.probe(Duration.ofMillis(500));
            if (pid.isPresent()) {
                if (pid.get() != p.pid()) {
                    log.warn("rlmm plugin: {} is answered by pid {}, not by the child {}", cfg.target(), pid.get(), p.pid());
                } else {
                    log.info("rlmm plugin: rlmm serve pid {} answers on {}", p.pid(), cfg.target());
                    return p.pid();
                }
            }
            if (System.nanoTime() - deadline > 0) {
                stopChild();
                throw Errors.storage("rlmm plugin: rlmm serve pid " + p.pid() + " did not answer on "
                        + cfg.target() + (initBound ? " before the init timeout (" + PluginConfig.INIT_TIMEOUT + ")"
                        : " within " + cfg.startTimeout.toMillis() + " ms (" + PluginConfig.START_TIMEOUT + ")")
                        + "; its last output:\n" + tailText());
            }
            try {
                Thread.sleep(20);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                stopChild();
                throw Errors.storage("rlmm plugin: interrupted while starting rlmm serve");
            }
        }
    }

    private void supervise() {
        Backoff backoff = new Backoff(cfg.restartBackoff, cfg.restartBackoffMax);
        while (!closing) {
            Process p;
            synchronized (lock) {
                p = process;
            }
            long started = p.info().startInstant().map(i -> i.toEpochMilli()).orElse(System.currentTimeMillis());
            int code;
            try {
                code = p.waitFor();
            } catch (InterruptedException e) {
                if (closing) {
                    return;
                }
                continue;
            }
            if (closing) {
                return;
            }
            String why = "rlmm serve pid " + p.pid() + " exited with code " + code;
            hooks.lost(why);
            hooks.error(why);
            if (System.currentTimeMillis() - started > STABLE.toMillis()) {
                backoff.reset();
            }
            log.error("rlmm plugin: {}; restarting it in {} ms; its last output:\n{}", why, backoff.peek().toMillis(),
                    tailText());
            while (!closing) {
                if (!backoff.sleep() || closing) {
                    return;
                }
                try {
                    long pid = spawnAndAwait(System.nanoTime() + Long.MAX_VALUE / 2);
                    hooks.ready(pid, true);
                    log.info("rlmm plugin: rlmm serve restarted as pid {}", pid);
                    break;
                } catch (Exception e) {
                    if (closing) {
                        return;
                    }
                    if (fatal(e)) {
                        return;
                    }
                    hooks.error(e.getMessage());
                    log.error("rlmm plugin: restarting rlmm serve failed: {}; next try in {} ms", e.getMessage(),
                            backoff.peek().toMillis());
                }
            }
        }
    }

    /** Forwards the child's output, line by line, at the level each line names. */
    private void pump(Process p) {
        try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
            String line;
            while ((line = r.readLine()) != null) {
                synchronized (tail) {
                    if (tail.size() == TAIL_LINES) {
                        tail.removeFirst();
                    }
                    tail.addLast(line);
                }
                Matcher m = LEVEL.matcher(line);
                String level = m.find() ? m.group(1) : "INFO";
                switch (level) {
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

    private static void joinQuietly(Thread t) {
        try {
            t.join(1000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** SIGTERM, then SIGKILL after the stop timeout. */
    private void stopChild() {
        Process p;
        synchronized (lock) {
            p = process;
        }
        if (p == null || !p.isAlive()) {
            return;
        }
        // SIGTERM through the process handle: Process.destroy() would also close the pipe of
        // the child's output, and its last log lines (the final snapshot) would die of SIGPIPE.
        p.toHandle().destroy();
        try {
            if (!p.waitFor(cfg.stopTimeout.toMillis(), TimeUnit.MILLISECONDS)) {
                log.warn("rlmm plugin: rlmm serve pid {} did not stop within {} ms of SIGTERM ({}); killing it",
                        p.pid(), cfg.stopTimeout.toMillis(), PluginConfig.STOP_TIMEOUT);
                p.toHandle().destroyForcibly();
                p.waitFor(cfg.stopTimeout.toMillis(), TimeUnit.MILLISECONDS);
            }
        } catch (InterruptedException e) {
            p.toHandle().destroyForcibly();
            Thread.currentThread().interrupt();
        }
        if (!p.isAlive()) {
            lastExit = p.exitValue();
        }
        log.info("rlmm plugin: rlmm serve pid {} stopped{}", p.pid(), p.isAlive() ? " (still alive!)" : " with code " + p.exitValue());
    }

    /** Stops the child and the supervisor; idempotent. */
    @Override
    public void close() {
        closing = true;
        Thread t;
        synchronized (lock) {
            t = supervisor;
        }
        if (t != null) {
            t.interrupt();
        }
        stopChild();
        if (t != null) {
            joinQuietly(t);
        }
        try {
            Files.deleteIfExists(pidFile);
        } catch (IOException e) {
            log.warn("rlmm plugin: cannot remove {}: {}", pidFile, e.toString());
        }
        removeProperties();
    }

    /** The child's properties file, which holds the secrets: removed once no child needs it. */
    Path propertiesFile() {
        return propertiesFile;
    }

    private void removeProperties() {
        for (Path p : new Path[] {propertiesFile, propertiesFile.resolveSibling("serve.properties.tmp")}) {
            try {
                Files.deleteIfExists(p);
            } catch (IOException e) {
                log.warn("rlmm plugin: cannot remove {} (it holds the child's passwords): {}", p, e.toString());
            }
        }
    }
}

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
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.kafka.server.log.remote.storage.RemoteStorageException;
import org.slf4j.Logger;

/**
 * Runs one {@code rlmm serve} child at a time, from a thread of its own (the broker's start does not
 * wait): starts it, logs its output, waits until it answers, and starts it again with the backoff
 * when it dies or does not answer in time. A child that refuses its settings (exit
 * {@link #EXIT_SETTINGS_REFUSED}), a server the plugin refuses, or a first child not answering
 * within the init timeout is not retried: {@link Hooks#failed}. Secrets go only through the 0600
 * properties file; the child's stdin is a pipe from this JVM, so it stops when its broker dies.
 */
final class ServeProcess implements AutoCloseable {
    /** What the owner does around a child's life. */
    interface Hooks {
        /** Opens a connection and says the hello; null when the server does not answer yet. */
        Wire probe(Duration timeout) throws RemoteStorageException;

        /** The child answered the hello on w: calls may go to it. */
        void ready(Wire w, boolean restart);

        /** The child died; calls wait for the next {@link #ready}. */
        void lost(String why);

        /** No child will run again: the broker is to stop. */
        void failed(String why);
    }

    /** rlmm serve's exit code for a refused flag or setting (cmd/rlmm): the same settings fail again. */
    static final int EXIT_SETTINGS_REFUSED = 3;
    /** A child that lived this long restarts after the first backoff again. */
    private static final Duration STABLE = Duration.ofSeconds(60);
    private static final Pattern LEVEL = Pattern.compile("(?:level=|\"level\":\")(DEBUG|INFO|WARN|ERROR)");

    private final PluginConfig cfg;
    private final Logger log;
    private final Hooks hooks;
    private final Supervisor.Listener listener;
    private final Path propertiesFile;
    /** The child's last lines of output, for the log when it dies. */
    private final Deque<String> tail = new ArrayDeque<>();
    private final Thread thread = new Thread(this::run, "rlmm-plugin-supervisor");
    private volatile Process process;
    private volatile boolean closing;

    ServeProcess(PluginConfig cfg, Logger log, Hooks hooks, Supervisor.Listener listener) {
        this.cfg = cfg;
        this.log = log;
        this.hooks = hooks;
        this.listener = listener;
        this.propertiesFile = cfg.workDir.resolve("serve.properties");
        thread.setDaemon(true);
    }

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

    /**
     * Prepares the work directory, binary and properties file, and starts the supervisor thread.
     *
     * @throws RemoteStorageException when the work directory or the binary cannot be prepared
     */
    void start() throws RemoteStorageException {
        try {
            Files.createDirectories(cfg.workDir);
            Files.setPosixFilePermissions(cfg.workDir, PosixFilePermissions.fromString("rwx------"));
            // The work directory, or (a path too long for a socket) a runtime directory, 0700 and checked.
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
        thread.start();
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

    /** The supervisor thread: start, wait until it answers, wait until it dies, start again. */
    private void run() {
        long initDeadline = System.nanoTime() + cfg.initTimeout().toNanos();
        Backoff backoff = new Backoff(cfg.ms(PluginConfig.RESTART_BACKOFF), cfg.ms(PluginConfig.RESTART_BACKOFF_MAX));
        boolean first = true;
        String last = "none started yet";
        while (!closing) {
            long left = first ? initDeadline - System.nanoTime() : Long.MAX_VALUE;
            if (left <= 0) {
                fail("rlmm serve did not become ready within " + cfg.initTimeout().toMillis() + " ms of configure ("
                        + PluginConfig.INIT_TIMEOUT + "); the last try: " + last);
                return;
            }
            Process p;
            try {
                Wire w = startAndAwait(left);
                p = process;
                hooks.ready(w, !first);
                log.info("rlmm plugin: rlmm serve pid {} answers on {}", p.pid(), cfg.target());
            } catch (RemoteStorageException e) {
                if (closing) {
                    return;
                }
                if (e instanceof Errors.ExitedEarly x && x.code == EXIT_SETTINGS_REFUSED) {
                    fail("rlmm serve refused its settings (exit code " + EXIT_SETTINGS_REFUSED + "): " + e.getMessage());
                    return;
                }
                if (e instanceof Errors.Refused) {
                    fail(e.getMessage());
                    return;
                }
                stopChild();
                last = e.getMessage();
                listener.error();
                log.error("{}; next try in {} ms", last, backoff.peek().toMillis());
                if (!backoff.sleep(Duration.ofNanos(first ? initDeadline - System.nanoTime() : Long.MAX_VALUE))) {
                    return;
                }
                continue;
            }
            first = false;
            long began = System.nanoTime();
            int code;
            try {
                code = p.waitFor();
            } catch (InterruptedException e) {
                return; // close
            }
            if (closing) {
                return;
            }
            String why = "rlmm serve pid " + p.pid() + " exited with code " + code;
            hooks.lost(why);
            listener.error();
            if (System.nanoTime() - began > STABLE.toNanos()) {
                backoff.reset();
            }
            log.error("rlmm plugin: {}; restarting it in {} ms; its last output:\n{}", why, backoff.peek().toMillis(), tailText());
            if (!backoff.sleep()) {
                return;
            }
        }
    }

    private void fail(String why) {
        stopChild();
        listener.error();
        hooks.failed(why);
    }

    /** Starts a child and waits, at most its start timeout and leftNanos, until it answers: its connection. */
    private Wire startAndAwait(long leftNanos) throws RemoteStorageException {
        List<String> cmd = command();
        Process p;
        synchronized (tail) {
            tail.clear();
        }
        try {
            p = new ProcessBuilder(cmd).directory(cfg.workDir.toFile()).redirectErrorStream(true).start();
        } catch (IOException e) {
            throw new RemoteStorageException("rlmm plugin: cannot start " + String.join(" ", cmd) + ": " + e.getMessage(), e);
        }
        process = p;
        if (closing) {
            stopChild();
            throw new RemoteStorageException("rlmm plugin: closed while starting rlmm serve");
        }
        log.info("rlmm plugin: started rlmm serve pid {}: {}", p.pid(), String.join(" ", cmd));
        listener.started();
        Thread pump = new Thread(() -> pump(p), "rlmm-serve-" + p.pid() + "-output");
        pump.setDaemon(true);
        pump.start();
        boolean init = leftNanos < cfg.ms(PluginConfig.START_TIMEOUT).toNanos();
        long deadline = System.nanoTime() + (init ? leftNanos : cfg.ms(PluginConfig.START_TIMEOUT).toNanos());
        while (!closing) {
            if (!p.isAlive()) {
                join(pump);
                throw new Errors.ExitedEarly("rlmm plugin: rlmm serve exited with code " + p.exitValue() + " before it answered on "
                        + cfg.target() + "; its last output:\n" + tailText(), p.exitValue());
            }
            Wire w = hooks.probe(Duration.ofMillis(500));
            if (w != null && w.server.getPid() == p.pid()) {
                return w;
            } else if (w != null) {
                w.close(); // another server took the socket: not this child
            }
            if (System.nanoTime() - deadline > 0) {
                throw new RemoteStorageException("rlmm plugin: rlmm serve pid " + p.pid() + " did not answer on " + cfg.target()
                        + (init ? " before the init timeout (" + PluginConfig.INIT_TIMEOUT + ")" : " within "
                        + cfg.ms(PluginConfig.START_TIMEOUT).toMillis() + " ms (" + PluginConfig.START_TIMEOUT + ")")
                        + "; its last output:\n" + tailText());
            }
            try {
                Thread.sleep(20);
            } catch (InterruptedException e) {
                break;
            }
        }
        stopChild();
        throw new RemoteStorageException("rlmm plugin: closed while starting rlmm serve");
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

    private static void join(Thread t) {
        try {
            t.join(1000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
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
        try {
            if (!p.waitFor(cfg.ms(PluginConfig.STOP_TIMEOUT).toMillis(), TimeUnit.MILLISECONDS)) {
                log.warn("rlmm plugin: rlmm serve pid {} did not stop within {} ms of SIGTERM ({}); killing it", p.pid(),
                        cfg.ms(PluginConfig.STOP_TIMEOUT).toMillis(), PluginConfig.STOP_TIMEOUT);
                p.toHandle().destroyForcibly();
                p.waitFor(cfg.ms(PluginConfig.STOP_TIMEOUT).toMillis(), TimeUnit.MILLISECONDS);
            }
        } catch (InterruptedException e) {
            p.toHandle().destroyForcibly();
            Thread.currentThread().interrupt();
        }
        log.info("rlmm plugin: rlmm serve pid {} stopped{}", p.pid(), p.isAlive() ? " (still alive!)" : " with code " + p.exitValue());
    }

    /** Stops the supervisor and the child, and removes the properties file; idempotent. */
    @Override
    public void close() {
        closing = true;
        thread.interrupt();
        stopChild();
        join(thread);
        stopChild(); // one the supervisor started while it stopped
        removeProperties();
    }
}

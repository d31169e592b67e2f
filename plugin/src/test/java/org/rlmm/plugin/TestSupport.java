package org.rlmm.plugin;

import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.server.log.remote.storage.RemoteLogMetadataManager;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentId;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadata;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadata.CustomMetadata;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadataUpdate;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentState;
import org.junit.jupiter.api.Assumptions;

/** The tests' helpers: the rlmm binary, configurations, Kafka model values, waiting. */
final class TestSupport {
    private TestSupport() {}

    static final int BROKER_ID = 7;

    /** The rlmm binary the build passes (-Drlmm.binary); the tests cannot run without it. */
    static Path rlmmBinary() {
        String p = System.getProperty("rlmm.binary");
        if (p == null || p.isEmpty()) {
            fail("system property rlmm.binary is not set: run the tests with scripts/plugin.sh test");
        }
        Path path = Paths.get(p);
        if (!Files.isExecutable(path)) {
            fail("no rlmm binary at " + path + " (rlmm.binary): build it with scripts/plugin.sh build");
        }
        return path;
    }

    /** What a broker passes, with the plugin's child running over rlmm's embedded log in dir. */
    static Map<String, Object> embeddedConfig(Path dir) {
        Map<String, Object> c = new HashMap<>();
        c.put("broker.id", BROKER_ID); // an Integer, as the broker passes it
        c.put("cluster.id", "rlmmPluginTestCluster0");
        c.put("log.dir", dir.resolve("kafka-logs").toString());
        c.put("remote.log.metadata.common.client.bootstrap.servers", "127.0.0.1:9");
        c.put("remote.log.metadata.common.client.security.protocol", "PLAINTEXT");
        c.put("remote.log.metadata.topic.num.partitions", "5");
        c.put("rlmm.serve.binary", rlmmBinary().toString());
        c.put("rlmm.serve.embedded.dir", dir.resolve("log").toString());
        c.put("rlmm.serve.stop.timeout.ms", "10000");
        return c;
    }

    /** What a broker passes for a Kafka broker at bootstrap. */
    static Map<String, Object> kafkaConfig(Path dir, String bootstrap) {
        Map<String, Object> c = new HashMap<>();
        c.put("broker.id", BROKER_ID);
        c.put("cluster.id", "rlmmPluginTestCluster0");
        c.put("log.dir", dir.resolve("kafka-logs").toString());
        c.put("remote.log.metadata.common.client.bootstrap.servers", bootstrap);
        c.put("remote.log.metadata.common.client.security.protocol", "PLAINTEXT");
        c.put("remote.log.metadata.topic.replication.factor", "1");
        c.put("rlmm.serve.binary", rlmmBinary().toString());
        c.put("rlmm.serve.stop.timeout.ms", "10000");
        return c;
    }

    /** The version of the jar Kafka's clients classes come from (its kafka/kafka-version.properties). */
    static String kafkaClientsVersion() {
        java.util.Properties p = new java.util.Properties();
        try (java.util.jar.JarFile j = new java.util.jar.JarFile(
                Paths.get(Uuid.class.getProtectionDomain().getCodeSource().getLocation().toURI()).toFile())) {
            java.util.jar.JarEntry e = j.getJarEntry("kafka/kafka-version.properties");
            if (e == null) {
                fail(j.getName() + " has no kafka/kafka-version.properties");
            }
            try (java.io.InputStream in = j.getInputStream(e)) {
                p.load(in);
            }
        } catch (IOException | java.net.URISyntaxException e) {
            throw new RuntimeException(e);
        }
        return p.getProperty("version");
    }

    /** The bootstrap of the broker make test started (test/kafkatest); skips (failing in CI) without one. */
    static String kafkaBootstrap() {
        String b = System.getenv("RLMM_KAFKA_BOOTSTRAP");
        if (b == null || b.isEmpty()) {
            String why = "RLMM_KAFKA_BOOTSTRAP is not set: no Kafka broker (make test starts one;"
                    + " by hand: go run ./test/kafkatest/cmd/kafkatest start DIR)";
            if ("true".equals(System.getenv("CI"))) {
                fail(why + ", and CI=true needs this test to run");
            }
            System.out.println("SKIP: " + why);
            Assumptions.abort(why);
        }
        return b;
    }

    static TopicIdPartition newPartition(String topic) {
        return new TopicIdPartition(Uuid.randomUuid(), ThreadLocalRandom.current().nextInt(0, 8), topic);
    }

    /** A COPY_SEGMENT_STARTED segment [start, end] with the given epoch starts. */
    static RemoteLogSegmentMetadata segment(TopicIdPartition tp, long start, long end, Optional<CustomMetadata> custom,
            boolean txnIdxEmpty, long... epochStarts) {
        TreeMap<Integer, Long> epochs = new TreeMap<>();
        for (int i = 0; i + 1 < epochStarts.length; i += 2) {
            epochs.put((int) epochStarts[i], epochStarts[i + 1]);
        }
        return new RemoteLogSegmentMetadata(new RemoteLogSegmentId(tp, Uuid.randomUuid()), start, end,
                1_700_000_000_000L + end, BROKER_ID, System.currentTimeMillis(), (int) (end - start + 1) * 100, custom,
                RemoteLogSegmentState.COPY_SEGMENT_STARTED, epochs, txnIdxEmpty);
    }

    static RemoteLogSegmentMetadataUpdate update(RemoteLogSegmentMetadata m, RemoteLogSegmentState state,
            Optional<CustomMetadata> custom) {
        return new RemoteLogSegmentMetadataUpdate(m.remoteLogSegmentId(), System.currentTimeMillis(), custom, state, BROKER_ID + 1);
    }

    static <T> List<T> toList(Iterator<T> it) {
        List<T> out = new ArrayList<>();
        it.forEachRemaining(out::add);
        return out;
    }

    /** Polls cond every 20 ms until it holds; fails naming what after timeout. */
    static void await(String what, Duration timeout, BooleanSupplier cond) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!cond.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                fail("timed out after " + timeout + " waiting for " + what);
            }
            try {
                Thread.sleep(20);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                fail("interrupted waiting for " + what);
            }
        }
    }

    /** Assigns tp as a leader and waits until the server says it is ready. */
    static void assignAndAwaitReady(RemoteLogMetadataManager m, TopicIdPartition tp, Duration timeout) {
        m.onPartitionLeadershipChanges(java.util.Set.of(tp), java.util.Set.of());
        await("isReady(" + tp + ")", timeout, () -> m.isReady(tp));
    }

    /**
     * Sends sig (STOP, CONT) to pid; after STOP, waits until every thread of pid is stopped. kill(2)
     * returns once SIGSTOP is queued: the stop of a multi-threaded process (rlmm serve) begins when
     * one of its threads is next scheduled to take the signal, and on a loaded machine its other
     * threads answer calls meanwhile.
     */
    static void signal(long pid, String sig) throws Exception {
        Process p = new ProcessBuilder("kill", "-" + sig, Long.toString(pid)).inheritIO().start();
        assertTrue(p.waitFor(10, TimeUnit.SECONDS) && p.exitValue() == 0, "kill -" + sig + " " + pid);
        if (sig.equals("STOP")) {
            await("every thread of pid " + pid + " stopped (/proc/" + pid + "/task/*/stat)", Duration.ofSeconds(10),
                    () -> allThreadsStopped(pid));
        }
    }

    /** Whether no thread of pid can run: each is stopped (T), or gone (Z, X, or its stat already removed). */
    private static boolean allThreadsStopped(long pid) {
        try (java.util.stream.Stream<Path> tasks = Files.list(Paths.get("/proc", Long.toString(pid), "task"))) {
            return tasks.allMatch(t -> {
                String stat;
                try {
                    stat = Files.readString(t.resolve("stat"));
                } catch (IOException e) {
                    return true; // the thread exited
                }
                // "tid (comm) S ...": comm may hold spaces and parentheses; the state follows the last ')'.
                char state = stat.charAt(stat.lastIndexOf(')') + 2);
                return state == 'T' || state == 't' || state == 'Z' || state == 'X';
            });
        } catch (IOException e) {
            return true; // the process exited: nothing of it runs
        }
    }

    /** The pid of the plugin's live child (a child of this JVM run with --exit-with-stdin), or -1. */
    static long childPid() {
        return ProcessHandle.current().children().filter(h -> h.isAlive()
                && h.info().commandLine().orElse("").contains(" --exit-with-stdin")).mapToLong(ProcessHandle::pid).findFirst().orElse(-1);
    }

    /**
     * Waits until the plugin of brokerId sends calls to a server (its JMX gauge child-up is 1), at
     * most timeout; false when not, or once it gave up (its gauge failed is 1).
     */
    static boolean awaitServer(int brokerId, Duration timeout) throws Exception {
        javax.management.MBeanServer jmx = java.lang.management.ManagementFactory.getPlatformMBeanServer();
        javax.management.ObjectName name = new javax.management.ObjectName("kafka.server:type=rlmm-plugin,broker-id=" + brokerId);
        long due = System.nanoTime() + timeout.toNanos();
        while (System.nanoTime() - due < 0) {
            if (jmx.isRegistered(name)) {
                if (((Number) jmx.getAttribute(name, "child-up")).longValue() == 1) {
                    return true;
                }
                if (((Number) jmx.getAttribute(name, "failed")).longValue() == 1) {
                    return false;
                }
            }
            Thread.sleep(20);
        }
        return false;
    }

    /** Whether any live process's command line names this path (a child left behind). */
    static List<ProcessHandle> processesNaming(String path) {
        List<ProcessHandle> out = new ArrayList<>();
        ProcessHandle.allProcesses().forEach(h -> {
            String cmd = h.info().commandLine().orElse("");
            if (cmd.contains(" serve ") && cmd.contains(path)) {
                out.add(h);
            }
        });
        return out;
    }

    static void assertGone(long pid, Duration timeout) {
        await("pid " + pid + " to exit", timeout, () -> ProcessHandle.of(pid).map(h -> !h.isAlive()).orElse(true));
        assertTrue(ProcessHandle.of(pid).map(h -> !h.isAlive()).orElse(true));
    }

    static Path tempDir(String prefix) {
        try {
            return Files.createTempDirectory(prefix);
        } catch (IOException e) {
            throw new RuntimeException(e);
        }
    }

    /**
     * Replaces Kafka's exit procedure (the one {@link BrokerExit} calls, as Kafka's own manager
     * does) while open, recording the call instead of ending the test JVM. Found by name: the
     * tests compile against Kafka 4.0's API and run on 4.4's, where Exit moved to
     * {@code org.apache.kafka.common.utils.internals}.
     */
    static final class ExitRecorder implements AutoCloseable {
        private final Class<?> exit;
        private final java.util.concurrent.CompletableFuture<String> message = new java.util.concurrent.CompletableFuture<>();
        private final java.util.concurrent.atomic.AtomicInteger calls = new java.util.concurrent.atomic.AtomicInteger();
        private volatile int status = -1;

        ExitRecorder() {
            Class<?> c = null;
            for (String name : new String[] {"org.apache.kafka.common.utils.internals.Exit", "org.apache.kafka.common.utils.Exit"}) {
                try {
                    c = Class.forName(name);
                    break;
                } catch (ClassNotFoundException e) {
                    // the other one
                }
            }
            if (c == null) {
                fail("no Kafka Exit class on the test class path");
            }
            exit = c;
            try {
                Class<?> procedure = Class.forName(c.getName() + "$Procedure");
                Object p = java.lang.reflect.Proxy.newProxyInstance(procedure.getClassLoader(), new Class<?>[] {procedure},
                        (proxy, method, args) -> {
                            if (method.getName().equals("execute")) {
                                calls.incrementAndGet();
                                status = (Integer) args[0];
                                message.complete(String.valueOf(args[1]));
                                return null;
                            }
                            return method.invoke(this, args);
                        });
                c.getMethod("setExitProcedure", procedure).invoke(null, p);
            } catch (ReflectiveOperationException e) {
                throw new RuntimeException(e);
            }
        }

        /** The message of the first exit, waited for at most timeout; fails naming what when none came. */
        String await(String what, Duration timeout) {
            try {
                return message.get(timeout.toMillis(), java.util.concurrent.TimeUnit.MILLISECONDS);
            } catch (java.util.concurrent.TimeoutException e) {
                return fail("no Exit.exit within " + timeout + ": " + what);
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
        }

        boolean exited() {
            return message.isDone();
        }

        int status() {
            return status;
        }

        int calls() {
            return calls.get();
        }

        @Override
        public void close() {
            try {
                exit.getMethod("resetExitProcedure").invoke(null);
            } catch (ReflectiveOperationException e) {
                throw new RuntimeException(e);
            }
        }
    }

    /** An `rlmm serve` the test starts itself, for connect mode. */
    static final class Server implements AutoCloseable {
        final Path socket;
        private final Process process;

        private Server(Path socket, Process process) {
            this.socket = socket;
            this.process = process;
        }

        /** The TCP address of a server started with extra args --listen-tcp (from its ready file). */
        String tcp;

        static Server start(Path dir, String... extra) throws IOException {
            Path socket = dir.resolve("srv.sock");
            Path ready = dir.resolve("srv.ready");
            List<String> cmd = new ArrayList<>(List.of(rlmmBinary().toString(), "serve", "--dir", dir.resolve("srv-log").toString(),
                    "--snapshot-dir", dir.resolve("srv-snap").toString(), "--socket", socket.toString(),
                    "--broker-id", "1", "--ready-file", ready.toString()));
            cmd.addAll(List.of(extra));
            Process p = new ProcessBuilder(cmd)
                    .redirectErrorStream(true)
                    .redirectOutput(dir.resolve("srv.out").toFile())
                    .start();
            Server s = new Server(socket, p);
            try {
                await("rlmm serve's ready file " + ready, Duration.ofSeconds(30), () -> Files.exists(ready) || !p.isAlive());
            } catch (AssertionError e) {
                s.close();
                throw e;
            }
            if (!p.isAlive()) {
                fail("rlmm serve exited with " + p.exitValue() + ": " + Files.readString(dir.resolve("srv.out")));
            }
            for (String line : Files.readAllLines(ready)) {
                if (line.startsWith("tcp=")) {
                    s.tcp = line.substring("tcp=".length());
                }
            }
            return s;
        }

        long pid() {
            return process.pid();
        }

        boolean alive() {
            return process.isAlive();
        }

        @Override
        public void close() {
            process.destroy();
            try {
                if (!process.waitFor(15, java.util.concurrent.TimeUnit.SECONDS)) {
                    process.destroyForcibly();
                    process.waitFor(15, java.util.concurrent.TimeUnit.SECONDS);
                }
            } catch (InterruptedException e) {
                process.destroyForcibly();
                Thread.currentThread().interrupt();
            }
        }
    }
}

package org.rlmm.plugin;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentId;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadata;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadataUpdate;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentState;

/**
 * A timed loop through the plugin against `rlmm serve`, as the broker's RemoteLogManager sees
 * it: per copied segment the add-plus-finish time (add(...).get() then update(...).get(), the
 * broker's two waits), and the lookup round trip (remoteLogSegmentMetadata), p50 and p99.
 *
 * <pre>
 *   scripts/plugin.sh bench [--bootstrap HOST:PORT] [--segments N] [--warmup-segments N]
 *                           [--lookups N] [--warmup N] [--rounds R] [--threads T] [--split]
 * </pre>
 *
 * The first --warmup-segments copies (300 by default) are not timed: they run while the JIT
 * compiles the call path, a cost a broker pays once in its life, not per segment.
 *
 * Without --bootstrap (or RLMM_KAFKA_BOOTSTRAP) the child runs over rlmm's embedded log. The
 * lookups go on the plugin's framed socket, the one transport. With T
 * threads the timed lookups of each round are split over T threads calling at once (as the
 * broker's remote-fetch threads do).
 *
 * <p>With --split the child also serves /metrics on a loopback port, and the timed add + finish
 * loop is reported with the child's own histograms of the same mutations ({@link SidecarMetrics}:
 * the manager's whole mutation, and its phases ready, encode, publish, fetch, apply, wake). What the
 * child does not see of the call is the JVM's and the socket's.
 */
public final class PluginBenchmark {
    private PluginBenchmark() {}

    /** Runs the benchmark; --help (or any unknown flag) prints its flags. */
    public static void main(String[] args) throws Exception {
        String bootstrap = System.getenv("RLMM_KAFKA_BOOTSTRAP");
        int segments = 500;
        int lookups = 200_000;
        int warmup = 50_000;
        List<String> paths = List.of("framed");
        int rounds = 10;
        int threads = 1;
        int warmupSegments = 300;
        boolean split = false;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--bootstrap" -> bootstrap = args[++i];
                case "--embedded" -> bootstrap = null;
                case "--segments" -> segments = Integer.parseInt(args[++i]);
                case "--lookups" -> lookups = Integer.parseInt(args[++i]);
                case "--warmup" -> warmup = Integer.parseInt(args[++i]);
                case "--warmup-segments" -> warmupSegments = Integer.parseInt(args[++i]);
                case "--rounds" -> rounds = Integer.parseInt(args[++i]);
                case "--threads" -> threads = Integer.parseInt(args[++i]);
                case "--split" -> split = true;
                default -> {
                    System.err.println("usage: PluginBenchmark [--bootstrap HOST:PORT | --embedded] [--segments N]"
                            + " [--warmup-segments N] [--lookups N] [--warmup N] [--rounds R]"
                            + " [--threads T] [--split]");
                    System.exit(2);
                }
            }
        }
        Path dir = Files.createTempDirectory("rlmm-plugin-bench");
        Map<String, Object> c = new HashMap<>(bootstrap == null || bootstrap.isEmpty()
                ? TestSupport.embeddedConfig(dir) : TestSupport.kafkaConfig(dir, bootstrap));
        String where = bootstrap == null || bootstrap.isEmpty() ? "embedded log" : "Kafka broker " + bootstrap;
        SidecarMetrics sidecar = split ? SidecarMetrics.onFreePort() : null;
        if (sidecar != null) {
            c.put("rlmm.serve.args", sidecar.listenFlag());
        }
        RlmmRemoteLogMetadataManager m = new RlmmRemoteLogMetadataManager();
        try {
            m.configure(c);
            TopicIdPartition tp = new TopicIdPartition(Uuid.randomUuid(), 0, "bench");
            m.onPartitionLeadershipChanges(Set.of(tp), Set.of());
            long readyBy = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
            while (!m.isReady(tp)) {
                if (System.nanoTime() > readyBy) {
                    throw new IllegalStateException("partition not ready within 120 s");
                }
                Thread.sleep(20);
            }

            // Add plus finish per segment, one segment at a time as the broker copies them.
            long[] copy = new long[segments];
            long[] adds = new long[segments];
            long size = 1000;
            String[] families = {"rlmm_mutation_duration_seconds", "rlmm_mutation_phase_seconds"};
            Map<String, SidecarMetrics.Histogram> before = null;
            for (int k = -warmupSegments; k < segments; k++) {
                if (k == 0 && sidecar != null) {
                    before = sidecar.read(families);
                }
                int i = k + warmupSegments; // the segment's place in the partition
                long start = i * size;
                RemoteLogSegmentMetadata s = new RemoteLogSegmentMetadata(new RemoteLogSegmentId(tp, Uuid.randomUuid()),
                        start, start + size - 1, System.currentTimeMillis(), 0, System.currentTimeMillis(), 1 << 20,
                        Optional.empty(), RemoteLogSegmentState.COPY_SEGMENT_STARTED, Map.of(0, start), true);
                RemoteLogSegmentMetadataUpdate f = new RemoteLogSegmentMetadataUpdate(s.remoteLogSegmentId(),
                        System.currentTimeMillis(), Optional.empty(), RemoteLogSegmentState.COPY_SEGMENT_FINISHED, 0);
                long t0 = System.nanoTime();
                m.addRemoteLogSegmentMetadata(s).get(60, TimeUnit.SECONDS);
                long addedAt = System.nanoTime();
                m.updateRemoteLogSegmentMetadata(f).get(60, TimeUnit.SECONDS);
                long finishedAt = System.nanoTime();
                if (k >= 0) {
                    adds[k] = addedAt - t0;
                    copy[k] = finishedAt - t0;
                }
            }
            Map<String, SidecarMetrics.Histogram> after = sidecar == null ? null : sidecar.read(families);
            System.out.printf(Locale.ROOT, "%d segments added and finished untimed first (JIT warm-up), then %d timed%n",
                    warmupSegments, segments);
            report("add+finish per segment (" + where + ")", copy, segments);
            report("  of which the add", adds, segments);
            if (split) {
                SidecarMetrics.report(before, after);
            }
            long[] ready = new long[20_000];
            for (int i = 0; i < ready.length; i++) {
                long t0 = System.nanoTime();
                m.isReady(tp);
                ready[i] = System.nanoTime() - t0;
            }
            report("isReady round trip (the smallest call)", ready, ready.length);

            // Lookups of random offsets, each must find its segment.
            for (String path : paths) {
                if (!path.equals("framed")) {
                    throw new IllegalArgumentException("--paths: " + path + " is not framed, the one path");
                }
            }
            if (paths.size() == 1) {
                rounds = 1;
            }
            long max = (long) (warmupSegments + segments) * size;
            for (String path : paths) {
                for (int i = 0; i < warmup; i++) {
                    lookup(m, tp, ThreadLocalRandom.current().nextLong(max));
                }
            }
            int perRound = lookups / rounds;
            Map<String, long[]> look = new HashMap<>();
            Map<String, long[]> cpu = new HashMap<>(); // wall, JVM CPU, child CPU
            for (String path : paths) {
                look.put(path, new long[perRound * rounds]);
                cpu.put(path, new long[3]);
            }
            Optional<ProcessHandle> child = ProcessHandle.of(TestSupport.childPid());
            java.util.concurrent.ExecutorService pool = threads > 1 ? java.util.concurrent.Executors.newFixedThreadPool(threads) : null;
            for (int r = 0; r < rounds; r++) {
                for (int k = 0; k < paths.size(); k++) {
                    String path = paths.get((k + r) % paths.size());
                    long[] times = look.get(path);
                    long childCpu0 = childCpu(child);
                    long jvmCpu0 = jvmCpu();
                    long t = System.nanoTime();
                    int base = r * perRound;
                    if (pool == null) {
                        timedLookups(m, tp, max, times, base, base + perRound);
                    } else {
                        List<java.util.concurrent.Future<?>> fs = new java.util.ArrayList<>();
                        int chunk = perRound / threads;
                        for (int w = 0; w < threads; w++) {
                            int from = base + w * chunk;
                            int to = w == threads - 1 ? base + perRound : from + chunk;
                            fs.add(pool.submit(() -> {
                                timedLookups(m, tp, max, times, from, to);
                                return null;
                            }));
                        }
                        for (java.util.concurrent.Future<?> f : fs) {
                            f.get();
                        }
                    }
                    long[] c3 = cpu.get(path);
                    c3[0] += System.nanoTime() - t;
                    c3[1] += jvmCpu() - jvmCpu0;
                    c3[2] += childCpu0 < 0 ? 0 : childCpu(child) - childCpu0;
                }
            }
            if (pool != null) {
                pool.shutdown();
            }
            for (String path : paths) {
                int n = perRound * rounds;
                long[] c3 = cpu.get(path);
                report("lookup round trip, " + path + " (" + where + (threads > 1 ? ", " + threads + " threads" : "")
                        + (rounds > 1 ? ", " + rounds + " rounds taking turns" : "") + ")", look.get(path), n);
                System.out.printf(Locale.ROOT, "  %s: lookups/s (" + threads + " thread(s)): %.0f; CPU per lookup:"
                        + " plugin JVM %.1f µs, rlmm serve %.1f µs%n", path, n / (c3[0] / 1e9), c3[1] / 1e3 / n,
                        child.isEmpty() ? -1 : c3[2] / 1e3 / n);
                if (rounds > 1) {
                    StringBuilder b = new StringBuilder("  " + path + ": p50 by round:");
                    for (int r = 0; r < rounds; r++) {
                        long[] part = Arrays.copyOfRange(look.get(path), r * perRound, (r + 1) * perRound);
                        Arrays.sort(part);
                        b.append(' ').append(fmt(part[perRound / 2]));
                    }
                    System.out.println(b);
                }
            }
        } finally {
            m.close();
            removeTree(dir); // the child's log and snapshot: a run leaves nothing behind in the temp directory
        }
    }

    /** Removes dir and everything under it (after close: the child has stopped). */
    private static void removeTree(Path dir) throws java.io.IOException {
        try (java.util.stream.Stream<Path> all = Files.walk(dir)) {
            for (Path p : (Iterable<Path>) all.sorted(java.util.Comparator.reverseOrder())::iterator) {
                Files.deleteIfExists(p);
            }
        }
    }

    /** CPU time of the child in nanoseconds, or -1. */
    private static long childCpu(Optional<ProcessHandle> child) {
        return child.flatMap(h -> h.info().totalCpuDuration()).map(d -> d.toNanos()).orElse(-1L);
    }

    /** CPU time of this JVM (every thread) in nanoseconds. */
    private static long jvmCpu() {
        java.lang.management.OperatingSystemMXBean os = java.lang.management.ManagementFactory.getOperatingSystemMXBean();
        if (os instanceof com.sun.management.OperatingSystemMXBean) {
            return ((com.sun.management.OperatingSystemMXBean) os).getProcessCpuTime();
        }
        return -1;
    }

    /** Times lookups of random offsets into times[from, to). */
    private static void timedLookups(RlmmRemoteLogMetadataManager m, TopicIdPartition tp, long max, long[] times, int from, int to)
            throws Exception {
        for (int i = from; i < to; i++) {
            long off = ThreadLocalRandom.current().nextLong(max);
            long t0 = System.nanoTime();
            lookup(m, tp, off);
            times[i] = System.nanoTime() - t0;
        }
    }

    private static void lookup(RlmmRemoteLogMetadataManager m, TopicIdPartition tp, long offset) throws Exception {
        if (m.remoteLogSegmentMetadata(tp, 0, offset).isEmpty()) {
            throw new IllegalStateException("lookup of offset " + offset + " found nothing");
        }
    }

    private static void report(String what, long[] nanos, int n) {
        long[] s = Arrays.copyOf(nanos, n);
        Arrays.sort(s);
        double mean = Arrays.stream(s).average().orElse(0);
        System.out.printf(Locale.ROOT, "%s: n=%d p50=%s p99=%s mean=%s max=%s%n", what, n,
                fmt(s[(int) (n * 0.50)]), fmt(s[Math.min(n - 1, (int) (n * 0.99))]), fmt((long) mean), fmt(s[n - 1]));
    }

    private static String fmt(long nanos) {
        if (nanos >= 1_000_000) {
            return String.format(Locale.ROOT, "%.2f ms", nanos / 1e6);
        }
        return String.format(Locale.ROOT, "%.1f µs", nanos / 1e3);
    }
}

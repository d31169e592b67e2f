package org.rlmm.interop;

import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.server.log.remote.metadata.storage.TopicBasedRemoteLogMetadataManager;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentId;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadata;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadataUpdate;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentState;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

/** bench-mutations: concurrent callers copying segments through Kafka's manager; latency and throughput. */
final class BenchMutationsCommand extends Command {
    BenchMutationsCommand(Map<String, String> opts) {
        super(opts);
    }

    static ObjectNode latencyJson(long[] nanos) {
        long[] s = nanos.clone();
        Arrays.sort(s);
        ObjectNode n = EventJson.MAPPER.createObjectNode();
        n.put("count", s.length);
        if (s.length == 0) {
            return n;
        }
        double sum = 0;
        for (long v : s) {
            sum += v;
        }
        n.put("p50", s[(int) Math.min(s.length - 1, Math.floor(0.50 * s.length))] / 1e3);
        n.put("p90", s[(int) Math.min(s.length - 1, Math.floor(0.90 * s.length))] / 1e3);
        n.put("p99", s[(int) Math.min(s.length - 1, Math.floor(0.99 * s.length))] / 1e3);
        n.put("max", s[s.length - 1] / 1e3);
        n.put("mean", sum / s.length / 1e3);
        return n;
    }

    @Override
    ObjectNode run() throws Exception {
        int callers = (int) num("callers", 1);
        int count = (int) num("count", 1000);
        int warmup = (int) num("warmup", 50);
        long warmupSeconds = num("warmup-seconds", 0);
        if (warmupSeconds < 0 || warmupSeconds > 3600) {
            throw new UsageException("--warmup-seconds must be between 0 and 3600, got " + warmupSeconds);
        }
        if (callers < 1 || count < callers) {
            throw new UsageException("want --callers >= 1 and --count >= --callers");
        }
        Uuid topicId = Uuid.randomUuid();
        String topic = "rlmm-bench-mutations";
        List<TopicIdPartition> tps = new ArrayList<>();
        for (int p = 0; p < callers; p++) {
            tps.add(new TopicIdPartition(topicId, p, topic));
        }
        ObjectNode out = result("bench-mutations");
        TopicBasedRemoteLogMetadataManager m = configure();
        try {
            m.onPartitionLeadershipChanges(new LinkedHashSet<>(tps), Set.of());
            awaitReady(m, new LinkedHashSet<>(tps), TimeUnit.MILLISECONDS.toNanos(5));
            int brokerId = Integer.parseInt(str("broker-id", "0"));
            // Warm-up on partition 0 (JIT, connections), not measured.
            long[] offsets = new long[callers];
            long[] scratch = new long[2];
            for (int i = 0; i < warmup; i++) {
                copySegment(m, tps.get(0), offsets, 0, brokerId, scratch);
            }
            // Then every caller copies, untimed, for --warmup-seconds: the same load as the timed
            // run, so that the broker and this JVM have compiled its code before anything is measured.
            if (warmupSeconds > 0) {
                long until = System.nanoTime() + (long) (warmupSeconds * 1e9);
                runCallers(callers, caller -> {
                    long[] lat = new long[2];
                    while (System.nanoTime() < until) {
                        copySegment(m, tps.get(caller), offsets, caller, brokerId, lat);
                    }
                });
            }
            int perCaller = count / callers;
            long[][] addLat = new long[callers][perCaller];
            long[][] updLat = new long[callers][perCaller];
            long t0 = System.nanoTime();
            runCallers(callers, caller -> {
                long[] lat = new long[2];
                for (int i = 0; i < perCaller; i++) {
                    copySegment(m, tps.get(caller), offsets, caller, brokerId, lat);
                    addLat[caller][i] = lat[0];
                    updLat[caller][i] = lat[1];
                }
            });
            long elapsed = System.nanoTime() - t0;
            long[] adds = Arrays.stream(addLat).flatMapToLong(Arrays::stream).toArray();
            long[] upds = Arrays.stream(updLat).flatMapToLong(Arrays::stream).toArray();
            long[] all = new long[adds.length + upds.length];
            System.arraycopy(adds, 0, all, 0, adds.length);
            System.arraycopy(upds, 0, all, adds.length, upds.length);
            out.put("callers", callers);
            out.put("warmupSeconds", warmupSeconds);
            out.put("segments", (long) perCaller * callers);
            out.put("mutations", all.length);
            out.put("elapsedMs", elapsed / 1e6);
            out.put("mutationsPerSec", all.length / (elapsed / 1e9));
            out.set("latencyUs", latencyJson(all));
            out.set("addLatencyUs", latencyJson(adds));
            out.set("updateLatencyUs", latencyJson(upds));
        } finally {
            closeQuietly(m);
        }
        return out;
    }

    /** One caller's work, given its index. */
    private interface CallerWork {
        void run(int caller) throws Exception;
    }

    /** Runs work on callers threads at once and waits for them; the first failure is thrown. */
    private static void runCallers(int callers, CallerWork work) throws InterruptedException {
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Thread[] threads = new Thread[callers];
        for (int c = 0; c < callers; c++) {
            final int caller = c;
            threads[c] = new Thread(() -> {
                try {
                    work.run(caller);
                } catch (Throwable t) {
                    failure.compareAndSet(null, t);
                }
            }, "bench-caller-" + c);
            threads[c].start();
        }
        for (Thread t : threads) {
            t.join();
        }
        if (failure.get() != null) {
            throw new IllegalStateException("a caller failed: " + failure.get(), failure.get());
        }
    }

    /** One copied segment as a broker records it: add (STARTED), then update to FINISHED; lat gets both latencies. */
    private void copySegment(TopicBasedRemoteLogMetadataManager m, TopicIdPartition tp, long[] offsets, int slot, int brokerId,
                             long[] lat) throws Exception {
        long start = offsets[slot];
        offsets[slot] = start + 100;
        RemoteLogSegmentId id = new RemoteLogSegmentId(tp, Uuid.randomUuid());
        long now = System.currentTimeMillis();
        RemoteLogSegmentMetadata md = new RemoteLogSegmentMetadata(id, start, start + 99, now, brokerId, now, 1 << 20,
                Optional.empty(), RemoteLogSegmentState.COPY_SEGMENT_STARTED, Map.of(0, start));
        long t0 = System.nanoTime();
        m.addRemoteLogSegmentMetadata(md).get(timeoutMs(), TimeUnit.MILLISECONDS);
        long t1 = System.nanoTime();
        m.updateRemoteLogSegmentMetadata(new RemoteLogSegmentMetadataUpdate(id, System.currentTimeMillis(), Optional.empty(),
                RemoteLogSegmentState.COPY_SEGMENT_FINISHED, brokerId)).get(timeoutMs(), TimeUnit.MILLISECONDS);
        long t2 = System.nanoTime();
        lat[0] = t1 - t0;
        lat[1] = t2 - t1;
    }
}

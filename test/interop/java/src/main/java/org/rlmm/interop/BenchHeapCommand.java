package org.rlmm.interop;

import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.server.log.remote.metadata.storage.RemoteLogMetadataCache;
import org.apache.kafka.server.log.remote.metadata.storage.RlmmInteropAccess;

import java.lang.management.ManagementFactory;
import java.lang.management.MemoryMXBean;
import java.util.HashMap;
import java.util.Map;
import java.util.Random;

/** bench-heap: heap bytes per segment of Kafka's RemoteLogMetadataCache. */
final class BenchHeapCommand extends Command {
    BenchHeapCommand(Map<String, String> opts) {
        super(opts);
    }

    private static long usedHeapAfterGc() throws InterruptedException {
        MemoryMXBean mem = ManagementFactory.getMemoryMXBean();
        long used = Long.MAX_VALUE;
        for (int i = 0; i < 4; i++) {
            System.gc();
            Thread.sleep(100);
            used = Math.min(used, mem.getHeapMemoryUsage().getUsed());
        }
        return used;
    }

    @Override
    ObjectNode run() throws Exception {
        int segments = (int) num("segments", 1_000_000);
        int partitions = (int) num("partitions", 100);
        if (partitions < 1 || segments < partitions) {
            throw new UsageException("want --partitions >= 1 and --segments >= --partitions");
        }
        Random rnd = new Random(3);
        // The baseline is taken before any segment exists: ids, metadata objects and Kafka's epoch indexes all count.
        long before = usedHeapAfterGc();
        long t0 = System.nanoTime();
        Map<TopicIdPartition, RemoteLogMetadataCache> caches = new HashMap<>();
        Uuid topicId = new Uuid(21, 22);
        for (int p = 0; p < partitions; p++) {
            TopicIdPartition tp = new TopicIdPartition(topicId, p, "rlmm-bench-heap");
            RemoteLogMetadataCache cache = RlmmInteropAccess.newCache();
            caches.put(tp, cache);
            int n = segments / partitions + (p < segments % partitions ? 1 : 0);
            for (int i = 0; i < n; i++) {
                BenchLookupCommand.addFinished(cache, tp, new Uuid(rnd.nextLong(), rnd.nextLong()), i * 100L);
            }
        }
        long populateNs = System.nanoTime() - t0;
        long after = usedHeapAfterGc();
        ObjectNode out = result("bench-heap");
        out.put("segments", segments);
        out.put("partitions", partitions);
        out.put("heapBeforeBytes", before);
        out.put("heapAfterBytes", after);
        out.put("bytesPerSegment", (after - before) / (double) segments);
        out.put("populateMs", populateNs / 1e6);
        out.put("maxHeapBytes", Runtime.getRuntime().maxMemory());
        out.put("gc", String.join(",", ManagementFactory.getGarbageCollectorMXBeans().stream()
                .map(java.lang.management.GarbageCollectorMXBean::getName).toList()));
        out.put("jvmArgs", String.join(" ", ManagementFactory.getRuntimeMXBean().getInputArguments()));
        // Keep the caches reachable until after the measurement.
        out.put("cachesRetained", caches.size());
        java.lang.ref.Reference.reachabilityFence(caches);
        return out;
    }
}

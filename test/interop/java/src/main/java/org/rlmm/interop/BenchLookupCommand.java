package org.rlmm.interop;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.server.log.remote.metadata.storage.RemoteLogMetadataCache;
import org.apache.kafka.server.log.remote.metadata.storage.RlmmInteropAccess;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentId;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadata;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadataUpdate;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentState;

import java.util.Arrays;
import java.util.Map;
import java.util.Optional;
import java.util.Random;

/** bench-lookup: Kafka's RemoteLogMetadataCache lookups per second. */
final class BenchLookupCommand extends Command {
    BenchLookupCommand(Map<String, String> opts) {
        super(opts);
    }

    /** Adds a finished single-epoch segment [start, start+99] to a cache the way Kafka's consumer applies events. */
    static void addFinished(RemoteLogMetadataCache cache, TopicIdPartition tp, Uuid id, long start) throws Exception {
        RemoteLogSegmentId sid = new RemoteLogSegmentId(tp, id);
        RlmmInteropAccess.addCopyInProgress(cache, new RemoteLogSegmentMetadata(sid, start, start + 99, 1_700_000_000_000L + start,
                1, 1_700_000_000_000L, 1 << 20, Optional.empty(), RemoteLogSegmentState.COPY_SEGMENT_STARTED, Map.of(0, start)));
        RlmmInteropAccess.update(cache, new RemoteLogSegmentMetadataUpdate(sid, 1_700_000_000_001L, Optional.empty(),
                RemoteLogSegmentState.COPY_SEGMENT_FINISHED, 1));
    }

    @Override
    ObjectNode run() throws Exception {
        int segments = (int) num("segments", 10_000);
        int rounds = (int) num("rounds", 10);
        long ops = num("ops", 5_000_000);
        TopicIdPartition tp = new TopicIdPartition(new Uuid(11, 12), 0, "rlmm-bench-lookup");
        RemoteLogMetadataCache cache = RlmmInteropAccess.newCache();
        Random rnd = new Random(1);
        for (int i = 0; i < segments; i++) {
            addFinished(cache, tp, new Uuid(rnd.nextLong(), rnd.nextLong()), i * 100L);
        }
        long[] targets = new long[1 << 16];
        for (int i = 0; i < targets.length; i++) {
            targets[i] = (long) (rnd.nextDouble() * segments * 100L);
        }
        long checksum = 0;
        // Warm-up: let the JIT compile the lookup path before timing.
        for (int r = 0; r < 3; r++) {
            checksum += lookupLoop(cache, targets, ops);
        }
        double[] nsPerOp = new double[rounds];
        for (int r = 0; r < rounds; r++) {
            long t0 = System.nanoTime();
            checksum += lookupLoop(cache, targets, ops);
            nsPerOp[r] = (System.nanoTime() - t0) / (double) ops;
        }
        double[] sorted = nsPerOp.clone();
        Arrays.sort(sorted);
        ObjectNode out = result("bench-lookup");
        out.put("segments", segments);
        out.put("rounds", rounds);
        out.put("opsPerRound", ops);
        ObjectNode ns = out.putObject("nsPerOp");
        ns.put("median", sorted[rounds / 2]);
        ns.put("min", sorted[0]);
        ns.put("max", sorted[rounds - 1]);
        ArrayNode all = out.putArray("roundsNsPerOp");
        for (double v : nsPerOp) {
            all.add(v);
        }
        out.put("checksum", checksum);
        return out;
    }

    private static long lookupLoop(RemoteLogMetadataCache cache, long[] targets, long ops) {
        long sum = 0;
        int mask = targets.length - 1;
        for (long i = 0; i < ops; i++) {
            Optional<RemoteLogSegmentMetadata> r = RlmmInteropAccess.lookup(cache, 0, targets[(int) (i & mask)]);
            if (r.isPresent()) {
                sum += r.get().endOffset();
            } else {
                sum--;
            }
        }
        return sum;
    }
}

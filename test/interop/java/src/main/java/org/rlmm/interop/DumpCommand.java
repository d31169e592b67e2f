package org.rlmm.interop;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.server.log.remote.metadata.storage.TopicBasedRemoteLogMetadataManager;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadata;
import org.apache.kafka.server.log.remote.storage.RemoteResourceNotFoundException;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;

/** dump: a fresh Kafka manager replays the metadata topic; prints the state of the given partitions. */
final class DumpCommand extends Command {
    DumpCommand(Map<String, String> opts) {
        super(opts);
    }

    @Override
    ObjectNode run() throws Exception {
        Set<TopicIdPartition> tps = new LinkedHashSet<>();
        for (String s : str("partitions").split(",")) {
            if (!s.isBlank()) {
                tps.add(parseTp(s.trim()));
            }
        }
        if (tps.isEmpty()) {
            throw new UsageException("--partitions is empty");
        }
        ObjectNode out = result("dump");
        TopicBasedRemoteLogMetadataManager m = configure();
        try {
            // A follower assignment: the manager consumes the metadata partitions but this driver writes nothing.
            m.onPartitionLeadershipChanges(Set.of(), tps);
            awaitReady(m, tps, TimeUnit.MILLISECONDS.toNanos(5));
            out.set("partitions", dumpPartitions(m, tps));
        } finally {
            closeQuietly(m);
        }
        return out;
    }

    /** The manager's view of each partition: its listed segments (sorted) and highest offset per epoch. */
    static ArrayNode dumpPartitions(TopicBasedRemoteLogMetadataManager m, Iterable<TopicIdPartition> tps) throws Exception {
        ArrayNode parts = EventJson.MAPPER.createArrayNode();
        for (TopicIdPartition tp : tps) {
            ObjectNode p = parts.addObject();
            p.set("topicIdPartition", EventJson.topicIdPartition(tp));
            List<RemoteLogSegmentMetadata> segs = new ArrayList<>();
            try {
                Iterator<RemoteLogSegmentMetadata> it = m.listRemoteLogSegments(tp);
                it.forEachRemaining(segs::add);
                p.put("found", true);
            } catch (RemoteResourceNotFoundException e) {
                // Kafka knows nothing of the partition (never written, or its delete finished).
                p.put("found", false);
            }
            segs.sort(EventJson.SEGMENT_ORDER);
            ArrayNode sa = p.putArray("segments");
            TreeSet<Integer> epochs = new TreeSet<>();
            for (RemoteLogSegmentMetadata seg : segs) {
                sa.add(EventJson.toJson(seg));
                epochs.addAll(seg.segmentLeaderEpochs().keySet());
            }
            ArrayNode ha = p.putArray("highestOffsetForEpoch");
            for (int epoch : epochs) {
                ObjectNode h = ha.addObject();
                h.put("epoch", epoch);
                Optional<Long> off = m.highestOffsetForEpoch(tp, epoch);
                if (off.isPresent()) {
                    h.put("offset", off.get());
                } else {
                    h.putNull("offset");
                }
            }
        }
        return parts;
    }
}

package org.rlmm.interop;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.server.log.remote.metadata.storage.TopicBasedRemoteLogMetadataManager;
import org.apache.kafka.server.log.remote.storage.RemoteLogMetadata;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;

/** workload: applies a JSON spec of events through Kafka's manager and reports each verdict. */
final class WorkloadCommand extends Command {
    WorkloadCommand(Map<String, String> opts) {
        super(opts);
    }

    @Override
    ObjectNode run() throws Exception {
        Uuid topicId = Uuid.fromString(str("topic-id"));
        String topic = str("topic");
        int n = (int) num("partitions", 1);
        JsonNode spec = EventJson.MAPPER.readTree(Path.of(str("spec")).toFile());
        if (spec.isObject() && spec.has("events")) {
            spec = spec.get("events");
        }
        if (!spec.isArray()) {
            throw new UsageException("--spec must hold a JSON array of events");
        }
        List<RemoteLogMetadata> events = new ArrayList<>();
        for (JsonNode e : spec) {
            events.add(EventJson.fromJson(e));
        }
        Set<TopicIdPartition> leaders = new LinkedHashSet<>();
        for (int p = 0; p < n; p++) {
            leaders.add(new TopicIdPartition(topicId, p, topic));
        }
        for (RemoteLogMetadata e : events) {
            leaders.add(e.topicIdPartition());
        }
        ObjectNode out = result("workload");
        TopicBasedRemoteLogMetadataManager m = configure();
        try {
            m.onPartitionLeadershipChanges(leaders, Set.of());
            awaitReady(m, leaders, TimeUnit.MILLISECONDS.toNanos(5));
            long t0 = System.nanoTime();
            ArrayNode errors = out.putArray("errors");
            int applied = 0;
            for (int i = 0; i < events.size(); i++) {
                RemoteLogMetadata e = events.get(i);
                try {
                    apply(m, e);
                    applied++;
                } catch (Exception ex) {
                    ObjectNode err = errors.addObject();
                    err.put("index", i);
                    err.put("type", e.getClass().getSimpleName());
                    err.put("error", String.valueOf(ex));
                }
            }
            out.put("events", events.size());
            out.put("applied", applied);
            out.put("elapsedMs", (System.nanoTime() - t0) / 1e6);
            if (!errors.isEmpty()) {
                out.put("error", errors.size() + " event(s) failed");
            }
        } finally {
            closeQuietly(m);
        }
        return out;
    }
}

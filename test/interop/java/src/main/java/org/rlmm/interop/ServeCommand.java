package org.rlmm.interop;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.server.log.remote.metadata.storage.TopicBasedRemoteLogMetadataManager;
import org.apache.kafka.server.log.remote.storage.RemoteLogMetadata;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadata;

import java.util.LinkedHashSet;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.TimeUnit;

/** serve: a long-lived Kafka manager driven by JSON-line requests on stdin, one JSON response line each. */
final class ServeCommand extends Command {
    ServeCommand(Map<String, String> opts) {
        super(opts);
    }

    /** Parses a partition given as {"topicId","topic","partition"} or as "topicId:topic-partition". */
    static TopicIdPartition tpOf(JsonNode n) {
        return n.isTextual() ? parseTp(n.asText()) : EventJson.parseTopicIdPartition(n);
    }

    static Set<TopicIdPartition> tpsOf(JsonNode req, String field) {
        Set<TopicIdPartition> out = new LinkedHashSet<>();
        JsonNode a = req.path(field);
        if (!a.isMissingNode() && !a.isArray()) {
            throw new IllegalArgumentException(field + " is not an array");
        }
        for (JsonNode n : a) {
            out.add(tpOf(n));
        }
        return out;
    }

    @Override
    ObjectNode run() throws Exception {
        TopicBasedRemoteLogMetadataManager m = configure();
        java.io.BufferedReader in = new java.io.BufferedReader(
                new java.io.InputStreamReader(System.in, java.nio.charset.StandardCharsets.UTF_8));
        ObjectNode hello = result("serve");
        hello.put("ok", true);
        hello.put("op", "started");
        System.out.println(EventJson.MAPPER.writeValueAsString(hello));
        System.out.flush();
        int requests = 0;
        try {
            String line;
            while ((line = in.readLine()) != null) {
                if (line.isBlank()) {
                    continue;
                }
                requests++;
                ObjectNode resp = EventJson.MAPPER.createObjectNode();
                String op = "?";
                boolean close = false;
                try {
                    JsonNode req = EventJson.MAPPER.readTree(line);
                    op = req.path("op").asText("?");
                    resp.put("op", op);
                    switch (op) {
                        case "leadership" -> m.onPartitionLeadershipChanges(tpsOf(req, "leaders"), tpsOf(req, "followers"));
                        case "stopPartitions" -> m.onStopPartitions(tpsOf(req, "partitions"));
                        case "awaitReady" -> awaitReady(m, tpsOf(req, "partitions"), TimeUnit.MILLISECONDS.toNanos(2));
                        case "isReady" -> {
                            ArrayNode r = resp.putArray("ready");
                            for (TopicIdPartition tp : tpsOf(req, "partitions")) {
                                r.add(m.isReady(tp));
                            }
                        }
                        case "apply" -> {
                            RemoteLogMetadata e = EventJson.fromJson(req.path("event"));
                            apply(m, e);
                        }
                        case "dump" -> resp.set("partitions", DumpCommand.dumpPartitions(m, tpsOf(req, "partitions")));
                        case "lookup" -> {
                            Optional<RemoteLogSegmentMetadata> r = m.remoteLogSegmentMetadata(tpOf(req.path("topicIdPartition")),
                                    req.path("epoch").asInt(), req.path("offset").asLong());
                            if (r.isPresent()) {
                                resp.set("segment", EventJson.toJson(r.get()));
                            } else {
                                resp.putNull("segment");
                            }
                        }
                        case "close" -> close = true;
                        default -> throw new IllegalArgumentException("unknown op " + op);
                    }
                    resp.put("ok", true);
                } catch (Exception e) {
                    resp.put("op", op);
                    resp.put("ok", false);
                    resp.put("error", String.valueOf(e instanceof java.util.concurrent.ExecutionException && e.getCause() != null
                            ? e.getCause() : e));
                }
                System.out.println(EventJson.MAPPER.writeValueAsString(resp));
                System.out.flush();
                if (close) {
                    break;
                }
            }
        } finally {
            closeQuietly(m);
        }
        ObjectNode out = result("serve");
        out.put("op", "closed");
        out.put("ok", true);
        out.put("requests", requests);
        return out;
    }
}

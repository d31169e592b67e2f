package org.rlmm.interop;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.server.log.remote.metadata.storage.RemoteLogSegmentMetadataSnapshot;
import org.apache.kafka.server.log.remote.storage.RemoteLogMetadata;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentId;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadata;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadata.CustomMetadata;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadataUpdate;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentState;
import org.apache.kafka.server.log.remote.storage.RemotePartitionDeleteMetadata;
import org.apache.kafka.server.log.remote.storage.RemotePartitionDeleteState;

import java.util.Base64;
import java.util.Comparator;
import java.util.Map;
import java.util.NavigableMap;
import java.util.Optional;
import java.util.TreeMap;

/**
 * The event JSON of /work/vectors-schema.md (rlmm's `decode --json` form, Kafka's field names), in both
 * directions: Kafka model object to JSON (vectors, dumps) and JSON to Kafka model object (workload specs).
 * Every field is always written, in the schema's order, so Go and Java outputs compare as text too.
 */
public final class EventJson {
    /** Shared mapper; Jackson writes int64 values exactly. */
    public static final ObjectMapper MAPPER = new ObjectMapper();
    private static final JsonNodeFactory F = JsonNodeFactory.instance;

    private EventJson() {
    }

    /** Orders segments as rlmm's ListSegments does: start offset, end offset, then segment id bytes. */
    public static final Comparator<RemoteLogSegmentMetadata> SEGMENT_ORDER =
            Comparator.comparingLong(RemoteLogSegmentMetadata::startOffset)
                    .thenComparingLong(RemoteLogSegmentMetadata::endOffset)
                    .thenComparing(m -> m.remoteLogSegmentId().id(), EventJson::compareUuidBytes);

    /** Compares two Uuids as their 16 big-endian bytes (unsigned), the order of Go's [16]byte compare. */
    public static int compareUuidBytes(Uuid a, Uuid b) {
        int c = Long.compareUnsigned(a.getMostSignificantBits(), b.getMostSignificantBits());
        return c != 0 ? c : Long.compareUnsigned(a.getLeastSignificantBits(), b.getLeastSignificantBits());
    }

    /** Converts any of the four Kafka metadata events to its event JSON. */
    public static ObjectNode toJson(RemoteLogMetadata md) {
        if (md instanceof RemoteLogSegmentMetadata m) {
            return segment(m);
        } else if (md instanceof RemoteLogSegmentMetadataUpdate u) {
            return update(u);
        } else if (md instanceof RemotePartitionDeleteMetadata d) {
            return partitionDelete(d);
        } else if (md instanceof RemoteLogSegmentMetadataSnapshot s) {
            return snapshot(s);
        }
        throw new IllegalArgumentException("unknown metadata type " + md.getClass().getName());
    }

    /** The api key Kafka's serde uses for the event's type. */
    public static int apiKey(RemoteLogMetadata md) {
        if (md instanceof RemoteLogSegmentMetadata) {
            return 0;
        } else if (md instanceof RemoteLogSegmentMetadataUpdate) {
            return 1;
        } else if (md instanceof RemotePartitionDeleteMetadata) {
            return 2;
        } else if (md instanceof RemoteLogSegmentMetadataSnapshot) {
            return 3;
        }
        throw new IllegalArgumentException("unknown metadata type " + md.getClass().getName());
    }

    static ObjectNode topicIdPartition(TopicIdPartition tp) {
        ObjectNode n = F.objectNode();
        n.put("topicId", tp.topicId().toString());
        n.put("topic", tp.topic());
        n.put("partition", tp.partition());
        return n;
    }

    static ObjectNode segmentId(RemoteLogSegmentId id) {
        ObjectNode n = F.objectNode();
        n.set("topicIdPartition", topicIdPartition(id.topicIdPartition()));
        n.put("id", id.id().toString());
        return n;
    }

    static ArrayNode epochs(NavigableMap<Integer, Long> epochs) {
        ArrayNode a = F.arrayNode();
        for (Map.Entry<Integer, Long> e : epochs.entrySet()) {
            ObjectNode n = F.objectNode();
            n.put("epoch", e.getKey());
            n.put("startOffset", e.getValue());
            a.add(n);
        }
        return a;
    }

    static void putCustom(ObjectNode n, Optional<CustomMetadata> cm) {
        if (cm.isPresent()) {
            n.put("customMetadata", Base64.getEncoder().encodeToString(cm.get().value()));
        } else {
            n.putNull("customMetadata");
        }
    }

    static ObjectNode segment(RemoteLogSegmentMetadata m) {
        ObjectNode n = F.objectNode();
        n.put("type", "RemoteLogSegmentMetadata");
        n.set("remoteLogSegmentId", segmentId(m.remoteLogSegmentId()));
        n.put("startOffset", m.startOffset());
        n.put("endOffset", m.endOffset());
        n.put("brokerId", m.brokerId());
        n.put("maxTimestampMs", m.maxTimestampMs());
        n.put("eventTimestampMs", m.eventTimestampMs());
        n.set("segmentLeaderEpochs", epochs(m.segmentLeaderEpochs()));
        n.put("segmentSizeInBytes", m.segmentSizeInBytes());
        putCustom(n, m.customMetadata());
        n.put("state", m.state().name());
        n.put("txnIdxEmpty", m.isTxnIdxEmpty());
        return n;
    }

    static ObjectNode update(RemoteLogSegmentMetadataUpdate u) {
        ObjectNode n = F.objectNode();
        n.put("type", "RemoteLogSegmentMetadataUpdate");
        n.set("remoteLogSegmentId", segmentId(u.remoteLogSegmentId()));
        putCustom(n, u.customMetadata());
        n.put("state", u.state().name());
        n.put("eventTimestampMs", u.eventTimestampMs());
        n.put("brokerId", u.brokerId());
        return n;
    }

    static ObjectNode partitionDelete(RemotePartitionDeleteMetadata d) {
        ObjectNode n = F.objectNode();
        n.put("type", "RemotePartitionDeleteMetadata");
        n.set("topicIdPartition", topicIdPartition(d.topicIdPartition()));
        n.put("state", d.state().name());
        n.put("eventTimestampMs", d.eventTimestampMs());
        n.put("brokerId", d.brokerId());
        return n;
    }

    static ObjectNode snapshot(RemoteLogSegmentMetadataSnapshot s) {
        ObjectNode n = F.objectNode();
        n.put("type", "RemoteLogSegmentMetadataSnapshot");
        n.put("segmentId", s.segmentId().toString());
        n.put("startOffset", s.startOffset());
        n.put("endOffset", s.endOffset());
        n.put("brokerId", s.brokerId());
        n.put("maxTimestampMs", s.maxTimestampMs());
        n.put("eventTimestampMs", s.eventTimestampMs());
        n.set("segmentLeaderEpochs", epochs(s.segmentLeaderEpochs()));
        n.put("segmentSizeInBytes", s.segmentSizeInBytes());
        putCustom(n, s.customMetadata());
        n.put("state", s.state().name());
        n.put("txnIdxEmpty", s.isTxnIdxEmpty());
        return n;
    }

    // ---- JSON to Kafka model (workload specs) ----

    /** Builds the Kafka model object an event JSON describes; a missing or ill-typed field is an error. */
    public static RemoteLogMetadata fromJson(JsonNode n) {
        String type = text(n, "type");
        switch (type) {
            case "RemoteLogSegmentMetadata":
                return new RemoteLogSegmentMetadata(
                        parseSegmentId(field(n, "remoteLogSegmentId")),
                        longOf(n, "startOffset"), longOf(n, "endOffset"), longOf(n, "maxTimestampMs"),
                        intOf(n, "brokerId"), longOf(n, "eventTimestampMs"), intOf(n, "segmentSizeInBytes"),
                        parseCustom(n), RemoteLogSegmentState.valueOf(text(n, "state")),
                        parseEpochs(field(n, "segmentLeaderEpochs")), n.path("txnIdxEmpty").asBoolean(false));
            case "RemoteLogSegmentMetadataUpdate":
                return new RemoteLogSegmentMetadataUpdate(
                        parseSegmentId(field(n, "remoteLogSegmentId")), longOf(n, "eventTimestampMs"),
                        parseCustom(n), RemoteLogSegmentState.valueOf(text(n, "state")), intOf(n, "brokerId"));
            case "RemotePartitionDeleteMetadata":
                return new RemotePartitionDeleteMetadata(
                        parseTopicIdPartition(field(n, "topicIdPartition")),
                        RemotePartitionDeleteState.valueOf(text(n, "state")),
                        longOf(n, "eventTimestampMs"), intOf(n, "brokerId"));
            default:
                throw new IllegalArgumentException("event type " + type + " cannot be applied (want RemoteLogSegmentMetadata, "
                        + "RemoteLogSegmentMetadataUpdate or RemotePartitionDeleteMetadata)");
        }
    }

    /** Parses {"topicId","topic","partition"}. */
    public static TopicIdPartition parseTopicIdPartition(JsonNode n) {
        return new TopicIdPartition(Uuid.fromString(text(n, "topicId")), intOf(n, "partition"), text(n, "topic"));
    }

    static RemoteLogSegmentId parseSegmentId(JsonNode n) {
        return new RemoteLogSegmentId(parseTopicIdPartition(field(n, "topicIdPartition")), Uuid.fromString(text(n, "id")));
    }

    static Map<Integer, Long> parseEpochs(JsonNode a) {
        if (!a.isArray()) {
            throw new IllegalArgumentException("segmentLeaderEpochs is not an array");
        }
        Map<Integer, Long> m = new TreeMap<>();
        for (JsonNode e : a) {
            m.put(intOf(e, "epoch"), longOf(e, "startOffset"));
        }
        return m;
    }

    static Optional<CustomMetadata> parseCustom(JsonNode n) {
        JsonNode c = field(n, "customMetadata");
        if (c.isNull()) {
            return Optional.empty();
        }
        return Optional.of(new CustomMetadata(Base64.getDecoder().decode(c.asText())));
    }

    private static JsonNode field(JsonNode n, String name) {
        JsonNode v = n.get(name);
        if (v == null) {
            throw new IllegalArgumentException("missing field " + name + " in " + n);
        }
        return v;
    }

    private static String text(JsonNode n, String name) {
        JsonNode v = field(n, name);
        if (!v.isTextual()) {
            throw new IllegalArgumentException("field " + name + " is not a string in " + n);
        }
        return v.asText();
    }

    private static long longOf(JsonNode n, String name) {
        JsonNode v = field(n, name);
        if (!v.canConvertToLong() || !v.isIntegralNumber()) {
            throw new IllegalArgumentException("field " + name + " is not an int64 in " + n);
        }
        return v.asLong();
    }

    private static int intOf(JsonNode n, String name) {
        JsonNode v = field(n, name);
        if (!v.canConvertToInt() || !v.isIntegralNumber()) {
            throw new IllegalArgumentException("field " + name + " is not an int32 in " + n);
        }
        return v.asInt();
    }
}

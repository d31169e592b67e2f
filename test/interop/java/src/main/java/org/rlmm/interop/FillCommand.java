package org.rlmm.interop;

import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.server.log.remote.metadata.storage.RemoteLogMetadataTopicPartitioner;
import org.apache.kafka.server.log.remote.metadata.storage.serialization.RemoteLogMetadataSerde;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentId;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadata;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadataUpdate;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentState;

import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.atomic.AtomicReference;

/** fill: writes N events of finished segments straight to the metadata topic with a producer. */
final class FillCommand extends Command {
    FillCommand(Map<String, String> opts) {
        super(opts);
    }

    @Override
    ObjectNode run() throws Exception {
        long events = num("events", 100_000);
        Uuid topicId = opts.containsKey("topic-id") ? Uuid.fromString(str("topic-id")) : Uuid.randomUuid();
        String topic = str("topic", "rlmm-coldstart");
        int userPartitions = (int) num("user-partitions", 50);
        return doFill(events, topicId, topic, userPartitions);
    }

    ObjectNode doFill(long events, Uuid topicId, String topic, int userPartitions) throws Exception {
        try (Admin admin = Admin.create(clientProps())) {
            ensureMetadataTopic(admin);
        }
        Map<String, Object> pp = clientProps();
        pp.put(ProducerConfig.ACKS_CONFIG, "all");
        // Not idempotent: right after topic creation 4.4.0 answered NOT_LEADER_OR_FOLLOWER and the idempotent
        // producer then looped on OUT_OF_ORDER_SEQUENCE_NUMBER for good. One request in flight keeps order.
        pp.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "false");
        pp.put(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, "1");
        pp.put(ProducerConfig.LINGER_MS_CONFIG, "10");
        pp.put(ProducerConfig.BATCH_SIZE_CONFIG, String.valueOf(512 * 1024));
        pp.put(ProducerConfig.BUFFER_MEMORY_CONFIG, String.valueOf(256L * 1024 * 1024));
        RemoteLogMetadataSerde serde = new RemoteLogMetadataSerde();
        RemoteLogMetadataTopicPartitioner partitioner = new RemoteLogMetadataTopicPartitioner(metadataPartitions());
        TopicIdPartition[] tps = new TopicIdPartition[userPartitions];
        int[] mp = new int[userPartitions];
        long[] next = new long[userPartitions];
        for (int p = 0; p < userPartitions; p++) {
            tps[p] = new TopicIdPartition(topicId, p, topic);
            mp[p] = partitioner.metadataPartition(tps[p]);
        }
        int brokerId = Integer.parseInt(str("broker-id", "0"));
        AtomicReference<Exception> sendError = new AtomicReference<>();
        long t0 = System.nanoTime();
        long segments = 0;
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(pp, new ByteArraySerializer(), new ByteArraySerializer())) {
            long written = 0;
            Random rnd = new Random(7);
            while (written < events) {
                int p = (int) (segments % userPartitions);
                long start = next[p];
                next[p] = start + 100;
                RemoteLogSegmentId id = new RemoteLogSegmentId(tps[p], new Uuid(rnd.nextLong(), rnd.nextLong()));
                long now = System.currentTimeMillis();
                RemoteLogSegmentMetadata md = new RemoteLogSegmentMetadata(id, start, start + 99, now, brokerId, now, 1 << 20,
                        Optional.empty(), RemoteLogSegmentState.COPY_SEGMENT_STARTED, Map.of(0, start));
                producer.send(new ProducerRecord<>(METADATA_TOPIC, mp[p], null, serde.serialize(md)), (r, e) -> {
                    if (e != null) {
                        sendError.compareAndSet(null, e);
                    }
                });
                written++;
                segments++;
                if (written < events) {
                    RemoteLogSegmentMetadataUpdate u = new RemoteLogSegmentMetadataUpdate(id, now, Optional.empty(),
                            RemoteLogSegmentState.COPY_SEGMENT_FINISHED, brokerId);
                    producer.send(new ProducerRecord<>(METADATA_TOPIC, mp[p], null, serde.serialize(u)), (r, e) -> {
                        if (e != null) {
                            sendError.compareAndSet(null, e);
                        }
                    });
                    written++;
                }
                if (sendError.get() != null) {
                    throw sendError.get();
                }
            }
            producer.flush();
        }
        if (sendError.get() != null) {
            throw sendError.get();
        }
        long elapsed = System.nanoTime() - t0;
        ObjectNode out = result("fill");
        out.put("topicId", topicId.toString());
        out.put("topic", topic);
        out.put("userPartitions", userPartitions);
        out.put("events", events);
        out.put("segments", segments);
        out.put("elapsedMs", elapsed / 1e6);
        out.put("eventsPerSec", events / (elapsed / 1e9));
        return out;
    }
}

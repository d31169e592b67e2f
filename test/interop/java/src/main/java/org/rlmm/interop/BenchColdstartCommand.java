package org.rlmm.interop;

import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.server.log.remote.metadata.storage.RemoteLogMetadataTopicPartitioner;
import org.apache.kafka.server.log.remote.metadata.storage.RlmmInteropAccess;
import org.apache.kafka.server.log.remote.metadata.storage.TopicBasedRemoteLogMetadataManager;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadata;

import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;

/** bench-coldstart: time for a fresh Kafka manager to be ready over a filled metadata topic. */
final class BenchColdstartCommand extends Command {
    BenchColdstartCommand(Map<String, String> opts) {
        super(opts);
    }

    @Override
    ObjectNode run() throws Exception {
        ObjectNode out = result("bench-coldstart");
        Uuid topicId;
        String topic;
        int userPartitions;
        if (opts.containsKey("topic-id")) {
            topicId = Uuid.fromString(str("topic-id"));
            topic = str("topic", "rlmm-coldstart");
            userPartitions = (int) num("user-partitions", 50);
        } else {
            long events = num("events", -1);
            if (events < 1) {
                throw new UsageException("want --events N (fill first) or --topic-id of an earlier fill");
            }
            topicId = Uuid.randomUuid();
            topic = "rlmm-coldstart";
            userPartitions = (int) num("user-partitions", 50);
            out.set("fill", new FillCommand(opts).doFill(events, topicId, topic, userPartitions));
        }
        Set<TopicIdPartition> tps = new LinkedHashSet<>();
        RemoteLogMetadataTopicPartitioner partitioner = new RemoteLogMetadataTopicPartitioner(metadataPartitions());
        Set<Integer> mps = new TreeSet<>();
        for (int p = 0; p < userPartitions; p++) {
            TopicIdPartition tp = new TopicIdPartition(topicId, p, topic);
            tps.add(tp);
            mps.add(partitioner.metadataPartition(tp));
        }
        long eventsInAssigned = 0;
        Map<String, Object> cp = clientProps();
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(cp, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            List<TopicPartition> tpl = mps.stream().map(i -> new TopicPartition(METADATA_TOPIC, i)).toList();
            for (long v : c.endOffsets(tpl).values()) {
                eventsInAssigned += v;
            }
        }
        long t0 = System.nanoTime();
        TopicBasedRemoteLogMetadataManager m = configure();
        try {
            m.onPartitionLeadershipChanges(tps, Set.of());
            long deadline = t0 + TimeUnit.MILLISECONDS.toNanos(timeoutMs());
            while (!RlmmInteropAccess.isInitialized(m) && EXIT_CALLED.get() == null && System.nanoTime() < deadline) {
                Thread.onSpinWait();
                TimeUnit.MICROSECONDS.sleep(200);
            }
            long tInit = System.nanoTime();
            awaitReady(m, tps, TimeUnit.MICROSECONDS.toNanos(200));
            long tReady = System.nanoTime();
            long loaded = 0;
            for (TopicIdPartition tp : tps) {
                Iterator<RemoteLogSegmentMetadata> it = m.listRemoteLogSegments(tp);
                while (it.hasNext()) {
                    it.next();
                    loaded++;
                }
            }
            out.put("segmentsLoaded", loaded);
            out.put("topicId", topicId.toString());
            out.put("userPartitions", userPartitions);
            out.put("metadataPartitionsAssigned", mps.size());
            out.put("eventsInAssignedMetadataPartitions", eventsInAssigned);
            out.put("initMs", (tInit - t0) / 1e6);
            out.put("configureToReadyMs", (tReady - t0) / 1e6);
            out.put("replayEventsPerSec", eventsInAssigned / ((tReady - tInit) / 1e9));
        } finally {
            closeQuietly(m);
        }
        return out;
    }
}

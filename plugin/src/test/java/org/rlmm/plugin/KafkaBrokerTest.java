package org.rlmm.plugin;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.rlmm.plugin.TestSupport.segment;
import static org.rlmm.plugin.TestSupport.toList;
import static org.rlmm.plugin.TestSupport.update;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadata;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadata.CustomMetadata;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadataUpdate;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentState;
import org.apache.kafka.server.log.remote.storage.RemotePartitionDeleteMetadata;
import org.apache.kafka.server.log.remote.storage.RemotePartitionDeleteState;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The plugin's class driven directly against the Kafka 4.4.0 broker that make test started
 * with test/kafkatest (RLMM_KAFKA_BOOTSTRAP), as test/interop/java drives Kafka's own manager: its child runs rlmm's
 * topic-based manager over that broker's __remote_log_metadata.
 */
class KafkaBrokerTest {
    @TempDir
    Path dir;

    @Test
    void thePluginRunsOverARealBroker() throws Exception {
        String bootstrap = TestSupport.kafkaBootstrap();
        assertEquals(System.getProperty("kafka.test.version"), TestSupport.kafkaClientsVersion(), "Kafka's API on the test class path");
        Map<String, Object> c = TestSupport.kafkaConfig(dir, bootstrap);
        RlmmRemoteLogMetadataManager m = new RlmmRemoteLogMetadataManager();
        try {
            m.configure(c);
            TopicIdPartition tp = TestSupport.newPartition("plugin-broker");
            TopicIdPartition follower = TestSupport.newPartition("plugin-broker-follower");
            m.onPartitionLeadershipChanges(Set.of(tp), Set.of(follower));
            TestSupport.await("isReady over the broker", Duration.ofSeconds(90), () -> m.isReady(tp) && m.isReady(follower));

            RemoteLogSegmentMetadata s1 = segment(tp, 0, 99, Optional.of(new CustomMetadata(new byte[] {4, 2})), false, 0, 0, 1, 50);
            RemoteLogSegmentMetadata s2 = segment(tp, 100, 199, Optional.empty(), true, 1, 100);
            m.addRemoteLogSegmentMetadata(s1).get(60, TimeUnit.SECONDS);
            m.addRemoteLogSegmentMetadata(s2).get(60, TimeUnit.SECONDS);
            RemoteLogSegmentMetadataUpdate f1 = update(s1, RemoteLogSegmentState.COPY_SEGMENT_FINISHED, Optional.empty());
            RemoteLogSegmentMetadataUpdate f2 = update(s2, RemoteLogSegmentState.COPY_SEGMENT_FINISHED, Optional.empty());
            m.updateRemoteLogSegmentMetadata(f1).get(60, TimeUnit.SECONDS);
            m.updateRemoteLogSegmentMetadata(f2).get(60, TimeUnit.SECONDS);
            RemoteLogSegmentMetadata d1 = s1.createWithUpdates(f1);
            RemoteLogSegmentMetadata d2 = s2.createWithUpdates(f2);

            assertEquals(Optional.of(d1), m.remoteLogSegmentMetadata(tp, 1, 60));
            assertEquals(Optional.of(d2), m.remoteLogSegmentMetadata(tp, 1, 150));
            assertEquals(Optional.of(199L), m.highestOffsetForEpoch(tp, 1));
            assertEquals(List.of(d1, d2), toList(m.listRemoteLogSegments(tp)));
            assertEquals(List.of(d1), toList(m.listRemoteLogSegments(tp, 0)));
            assertEquals((long) s1.segmentSizeInBytes() + s2.segmentSizeInBytes(), m.remoteLogSize(tp, 1));
            assertEquals(Optional.of(d1), m.nextSegmentWithTxnIndex(tp, 0, 0));

            RemoteLogSegmentMetadataUpdate ds = update(s1, RemoteLogSegmentState.DELETE_SEGMENT_STARTED, Optional.empty());
            RemoteLogSegmentMetadataUpdate df = update(s1, RemoteLogSegmentState.DELETE_SEGMENT_FINISHED, Optional.empty());
            m.updateRemoteLogSegmentMetadata(ds).get(60, TimeUnit.SECONDS);
            m.updateRemoteLogSegmentMetadata(df).get(60, TimeUnit.SECONDS);
            assertEquals(List.of(d2), toList(m.listRemoteLogSegments(tp)));
            assertEquals(Optional.empty(), m.remoteLogSegmentMetadata(tp, 0, 10));

            for (RemotePartitionDeleteState st : RemotePartitionDeleteState.values()) {
                m.putRemotePartitionDeleteMetadata(new RemotePartitionDeleteMetadata(tp, st, System.currentTimeMillis(),
                        TestSupport.BROKER_ID)).get(60, TimeUnit.SECONDS);
            }
            assertEquals(List.of(), toList(m.listRemoteLogSegments(tp)));
            m.onStopPartitions(Set.of(tp, follower));
            TestSupport.await("the stop reached rlmm serve", Duration.ofSeconds(30), () -> !m.isReady(tp) && !m.isReady(follower));
        } finally {
            long pid = TestSupport.childPid();
            m.close();
            if (pid > 0) {
                TestSupport.assertGone(pid, Duration.ofSeconds(20));
            }
        }
        assertTrue(TestSupport.processesNaming(dir.toString()).isEmpty(), "no rlmm serve left running");
    }
}

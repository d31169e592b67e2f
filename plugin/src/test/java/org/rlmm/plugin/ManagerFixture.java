package org.rlmm.plugin;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.io.TempDir;

/** What the tests of a configured plugin share: a temporary directory, and the plugin closed after each test. */
abstract class ManagerFixture {
    /** How long a test waits for the child to answer or a partition to be ready. */
    static final Duration READY = Duration.ofSeconds(30);

    @TempDir
    Path dir;

    RlmmRemoteLogMetadataManager rlmm;

    @AfterEach
    void closeManager() {
        if (rlmm != null) {
            rlmm.close();
        }
    }

    /** A new plugin configured with config (closed after the test) and a new partition of topic assigned and ready. */
    org.apache.kafka.common.TopicIdPartition startedWithPartition(Map<String, Object> config, String topic) {
        started(config);
        org.apache.kafka.common.TopicIdPartition tp = TestSupport.newPartition(topic);
        TestSupport.assignAndAwaitReady(rlmm, tp, READY);
        return tp;
    }

    /** A new plugin configured with config, closed after the test. */
    RlmmRemoteLogMetadataManager started(Map<String, Object> config) {
        return started(config, Outbox.Gate.OPEN);
    }

    /** started, with gate holding back each assignment change before it is sent (the test's seam). */
    RlmmRemoteLogMetadataManager started(Map<String, Object> config, Outbox.Gate gate) {
        rlmm = new RlmmRemoteLogMetadataManager(gate);
        rlmm.configure(config);
        return rlmm;
    }
}

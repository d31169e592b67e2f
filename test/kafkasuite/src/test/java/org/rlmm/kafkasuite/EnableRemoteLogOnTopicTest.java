package org.rlmm.kafkasuite;

/** Kafka's {@code EnableRemoteLogOnTopicTest}, unchanged but for the RLMM settings (see {@link RealScenario}). */
class EnableRemoteLogOnTopicTest extends RealScenario {
    EnableRemoteLogOnTopicTest() {
        super(org.apache.kafka.tiered.storage.integration.EnableRemoteLogOnTopicTest.class);
    }
}

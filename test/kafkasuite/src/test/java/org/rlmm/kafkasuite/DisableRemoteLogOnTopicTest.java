package org.rlmm.kafkasuite;

/** Kafka's {@code DisableRemoteLogOnTopicTest}, unchanged but for the RLMM settings (see {@link RealScenario}). */
class DisableRemoteLogOnTopicTest extends RealScenario {
    DisableRemoteLogOnTopicTest() {
        super(org.apache.kafka.tiered.storage.integration.DisableRemoteLogOnTopicTest.class);
    }
}

package org.rlmm.kafkasuite;

/** Kafka's {@code DeleteTopicTest}, unchanged but for the RLMM settings (see {@link RealScenario}). */
class DeleteTopicTest extends RealScenario {
    DeleteTopicTest() {
        super(org.apache.kafka.tiered.storage.integration.DeleteTopicTest.class);
    }
}

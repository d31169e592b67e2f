package org.rlmm.kafkasuite;

/** Kafka's {@code OffloadAndConsumeFromLeaderTest}, unchanged but for the RLMM settings (see {@link RealScenario}). */
class OffloadAndConsumeFromLeaderTest extends RealScenario {
    OffloadAndConsumeFromLeaderTest() {
        super(org.apache.kafka.tiered.storage.integration.OffloadAndConsumeFromLeaderTest.class);
    }
}

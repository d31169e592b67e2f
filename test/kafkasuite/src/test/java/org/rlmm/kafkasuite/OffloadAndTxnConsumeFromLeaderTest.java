package org.rlmm.kafkasuite;

/** Kafka's {@code OffloadAndTxnConsumeFromLeaderTest}, unchanged but for the RLMM settings (see {@link RealScenario}). */
class OffloadAndTxnConsumeFromLeaderTest extends RealScenario {
    OffloadAndTxnConsumeFromLeaderTest() {
        super(org.apache.kafka.tiered.storage.integration.OffloadAndTxnConsumeFromLeaderTest.class);
    }
}

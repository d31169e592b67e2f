package org.rlmm.kafkasuite;

/** Kafka's {@code FetchFromLeaderWithCorruptedCheckpointTest}, unchanged but for the RLMM settings (see {@link RealScenario}). */
class FetchFromLeaderWithCorruptedCheckpointTest extends RealScenario {
    FetchFromLeaderWithCorruptedCheckpointTest() {
        super(org.apache.kafka.tiered.storage.integration.FetchFromLeaderWithCorruptedCheckpointTest.class);
    }
}

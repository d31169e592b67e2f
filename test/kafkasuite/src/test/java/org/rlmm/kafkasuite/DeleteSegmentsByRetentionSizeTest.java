package org.rlmm.kafkasuite;

/** Kafka's {@code DeleteSegmentsByRetentionSizeTest}, unchanged but for the RLMM settings (see {@link RealScenario}). */
class DeleteSegmentsByRetentionSizeTest extends RealScenario {
    DeleteSegmentsByRetentionSizeTest() {
        super(org.apache.kafka.tiered.storage.integration.DeleteSegmentsByRetentionSizeTest.class);
    }
}

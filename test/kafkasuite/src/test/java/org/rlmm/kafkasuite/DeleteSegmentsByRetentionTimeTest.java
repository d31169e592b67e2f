package org.rlmm.kafkasuite;

/** Kafka's {@code DeleteSegmentsByRetentionTimeTest}, unchanged but for the RLMM settings (see {@link RealScenario}). */
class DeleteSegmentsByRetentionTimeTest extends RealScenario {
    DeleteSegmentsByRetentionTimeTest() {
        super(org.apache.kafka.tiered.storage.integration.DeleteSegmentsByRetentionTimeTest.class);
    }
}

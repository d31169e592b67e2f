package org.rlmm.kafkasuite;

/** Kafka's {@code DeleteSegmentsDueToLogStartOffsetBreachTest}, unchanged but for the RLMM settings (see {@link RealScenario}). */
class DeleteSegmentsDueToLogStartOffsetBreachTest extends RealScenario {
    DeleteSegmentsDueToLogStartOffsetBreachTest() {
        super(org.apache.kafka.tiered.storage.integration.DeleteSegmentsDueToLogStartOffsetBreachTest.class);
    }
}

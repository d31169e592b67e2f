package org.rlmm.kafkasuite;

/** Kafka's {@code RollAndOffloadActiveSegmentTest}, unchanged but for the RLMM settings (see {@link RealScenario}). */
class RollAndOffloadActiveSegmentTest extends RealScenario {
    RollAndOffloadActiveSegmentTest() {
        super(org.apache.kafka.tiered.storage.integration.RollAndOffloadActiveSegmentTest.class);
    }
}

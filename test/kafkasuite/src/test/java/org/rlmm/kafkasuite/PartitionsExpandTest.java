package org.rlmm.kafkasuite;

/** Kafka's {@code PartitionsExpandTest}, unchanged but for the RLMM settings (see {@link RealScenario}). */
class PartitionsExpandTest extends RealScenario {
    PartitionsExpandTest() {
        super(org.apache.kafka.tiered.storage.integration.PartitionsExpandTest.class);
    }
}

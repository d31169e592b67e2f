package org.rlmm.kafkasuite;

/** Kafka's {@code ListOffsetsTest}, unchanged but for the RLMM settings (see {@link RealScenario}). */
class ListOffsetsTest extends RealScenario {
    ListOffsetsTest() {
        super(org.apache.kafka.tiered.storage.integration.ListOffsetsTest.class);
    }
}

package org.rlmm.kafkasuite;

/** Kafka's {@code AlterLogDirTest}, unchanged but for the RLMM settings (see {@link RealScenario}). */
class AlterLogDirTest extends RealScenario {
    AlterLogDirTest() {
        super(org.apache.kafka.tiered.storage.integration.AlterLogDirTest.class);
    }
}

package org.rlmm.kafkasuite;

/** Kafka's {@code ReassignReplicaShrinkTest}, unchanged but for the RLMM settings (see {@link RealScenario}). */
class ReassignReplicaShrinkTest extends RealScenario {
    ReassignReplicaShrinkTest() {
        super(org.apache.kafka.tiered.storage.integration.ReassignReplicaShrinkTest.class);
    }
}

package org.rlmm.kafkasuite;

/** Kafka's {@code ReassignReplicaMoveTest}, unchanged but for the RLMM settings (see {@link RealScenario}). */
class ReassignReplicaMoveTest extends RealScenario {
    ReassignReplicaMoveTest() {
        super(org.apache.kafka.tiered.storage.integration.ReassignReplicaMoveTest.class);
    }
}

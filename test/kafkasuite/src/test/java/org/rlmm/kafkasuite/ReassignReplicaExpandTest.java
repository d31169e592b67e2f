package org.rlmm.kafkasuite;

/** Kafka's {@code ReassignReplicaExpandTest}, unchanged but for the RLMM settings (see {@link RealScenario}). */
class ReassignReplicaExpandTest extends RealScenario {
    ReassignReplicaExpandTest() {
        super(org.apache.kafka.tiered.storage.integration.ReassignReplicaExpandTest.class);
    }
}

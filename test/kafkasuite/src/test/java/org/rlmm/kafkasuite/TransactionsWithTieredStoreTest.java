package org.rlmm.kafkasuite;

import java.util.Properties;

import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Kafka's {@code TransactionsWithTieredStoreTest} (21 methods of kafka.api.TransactionsTest, each per
 * group protocol), unchanged but for the RLMM settings. That class is not final and takes its broker
 * properties from its public {@code overridingProps()}, so this subclass inherits every test method,
 * set-up and tear-down as they are and only passes those properties through {@link SuiteRlmm#swap}.
 * It keeps the real simple name, so the harness derives the same RLMM prefix from it.
 */
@ExtendWith(RunMarkers.class)
class TransactionsWithTieredStoreTest extends org.apache.kafka.tiered.storage.integration.TransactionsWithTieredStoreTest {
    /** Fails the run at once if a broker is not running this run's RLMM (reads only). */
    @BeforeEach
    void checkRlmmInUse() {
        SuiteRlmm.checkInUse(brokers());
    }

    @Override
    public Properties overridingProps() {
        return SuiteRlmm.swap(super.overridingProps());
    }
}

package org.rlmm.kafkasuite;

import java.lang.reflect.Field;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.Optional;
import java.util.Properties;

import org.apache.kafka.common.replica.ReplicaSelector;
import org.apache.kafka.tiered.storage.TieredStorageTestBuilder;
import org.apache.kafka.tiered.storage.TieredStorageTestHarness;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Runs one of Kafka's tiered-storage integration tests (most are {@code final}, so they cannot be
 * subclassed) with the RLMM of this run. A concrete subclass names the real test class; this class is
 * then that test in every respect the harness asks about, because each hook the real classes override
 * is answered by an instance of the real class:
 * <ul>
 *   <li>{@code writeTestSpecifications(builder)}: the real test's scenario and assertions, unchanged;</li>
 *   <li>{@code brokerCount()}, {@code numRemoteLogMetadataPartitions()}, {@code readReplicaSelectorClass()},
 *       {@code overrideConsumerConfig(props)}: the real test's answers;</li>
 *   <li>{@code overridingProps()}: the real test's broker properties (its own override included, e.g.
 *       OffloadAndTxnConsumeFromLeaderTest's), computed with this run's harness state, then passed through
 *       {@link SuiteRlmm#swap}, which changes only the RLMM settings.</li>
 * </ul>
 * The test method ({@code executeTieredStorageTest}, parameterised by group protocol), set-up and
 * tear-down are the harness's own, inherited. The subclass has the real test's simple name, so the
 * harness derives the same RLMM prefix and storage directory names from it.
 */
@ExtendWith(RunMarkers.class)
abstract class RealScenario extends TieredStorageTestHarness {
    private final TieredStorageTestHarness real;
    private final Class<? extends TieredStorageTestHarness> realClass;

    /** @param realClass the test of package org.apache.kafka.tiered.storage.integration to run */
    protected RealScenario(Class<? extends TieredStorageTestHarness> realClass) {
        if (!realClass.getSimpleName().equals(getClass().getSimpleName())) {
            throw new IllegalStateException(getClass().getName() + " must have the simple name of " + realClass.getName());
        }
        this.realClass = realClass;
        try {
            this.real = realClass.getDeclaredConstructor().newInstance();
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("cannot instantiate " + realClass.getName(), e);
        }
    }

    /** The real test this wrapper runs. */
    final Class<? extends TieredStorageTestHarness> realClass() {
        return realClass;
    }

    /** Fails the run at once if a broker is not running this run's RLMM (reads only). */
    @BeforeEach
    void checkRlmmInUse() {
        SuiteRlmm.checkInUse(brokers());
    }

    @Override
    public int brokerCount() {
        return real.brokerCount();
    }

    @Override
    protected int numRemoteLogMetadataPartitions() {
        return (Integer) call("numRemoteLogMetadataPartitions", new Class<?>[0]);
    }

    @Override
    @SuppressWarnings("unchecked")
    protected Optional<Class<ReplicaSelector>> readReplicaSelectorClass() {
        return (Optional<Class<ReplicaSelector>>) call("readReplicaSelectorClass", new Class<?>[0]);
    }

    @Override
    protected void overrideConsumerConfig(Properties consumerConfig) {
        call("overrideConsumerConfig", new Class<?>[] {Properties.class}, consumerConfig);
    }

    @Override
    protected void writeTestSpecifications(TieredStorageTestBuilder builder) {
        call("writeTestSpecifications", new Class<?>[] {TieredStorageTestBuilder.class}, builder);
    }

    @Override
    public Properties overridingProps() {
        // The harness's overridingProps reads two fields its setUp fills (the lowercased test class name,
        // which makes the RLMM prefix, and the remote storage directory); the real instance never ran
        // setUp, so it gets this run's values before it is asked.
        copyHarnessField("testClassName");
        copyHarnessField("storageDirPath");
        return SuiteRlmm.swap(real.overridingProps());
    }

    private void copyHarnessField(String name) {
        try {
            Field f = TieredStorageTestHarness.class.getDeclaredField(name);
            f.setAccessible(true);
            f.set(real, f.get(this));
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("TieredStorageTestHarness." + name + ": " + e, e);
        }
    }

    /** Calls the most specific declaration of a harness hook on the real instance. */
    private Object call(String name, Class<?>[] types, Object... args) {
        Method m = find(real.getClass(), name, types);
        try {
            m.setAccessible(true);
            return m.invoke(real, args);
        } catch (InvocationTargetException e) {
            Throwable cause = e.getCause();
            if (cause instanceof RuntimeException) {
                throw (RuntimeException) cause;
            }
            if (cause instanceof Error) {
                throw (Error) cause;
            }
            throw new IllegalStateException(cause);
        } catch (IllegalAccessException e) {
            throw new IllegalStateException(e);
        }
    }

    private static Method find(Class<?> c, String name, Class<?>[] types) {
        for (Class<?> k = c; k != null; k = k.getSuperclass()) {
            try {
                return k.getDeclaredMethod(name, types);
            } catch (NoSuchMethodException e) {
                // look in the superclass
            }
        }
        throw new IllegalStateException(c.getName() + " has no method " + name);
    }
}

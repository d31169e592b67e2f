package org.rlmm.plugin;

import java.lang.reflect.InvocationTargetException;
import org.apache.kafka.common.KafkaException;
import org.slf4j.Logger;

/**
 * Stops the broker as Kafka's own manager does when it cannot initialize: Kafka's
 * {@code Exit.exit(1, why)}, found by name through the broker's class loader (its package moved in
 * 4.4) so that a broker or test that replaced the exit procedure sees the call; neither found, the
 * JVM exits with status 1. On a thread of its own: exit runs the shutdown hooks, which close this
 * plugin, which waits for the thread that asked.
 */
final class BrokerExit {
    private BrokerExit() {}

    /** The status Kafka's manager exits with. */
    static final int STATUS = 1;

    private static final String[] EXIT_CLASSES = {
        "org.apache.kafka.common.utils.internals.Exit", // 4.4 and later
        "org.apache.kafka.common.utils.Exit",           // 4.0 to 4.3
    };

    /** Logs why at ERROR and stops the broker (Kafka's Exit.exit(1, why)) on a new thread. */
    static void exit(Logger log, String why) {
        log.error("rlmm plugin: stopping the broker (exit status {}), as Kafka's own manager does when it cannot"
                + " initialize: {}", STATUS, why);
        Thread t = new Thread(() -> invoke(log, why), "rlmm-plugin-broker-exit");
        t.setDaemon(true);
        t.start();
    }

    private static void invoke(Logger log, String why) {
        ClassLoader kafka = KafkaException.class.getClassLoader();
        for (String name : EXIT_CLASSES) {
            try {
                Class.forName(name, true, kafka).getMethod("exit", int.class, String.class).invoke(null, STATUS, why);
                return;
            } catch (InvocationTargetException e) {
                log.error("rlmm plugin: Kafka's {}.exit failed", name, e.getCause());
                return;
            } catch (ReflectiveOperationException | LinkageError e) {
                // not this broker's Exit: the other one
            }
        }
        log.error("rlmm plugin: no Kafka Exit class found; exiting the JVM with status {}", STATUS);
        Runtime.getRuntime().exit(STATUS);
    }
}

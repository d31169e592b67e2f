package org.rlmm.kafkasuite;

import java.lang.reflect.Field;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Properties;
import java.util.Set;

import kafka.server.KafkaBroker;
import org.apache.kafka.server.log.remote.metadata.storage.ClassLoaderAwareRemoteLogMetadataManager;
import org.apache.kafka.server.log.remote.metadata.storage.TopicBasedRemoteLogMetadataManager;
import org.apache.kafka.server.log.remote.storage.RemoteLogManager;
import org.apache.kafka.server.log.remote.storage.RemoteLogMetadataManager;
import scala.jdk.javaapi.CollectionConverters;

/**
 * The RLMM this run of Kafka's suite uses, chosen by the system property {@code suite.rlmm}, and the
 * one place where a test's broker settings are changed: {@link #swap(Properties)} rewrites the RLMM
 * settings of the properties the real test's harness built, and nothing else.
 *
 * <ul>
 *   <li>{@code kafka}: Kafka's own {@code TopicBasedRemoteLogMetadataManager}, exactly as the harness
 *       configures it (the control run).</li>
 *   <li>{@code rlmm}: rlmm's broker plugin: {@code suite.plugin.class} loaded from the shaded jar
 *       {@code suite.plugin.jar} through {@code remote.log.metadata.manager.class.path} (its own class
 *       loader, as any broker loads a plugin), and the plugin's settings under the harness's
 *       {@code remote.log.metadata.manager.impl.prefix}: any {@code suite.plugin.settings}
 *       ({@code key=value,key=value}) and, only when {@code suite.rlmm.binary} is given, that binary
 *       under the setting named by {@code suite.plugin.binary.setting} (default
 *       {@code rlmm.serve.binary}). Without it, as scripts/kafkasuite.sh runs the suite, each plugin
 *       runs the rlmm binary its jar carries, extracted into its work directory, as a broker
 *       installed by README's four settings does. The settings the harness puts under
 *       the prefix for Kafka's RLMM ({@code remote.log.metadata.topic.num.partitions}, replication factor,
 *       initialization retry interval) stay: rlmm takes Kafka's setting names.</li>
 * </ul>
 */
final class SuiteRlmm {
    /** The broker setting naming the RLMM class. */
    static final String CLASS_NAME = "remote.log.metadata.manager.class.name";
    /** The broker setting naming the RLMM's class path (its own class loader). */
    static final String CLASS_PATH = "remote.log.metadata.manager.class.path";
    /** The broker setting naming the prefix of the settings handed to the RLMM. */
    static final String PREFIX = "remote.log.metadata.manager.impl.prefix";
    /** Kafka's default for {@link #PREFIX}. */
    static final String DEFAULT_PREFIX = "rlmm.config.";

    /** Which RLMM a run uses. */
    enum Choice { KAFKA, RLMM }

    private SuiteRlmm() {
    }

    /** The RLMM chosen for this JVM ({@code -Dsuite.rlmm=kafka|rlmm}, default kafka). */
    static Choice choice() {
        String v = System.getProperty("suite.rlmm", "kafka").trim().toLowerCase(Locale.ROOT);
        switch (v) {
            case "":
            case "kafka":
                return Choice.KAFKA;
            case "rlmm":
                return Choice.RLMM;
            default:
                throw new IllegalStateException("suite.rlmm=" + v + ": want kafka or rlmm");
        }
    }

    /** The RLMM class the brokers must be running in this run. */
    static String expectedClass() {
        return choice() == Choice.KAFKA ? TopicBasedRemoteLogMetadataManager.class.getName() : required("suite.plugin.class");
    }

    /**
     * Rewrites the RLMM settings of a broker's properties as built by the real test's harness, in place,
     * and returns them. Every other setting is left as the real test made it.
     */
    static Properties swap(Properties props) {
        String harnessClass = props.getProperty(CLASS_NAME);
        if (!TopicBasedRemoteLogMetadataManager.class.getName().equals(harnessClass)) {
            // The wrapper assumes the harness configures Kafka's RLMM; if a new Kafka changes that,
            // say so instead of silently running something else.
            throw new IllegalStateException("the harness set " + CLASS_NAME + "=" + harnessClass
                    + ", expected Kafka's TopicBasedRemoteLogMetadataManager");
        }
        if (choice() == Choice.KAFKA) {
            return props; // the control: Kafka's RLMM exactly as the harness configured it
        }
        String prefix = props.getProperty(PREFIX, DEFAULT_PREFIX);
        String jar = required("suite.plugin.jar");
        if (!Files.isRegularFile(Path.of(jar))) {
            throw new IllegalStateException("suite.plugin.jar=" + jar + ": no such file (run scripts/plugin.sh build)");
        }
        props.setProperty(CLASS_NAME, required("suite.plugin.class"));
        props.setProperty(CLASS_PATH, jar);
        String binary = System.getProperty("suite.rlmm.binary", "").trim();
        if (!binary.isEmpty()) {
            if (!Files.isExecutable(Path.of(binary))) {
                throw new IllegalStateException("suite.rlmm.binary=" + binary + ": not an executable file (run make build)");
            }
            String setting = System.getProperty("suite.plugin.binary.setting", "").trim();
            props.setProperty(prefix + (setting.isEmpty() ? "rlmm.serve.binary" : setting), binary);
        }
        for (String kv : System.getProperty("suite.plugin.settings", "").split(",")) {
            if (kv.isBlank()) {
                continue;
            }
            int eq = kv.indexOf('=');
            if (eq <= 0) {
                throw new IllegalStateException("suite.plugin.settings: " + kv + " is not key=value");
            }
            props.setProperty(prefix + kv.substring(0, eq).trim(), kv.substring(eq + 1).trim());
        }
        return props;
    }

    /**
     * Fails unless every broker's RemoteLogManager runs the chosen RLMM (so a run can never pass on
     * Kafka's RLMM while claiming rlmm's). Reads only; the test's scenario is not touched.
     */
    static void checkInUse(scala.collection.Seq<KafkaBroker> brokers) {
        String want = expectedClass();
        List<String> wrong = new ArrayList<>();
        for (KafkaBroker b : CollectionConverters.asJava(brokers)) {
            if (b.remoteLogManagerOpt().isEmpty()) {
                wrong.add("broker " + b.config().brokerId() + ": no RemoteLogManager");
                continue;
            }
            RemoteLogManager rlm = b.remoteLogManagerOpt().get();
            String got = unwrap(rlm.remoteLogMetadataManager()).getClass().getName();
            if (!want.equals(got)) {
                wrong.add("broker " + b.config().brokerId() + ": " + got);
            }
        }
        if (!wrong.isEmpty()) {
            throw new IllegalStateException("expected every broker's RLMM to be " + want + ", got " + wrong);
        }
        if (choice() == Choice.RLMM) {
            synchronized (WORK_DIRS) {
                for (KafkaBroker b : CollectionConverters.asJava(brokers)) {
                    WORK_DIRS.add(workDir(b.config().logDirs().get(0)));
                }
            }
        }
    }

    /** The plugin's work directories of the brokers of the current run (see {@link #removeWorkDirs}). */
    private static final Set<Path> WORK_DIRS = new LinkedHashSet<>();

    /**
     * The plugin's default work directory for a broker's log directory ({@code <log.dir>.rlmm}, beside
     * it; the plugin's PluginConfig.defaultWorkDir).
     */
    static Path workDir(String logDir) {
        Path p = Path.of(logDir).toAbsolutePath();
        return p.resolveSibling(p.getFileName() + ".rlmm");
    }

    /**
     * Removes the work directories of the brokers {@link #checkInUse} saw, once the run's brokers are
     * shut down (RunMarkers, after the harness's tear-down). Each holds the plugin's extracted rlmm
     * binary (some 44 MB), its snapshots and socket; the harness deletes its log directories, but these
     * are beside them, so a full run would otherwise leave some 200 of them in the temporary directory.
     */
    static void removeWorkDirs() {
        List<Path> dirs;
        synchronized (WORK_DIRS) {
            dirs = new ArrayList<>(WORK_DIRS);
            WORK_DIRS.clear();
        }
        for (Path d : dirs) {
            try {
                RunMarkers.deleteTree(d);
            } catch (java.io.IOException e) {
                System.out.println("kafkasuite: could not remove the plugin's work directory " + d + ": " + e);
            }
        }
    }

    private static RemoteLogMetadataManager unwrap(RemoteLogMetadataManager m) {
        if (m instanceof ClassLoaderAwareRemoteLogMetadataManager) {
            try {
                Field f = ClassLoaderAwareRemoteLogMetadataManager.class.getDeclaredField("delegate");
                f.setAccessible(true);
                return (RemoteLogMetadataManager) f.get(m);
            } catch (ReflectiveOperationException e) {
                throw new IllegalStateException("cannot read the RLMM behind Kafka's class-loader wrapper", e);
            }
        }
        return m;
    }

    private static String required(String name) {
        String v = System.getProperty(name, "").trim();
        if (v.isEmpty()) {
            throw new IllegalStateException("suite.rlmm=rlmm needs -D" + name + " (scripts/kafkasuite.sh sets it)");
        }
        return v;
    }
}

package org.rlmm.plugin;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.sun.tools.attach.VirtualMachine;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import javax.management.JMException;
import javax.management.MBeanServerConnection;
import javax.management.ObjectName;
import javax.management.remote.JMXConnector;
import javax.management.remote.JMXConnectorFactory;
import javax.management.remote.JMXServiceURL;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The plugin's metrics read from a real broker's JMX: a Kafka 4.3.1 broker with tiered storage
 * (LocalTieredStorage) and the packaged jar as its RLMM, started by test/kafkatest's command, its JMX
 * reached through the broker's own process (the JDK's attach API starts its local management
 * agent). A tiered topic copies segments (add and update calls), and a kill -9 of the child shows
 * as a restart. Runs after `package` (the shaded-jar execution), where make test runs (RLMM_KAFKA_BOOTSTRAP
 * set, or CI=true): it starts a broker of its own.
 */
class BrokerJmxTest {
    private static final Duration WAIT = Duration.ofSeconds(120);

    @TempDir
    Path dir;

    private static Path repo() {
        Path p = Paths.get(System.getProperty("user.dir")).toAbsolutePath();
        return Files.exists(p.resolve("go.mod")) ? p : p.getParent();
    }

    /** Runs test/kafkatest's command (scripts/plugin.sh test builds it) and returns its stdout. */
    private static String kafkatest(Path broker, String... args) throws IOException, InterruptedException {
        String binary = System.getProperty("kafkatest.binary");
        if (binary == null || !Files.isExecutable(Paths.get(binary))) {
            fail("no kafkatest command at " + binary + " (kafkatest.binary): run the tests with scripts/plugin.sh test");
        }
        List<String> cmd = new java.util.ArrayList<>(List.of(binary));
        cmd.addAll(List.of(args));
        Path err = broker.resolveSibling("kafkatest.err");
        Process p = new ProcessBuilder(cmd).directory(repo().toFile()).redirectError(err.toFile()).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(5, TimeUnit.MINUTES) || p.exitValue() != 0) {
            fail("kafkatest " + String.join(" ", args) + " failed: " + out + "\n" + Files.readString(err));
        }
        return out;
    }

    private static double read(MBeanServerConnection jmx, ObjectName name, String attribute) {
        try {
            return jmx.isRegistered(name) ? ((Number) jmx.getAttribute(name, attribute)).doubleValue() : -1;
        } catch (JMException | IOException e) {
            throw new AssertionError("JMX " + name + " " + attribute + ": " + e, e);
        }
    }

    @Test
    @Timeout(value = 10, unit = TimeUnit.MINUTES)
    void thePluginsMetricsAreInARealBrokersJmx() throws Exception {
        String b = System.getenv("RLMM_KAFKA_BOOTSTRAP");
        if ((b == null || b.isEmpty()) && !"true".equals(System.getenv("CI"))) {
            String why = "RLMM_KAFKA_BOOTSTRAP is not set: this test starts a Kafka 4.3.1 broker of its own where"
                    + " make test runs one (Java and Kafka's jars are there)";
            System.out.println("SKIP: " + why);
            Assumptions.abort(why);
        }
        Path broker = dir.resolve("kafka");
        String started = kafkatest(broker, "start", broker.toString(), "--version", "4.3.1", "--tiered", "--rlmm", "rlmm",
                "--plugin-jar", ShadedJarTest.jar().toString(), "--rlmm-binary", TestSupport.rlmmBinary().toString());
        String bootstrap = started.lines().filter(l -> l.startsWith("RLMM_KAFKA_BOOTSTRAP="))
                .map(l -> l.substring("RLMM_KAFKA_BOOTSTRAP=".length())).findFirst()
                .orElseThrow(() -> new AssertionError("no RLMM_KAFKA_BOOTSTRAP in " + started));
        try {
            long pid = Long.parseLong(kafkatest(broker, "pid", broker.toString(), "1").trim());
            VirtualMachine vm = VirtualMachine.attach(Long.toString(pid));
            String address;
            try {
                address = vm.startLocalManagementAgent();
            } finally {
                vm.detach();
            }
            try (JMXConnector c = JMXConnectorFactory.connect(new JMXServiceURL(address))) {
                MBeanServerConnection jmx = c.getMBeanServerConnection();
                ObjectName plugin = new ObjectName("kafka.server:type=rlmm-plugin,broker-id=1");
                ObjectName add = new ObjectName("kafka.server:type=rlmm-plugin,broker-id=1,rpc=add");
                ObjectName leadership = new ObjectName("kafka.server:type=rlmm-plugin,broker-id=1,rpc=leadership");
                TestSupport.await("child-up 1 in the broker's JMX", WAIT, () -> read(jmx, plugin, "child-up") == 1);
                assertEquals(0, read(jmx, plugin, "failed"));
                assertEquals(0, read(jmx, plugin, "child-restarts-total"));

                String topic = "jmx-tiered";
                Properties ap = new Properties();
                ap.put("bootstrap.servers", bootstrap);
                try (Admin admin = Admin.create(ap)) {
                    admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1).configs(Map.of(
                            "remote.storage.enable", "true", "segment.bytes", "1048576",
                            "local.retention.ms", "1000", "file.delete.delay.ms", "100")))).all().get(60, TimeUnit.SECONDS);
                }
                Properties pp = new Properties();
                pp.put("bootstrap.servers", bootstrap);
                pp.put("linger.ms", "5");
                try (KafkaProducer<byte[], byte[]> producer =
                        new KafkaProducer<>(pp, new ByteArraySerializer(), new ByteArraySerializer())) {
                    byte[] value = new byte[1024];
                    for (int i = 0; i < 3000; i++) {
                        producer.send(new ProducerRecord<>(topic, value));
                    }
                    producer.flush();
                }
                TestSupport.await("the broker's leadership change in JMX", WAIT, () -> read(jmx, leadership, "calls-total") >= 1);
                TestSupport.await("the topic's partition hosted and ready", WAIT, () -> read(jmx, plugin, "hosted-partitions-ready") >= 1);
                TestSupport.await("a copied segment's add in JMX", WAIT, () -> read(jmx, add, "calls-total") >= 1);
                assertEquals(0, read(jmx, add, "errors-total"));
                assertTrue(read(jmx, add, "latency-max-ms") > 0, "the add's latency");

                // kill -9 of the child: a restart and a last error in JMX, and the child back up.
                long before = System.currentTimeMillis();
                List<ProcessHandle> children = ProcessHandle.of(pid).orElseThrow().descendants()
                        .filter(h -> h.info().commandLine().orElse("").contains(" serve ")).toList();
                assertEquals(1, children.size(), "one rlmm serve child of the broker: " + children);
                children.get(0).destroyForcibly();
                TestSupport.await("the restart in the broker's JMX", WAIT,
                        () -> read(jmx, plugin, "child-restarts-total") == 1 && read(jmx, plugin, "child-up") == 1);
                assertTrue(read(jmx, plugin, "last-error-timestamp-ms") >= before, "the death's time");
                Set<ObjectName> names = jmx.queryNames(new ObjectName("kafka.server:type=rlmm-plugin,*"), null);
                assertEquals(1 + RlmmMetrics.RPCS.size(), names.size(), names.toString());
            }
        } finally {
            kafkatest(broker, "stop", broker.toString());
        }
    }
}

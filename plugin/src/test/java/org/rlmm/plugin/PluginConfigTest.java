package org.rlmm.plugin;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.server.log.remote.storage.RemoteStorageException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** configure's checks: a missing or wrong setting is a ConfigException naming it. */
class PluginConfigTest {
    @TempDir
    static Path dir;

    /** A change to a good embedded configuration, and the setting the error must name. */
    static Stream<Arguments> badSettings() {
        return Stream.of(
                Arguments.of("broker.id missing", "broker.id", null, "broker.id"),
                Arguments.of("broker.id not a number", "broker.id", "seven", "broker.id"),
                Arguments.of("call timeout not a number", "rlmm.serve.call.timeout.ms", "soon", "rlmm.serve.call.timeout.ms"),
                Arguments.of("call timeout zero", "rlmm.serve.call.timeout.ms", "0", "rlmm.serve.call.timeout.ms"),
                Arguments.of("init timeout negative", "rlmm.serve.init.timeout.ms", "-5", "rlmm.serve.init.timeout.ms"),
                Arguments.of("binary missing", "rlmm.serve.binary", "/nonexistent/rlmm", "rlmm.serve.binary"),
                Arguments.of("backoff max below backoff", "rlmm.serve.restart.backoff.max.ms", "10", "rlmm.serve.restart.backoff.max.ms"),
                Arguments.of("socket and address", "rlmm.serve.address", "127.0.0.1:7000", "rlmm.serve.socket"),
                Arguments.of("TLS without TCP", "rlmm.serve.tls.ca", "/nonexistent/ca.pem", "rlmm.serve.tls.ca"),
                Arguments.of("a line break in a forwarded setting", "remote.log.metadata.common.client.client.id", "a\nb",
                        "remote.log.metadata.common.client.client.id"));
    }

    private static Map<String, Object> good() {
        return TestSupport.embeddedConfig(dir);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("badSettings")
    void badSettingIsNamed(String name, String key, String value, String named) {
        Map<String, Object> c = new HashMap<>(good());
        if (key.equals("rlmm.serve.address")) {
            c.put("rlmm.serve.socket", dir.resolve("s.sock").toString());
            c.remove("rlmm.serve.binary");
            c.remove("rlmm.serve.embedded.dir");
        }
        if (value == null) {
            c.remove(key);
        } else {
            c.put(key, value);
        }
        ConfigException e = assertThrows(ConfigException.class, () -> PluginConfig.parse(c));
        assertTrue(e.getMessage().contains(named), name + ": " + e.getMessage());
    }

    @Test
    void bootstrapIsNeededWithoutTheEmbeddedLog() {
        Map<String, Object> c = new HashMap<>(good());
        c.remove("rlmm.serve.embedded.dir");
        c.remove("remote.log.metadata.common.client.bootstrap.servers");
        ConfigException e = assertThrows(ConfigException.class, () -> PluginConfig.parse(c));
        assertTrue(e.getMessage().contains("remote.log.metadata.common.client.bootstrap.servers"), e.getMessage());
    }

    @Test
    void aSettingRlmmServeRefusesFailsEveryCallNamingIt() throws Exception {
        // Kafka mode: the child reads the properties file and refuses the value. configure does
        // not wait for the child; the refusal (exit code 3) stops the broker and fails every
        // call, naming the setting.
        Map<String, Object> c = TestSupport.kafkaConfig(dir.resolve("refused"), "127.0.0.1:9");
        c.put("remote.log.metadata.topic.num.partitions", "0");
        c.put("rlmm.serve.call.timeout.ms", "30000");
        c.put("rlmm.serve.mutation.timeout.ms", "30000");
        RlmmRemoteLogMetadataManager m = new RlmmRemoteLogMetadataManager();
        try (TestSupport.ExitRecorder exit = new TestSupport.ExitRecorder()) {
            m.configure(c);
            // The broker is stopped as Kafka's manager stops it when it cannot initialize.
            String why = exit.await("the refused setting", java.time.Duration.ofSeconds(30));
            assertEquals(BrokerExit.STATUS, exit.status());
            assertTrue(why.contains("remote.log.metadata.topic.num.partitions") && why.contains("exit code 3"), why);
            TopicIdPartition tp = TestSupport.newPartition("refused");
            RemoteStorageException e = assertThrows(RemoteStorageException.class, () -> m.remoteLogSegmentMetadata(tp, 0, 0));
            assertTrue(e.getMessage().contains("remote.log.metadata.topic.num.partitions"), e.getMessage());
            assertFalse(TestSupport.awaitServer(TestSupport.BROKER_ID, java.time.Duration.ofSeconds(1)), "a refused child never answers");
            assertFalse(m.isReady(tp));
            ExecutionException mutation = assertThrows(ExecutionException.class, () -> m.addRemoteLogSegmentMetadata(
                    TestSupport.segment(tp, 0, 9, java.util.Optional.empty(), true, 0, 0)).get(30, TimeUnit.SECONDS));
            assertTrue(mutation.getCause().getMessage().contains("remote.log.metadata.topic.num.partitions"),
                    mutation.getCause().getMessage());
            assertTrue(TestSupport.processesNaming(dir.resolve("refused").toString()).isEmpty(), "no child is running");
        } finally {
            m.close();
        }
        assertTrue(TestSupport.processesNaming(dir.resolve("refused").toString()).isEmpty());
    }

    @Test
    void brokerIdArrivesAsAnIntegerOrAString() {
        Map<String, Object> c = new HashMap<>(good());
        c.put("broker.id", 12);
        assertEquals(12, PluginConfig.parse(c).brokerId());
        c.put("broker.id", "13");
        assertEquals(13, PluginConfig.parse(c).brokerId());
    }

    @Test
    void everyKafkaSettingIsForwardedForTheServerToJudge() {
        Map<String, Object> c = new HashMap<>(good());
        c.put("remote.log.metadata.producer.acks", "all");
        c.put("remote.log.metadata.topic.replication.factor", "3");
        c.put("remote.log.metadata.consume.wait.ms", "not a number");
        PluginConfig p = PluginConfig.parse(c);
        assertEquals("3", p.kafkaSettings.get("remote.log.metadata.topic.replication.factor"));
        assertEquals("PLAINTEXT", p.kafkaSettings.get("remote.log.metadata.common.client.security.protocol"));
        assertEquals("all", p.kafkaSettings.get("remote.log.metadata.producer.acks"), "rlmm serve decides what it ignores");
        assertEquals("not a number", p.kafkaSettings.get("remote.log.metadata.consume.wait.ms"),
                "rlmm serve refuses a bad value (exit code 3), the plugin passes it as it is");
        assertEquals(java.time.Duration.ofMinutes(2).plus(p.ms(PluginConfig.CALL_TIMEOUT)), p.mutationTimeout(),
                "the mutation bound falls back to Kafka's default consume wait");
        assertFalse(p.kafkaSettings.containsKey("rlmm.serve.binary"));
        assertFalse(p.kafkaSettings.containsKey("broker.id"));
    }

    @Test
    void thePrivateDirectoryIsBesideTheLogDirectoryNotInIt() {
        PluginConfig p = PluginConfig.parse(good());
        Path logDir = dir.resolve("kafka-logs").toAbsolutePath();
        assertEquals(logDir.resolveSibling("kafka-logs.rlmm"), p.workDir);
        assertFalse(p.workDir.startsWith(logDir));
        assertEquals(p.workDir.resolve("serve.sock"), p.socket);
        assertEquals(p.workDir.resolve("snapshots"), p.snapshotDir());
    }

    @Test
    void aSocketPathTooLongMovesUnderTheTempDirectoryKeyedByAHash() {
        Map<String, Object> c = new HashMap<>(good());
        Path deep = dir.resolve("d".repeat(60)).resolve("e".repeat(60)).resolve("kafka-logs");
        c.put("log.dir", deep.toString());
        PluginConfig p = PluginConfig.parse(c);
        assertTrue(p.socket.toString().getBytes(StandardCharsets.UTF_8).length <= SocketPath.MAX_BYTES, p.socket.toString());
        assertFalse(p.socket.startsWith(p.workDir));
        assertEquals(p.socket, PluginConfig.parse(c).socket, "the same broker finds the same socket again");
        Map<String, Object> other = new HashMap<>(c);
        other.put("log.dir", deep.resolveSibling("kafka-logs-2").toString());
        assertFalse(p.socket.equals(PluginConfig.parse(other).socket), "two brokers never share a socket");
    }

    @Test
    void everySettingIsDeclaredOnKafkasConfigDefWithItsDocumentation() {
        java.util.Set<String> declared = PluginConfig.DEF.names();
        for (String key : new String[] {PluginConfig.BINARY, PluginConfig.SOCKET, PluginConfig.ADDRESS, PluginConfig.TLS_CA,
                PluginConfig.TOKEN_FILE, PluginConfig.WORK_DIR,
                PluginConfig.SNAPSHOT_DIR, PluginConfig.EMBEDDED_DIR, PluginConfig.EXTRA_ARGS, PluginConfig.CALL_TIMEOUT,
                PluginConfig.MUTATION_TIMEOUT, PluginConfig.INIT_TIMEOUT, PluginConfig.STOP_TIMEOUT,
                PluginConfig.RESTART_BACKOFF, PluginConfig.RESTART_BACKOFF_MAX}) {
            assertTrue(declared.contains(key), key + " is declared");
            String doc = PluginConfig.DEF.configKeys().get(key).documentation;
            assertTrue(doc != null && doc.length() > 20, key + " has its documentation: " + doc);
        }
        for (String key : declared) {
            assertFalse(key.startsWith(PluginConfig.KAFKA_PREFIX), key + ": rlmm serve's settings are not declared here");
        }
    }

    @Test
    void theDefaultsAreConfigDefs() {
        Map<String, Object> defaults = new HashMap<>(good());
        defaults.remove(PluginConfig.STOP_TIMEOUT);
        PluginConfig p = PluginConfig.parse(defaults);
        assertEquals(java.time.Duration.ofMillis(10_000), p.ms(PluginConfig.CALL_TIMEOUT));
        assertEquals(java.time.Duration.ofMillis(30_000), p.ms(PluginConfig.STOP_TIMEOUT));
        assertEquals(java.time.Duration.ofMillis(100), p.ms(PluginConfig.RESTART_BACKOFF));
        assertEquals(java.time.Duration.ofMillis(10_000), p.ms(PluginConfig.RESTART_BACKOFF_MAX));
        Map<String, Object> c = new HashMap<>(good());
        c.put(PluginConfig.CALL_TIMEOUT, 2500);
        c.put(PluginConfig.RESTART_BACKOFF, "7");
        p = PluginConfig.parse(c);
        assertEquals(java.time.Duration.ofMillis(2500), p.ms(PluginConfig.CALL_TIMEOUT), "a number or a string, as ConfigDef takes them");
        assertEquals(java.time.Duration.ofMillis(7), p.ms(PluginConfig.RESTART_BACKOFF));
    }

    @Test
    void theReadmeTableIsConfigDefs() throws Exception {
        Path readme = Path.of(System.getProperty("user.dir"), "README.md");
        String text = java.nio.file.Files.readString(readme, StandardCharsets.UTF_8);
        String table = markdownTable();
        assertTrue(text.contains(table), "plugin/README.md holds markdownTable() as it is; it is now:\n" + table);
    }

    /**
     * The settings table of plugin/README.md: every {@code rlmm.serve.*} setting of PluginConfig.DEF, in
     * the order declared.
     */
    static String markdownTable() {
        StringBuilder b = new StringBuilder("| setting | default | meaning |\n|---|---|---|\n");
        for (org.apache.kafka.common.config.ConfigDef.ConfigKey k : PluginConfig.DEF.configKeys().values()) {
            if (!k.name.startsWith("rlmm.serve.")) {
                continue;
            }
            String dflt = k.defaultValue != null && !"".equals(k.defaultValue)
                    ? "`" + k.defaultValue + "`" : k.documentation.contains("Default:") ? "(see meaning)" : "(none)";
            b.append("| `").append(k.name).append("` | ").append(dflt).append(" | ")
                    .append(k.documentation.replace("<", "&lt;").replace(">", "&gt;")).append(" |\n");
        }
        return b.toString();
    }
}

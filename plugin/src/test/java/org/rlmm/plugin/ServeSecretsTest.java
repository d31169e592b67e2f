package org.rlmm.plugin;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.config.types.Password;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.LoggerFactory;

/**
 * Secrets reach the child through its properties file only: never its command line (which
 * every local user reads in /proc/<pid>/cmdline) nor its environment; the file is 0600 and is
 * removed when the plugin closes, and a file a crash left behind is removed at the next start.
 */
class ServeSecretsTest {
    private static final Duration WAIT = Duration.ofSeconds(30);
    private static final String CLIENT = PluginConfig.CLIENT_PREFIX;
    /** Each secret is a distinct string that appears nowhere else. */
    private static final List<String> SECRETS = List.of("ks-secret-4711", "key-secret-0815", "ts-secret-1337", "jaas-secret-2342");

    @TempDir
    Path dir;

    /**
     * A stand-in for rlmm serve: a shell script that waits on its stdin (a pipe from the plugin),
     * so its command line stays the one the plugin gave it until the plugin stops it.
     */
    private Path fakeServe() throws IOException {
        Path bin = dir.resolve("fake-rlmm");
        Files.writeString(bin, "#!/bin/sh\nread -r _ || true\n", StandardCharsets.UTF_8);
        Files.setPosixFilePermissions(bin, PosixFilePermissions.fromString("rwx------"));
        return bin;
    }

    private Map<String, Object> securedConfig() throws IOException {
        Map<String, Object> c = TestSupport.kafkaConfig(dir, "127.0.0.1:9");
        c.put("rlmm.serve.binary", fakeServe().toString());
        c.put(CLIENT + "security.protocol", "SASL_SSL");
        c.put(CLIENT + "sasl.mechanism", "SCRAM-SHA-512");
        c.put(CLIENT + "sasl.jaas.config", "org.apache.kafka.common.security.scram.ScramLoginModule required"
                + " username=\"rlmm\" password=\"" + SECRETS.get(3) + "\";");
        c.put(CLIENT + "ssl.keystore.type", "JKS");
        c.put(CLIENT + "ssl.keystore.location", dir.resolve("client.jks").toString());
        c.put(CLIENT + "ssl.keystore.password", SECRETS.get(0));
        // As a broker may pass a password-typed value: Kafka's Password, whose toString hides it.
        c.put(CLIENT + "ssl.key.password", new Password(SECRETS.get(1)));
        c.put(CLIENT + "ssl.truststore.type", "PKCS12");
        c.put(CLIENT + "ssl.truststore.location", dir.resolve("trust.p12").toString());
        c.put(CLIENT + "ssl.truststore.password", SECRETS.get(2));
        return c;
    }

    /** The metrics of the supervisor under test, unregistered after each test. */
    private RlmmMetrics metrics;

    @AfterEach
    void unregister() {
        if (metrics != null) {
            metrics.close();
        }
    }

    /** The plugin's supervisor of cfg's child, which never answers here (the stand-in opens no socket). */
    private Supervisor child(PluginConfig cfg) {
        metrics = RlmmMetrics.register(cfg.brokerId(), LoggerFactory.getLogger(ServeSecretsTest.class), () -> 0, () -> 0, () -> 0);
        return new Supervisor(cfg, LoggerFactory.getLogger(ServeSecretsTest.class), Wire.Endpoint.of(cfg), metrics, tp -> false);
    }

    private static String procFile(long pid, String name) throws IOException {
        return new String(Files.readAllBytes(Path.of("/proc", Long.toString(pid), name)), StandardCharsets.UTF_8)
                .replace('\0', ' ');
    }

    @Test
    void secretsGoThroughThePropertiesFileNeverTheCommandLine() throws Exception {
        PluginConfig cfg = PluginConfig.parse(securedConfig());
        Supervisor sp = child(cfg);
        Path props = cfg.workDir.resolve("serve.properties");
        long pid;
        try {
            sp.start();
            TestSupport.await("the child to start", WAIT, () -> TestSupport.childPid() > 0);
            pid = TestSupport.childPid();
            String cmdline = procFile(pid, "cmdline");
            String environ = procFile(pid, "environ");
            assertTrue(cmdline.contains("--properties " + props), "the child reads its settings from " + props + ": " + cmdline);
            String file = Files.readString(props, StandardCharsets.UTF_8);
            for (String secret : SECRETS) {
                assertFalse(cmdline.contains(secret), "a secret on the child's command line: " + cmdline);
                assertFalse(environ.contains(secret), "a secret in the child's environment");
                assertTrue(file.contains(secret), "the properties file lacks a secret the broker passed");
            }
            assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(props)));
            assertEquals("rwx------", PosixFilePermissions.toString(Files.getPosixFilePermissions(props.getParent())));
        } finally {
            sp.close();
        }
        TestSupport.assertGone(pid, WAIT);
        assertFalse(Files.exists(props), "the properties file outlived close: " + props);
    }

    @Test
    void aPropertiesFileACrashLeftIsRemovedAtTheNextStart() throws Exception {
        // The embedded log writes no properties file: one found at start is a crash's leftover.
        Map<String, Object> c = TestSupport.embeddedConfig(dir);
        c.put("rlmm.serve.binary", fakeServe().toString());
        PluginConfig cfg = PluginConfig.parse(c);
        Files.createDirectories(cfg.workDir);
        Path stale = cfg.workDir.resolve("serve.properties");
        Path staleTmp = cfg.workDir.resolve("serve.properties.tmp");
        Files.writeString(stale, CLIENT + "ssl.keystore.password=" + SECRETS.get(0) + "\n", StandardCharsets.UTF_8);
        Files.writeString(staleTmp, CLIENT + "ssl.key.password=" + SECRETS.get(1) + "\n", StandardCharsets.UTF_8);
        Supervisor sp = child(cfg);
        try {
            sp.start();
            assertFalse(Files.exists(stale), "a crash's properties file survived the next start");
            assertFalse(Files.exists(staleTmp), "a crash's half-written properties file survived the next start");
        } finally {
            sp.close();
        }
    }

    @Test
    void aPasswordFlagInTheExtraArgumentsIsRefused() throws Exception {
        Map<String, Object> c = securedConfig();
        c.put(PluginConfig.EXTRA_ARGS, "--log-level debug --sasl-password=" + SECRETS.get(3));
        ConfigException e = assertThrows(ConfigException.class, () -> PluginConfig.parse(c));
        assertTrue(e.getMessage().contains(PluginConfig.EXTRA_ARGS), e.getMessage());
        assertFalse(e.getMessage().contains(SECRETS.get(3)), "the refusal quotes the secret: " + e.getMessage());
    }

    @Test
    void theBrokersKerberosConfigurationIsForwardedForGssapi() throws Exception {
        Map<String, Object> c = TestSupport.kafkaConfig(dir, "127.0.0.1:9");
        c.put(CLIENT + "security.protocol", "SASL_SSL");
        c.put(CLIENT + "sasl.mechanism", "GSSAPI");
        c.put(CLIENT + "sasl.kerberos.service.name", "kafka");
        String before = System.getProperty(PluginConfig.KRB5_CONF);
        System.setProperty(PluginConfig.KRB5_CONF, "/etc/rlmm-test/krb5.conf");
        try {
            PluginConfig cfg = PluginConfig.parse(c);
            assertEquals("/etc/rlmm-test/krb5.conf", cfg.kafkaSettings.get(PluginConfig.KRB5_CONF));
            assertEquals("kafka", cfg.kafkaSettings.get(CLIENT + "sasl.kerberos.service.name"));
            c.put(CLIENT + "sasl.mechanism", "SCRAM-SHA-512");
            assertFalse(PluginConfig.parse(c).kafkaSettings.containsKey(PluginConfig.KRB5_CONF),
                    "krb5.conf forwarded without GSSAPI");
        } finally {
            if (before == null) {
                System.clearProperty(PluginConfig.KRB5_CONF);
            } else {
                System.setProperty(PluginConfig.KRB5_CONF, before);
            }
        }
    }
}

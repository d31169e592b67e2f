package org.rlmm.plugin;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.server.log.remote.storage.RemoteLogMetadataManager;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadata;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadataUpdate;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentState;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The packaged jar as a broker loads it: in a class loader of its own that looks into the jar
 * first (as Kafka's plugin class path does), with only Kafka's API (4.4.0 here) from the parent.
 * Runs after `package` (Surefire's shaded-jar execution in the integration-test phase).
 */
class ShadedJarTest {
    static final String CLASS = "org.rlmm.plugin.RlmmRemoteLogMetadataManager";

    @TempDir
    Path dir;

    static Path jar() {
        String p = System.getProperty("rlmm.plugin.jar");
        if (p == null || !Files.isRegularFile(Paths.get(p))) {
            fail("system property rlmm.plugin.jar does not name the packaged jar (" + p + "): run mvn verify");
        }
        return Paths.get(p);
    }

    /** Child first: the jar's classes win; what the jar does not have comes from the parent. */
    static final class ChildFirst extends URLClassLoader {
        ChildFirst(URL jar, ClassLoader parent) {
            super(new URL[] {jar}, parent);
        }

        @Override
        protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
            synchronized (getClassLoadingLock(name)) {
                Class<?> c = findLoadedClass(name);
                if (c == null && !name.startsWith("java.")) {
                    try {
                        c = findClass(name);
                    } catch (ClassNotFoundException e) {
                        c = null;
                    }
                }
                if (c == null) {
                    c = getParent().loadClass(name);
                }
                if (resolve) {
                    resolveClass(c);
                }
                return c;
            }
        }
    }

    @Test
    void everyClassIsTheProjectsOrRelocatedAndKafkaIsNotInside() throws IOException {
        List<String> stray = new ArrayList<>();
        List<String> nativeLibs = new ArrayList<>();
        try (JarFile j = new JarFile(jar().toFile())) {
            for (JarEntry e : Collections.list(j.entries())) {
                String n = e.getName();
                if (n.endsWith(".class") && !n.startsWith("org/rlmm/plugin/")) {
                    stray.add(n);
                }
                if (n.startsWith("META-INF/native/")) {
                    nativeLibs.add(n);
                }
            }
            assertNotNull(j.getEntry(CLASS.replace('.', '/') + ".class"));
        }
        assertEquals(List.of(), stray, "classes outside org/rlmm/plugin/ (unrelocated, or Kafka's)");
        // No JNI library: the plugin's sockets are the JDK's.
        assertEquals(List.of(), nativeLibs.stream().filter(n -> n.endsWith(".so")).sorted().toList(), "JNI libraries in the jar");
    }

    /** The ELF machine of each platform's binary (e_machine: x86-64 62, AArch64 183). */
    static final Map<String, Integer> ELF_MACHINE = Map.of("linux-amd64", 62, "linux-arm64", 183);

    @Test
    void theJarCarriesTheRlmmBinaryOfEachPlatformWithItsChecksum() throws Exception {
        try (JarFile j = new JarFile(jar().toFile())) {
            for (String platform : List.of("linux-amd64", "linux-arm64")) {
                String name = "org/rlmm/plugin/bin/" + platform + "/rlmm";
                JarEntry bin = j.getJarEntry(name);
                JarEntry sum = j.getJarEntry(name + ".sha256");
                assertNotNull(bin, name + " is not in the jar (scripts/plugin.sh builds it)");
                assertNotNull(sum, name + ".sha256 is not in the jar");
                byte[] b;
                try (java.io.InputStream in = j.getInputStream(bin)) {
                    b = in.readAllBytes();
                }
                String want;
                try (java.io.InputStream in = j.getInputStream(sum)) {
                    want = new String(in.readAllBytes(), java.nio.charset.StandardCharsets.US_ASCII).trim().split("\\s+")[0];
                }
                String got = java.util.HexFormat.of().formatHex(java.security.MessageDigest.getInstance("SHA-256").digest(b));
                assertEquals(want, got, name + ": its checksum file");
                // A static Linux executable for its architecture: ELF, 64-bit, little-endian, e_machine.
                assertEquals(0x7f, b[0]);
                assertEquals("ELF", new String(b, 1, 3, java.nio.charset.StandardCharsets.US_ASCII), name);
                assertEquals(2, b[4], name + ": 64-bit");
                assertEquals(ELF_MACHINE.get(platform), (b[18] & 0xff) | (b[19] & 0xff) << 8, name + ": e_machine");
            }
        }
    }

    /**
     * With no rlmm.serve.binary, as README's install configures it: the plugin extracts the jar's
     * own binary for this host into its work directory and runs that.
     */
    @Test
    void theJarLoadedAsABrokerLoadsItServesOverTheUnixSocket() throws Exception {
        ClassLoader parent = RemoteLogMetadataManager.class.getClassLoader();
        try (ChildFirst loader = new ChildFirst(jar().toUri().toURL(), parent)) {
            Class<?> cls = loader.loadClass(CLASS);
            assertEquals(loader, cls.getClassLoader(), "the plugin class comes from the jar");
            RemoteLogMetadataManager m = (RemoteLogMetadataManager) cls.getDeclaredConstructor().newInstance();
            try {
                Map<String, Object> config = new java.util.HashMap<>(TestSupport.embeddedConfig(dir));
                config.remove("rlmm.serve.binary");
                m.configure(config);
                Path extracted = PluginConfig.defaultWorkDir(Paths.get((String) config.get("log.dir"))).resolve("rlmm");
                assertTrue(Files.isExecutable(extracted), "the jar's binary is extracted to " + extracted);
                String platform = BinaryExtractor.platform(System.getProperty("os.name"), System.getProperty("os.arch"));
                try (JarFile j = new JarFile(jar().toFile());
                        java.io.InputStream in = j.getInputStream(j.getJarEntry("org/rlmm/plugin/bin/" + platform + "/rlmm.sha256"))) {
                    String want = new String(in.readAllBytes(), java.nio.charset.StandardCharsets.US_ASCII).split("\\s+")[0];
                    String got = BinaryExtractor.sha256(Files.newInputStream(extracted), java.io.OutputStream.nullOutputStream());
                    assertEquals(want, got, "the extracted binary is the jar's for " + platform);
                }
                TopicIdPartition tp = TestSupport.newPartition("shaded");
                TestSupport.assignAndAwaitReady(m, tp, Duration.ofSeconds(30));
                RemoteLogSegmentMetadata s = TestSupport.segment(tp, 0, 9, Optional.empty(), true, 0, 0);
                m.addRemoteLogSegmentMetadata(s).get(10, TimeUnit.SECONDS);
                RemoteLogSegmentMetadataUpdate f = TestSupport.update(s, RemoteLogSegmentState.COPY_SEGMENT_FINISHED, Optional.empty());
                m.updateRemoteLogSegmentMetadata(f).get(10, TimeUnit.SECONDS);
                assertEquals(Optional.of(s.createWithUpdates(f)), m.remoteLogSegmentMetadata(tp, 0, 3));
                assertFalse(classVisible(parent, "com.google.protobuf.MessageLite"), "the test's parent loader has no protobuf");
            } finally {
                m.close();
            }
        }
    }

    /**
     * A Kafka 4.0 broker: a parent loader with Kafka 4.0.0's kafka-clients and kafka-storage-api
     * (no KIP-877 Monitorable, no PluginMetrics) and slf4j only, nothing of the test's class path.
     * The main class loads, configures, serves and registers its metrics with 4.0's metrics
     * classes (in this JVM's JMX), and closes.
     */
    @Test
    void theJarLoadsAndRegistersItsMetricsOnKafka40() throws Exception {
        String lib = System.getProperty("kafka.40.lib");
        if (lib == null || !Files.isDirectory(Paths.get(lib))) {
            fail("system property kafka.40.lib does not name Kafka 4.0.0's API jars (" + lib + "): run mvn verify");
        }
        List<URL> urls = new ArrayList<>();
        for (String name : List.of("kafka-clients.jar", "kafka-storage-api.jar", "slf4j-api.jar")) {
            urls.add(Paths.get(lib, name).toUri().toURL());
        }
        try (URLClassLoader kafka40 = new URLClassLoader(urls.toArray(new URL[0]), ClassLoader.getPlatformClassLoader());
                ChildFirst loader = new ChildFirst(jar().toUri().toURL(), kafka40)) {
            assertFalse(classVisible(kafka40, "org.apache.kafka.common.metrics.Monitorable"), "4.0.0 has no Monitorable");
            assertTrue(classVisible(kafka40, "org.apache.kafka.common.utils.Exit"), "4.0.0's Exit");
            Class<?> cls = loader.loadClass(CLASS);
            Object m = cls.getDeclaredConstructor().newInstance();
            Class<?> rlmmApi = kafka40.loadClass("org.apache.kafka.server.log.remote.storage.RemoteLogMetadataManager");
            assertTrue(rlmmApi.isInstance(m), "a 4.0 RemoteLogMetadataManager");
            javax.management.ObjectName metrics = new javax.management.ObjectName(
                    "kafka.server:type=rlmm-plugin,broker-id=" + TestSupport.BROKER_ID);
            javax.management.MBeanServer jmx = java.lang.management.ManagementFactory.getPlatformMBeanServer();
            try {
                cls.getMethod("configure", Map.class).invoke(m, TestSupport.embeddedConfig(dir));
                TestSupport.await("child-up 1 in JMX on 4.0", Duration.ofSeconds(30),
                        () -> jmxValue(jmx, metrics, "child-up") == 1);
                assertEquals(0, jmxValue(jmx, metrics, "failed"));
            } finally {
                cls.getMethod("close").invoke(m);
            }
            assertFalse(jmx.isRegistered(metrics), "close unregisters the metrics");
        }
    }

    private static double jmxValue(javax.management.MBeanServer jmx, javax.management.ObjectName name, String attribute) {
        try {
            return jmx.isRegistered(name) ? ((Number) jmx.getAttribute(name, attribute)).doubleValue() : -1;
        } catch (javax.management.JMException e) {
            throw new AssertionError(e);
        }
    }

    /**
     * A JVM that starts many brokers (docs/COMPATIBILITY.md) loads the jar in many class
     * loaders. Each loader is a plugin of its own that must reach a running rlmm serve over the
     * Unix socket. gRPC's pooled buffer allocator, one per loader in a static field, kept its
     * direct-memory chunks after close, so the JVM ran out of direct memory (64 MB in this
     * execution, see pom.xml: about 15 loaders) and the next channel blocked in its first write.
     */
    @Test
    @Timeout(value = 5, unit = TimeUnit.MINUTES)
    void fortyClassLoadersInOneJvmEachReachTheServerOverTheUnixSocket() throws Exception {
        ClassLoader parent = RemoteLogMetadataManager.class.getClassLoader();
        // Kept open to the end, as a broker keeps its plugin's loader: a closed URLClassLoader
        // cannot load the classes the instance's last threads still need while they stop.
        List<ChildFirst> loaders = new ArrayList<>();
        try (TestSupport.Server server = TestSupport.Server.start(dir)) {
            for (int i = 0; i < LOADERS; i++) {
                ChildFirst loader = new ChildFirst(jar().toUri().toURL(), parent);
                loaders.add(loader);
                RemoteLogMetadataManager m = (RemoteLogMetadataManager) loader.loadClass(CLASS).getDeclaredConstructor().newInstance();
                try {
                    m.configure(Map.of("broker.id", 1, "log.dir", dir.toString(), "rlmm.serve.socket", server.socket.toString()));
                    TopicIdPartition tp = TestSupport.newPartition("loader" + i);
                    TestSupport.assignAndAwaitReady(m, tp, Duration.ofSeconds(20));
                } catch (Throwable e) {
                    throw new AssertionError("class loader " + (i + 1) + " of " + LOADERS + " did not reach rlmm serve", e);
                } finally {
                    m.close();
                }
                System.out.println("loader " + (i + 1) + ": reached the server; open fds " + openFds());
            }
            assertTrue(server.alive(), "the server outlived its clients");
        } finally {
            for (ChildFirst l : loaders) {
                l.close();
            }
        }
    }

    private static long openFds() throws IOException {
        try (java.util.stream.Stream<Path> s = Files.list(Paths.get("/proc/self/fd"))) {
            return s.count();
        }
    }

    private static final int LOADERS = 40;

    private static boolean classVisible(ClassLoader l, String name) {
        try {
            Class.forName(name, false, l);
            return true;
        } catch (ClassNotFoundException e) {
            return false;
        }
    }
}

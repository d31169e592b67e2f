package org.rlmm.plugin;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * What of failing loudly a unit test adds to test/broker/failloud_test.go (which asserts a real
 * broker JVM's exit status 1 for a refused setting, another API version and the init timeout): exit
 * code 2, even with the very words of a refusal, is retried and does not stop the broker (Kafka's
 * Exit.exit, recorded by {@link TestSupport.ExitRecorder}); the init timeout's default.
 */
class FailLoudlyTest extends ManagerFixture {
    /** A stand-in for rlmm that appends a line to starts on each start, prints out and exits with code. */
    private Path fakeBinary(String name, String out, int code) throws IOException {
        Path bin = dir.resolve(name);
        Path starts = dir.resolve(name + ".starts");
        Files.writeString(bin, "#!/bin/sh\necho start >> '" + starts + "'\necho '" + out + "' >&2\nexit " + code + "\n",
                StandardCharsets.UTF_8);
        Files.setPosixFilePermissions(bin, PosixFilePermissions.fromString("rwx------"));
        return bin;
    }

    private long starts(String name) throws IOException {
        Path p = dir.resolve(name + ".starts");
        return Files.exists(p) ? Files.readAllLines(p).size() : 0;
    }

    private Map<String, Object> config(Path binary) {
        Map<String, Object> c = TestSupport.embeddedConfig(dir);
        c.put("rlmm.serve.binary", binary.toString());
        c.put("rlmm.serve.restart.backoff.ms", "10");
        c.put("rlmm.serve.restart.backoff.max.ms", "20");
        c.put("rlmm.serve.call.timeout.ms", "30000");
        return c;
    }

    @Test
    void exitCode2IsRetriedWhateverItsOutputSays() throws Exception {
        // The words of a refused setting, under the could-not-run code: retried, never taken for a refusal.
        Path bin = fakeBinary("couldnotrun", "rlmm: --properties x: invalid argument: flag --foo", 2);
        Map<String, Object> c = config(bin);
        c.put(PluginConfig.INIT_TIMEOUT, "600000");
        try (TestSupport.ExitRecorder exit = new TestSupport.ExitRecorder()) {
            started(c);
            TestSupport.await("three starts of a child that exits 2", READY, () -> {
                try {
                    return starts("couldnotrun") >= 3;
                } catch (IOException e) {
                    throw new RuntimeException(e);
                }
            });
            assertFalse(exit.exited(), "exit code 2 stopped the broker");
        }
    }

    @Test
    void theInitTimeoutDefaultsToKafkasInitializationTimeout() {
        Map<String, Object> c = TestSupport.embeddedConfig(dir);
        assertEquals(Duration.ofMillis(120_000), PluginConfig.parse(c).initTimeout());
        c.put(PluginConfig.KAFKA_INIT_TIMEOUT, "45000");
        assertEquals(Duration.ofMillis(45_000), PluginConfig.parse(c).initTimeout());
        c.put(PluginConfig.INIT_TIMEOUT, "7000");
        assertEquals(Duration.ofMillis(7_000), PluginConfig.parse(c).initTimeout());
    }

    @Test
    void aServerOfThisApiVersionIsTaken() throws Exception {
        try (TestSupport.ExitRecorder exit = new TestSupport.ExitRecorder()) {
            started(TestSupport.embeddedConfig(dir));
            assertTrue(TestSupport.awaitServer(TestSupport.BROKER_ID, READY), "the child of the same API version answers");
            assertFalse(exit.exited());
        }
    }
}

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
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.server.log.remote.storage.RemoteStorageException;
import org.junit.jupiter.api.Test;

/**
 * A child that cannot serve stops the broker as Kafka's own manager does when it cannot initialize
 * (Kafka's Exit.exit(1), recorded here by {@link TestSupport.ExitRecorder}): a refused setting (exit
 * code 3, whatever the output says), a first child not ready within rlmm.serve.init.timeout.ms, a
 * server of another API version. Exit code 2 with the very words of a refusal is retried.
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
    void aRefusedSettingStopsTheBrokerAtOnce() throws Exception {
        Path bin = fakeBinary("refuses", "time=x level=ERROR msg=\"some.setting: not a number\"", ServeProcess.EXIT_SETTINGS_REFUSED);
        try (TestSupport.ExitRecorder exit = new TestSupport.ExitRecorder()) {
            started(config(bin));
            String why = exit.await("a child that exits 3", READY);
            assertEquals(BrokerExit.STATUS, exit.status());
            assertTrue(why.contains("exit code 3") && why.contains("some.setting: not a number"), why);
            assertEquals(1, starts("refuses"), "a refused setting is not retried");
            TopicIdPartition tp = TestSupport.newPartition("refused");
            RemoteStorageException e = assertThrows(RemoteStorageException.class, () -> rlmm.highestOffsetForEpoch(tp, 0));
            assertTrue(e.getMessage().contains("some.setting: not a number"), e.getMessage());
            assertFalse(rlmm.isReady(tp));
            assertEquals(1, exit.calls(), "one exit");
        }
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
    void aFirstChildNotReadyWithinTheInitTimeoutStopsTheBroker() throws Exception {
        Path bin = dir.resolve("hangs");
        Path pidFile = dir.resolve("hangs.pid");
        Files.writeString(bin, "#!/bin/sh\necho $$ > '" + pidFile + "'\nexec sleep 600\n", StandardCharsets.UTF_8);
        Files.setPosixFilePermissions(bin, PosixFilePermissions.fromString("rwx------"));
        Map<String, Object> c = config(bin);
        c.put(PluginConfig.INIT_TIMEOUT, "1500");
        try (TestSupport.ExitRecorder exit = new TestSupport.ExitRecorder()) {
            started(c);
            String why = exit.await("a child that never answers", READY);
            assertEquals(BrokerExit.STATUS, exit.status());
            assertTrue(why.contains(PluginConfig.INIT_TIMEOUT) && why.contains("1500 ms"), why);
            long pid = Long.parseLong(Files.readString(pidFile).trim());
            TestSupport.assertGone(pid, READY);
            assertFalse(rlmm.isReady(TestSupport.newPartition("hangs")));
        }
    }

    @Test
    void theInitTimeoutDefaultsToKafkasInitializationTimeout() {
        Map<String, Object> c = TestSupport.embeddedConfig(dir);
        assertEquals(Duration.ofMillis(120_000), PluginConfig.parse(c).initTimeout);
        c.put(PluginConfig.KAFKA_INIT_TIMEOUT, "45000");
        assertEquals(Duration.ofMillis(45_000), PluginConfig.parse(c).initTimeout);
        c.put(PluginConfig.INIT_TIMEOUT, "7000");
        assertEquals(Duration.ofMillis(7_000), PluginConfig.parse(c).initTimeout);
    }

    @Test
    void aServerOfAnotherApiVersionIsRefusedNamingBoth() throws Exception {
        Map<String, Object> c = TestSupport.embeddedConfig(dir);
        c.put("rlmm.serve.args", "--test-api-version 99");
        try (TestSupport.ExitRecorder exit = new TestSupport.ExitRecorder()) {
            started(c);
            String why = exit.await("a server of API version 99", READY);
            assertEquals(BrokerExit.STATUS, exit.status());
            assertTrue(why.contains("version 99") && why.contains("version " + RlmmRemoteLogMetadataManager.API_VERSION), why);
            TestSupport.await("the refused child stopped", READY, () -> rlmm.childPid() < 0);
            List<ProcessHandle> left = TestSupport.processesNaming(dir.toString());
            assertTrue(left.isEmpty(), "a refused child still runs: " + left);
            TopicIdPartition tp = TestSupport.newPartition("version");
            RemoteStorageException e = assertThrows(RemoteStorageException.class, () -> rlmm.highestOffsetForEpoch(tp, 0));
            assertTrue(e.getMessage().contains("version 99"), e.getMessage());
        }
    }

    @Test
    void aServerOfThisApiVersionIsTaken() throws Exception {
        try (TestSupport.ExitRecorder exit = new TestSupport.ExitRecorder()) {
            started(TestSupport.embeddedConfig(dir));
            assertTrue(rlmm.awaitServer(READY), "the child of the same API version answers");
            assertFalse(exit.exited());
        }
    }
}

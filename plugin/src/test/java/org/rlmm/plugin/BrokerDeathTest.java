package org.rlmm.plugin;

import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A broker killed with -9 leaves no rlmm serve behind (the child's stdin is a pipe from it). */
class BrokerDeathTest {
    @TempDir
    Path dir;

    /** The "broker": configures the plugin, prints its child's pid, then waits to be killed. */
    public static void main(String[] args) throws Exception {
        Map<String, Object> c = TestSupport.embeddedConfig(Paths.get(args[0]));
        RlmmRemoteLogMetadataManager m = new RlmmRemoteLogMetadataManager();
        m.configure(c);
        if (!TestSupport.awaitServer(TestSupport.BROKER_ID, Duration.ofSeconds(60))) {
            throw new IllegalStateException("rlmm serve did not answer within 60 s");
        }
        System.out.println("child=" + TestSupport.childPid());
        System.out.flush();
        Thread.sleep(Long.MAX_VALUE);
    }

    @Test
    void theChildStopsWhenTheBrokerIsKilled() throws Exception {
        Path java = Paths.get(System.getProperty("java.home"), "bin", "java");
        Process broker = new ProcessBuilder(java.toString(), "-cp", System.getProperty("java.class.path"),
                "-Drlmm.binary=" + TestSupport.rlmmBinary(), BrokerDeathTest.class.getName(), dir.toString())
                .redirectError(dir.resolve("broker.err").toFile())
                .start();
        long child = -1;
        try (BufferedReader r = new BufferedReader(new InputStreamReader(broker.getInputStream(), StandardCharsets.UTF_8))) {
            String line = r.readLine();
            if (line == null || !line.startsWith("child=")) {
                broker.destroyForcibly();
                fail("the broker process printed " + line + "; its stderr is in " + dir.resolve("broker.err"));
            }
            child = Long.parseLong(line.substring("child=".length()));
            assertTrue(child > 0);
            assertTrue(ProcessHandle.of(child).map(ProcessHandle::isAlive).orElse(false), "child running");
            broker.destroyForcibly(); // SIGKILL: no close(), no shutdown hook
            broker.waitFor();
            TestSupport.assertGone(child, Duration.ofSeconds(30));
        } finally {
            if (child > 0) {
                ProcessHandle.of(child).ifPresent(ProcessHandle::destroyForcibly);
            }
        }
    }
}

package org.rlmm.plugin;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.rlmm.plugin.TestSupport.assignAndAwaitReady;
import static org.rlmm.plugin.TestSupport.embeddedConfig;
import static org.rlmm.plugin.TestSupport.newPartition;
import static org.rlmm.plugin.TestSupport.segment;
import static org.rlmm.plugin.TestSupport.signal;
import static org.rlmm.plugin.TestSupport.toList;
import static org.rlmm.plugin.TestSupport.update;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadata;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadataUpdate;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentState;
import org.apache.kafka.server.log.remote.storage.RemoteResourceNotFoundException;
import org.apache.kafka.server.log.remote.storage.RemoteStorageException;
import org.junit.jupiter.api.Test;

/** Mutations on rlmm serve's framed socket (FramedPool, mutation connections), the default path. */
class FramedMutationsTest extends ManagerFixture {

    /** The outcome of an awaited mutation: "ok", or the failure's class and what rlmm serve said. */
    private static String outcome(java.util.concurrent.CompletableFuture<Void> f) throws InterruptedException {
        try {
            f.get(30, TimeUnit.SECONDS);
            return "ok";
        } catch (ExecutionException e) {
            String msg = e.getCause().getMessage();
            // "<what> failed at rlmm serve <target>: <rlmm's message>": the targets differ between
            // instances. Other failures (a closed plugin's) are kept whole.
            int serve = msg.indexOf("rlmm serve ");
            int at = serve < 0 ? -1 : msg.indexOf(": ", serve);
            return e.getCause().getClass().getName() + (at < 0 ? ": " + msg : msg.substring(at));
        } catch (java.util.concurrent.TimeoutException e) {
            throw new AssertionError("a mutation not settled in 30 s", e);
        }
    }

    @Test
    void framedMutationsFromManyThreadsAreRecorded() throws Exception {
        RlmmRemoteLogMetadataManager m = started(embeddedConfig(dir));
        int threads = 8;
        int each = 25;
        List<TopicIdPartition> tps = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            TopicIdPartition tp = newPartition("framed-mutations-" + t);
            tps.add(tp);
            assignAndAwaitReady(m, tp, READY);
        }
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            List<Future<List<RemoteLogSegmentMetadata>>> fs = new ArrayList<>();
            for (TopicIdPartition tp : tps) {
                fs.add(pool.submit(() -> FramedLookupsTest.copy(m, tp, each)));
            }
            for (int t = 0; t < threads; t++) {
                List<RemoteLogSegmentMetadata> want = fs.get(t).get(120, TimeUnit.SECONDS);
                assertEquals(new HashSet<>(want), new HashSet<>(toList(m.listRemoteLogSegments(tps.get(t)))),
                        "every segment copied on " + tps.get(t) + " is listed, finished");
            }
        } finally {
            pool.shutdownNow();
        }
        // Refusals: a finish of a segment never added, an add to a partition not held.
        TopicIdPartition held = newPartition("framed-mutations-refused");
        assignAndAwaitReady(m, held, READY);
        RemoteLogSegmentMetadata never = segment(held, 0, 9, Optional.empty(), true, 0, 0L);
        RemoteLogSegmentMetadataUpdate finishNever = update(never, RemoteLogSegmentState.COPY_SEGMENT_FINISHED, Optional.empty());
        RemoteLogSegmentMetadata notHeld = segment(newPartition("framed-mutations-not-held"), 0, 9, Optional.empty(), true, 0, 0L);
        String unknown = outcome(m.updateRemoteLogSegmentMetadata(finishNever));
        assertTrue(unknown.startsWith(RemoteResourceNotFoundException.class.getName()), unknown);
        String refused = outcome(m.addRemoteLogSegmentMetadata(notHeld));
        assertTrue(refused.startsWith(RemoteStorageException.class.getName()) && refused.contains("NOT_ASSIGNED"), refused);
    }

    @Test
    void aHungChildFailsTheMutationAtItsDeadline() throws Exception {
        Map<String, Object> c = embeddedConfig(dir);
        long timeoutMs = 1000;
        c.put(PluginConfig.MUTATION_TIMEOUT, Long.toString(timeoutMs));
        TopicIdPartition tp = startedWithPartition(c, "framed-mutation-hung");
        RlmmRemoteLogMetadataManager m = rlmm;
        FramedLookupsTest.copy(m, tp, 2);
        long pid = TestSupport.childPid();
        RemoteLogSegmentMetadata s = segment(tp, 20, 29, Optional.empty(), true, 0, 20L);
        signal(pid, "STOP");
        try {
            long t0 = System.nanoTime();
            ExecutionException e = assertThrows(ExecutionException.class,
                    () -> m.addRemoteLogSegmentMetadata(s).get(30, TimeUnit.SECONDS));
            long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
            assertTrue(ms >= timeoutMs - 5 && ms < timeoutMs + 1500, "the framed mutation failed after " + ms
                    + " ms; its bound is " + timeoutMs + " ms");
            assertInstanceOf(RemoteStorageException.class, e.getCause());
            assertTrue(e.getCause().getMessage().contains("did not answer within " + timeoutMs + " ms"), e.getCause().getMessage());
        } finally {
            signal(pid, "CONT");
        }
        // The event may have been recorded meanwhile (as with a gRPC deadline): the finish says which.
        RemoteLogSegmentMetadataUpdate f = update(s, RemoteLogSegmentState.COPY_SEGMENT_FINISHED, Optional.empty());
        String after = outcome(m.updateRemoteLogSegmentMetadata(f));
        assertTrue(after.equals("ok") || after.contains("UNKNOWN_SEGMENT") || after.contains("RemoteResourceNotFound"), after);
        assertEquals(pid, TestSupport.childPid(), "the same child answers after SIGCONT");
    }

    /**
     * close stops the child (SIGTERM, then SIGKILL after rlmm.serve.stop.timeout.ms), then closes the
     * session and its pools: a mutation waiting on a child that does not answer (SIGSTOP) is released
     * by then, as a gRPC one is, not after its own 60 s bound.
     */
    @Test
    void closeReleasesAFramedMutationInFlight() throws Exception {
        Map<String, Object> c = embeddedConfig(dir);
        c.put(PluginConfig.MUTATION_TIMEOUT, "60000");
        c.put("rlmm.serve.stop.timeout.ms", "2000");
        TopicIdPartition tp = startedWithPartition(c, "framed-mutation-close");
        RlmmRemoteLogMetadataManager m = rlmm;
        FramedLookupsTest.copy(m, tp, 1);
        long pid = TestSupport.childPid();
        RemoteLogSegmentMetadata s = segment(tp, 10, 19, Optional.empty(), true, 0, 10L);
        ExecutorService pool = Executors.newSingleThreadExecutor();
        signal(pid, "STOP");
        try {
            Future<String> f = pool.submit(() -> outcome(m.addRemoteLogSegmentMetadata(s)));
            Thread.sleep(300);
            assertFalse(f.isDone(), () -> "the mutation waits for the stopped child; it ended: " + ended(f));
            m.close();
            String got = f.get(20, TimeUnit.SECONDS); // far below the mutation's 60 s bound
            assertTrue(got.startsWith(RemoteStorageException.class.getName()), got);
        } finally {
            pool.shutdownNow();
            ProcessHandle.of(pid).ifPresent(h -> {
                try {
                    signal(pid, "CONT");
                } catch (Exception ignored) {
                    // gone already
                }
            });
        }
    }

    /** What a finished future gave, for a failure's message. */
    private static String ended(Future<String> f) {
        try {
            return f.get();
        } catch (Exception e) {
            return e.toString();
        }
    }
}

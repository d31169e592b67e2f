package org.rlmm.plugin;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.rlmm.plugin.TestSupport.assignAndAwaitReady;
import static org.rlmm.plugin.TestSupport.embeddedConfig;
import static org.rlmm.plugin.TestSupport.newPartition;
import static org.rlmm.plugin.TestSupport.segment;
import static org.rlmm.plugin.TestSupport.signal;
import static org.rlmm.plugin.TestSupport.update;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadata;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadataUpdate;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentState;
import org.apache.kafka.server.log.remote.storage.RemoteResourceNotFoundException;
import org.apache.kafka.server.log.remote.storage.RemoteStorageException;
import org.junit.jupiter.api.Test;

/** The lookup by (epoch, offset) on rlmm serve's framed socket (rpc/brokerframe): answers, deadlines, a child killed under a call. */
class FramedLookupsTest extends ManagerFixture {

    /** Finished segments [i*10, i*10+9] in epoch 0 (epoch 1 from i*10+5), returned as the plugin reads them. */
    static List<RemoteLogSegmentMetadata> copy(RlmmRemoteLogMetadataManager m, TopicIdPartition tp, int n)
            throws Exception {
        List<RemoteLogSegmentMetadata> out = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            RemoteLogSegmentMetadata s = segment(tp, i * 10L, i * 10L + 9, Optional.empty(), true, 0, i * 10L, 1, i * 10L + 5);
            RemoteLogSegmentMetadataUpdate f = update(s, RemoteLogSegmentState.COPY_SEGMENT_FINISHED, Optional.empty());
            m.addRemoteLogSegmentMetadata(s).get(10, TimeUnit.SECONDS);
            m.updateRemoteLogSegmentMetadata(f).get(10, TimeUnit.SECONDS);
            out.add(s.createWithUpdates(f));
        }
        return out;
    }

    /** The answer or the exception of a lookup. */
    private static Object outcome(RlmmRemoteLogMetadataManager m, TopicIdPartition tp, int epoch, long offset) {
        try {
            return m.remoteLogSegmentMetadata(tp, epoch, offset);
        } catch (RemoteStorageException | RuntimeException e) {
            return e.getClass().getName() + ": " + e.getMessage();
        }
    }

    @Test
    void framedLookupsFromManyThreadsAnswerAsTheServerHoldsThem() throws Exception {
        Map<String, Object> c = embeddedConfig(dir);
        long watchdogsBefore = watchdogs();
        RlmmRemoteLogMetadataManager m = started(c);
        TopicIdPartition tp = newPartition("framed-threads");
        assignAndAwaitReady(m, tp, READY);
        List<TopicIdPartition> notHeld = new ArrayList<>();
        for (int i = 0; i < 10; i++) {
            notHeld.add(newPartition("framed-not-held-" + i));
        }
        List<RemoteLogSegmentMetadata> segs = copy(m, tp, 20);
        int threads = 8;
        int each = 400;
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        AtomicInteger hits = new AtomicInteger();
        AtomicInteger refusals = new AtomicInteger();
        try {
            List<Future<?>> fs = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                fs.add(pool.submit(() -> {
                    ThreadLocalRandom r = ThreadLocalRandom.current();
                    for (int i = 0; i < each; i++) {
                        int epoch = r.nextInt(3); // epoch 2 is a miss everywhere
                        long offset = r.nextLong(-5, 220); // past 199 a miss
                        TopicIdPartition p = r.nextInt(10) == 0 ? notHeld.get(r.nextInt(notHeld.size())) : tp;
                        Object framed = outcome(m, p, epoch, offset);
                        if (framed instanceof Optional<?> o && o.isPresent()) {
                            hits.incrementAndGet();
                            RemoteLogSegmentMetadata s = (RemoteLogSegmentMetadata) o.get();
                            assertTrue(s.startOffset() <= offset && offset <= s.endOffset(), s + " for offset " + offset);
                            assertTrue(segs.contains(s), s + " is one of the copied segments");
                        } else if (framed instanceof String why) {
                            assertTrue(p != tp && why.startsWith(RemoteResourceNotFoundException.class.getName()), why);
                            refusals.incrementAndGet();
                        }
                    }
                    return null;
                }));
            }
            for (Future<?> f : fs) {
                f.get(120, TimeUnit.SECONDS);
            }
        } finally {
            pool.shutdownNow();
        }
        assertTrue(hits.get() > 0 && refusals.get() > 0, hits + " hits, " + refusals + " refusals: both kinds were asked");
        assertEquals(Optional.of(segs.get(4)), m.remoteLogSegmentMetadata(tp, 0, 42));
        assertTrue(watchdogs() > watchdogsBefore, "a watchdog while the session is open");
        // No watchdog outlives close.
        m.close();
        TestSupport.await("the watchdog thread to end", READY, () -> watchdogs() <= watchdogsBefore);
    }

    private static long watchdogs() {
        return Thread.getAllStackTraces().keySet().stream()
                .filter(t -> t.isAlive() && t.getName().equals("rlmm-plugin-deadline")).count();
    }

    @Test
    void aHungChildFailsTheLookupAtItsDeadline() throws Exception {
        Map<String, Object> c = embeddedConfig(dir);
        long timeoutMs = 1000;
        c.put("rlmm.serve.call.timeout.ms", Long.toString(timeoutMs));
        RlmmRemoteLogMetadataManager m = started(c);
        TopicIdPartition tp = newPartition("framed-hung");
        assignAndAwaitReady(m, tp, READY);
        List<RemoteLogSegmentMetadata> segs = copy(m, tp, 3);
        assertEquals(Optional.of(segs.get(1)), m.remoteLogSegmentMetadata(tp, 0, 12));
        long pid = TestSupport.childPid();
        signal(pid, "STOP");
        try {
            long t0 = System.nanoTime();
            RemoteStorageException framed = assertThrows(RemoteStorageException.class, () -> m.remoteLogSegmentMetadata(tp, 0, 12));
            long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
            assertTrue(ms >= timeoutMs - 5 && ms < timeoutMs + 1500, "the framed lookup failed after " + ms + " ms; its bound is "
                    + timeoutMs + " ms");
            assertTrue(framed.getMessage().contains("did not answer within " + timeoutMs + " ms"), framed.getMessage());
        } finally {
            signal(pid, "CONT");
        }
        assertEquals(Optional.of(segs.get(2)), m.remoteLogSegmentMetadata(tp, 0, 22));
        assertEquals(pid, TestSupport.childPid(), "the same child answers after SIGCONT");
    }

    @Test
    void theChildKilledMidLookupIsAskedAgainOnItsSuccessor() throws Exception {
        Map<String, Object> c = embeddedConfig(dir);
        long timeoutMs = 20_000;
        c.put("rlmm.serve.call.timeout.ms", Long.toString(timeoutMs));
        RlmmRemoteLogMetadataManager m = started(c);
        TopicIdPartition tp = newPartition("framed-kill-9");
        assignAndAwaitReady(m, tp, READY);
        List<RemoteLogSegmentMetadata> segs = copy(m, tp, 3);
        assertEquals(Optional.of(segs.get(0)), m.remoteLogSegmentMetadata(tp, 0, 2));
        long pid = TestSupport.childPid();
        ExecutorService pool = Executors.newSingleThreadExecutor();
        try {
            // Stopped first, so that the lookup is surely waiting in its read when the child dies.
            signal(pid, "STOP");
            long t0 = System.nanoTime();
            Future<Optional<RemoteLogSegmentMetadata>> f = pool.submit(() -> m.remoteLogSegmentMetadata(tp, 0, 22));
            Thread.sleep(300);
            assertTrue(!f.isDone(), "the lookup waits for the stopped child");
            ProcessHandle.of(pid).orElseThrow().destroyForcibly();
            TestSupport.assertGone(pid, Duration.ofSeconds(10));
            assertEquals(Optional.of(segs.get(2)), f.get(timeoutMs * 2, TimeUnit.MILLISECONDS),
                    "the lookup is answered by the restarted child");
            long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
            assertTrue(ms < timeoutMs, "answered after " + ms + " ms, within its bound of " + timeoutMs + " ms");
        } finally {
            pool.shutdownNow();
            ProcessHandle.of(pid).ifPresent(ProcessHandle::destroyForcibly);
        }
        assertNotEquals(pid, TestSupport.childPid());
        assertEquals(Optional.of(segs.get(1)), m.remoteLogSegmentMetadata(tp, 0, 12));
    }
}

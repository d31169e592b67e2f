package org.rlmm.plugin;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;
import static org.rlmm.plugin.TestSupport.assignAndAwaitReady;
import static org.rlmm.plugin.TestSupport.embeddedConfig;
import static org.rlmm.plugin.TestSupport.newPartition;
import static org.rlmm.plugin.TestSupport.segment;
import static org.rlmm.plugin.TestSupport.toList;
import static org.rlmm.plugin.TestSupport.update;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.errors.ReplicaNotAvailableException;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadata;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadata.CustomMetadata;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadataUpdate;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentState;
import org.apache.kafka.server.log.remote.storage.RemotePartitionDeleteMetadata;
import org.apache.kafka.server.log.remote.storage.RemotePartitionDeleteState;
import org.apache.kafka.server.log.remote.storage.RemoteResourceNotFoundException;
import org.apache.kafka.server.log.remote.storage.RemoteStorageException;
import org.junit.jupiter.api.Test;

/** The plugin against a real `rlmm serve` child over rlmm's embedded log. */
class RlmmRemoteLogMetadataManagerTest extends ManagerFixture {

    /** started, then waits until the child answers (configure does not wait for it). */
    private RlmmRemoteLogMetadataManager startedAndUp(Map<String, Object> config) throws Exception {
        return startedAndUp(config, Outbox.Gate.OPEN);
    }

    private RlmmRemoteLogMetadataManager startedAndUp(Map<String, Object> config, Outbox.Gate gate) throws Exception {
        RlmmRemoteLogMetadataManager m = started(config, gate);
        assertTrue(TestSupport.awaitServer(TestSupport.BROKER_ID, READY), "rlmm serve answered within " + READY);
        return m;
    }

    @Test
    void everyMethodRoundTripsKafkasModel() throws Exception {
        RlmmRemoteLogMetadataManager m = started(embeddedConfig(dir));
        TopicIdPartition tp = newPartition("round-trip");
        assignAndAwaitReady(m, tp, READY);

        // Two epochs, custom metadata present, a transaction index.
        RemoteLogSegmentMetadata s1 = segment(tp, 0, 99, Optional.of(new CustomMetadata(new byte[] {1, 2, 3})), false,
                0, 0, 1, 40);
        // Custom metadata empty (not absent), no transaction index.
        RemoteLogSegmentMetadata s2 = segment(tp, 100, 199, Optional.of(new CustomMetadata(new byte[0])), true, 1, 100);
        // Custom metadata absent.
        RemoteLogSegmentMetadata s3 = segment(tp, 200, 299, Optional.empty(), true, 2, 200);
        for (RemoteLogSegmentMetadata s : List.of(s1, s2, s3)) {
            m.addRemoteLogSegmentMetadata(s).get(10, TimeUnit.SECONDS);
        }
        // STARTED segments are listed but never found by a lookup; absent and empty custom
        // metadata stay different.
        List<RemoteLogSegmentMetadata> started = toList(m.listRemoteLogSegments(tp));
        assertEquals(List.of(s1, s2, s3), started);
        assertEquals(Optional.of(new CustomMetadata(new byte[0])), started.get(1).customMetadata());
        assertEquals(Optional.empty(), started.get(2).customMetadata());
        assertEquals(Optional.empty(), m.remoteLogSegmentMetadata(tp, 0, 10));
        assertEquals(Optional.empty(), m.highestOffsetForEpoch(tp, 0));

        RemoteLogSegmentMetadataUpdate f1 = update(s1, RemoteLogSegmentState.COPY_SEGMENT_FINISHED,
                Optional.of(new CustomMetadata(new byte[] {9})));
        RemoteLogSegmentMetadataUpdate f2 = update(s2, RemoteLogSegmentState.COPY_SEGMENT_FINISHED,
                Optional.of(new CustomMetadata(new byte[0])));
        RemoteLogSegmentMetadataUpdate f3 = update(s3, RemoteLogSegmentState.COPY_SEGMENT_FINISHED, Optional.empty());
        for (RemoteLogSegmentMetadataUpdate u : List.of(f1, f2, f3)) {
            m.updateRemoteLogSegmentMetadata(u).get(10, TimeUnit.SECONDS);
        }
        RemoteLogSegmentMetadata d1 = s1.createWithUpdates(f1);
        RemoteLogSegmentMetadata d2 = s2.createWithUpdates(f2);
        RemoteLogSegmentMetadata d3 = s3.createWithUpdates(f3);

        // Lookups by (epoch, offset), every field as Kafka's model has it.
        Optional<RemoteLogSegmentMetadata> got = m.remoteLogSegmentMetadata(tp, 0, 10);
        assertEquals(Optional.of(d1), got);
        assertArrayEquals(new byte[] {9}, got.get().customMetadata().get().value());
        assertEquals(Map.of(0, 0L, 1, 40L), got.get().segmentLeaderEpochs());
        assertFalse(got.get().isTxnIdxEmpty());
        assertEquals(BROKER_UPDATER, got.get().brokerId());
        assertEquals(Optional.of(d1), m.remoteLogSegmentMetadata(tp, 1, 99));
        assertEquals(Optional.empty(), m.remoteLogSegmentMetadata(tp, 0, 50), "offset 50 is past epoch 0's end (39)");
        assertEquals(Optional.of(d2), m.remoteLogSegmentMetadata(tp, 1, 150));
        assertEquals(Optional.empty(), m.remoteLogSegmentMetadata(tp, 9, 150), "unknown epoch");

        // Highest offsets per epoch.
        assertEquals(Optional.of(39L), m.highestOffsetForEpoch(tp, 0));
        assertEquals(Optional.of(199L), m.highestOffsetForEpoch(tp, 1));
        assertEquals(Optional.of(299L), m.highestOffsetForEpoch(tp, 2));
        assertEquals(Optional.empty(), m.highestOffsetForEpoch(tp, 9));

        // Lists: all, and per epoch in start offset order; absent and empty custom metadata differ.
        List<RemoteLogSegmentMetadata> all = toList(m.listRemoteLogSegments(tp));
        assertEquals(List.of(d1, d2, d3), all);
        assertEquals(Optional.of(new CustomMetadata(new byte[0])), all.get(1).customMetadata());
        assertEquals(Optional.empty(), all.get(2).customMetadata());
        assertEquals(List.of(d1, d2), toList(m.listRemoteLogSegments(tp, 1)));
        assertEquals(List.of(), toList(m.listRemoteLogSegments(tp, 9)));

        // Sizes per epoch (a segment counts in every epoch it carries).
        assertEquals((long) s1.segmentSizeInBytes() + s2.segmentSizeInBytes(), m.remoteLogSize(tp, 1));
        assertEquals(s3.segmentSizeInBytes(), m.remoteLogSize(tp, 2));
        assertEquals(0L, m.remoteLogSize(tp, 9));

        // The next segment with a transaction index: s1 has one, s2 and s3 do not.
        assertEquals(Optional.of(d1), m.nextSegmentWithTxnIndex(tp, 0, 0));
        assertEquals(Optional.empty(), m.nextSegmentWithTxnIndex(tp, 2, 200));

        // Deletion: DELETE_SEGMENT_STARTED hides it from lookups, keeps it listed; FINISHED drops it.
        RemoteLogSegmentMetadataUpdate ds = update(s1, RemoteLogSegmentState.DELETE_SEGMENT_STARTED, Optional.empty());
        m.updateRemoteLogSegmentMetadata(ds).get(10, TimeUnit.SECONDS);
        assertEquals(Optional.empty(), m.remoteLogSegmentMetadata(tp, 0, 10));
        assertEquals(List.of(d1.createWithUpdates(ds), d2, d3), toList(m.listRemoteLogSegments(tp)));
        RemoteLogSegmentMetadataUpdate df = update(s1, RemoteLogSegmentState.DELETE_SEGMENT_FINISHED, Optional.empty());
        m.updateRemoteLogSegmentMetadata(df).get(10, TimeUnit.SECONDS);
        assertEquals(List.of(d2, d3), toList(m.listRemoteLogSegments(tp)));

        // Partition deletion: MARKED and STARTED keep the segments; FINISHED drops the partition's
        // state (rlmm then answers misses where Kafka's manager throws not-found).
        m.putRemotePartitionDeleteMetadata(new RemotePartitionDeleteMetadata(tp,
                RemotePartitionDeleteState.DELETE_PARTITION_MARKED, System.currentTimeMillis(), TestSupport.BROKER_ID))
                .get(10, TimeUnit.SECONDS);
        m.putRemotePartitionDeleteMetadata(new RemotePartitionDeleteMetadata(tp,
                RemotePartitionDeleteState.DELETE_PARTITION_STARTED, System.currentTimeMillis(), TestSupport.BROKER_ID))
                .get(10, TimeUnit.SECONDS);
        assertEquals(List.of(d2, d3), toList(m.listRemoteLogSegments(tp)));
        m.putRemotePartitionDeleteMetadata(new RemotePartitionDeleteMetadata(tp,
                RemotePartitionDeleteState.DELETE_PARTITION_FINISHED, System.currentTimeMillis(), TestSupport.BROKER_ID))
                .get(10, TimeUnit.SECONDS);
        assertEquals(List.of(), toList(m.listRemoteLogSegments(tp)));
        assertEquals(Optional.empty(), m.remoteLogSegmentMetadata(tp, 1, 150));

        // Stopping the partition is accepted; another partition stays served.
        m.onStopPartitions(Set.of(tp));
    }

    private static final int BROKER_UPDATER = TestSupport.BROKER_ID + 1;

    @Test
    void errorsMapAsKafkasOwnManagerMapsThem() throws Exception {
        RlmmRemoteLogMetadataManager m = started(embeddedConfig(dir));
        TopicIdPartition tp = newPartition("errors");
        assignAndAwaitReady(m, tp, READY);
        RemoteLogSegmentMetadata s = segment(tp, 0, 9, Optional.empty(), true, 0, 0);

        // Argument checks, thrown at once as Kafka's manager throws them.
        RemoteLogSegmentMetadata finished = s.createWithUpdates(update(s, RemoteLogSegmentState.COPY_SEGMENT_FINISHED, Optional.empty()));
        IllegalArgumentException wrongAdd = assertThrows(IllegalArgumentException.class,
                () -> m.addRemoteLogSegmentMetadata(finished));
        assertTrue(wrongAdd.getMessage().contains("COPY_SEGMENT_STARTED"), wrongAdd.getMessage());
        assertThrows(IllegalArgumentException.class, () -> m.updateRemoteLogSegmentMetadata(
                update(s, RemoteLogSegmentState.COPY_SEGMENT_STARTED, Optional.empty())));

        // An unknown segment: RemoteResourceNotFoundException in the future.
        ExecutionException unknown = assertThrows(ExecutionException.class, () -> m.updateRemoteLogSegmentMetadata(
                update(s, RemoteLogSegmentState.COPY_SEGMENT_FINISHED, Optional.empty())).get(10, TimeUnit.SECONDS));
        assertInstanceOf(RemoteResourceNotFoundException.class, unknown.getCause());
        assertTrue(unknown.getCause().getMessage().contains("unix:"), unknown.getCause().getMessage());

        // A transition the state machine forbids: RemoteStorageException with rlmm's verdict.
        m.addRemoteLogSegmentMetadata(s).get(10, TimeUnit.SECONDS);
        ExecutionException forbidden = assertThrows(ExecutionException.class, () -> m.updateRemoteLogSegmentMetadata(
                update(s, RemoteLogSegmentState.DELETE_SEGMENT_FINISHED, Optional.empty())).get(10, TimeUnit.SECONDS));
        assertInstanceOf(RemoteStorageException.class, forbidden.getCause());
        assertTrue(forbidden.getCause().getMessage().contains("INVALID_TRANSITION"), forbidden.getCause().getMessage());
        // The segment is unchanged by the refused event.
        assertEquals(List.of(s), toList(m.listRemoteLogSegments(tp)));

    }

    @Test
    void aMutationOfAPartitionNotHeldFailsInTheFuture() throws Exception {
        RlmmRemoteLogMetadataManager m = started(embeddedConfig(dir));
        // Nothing assigned: no metadata partition is consumed, so nothing can be read back.
        TopicIdPartition tp = newPartition("not-assigned");
        ExecutionException e = assertThrows(ExecutionException.class, () -> m.addRemoteLogSegmentMetadata(
                segment(tp, 0, 9, Optional.empty(), true, 0, 0)).get(30, TimeUnit.SECONDS));
        assertInstanceOf(RemoteStorageException.class, e.getCause());
        assertFalse(e.getCause() instanceof RemoteResourceNotFoundException, e.getCause().toString());
        assertTrue(e.getCause().getMessage().contains("NOT_ASSIGNED"), e.getCause().getMessage());
    }

    @Test
    void notReadyIsReplicaNotAvailable() throws Exception {
        // Kafka mode against a port nobody listens on: the server answers, its log never opens.
        Map<String, Object> c = TestSupport.kafkaConfig(dir, "127.0.0.1:9");
        c.put("rlmm.serve.call.timeout.ms", "2000");
        RlmmRemoteLogMetadataManager m = startedAndUp(c);
        TopicIdPartition tp = newPartition("not-ready");
        m.onPartitionLeadershipChanges(Set.of(tp), Set.of());
        assertFalse(m.isReady(tp));
        ReplicaNotAvailableException e = assertThrows(ReplicaNotAvailableException.class,
                () -> m.remoteLogSegmentMetadata(tp, 0, 0));
        assertTrue(e.getMessage().contains("unix:"), e.getMessage());
        assertThrows(ReplicaNotAvailableException.class, () -> m.highestOffsetForEpoch(tp, 0));
        assertThrows(ReplicaNotAvailableException.class, () -> m.listRemoteLogSegments(tp));
    }

    @Test
    void childKilledIsRestartedAndNothingAcknowledgedIsLost() throws Exception {
        Map<String, Object> c = embeddedConfig(dir);
        RlmmRemoteLogMetadataManager m = started(c);
        TopicIdPartition tp = newPartition("kill-9");
        assignAndAwaitReady(m, tp, READY);
        RemoteLogSegmentMetadata a = segment(tp, 0, 9, Optional.empty(), true, 0, 0);
        m.addRemoteLogSegmentMetadata(a).get(10, TimeUnit.SECONDS);
        RemoteLogSegmentMetadataUpdate fa = update(a, RemoteLogSegmentState.COPY_SEGMENT_FINISHED, Optional.empty());
        m.updateRemoteLogSegmentMetadata(fa).get(10, TimeUnit.SECONDS);

        long pid = TestSupport.childPid();
        assertTrue(pid > 0);
        ProcessHandle.of(pid).orElseThrow().destroyForcibly();
        TestSupport.assertGone(pid, Duration.ofSeconds(10));

        // The next calls wait for the restarted child (which got the partition back) and see a.
        TestSupport.await("a restarted child", READY, () -> TestSupport.childPid() > 0 && TestSupport.childPid() != pid);
        TestSupport.await("isReady after restart", READY, () -> m.isReady(tp));
        assertEquals(Optional.of(a.createWithUpdates(fa)), m.remoteLogSegmentMetadata(tp, 0, 5));

        RemoteLogSegmentMetadata b = segment(tp, 10, 19, Optional.empty(), true, 0, 10);
        m.addRemoteLogSegmentMetadata(b).get(10, TimeUnit.SECONDS);
        RemoteLogSegmentMetadataUpdate fb = update(b, RemoteLogSegmentState.COPY_SEGMENT_FINISHED, Optional.empty());
        m.updateRemoteLogSegmentMetadata(fb).get(10, TimeUnit.SECONDS);
        assertEquals(List.of(a.createWithUpdates(fa), b.createWithUpdates(fb)), toList(m.listRemoteLogSegments(tp)));
        assertNotEquals(pid, TestSupport.childPid());
    }

    @Test
    void childKilledWhileCopyingLosesNoAcknowledgedEvent() throws Exception {
        RlmmRemoteLogMetadataManager m = started(embeddedConfig(dir));
        TopicIdPartition tp = newPartition("kill-9-busy");
        assignAndAwaitReady(m, tp, READY);
        List<RemoteLogSegmentMetadata> acknowledged = new java.util.ArrayList<>();
        int failed = 0;
        long killAfter = 20;
        long pid = TestSupport.childPid();
        for (int i = 0; i < 60; i++) {
            if (i == killAfter) {
                ProcessHandle.of(pid).orElseThrow().destroyForcibly();
            }
            RemoteLogSegmentMetadata s = segment(tp, i * 10L, i * 10L + 9, Optional.empty(), true, 0, i * 10L);
            RemoteLogSegmentMetadataUpdate f = update(s, RemoteLogSegmentState.COPY_SEGMENT_FINISHED, Optional.empty());
            try {
                m.addRemoteLogSegmentMetadata(s).get(30, TimeUnit.SECONDS);
                m.updateRemoteLogSegmentMetadata(f).get(30, TimeUnit.SECONDS);
                acknowledged.add(s.createWithUpdates(f));
            } catch (ExecutionException e) {
                // The broker's copy fails and is retried with a new segment; what it saw
                // acknowledged must survive, what failed may or may not be there.
                assertInstanceOf(RemoteStorageException.class, e.getCause());
                failed++;
            }
        }
        assertNotEquals(pid, TestSupport.childPid(), "the child was restarted");
        TestSupport.await("isReady after restart", READY, () -> m.isReady(tp));
        List<RemoteLogSegmentMetadata> listed = toList(m.listRemoteLogSegments(tp));
        for (RemoteLogSegmentMetadata a : acknowledged) {
            assertTrue(listed.contains(a), "acknowledged " + a.remoteLogSegmentId() + " is missing after the restart");
            assertEquals(Optional.of(a), m.remoteLogSegmentMetadata(tp, 0, a.startOffset()));
        }
        assertTrue(acknowledged.size() > killAfter, "calls went on after the restart (" + acknowledged.size()
                + " acknowledged, " + failed + " failed)");
    }

    @Test
    void isReadyReadsWhatTheServerPushedWithoutACall() throws Exception {
        RlmmRemoteLogMetadataManager m = started(embeddedConfig(dir));
        TopicIdPartition tp = newPartition("ready-pushed");
        TopicIdPartition other = newPartition("ready-not-assigned");
        assignAndAwaitReady(m, tp, READY);
        long pid = TestSupport.childPid();
        // A stopped child answers nothing: a call would wait out its deadline and answer false.
        TestSupport.signal(pid, "STOP");
        try {
            assertTrue(m.isReady(tp), "isReady of a ready partition while the child is stopped");
            assertFalse(m.isReady(other), "isReady of a partition the server never listed");
        } finally {
            TestSupport.signal(pid, "CONT");
        }

        // The stream follows the hosted set: a stopped partition turns false, assigned again true.
        m.onStopPartitions(Set.of(tp));
        TestSupport.await("isReady false after onStopPartitions", READY, () -> !m.isReady(tp));
        assignAndAwaitReady(m, tp, READY);
    }

    /**
     * A first instance over c copies one finished segment of a new partition named name and closes:
     * what the instance of a restarted broker must find. Returns the segment as it should be read.
     */
    private RemoteLogSegmentMetadata copiedByAnEarlierInstance(Map<String, Object> c, String name) throws Exception {
        RlmmRemoteLogMetadataManager first = started(c);
        TopicIdPartition tp = newPartition(name);
        assignAndAwaitReady(first, tp, READY);
        RemoteLogSegmentMetadata a = segment(tp, 0, 9, Optional.empty(), true, 0, 0);
        first.addRemoteLogSegmentMetadata(a).get(10, TimeUnit.SECONDS);
        RemoteLogSegmentMetadataUpdate fa = update(a, RemoteLogSegmentState.COPY_SEGMENT_FINISHED, Optional.empty());
        first.updateRemoteLogSegmentMetadata(fa).get(10, TimeUnit.SECONDS);
        first.close();
        return a.createWithUpdates(fa);
    }

    @Test
    void aReadNeverAnswersEmptyForAPartitionNotHeldYet() throws Exception {
        // A broker restart: the first instance copies a segment, the second one holds the broker's
        // change back two seconds (the test's gate), and the broker reads at once: the restarted
        // child knows the partition from its own record. Every answer is the segment or a
        // retriable exception, never "no segment", also across a kill -9 of the child.
        Map<String, Object> c = embeddedConfig(dir);
        RemoteLogSegmentMetadata want = copiedByAnEarlierInstance(c, "window");
        TopicIdPartition tp = want.topicIdPartition();

        RlmmRemoteLogMetadataManager m = started(c, change -> Thread.sleep(2000));
        m.onPartitionLeadershipChanges(Set.of(tp), Set.of());
        int[] retriable = {0};
        TestSupport.await("the segment from the new child", READY, () -> answersSegment(m, tp, want, retriable));
        long pid = TestSupport.childPid();
        ProcessHandle.of(pid).orElseThrow().destroyForcibly();
        TestSupport.assertGone(pid, Duration.ofSeconds(10));
        TestSupport.await("the segment from the restarted child", READY,
                () -> TestSupport.childPid() > 0 && TestSupport.childPid() != pid && answersSegment(m, tp, want, retriable));
        System.out.println("retriable answers in the window: " + retriable[0]);
        // A partition the broker never assigned is not found, not empty.
        assertThrows(RemoteResourceNotFoundException.class, () -> m.remoteLogSegmentMetadata(newPartition("never"), 0, 5));
    }

    @Test
    void aRestartedBrokersFirstChangeReplacesTheHostedSet() throws Exception {
        // The first instance hosts a and b; the broker restarts hosting b only (a moved away while
        // it was down). Its new instance's first leadership change names what it hosts now
        // (broker_start): the server drops a, which its hosted set still named. A later change adds.
        Map<String, Object> c = embeddedConfig(dir);
        RlmmRemoteLogMetadataManager first = started(c);
        TopicIdPartition a = newPartition("moved-away");
        TopicIdPartition b = newPartition("stays");
        first.onPartitionLeadershipChanges(Set.of(a, b), Set.of());
        TestSupport.await("a and b ready", READY, () -> first.isReady(a) && first.isReady(b));
        first.close();

        RlmmRemoteLogMetadataManager second = started(c);
        assignAndAwaitReady(second, b, READY);
        TestSupport.await("a read of a not found once the broker's first change arrived", READY, () -> {
            try {
                second.remoteLogSegmentMetadata(a, 0, 0);
                return false;
            } catch (RemoteResourceNotFoundException e) {
                return true;
            } catch (RemoteStorageException | RuntimeException e) {
                return false;
            }
        });
        TestSupport.await("isReady(a) false", READY, () -> !second.isReady(a));
        assignAndAwaitReady(second, a, READY);
        assertTrue(second.isReady(b), "a later change adds to the hosted set: b stays");
    }

    @Test
    void aReadOfAPartitionWithAChangeInTheOutboxIsRetriable() throws Exception {
        // The broker assigned tp, and its change waits in the outbox (the gate holds it): the
        // server answers NOT_ASSIGNED, which is retriable for tp and "not found" for a partition
        // with no change waiting. The change then reaches the server and tp becomes ready.
        java.util.concurrent.CountDownLatch open = new java.util.concurrent.CountDownLatch(1);
        RlmmRemoteLogMetadataManager m = startedAndUp(embeddedConfig(dir), change -> open.await());
        // The hello is answered while the server still opens its log and loads its snapshot; until
        // then every read is NOT_READY (retriable), whatever its partition. What follows needs the
        // server past its start: a partition never assigned is then not found.
        TestSupport.await("a read of a partition never assigned not found (the server past its start)", READY,
                () -> notFound(m, newPartition("never")));
        TopicIdPartition tp = newPartition("outbox");
        m.onPartitionLeadershipChanges(Set.of(tp), Set.of());
        assertThrows(ReplicaNotAvailableException.class, () -> m.remoteLogSegmentMetadata(tp, 0, 5));
        assertThrows(RemoteResourceNotFoundException.class, () -> m.remoteLogSegmentMetadata(newPartition("none"), 0, 5));
        open.countDown();
        TestSupport.await("tp ready once the change went", READY, () -> m.isReady(tp));
        assertEquals(Optional.empty(), m.remoteLogSegmentMetadata(tp, 0, 5));
    }

    /** Whether a lookup in tp is refused as not found; false for a retriable failure. */
    private static boolean notFound(RlmmRemoteLogMetadataManager m, TopicIdPartition tp) {
        try {
            m.remoteLogSegmentMetadata(tp, 0, 5);
            return fail("a lookup in " + tp + ", never assigned, answered");
        } catch (RemoteResourceNotFoundException e) {
            return true;
        } catch (ReplicaNotAvailableException e) {
            return false;
        } catch (RemoteStorageException e) {
            return fail("a lookup in " + tp + " failed otherwise: " + e);
        }
    }

    /** One lookup of offset 5: true for want, false for a retriable failure; an empty answer fails the test. */
    private static boolean answersSegment(RlmmRemoteLogMetadataManager m, TopicIdPartition tp, RemoteLogSegmentMetadata want,
            int[] retriable) {
        try {
            Optional<RemoteLogSegmentMetadata> got = m.remoteLogSegmentMetadata(tp, 0, 5);
            assertEquals(Optional.of(want), got, "a lookup of a copied offset answered");
            return true;
        } catch (ReplicaNotAvailableException e) {
            retriable[0]++;
            return false;
        } catch (RemoteStorageException e) {
            // The child is starting, or restarting, longer than the call's deadline.
            assertFalse(e instanceof RemoteResourceNotFoundException, e.toString());
            retriable[0]++;
            return false;
        }
    }

    @Test
    void aServerRestartedByHandGetsTheBrokersPartitionsAgain() throws Exception {
        // Connect mode: the link's watch connection ends with its server, the plugin says the hello
        // to the next one at the address, which knows the broker's partitions from its persisted
        // hosted set; no leadership change from the broker is needed.
        TopicIdPartition tp = newPartition("held-elsewhere");
        long firstPid;
        try (TestSupport.Server server = TestSupport.Server.start(dir)) {
            firstPid = server.pid();
            Map<String, Object> c = Map.of("broker.id", 1, "log.dir", dir.toString(), "rlmm.serve.socket", server.socket.toString());
            RlmmRemoteLogMetadataManager m = started(c);
            assignAndAwaitReady(m, tp, READY);
            assertEquals(Optional.empty(), m.remoteLogSegmentMetadata(tp, 0, 0), "a hosted partition with no segment: a miss");
        }
        try (TestSupport.Server server = TestSupport.Server.start(dir)) {
            assertNotEquals(firstPid, server.pid());
            RlmmRemoteLogMetadataManager m = rlmm;
            TestSupport.await("isReady on the new server, with no new leadership change", READY, () -> m.isReady(tp));
            assertEquals(Optional.empty(), m.remoteLogSegmentMetadata(tp, 0, 0), "the new server holds the partition");
            assertEquals(Optional.empty(), m.highestOffsetForEpoch(tp, 0));
            assertEquals(List.of(), toList(m.listRemoteLogSegments(tp)));
            assertThrows(RemoteResourceNotFoundException.class, () -> m.remoteLogSegmentMetadata(newPartition("never"), 0, 0));
            assertThrows(RemoteResourceNotFoundException.class, () -> m.remoteLogSize(newPartition("never"), 0));
        }
    }

    @Test
    void closeStopsTheChild() throws Exception {
        RlmmRemoteLogMetadataManager m = started(embeddedConfig(dir));
        // Up and serving, so the stop below goes through the final snapshot.
        assignAndAwaitReady(m, newPartition("close"), READY);
        long pid = TestSupport.childPid();
        assertTrue(ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false));
        m.close();
        rlmm = null;
        TestSupport.assertGone(pid, Duration.ofSeconds(15));
        try (java.util.stream.Stream<Path> snapshots = java.nio.file.Files.list(PluginConfig.parse(embeddedConfig(dir)).snapshotDir())) {
            assertTrue(snapshots.anyMatch(f -> !f.getFileName().toString().equals("hosted.pb")),
                    "SIGTERM: a graceful stop writes the final snapshot (beside the hosted set)");
        }
        assertEquals(List.of(), TestSupport.processesNaming(dir.toString()));
        assertThrows(IllegalStateException.class, () -> m.remoteLogSegmentMetadata(newPartition("x"), 0, 0));
        m.close(); // idempotent
    }

    @Test
    void aFreshInstanceStartsAFreshChildAfterClose() throws Exception {
        Map<String, Object> c = embeddedConfig(dir);
        RlmmRemoteLogMetadataManager first = started(c);
        TopicIdPartition tp = newPartition("broker-restart");
        assignAndAwaitReady(first, tp, READY);
        RemoteLogSegmentMetadata a = segment(tp, 0, 9, Optional.empty(), true, 0, 0);
        first.addRemoteLogSegmentMetadata(a).get(10, TimeUnit.SECONDS);
        long firstPid = TestSupport.childPid();
        first.close();
        TestSupport.assertGone(firstPid, Duration.ofSeconds(15));

        // A broker restart: a new instance, a new bootstrap port, the same log.dir.
        c.put("remote.log.metadata.common.client.bootstrap.servers", "127.0.0.1:10");
        RlmmRemoteLogMetadataManager second = startedAndUp(c);
        assertNotEquals(firstPid, TestSupport.childPid());
        assignAndAwaitReady(second, tp, READY);
        assertEquals(List.of(a), toList(second.listRemoteLogSegments(tp)));
    }

    @Test
    void connectModeUsesARunningServer() throws Exception {
        try (TestSupport.Server server = TestSupport.Server.start(dir)) {
            Map<String, Object> c = Map.of("broker.id", 1, "log.dir", dir.toString(),
                    "rlmm.serve.socket", server.socket.toString());
            RlmmRemoteLogMetadataManager m = started(c);
            TopicIdPartition tp = newPartition("connect");
            assignAndAwaitReady(m, tp, READY);
            RemoteLogSegmentMetadata a = segment(tp, 0, 9, Optional.empty(), true, 0, 0);
            m.addRemoteLogSegmentMetadata(a).get(10, TimeUnit.SECONDS);
            assertEquals(List.of(a), toList(m.listRemoteLogSegments(tp)));
            assertEquals(-1, TestSupport.childPid());
            m.close();
            rlmm = null;
            assertTrue(server.alive(), "close() in connect mode leaves the server running");
        }
    }

    @Test
    void connectModeOverTcpWithABearerToken() throws Exception {
        Path token = dir.resolve("token");
        java.nio.file.Files.writeString(token, "s3cret-token-for-the-plugin-test\n");
        try (TestSupport.Server server = TestSupport.Server.start(dir, "--listen-tcp", "127.0.0.1:0",
                "--token-file", token.toString())) {
            assertTrue(server.tcp != null && server.tcp.startsWith("127.0.0.1:"), "ready file names the TCP address: " + server.tcp);
            RlmmRemoteLogMetadataManager m = started(Map.of("broker.id", 1, "rlmm.serve.address", server.tcp,
                    "rlmm.serve.token.file", token.toString()));
            TopicIdPartition tp = newPartition("tcp");
            assignAndAwaitReady(m, tp, READY);
            RemoteLogSegmentMetadata a = segment(tp, 0, 9, Optional.empty(), true, 0, 0);
            m.addRemoteLogSegmentMetadata(a).get(10, TimeUnit.SECONDS);
            assertEquals(List.of(a), toList(m.listRemoteLogSegments(tp)));
            m.close();

            // A wrong token is refused: a setting the server refuses stops the broker, naming the address.
            Path wrong = dir.resolve("wrong-token");
            java.nio.file.Files.writeString(wrong, "not-the-token");
            rlmm = null;
            try (TestSupport.ExitRecorder exit = new TestSupport.ExitRecorder()) {
                RlmmRemoteLogMetadataManager bad = started(Map.of("broker.id", 1, "rlmm.serve.address", server.tcp,
                        "rlmm.serve.token.file", wrong.toString(), "rlmm.serve.call.timeout.ms", "2000"));
                String why = exit.await("a refused token", READY);
                assertEquals(BrokerExit.STATUS, exit.status());
                assertTrue(why.contains(server.tcp) && why.contains("a valid token is required"), why);
                RemoteStorageException e = assertThrows(RemoteStorageException.class, () -> bad.remoteLogSegmentMetadata(tp, 0, 0));
                assertTrue(e.getMessage().contains("a valid token is required"), e.getMessage());
            }
        }
    }

    @Test
    void connectModeOverTcpWithTlsAndAToken() throws Exception {
        // A self-signed certificate for 127.0.0.1, trusted as the CA: made by the JDK's keytool,
        // written as PEM (the key as PKCS#8) by the JDK's classes.
        Path cert = dir.resolve("cert.pem");
        Path key = dir.resolve("key.pem");
        selfSigned(cert, key);
        Path token = dir.resolve("token");
        java.nio.file.Files.writeString(token, "s3cret-token-over-tls\n");
        try (TestSupport.Server server = TestSupport.Server.start(dir, "--listen-tcp", "127.0.0.1:0",
                "--listen-tls-cert", cert.toString(), "--listen-tls-key", key.toString(), "--token-file", token.toString())) {
            RlmmRemoteLogMetadataManager m = started(Map.of("broker.id", 1, "rlmm.serve.address", server.tcp,
                    "rlmm.serve.tls.ca", cert.toString(), "rlmm.serve.token.file", token.toString()));
            TopicIdPartition tp = newPartition("tls");
            assignAndAwaitReady(m, tp, READY);
            RemoteLogSegmentMetadata a = segment(tp, 0, 9, Optional.empty(), true, 0, 0);
            m.addRemoteLogSegmentMetadata(a).get(10, TimeUnit.SECONDS);
            assertEquals(List.of(a), toList(m.listRemoteLogSegments(tp)));
            assertEquals(Optional.empty(), m.remoteLogSegmentMetadata(tp, 0, 5), "a copy not finished is not read");
        }
    }

    /** A self-signed EC certificate for 127.0.0.1 (PEM) and its key (PKCS#8 PEM), with keytool and no openssl. */
    private void selfSigned(Path cert, Path key) throws Exception {
        Path store = dir.resolve("self-signed.p12");
        char[] pass = "changeit".toCharArray();
        Process gen = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "keytool").toString(), "-genkeypair",
                "-alias", "rlmm", "-keyalg", "EC", "-groupname", "secp256r1", "-dname", "CN=127.0.0.1", "-ext", "san=ip:127.0.0.1",
                "-validity", "1", "-storetype", "PKCS12", "-keystore", store.toString(), "-storepass", new String(pass))
                .redirectErrorStream(true).start();
        String out = new String(gen.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
        assertEquals(0, gen.waitFor(), "keytool: " + out);
        java.security.KeyStore ks = java.security.KeyStore.getInstance("PKCS12");
        try (java.io.InputStream in = java.nio.file.Files.newInputStream(store)) {
            ks.load(in, pass);
        }
        java.util.Base64.Encoder b64 = java.util.Base64.getMimeEncoder(64, new byte[] {'\n'});
        java.nio.file.Files.writeString(cert, "-----BEGIN CERTIFICATE-----\n" + b64.encodeToString(ks.getCertificate("rlmm").getEncoded())
                + "\n-----END CERTIFICATE-----\n");
        java.nio.file.Files.writeString(key, "-----BEGIN PRIVATE KEY-----\n" + b64.encodeToString(ks.getKey("rlmm", pass).getEncoded())
                + "\n-----END PRIVATE KEY-----\n");
    }

    @Test
    void unreachableServerFailsWithinTheBoundNamingTheAddress() {
        Path socket = dir.resolve("nobody.sock");
        RlmmRemoteLogMetadataManager m = started(Map.of("broker.id", 1, "rlmm.serve.socket", socket.toString(),
                "rlmm.serve.call.timeout.ms", "500", "rlmm.serve.mutation.timeout.ms", "500"));
        TopicIdPartition tp = newPartition("unreachable");
        assertTimeoutPreemptively(Duration.ofSeconds(20), () -> {
            RemoteStorageException e = assertThrows(RemoteStorageException.class, () -> m.remoteLogSegmentMetadata(tp, 0, 0));
            assertTrue(e.getMessage().contains(socket.toString()), e.getMessage());
            ExecutionException f = assertThrows(ExecutionException.class, () -> m.addRemoteLogSegmentMetadata(
                    segment(tp, 0, 9, Optional.empty(), true, 0, 0)).get());
            assertTrue(f.getCause().getMessage().contains(socket.toString()), f.getCause().getMessage());
            assertFalse(m.isReady(tp));
        });
    }
}

package org.rlmm.plugin;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.management.ManagementFactory;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import javax.management.JMException;
import javax.management.MBeanServer;
import javax.management.ObjectName;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadata;
import org.junit.jupiter.api.Test;

/**
 * The plugin's metrics as the broker's JMX shows them: read from the JVM's platform MBean server
 * (the broker's, when the broker loads the plugin), not from the plugin's objects.
 */
class MetricsTest extends ManagerFixture {
    static final MBeanServer JMX = ManagementFactory.getPlatformMBeanServer();

    static ObjectName plugin(int brokerId) throws JMException {
        return new ObjectName(RlmmMetrics.DOMAIN + ":type=" + RlmmMetrics.GROUP + ",broker-id=" + brokerId);
    }

    static ObjectName rpc(int brokerId, String rpc) {
        try {
            return new ObjectName(RlmmMetrics.DOMAIN + ":type=" + RlmmMetrics.GROUP + ",broker-id=" + brokerId + ",rpc=" + rpc);
        } catch (JMException e) {
            throw new AssertionError(e);
        }
    }

    /** A metric's value as JMX answers it. */
    static double read(ObjectName name, String attribute) {
        try {
            return ((Number) JMX.getAttribute(name, attribute)).doubleValue();
        } catch (JMException e) {
            throw new AssertionError("JMX " + name + " " + attribute + ": " + e, e);
        }
    }

    @Test
    void childReadinessRestartsAndCallsAreInJmx() throws Exception {
        started(TestSupport.embeddedConfig(dir));
        ObjectName p = plugin(TestSupport.BROKER_ID);
        assertTrue(TestSupport.awaitServer(TestSupport.BROKER_ID, READY), "the child answers");
        TestSupport.await("child-up 1 in JMX", READY, () -> read(p, "child-up") == 1);
        assertEquals(0, read(p, "child-restarts-total"));
        assertEquals(0, read(p, "last-error-timestamp-ms"));
        assertEquals(0, read(p, "failed"));

        TopicIdPartition tp = TestSupport.newPartition("metrics");
        TestSupport.assignAndAwaitReady(rlmm, tp, READY);
        TestSupport.await("one hosted partition ready in JMX", READY,
                () -> read(p, "hosted-partitions-ready") == 1 && read(p, "hosted-partitions-not-ready") == 0);
        RemoteLogSegmentMetadata s = TestSupport.segment(tp, 0, 99, Optional.empty(), true, 0, 0);
        rlmm.addRemoteLogSegmentMetadata(s).get(30, TimeUnit.SECONDS);
        rlmm.updateRemoteLogSegmentMetadata(TestSupport.update(s,
                org.apache.kafka.server.log.remote.storage.RemoteLogSegmentState.COPY_SEGMENT_FINISHED, Optional.empty()))
                .get(30, TimeUnit.SECONDS);
        for (int i = 0; i < 3; i++) {
            assertTrue(rlmm.remoteLogSegmentMetadata(tp, 0, 50).isPresent());
        }
        assertEquals(Optional.empty(), rlmm.remoteLogSegmentMetadata(tp, 0, 500));
        TestSupport.await("the add in JMX", READY, () -> read(rpc(7, "add"), "calls-total") == 1);
        assertEquals(0, read(rpc(7, "add"), "errors-total"));
        TestSupport.await("the update in JMX", READY, () -> read(rpc(7, "update"), "calls-total") == 1);
        assertEquals(4, read(rpc(7, "lookup"), "calls-total"));
        double max = read(rpc(7, "lookup"), "latency-max-ms");
        double avg = read(rpc(7, "lookup"), "latency-avg-ms");
        assertTrue(max > 0 && avg > 0 && avg <= max, "a lookup's latency: avg " + avg + " max " + max);
        assertTrue(read(rpc(7, "leadership"), "calls-total") >= 1, "the leadership change");
        assertEquals(0, read(rpc(7, "list"), "calls-total"));

        // kill -9: the death is a last error, the new child a restart; child-up returns to 1.
        long before = System.currentTimeMillis();
        long pid = TestSupport.childPid();
        ProcessHandle.of(pid).orElseThrow().destroyForcibly();
        TestSupport.await("a restart in JMX", READY, () -> read(p, "child-restarts-total") == 1 && read(p, "child-up") == 1);
        assertTrue(read(p, "last-error-timestamp-ms") >= before, "the death's time");
        TestSupport.await("the partition ready again", READY, () -> read(p, "hosted-partitions-ready") == 1);

        rlmm.close();
        assertFalse(JMX.isRegistered(p), "close unregisters the metrics");
        assertFalse(JMX.isRegistered(rpc(7, "lookup")));
        assertTrue(JMX.queryNames(new ObjectName(RlmmMetrics.DOMAIN + ":type=kafka-metrics-count,*"), null).isEmpty(),
                "the plugin adds no kafka-metrics-count MBean of its own");
    }

    @Test
    void aRefusedChildShowsAsFailedAndDown() throws Exception {
        var c = TestSupport.embeddedConfig(dir);
        c.put("rlmm.serve.binary", OtherVersionServer.script(dir).toString());
        try (TestSupport.ExitRecorder exit = new TestSupport.ExitRecorder()) {
            started(c);
            String why = exit.await("the refused server", READY);
            assertTrue(why.contains("speaks version " + OtherVersionServer.VERSION), why);
            ObjectName p = plugin(TestSupport.BROKER_ID);
            assertEquals(1, read(p, "failed"));
            assertEquals(0, read(p, "child-up"));
            assertTrue(read(p, "last-error-timestamp-ms") > 0);
            Set<ObjectName> names = JMX.queryNames(new ObjectName(RlmmMetrics.DOMAIN + ":type=" + RlmmMetrics.GROUP + ",*"), null);
            assertEquals(1 + RlmmMetrics.RPCS.size(), names.size(), names.toString());
        }
    }
}

package org.rlmm.plugin;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.common.TopicIdPartition;
import org.junit.jupiter.api.Test;
import org.rlmm.plugin.proto.BrokerRequest;
import org.slf4j.LoggerFactory;

/** The outbox: changes sent in order, each until acknowledged, submit never waits, waiting() follows them. */
class OutboxTest {
    private static Outbox.Change change(String what, TopicIdPartition... tps) {
        return new Outbox.Change(what, BrokerRequest.newBuilder(), List.of(tps));
    }

    @Test
    void changesGoInOrderEachUntilAcknowledged() throws Exception {
        TopicIdPartition a = TestSupport.newPartition("outbox-a");
        TopicIdPartition b = TestSupport.newPartition("outbox-b");
        List<String> sent = new CopyOnWriteArrayList<>();
        AtomicInteger failures = new AtomicInteger(2); // the first two tries fail: the server restarts
        CountDownLatch hold = new CountDownLatch(1);
        Outbox.Sender sender = c -> {
            hold.await();
            sent.add(c.what());
            if (failures.getAndDecrement() > 0) {
                throw new IllegalStateException("rlmm serve is restarting");
            }
        };
        try (Outbox o = new Outbox(sender, Outbox.Gate.OPEN, LoggerFactory.getLogger(OutboxTest.class),
                new Backoff(Duration.ofMillis(1), Duration.ofMillis(5)))) {
            long t0 = System.nanoTime();
            o.submit(change("first", a));
            o.submit(change("second", a, b));
            o.submit(change("third"));
            assertTrue(System.nanoTime() - t0 < TimeUnit.SECONDS.toNanos(1), "submit does not wait for the server");
            assertTrue(o.waiting(a) && o.waiting(b), "both partitions have a change waiting");
            hold.countDown();
            TestSupport.await("the outbox drained", Duration.ofSeconds(10), () -> !o.waiting(a) && !o.waiting(b) && sent.size() == 5);
            assertEquals(List.of("first", "first", "first", "second", "third"), sent, "in order, the first until acknowledged");
            assertFalse(o.waiting(a) || o.waiting(b), "nothing waits once acknowledged");
        }
    }
}

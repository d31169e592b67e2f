package org.rlmm.plugin;

import java.util.Collection;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.common.TopicIdPartition;
import org.rlmm.plugin.proto.BrokerRequest;
import org.slf4j.Logger;

/**
 * The broker's assignment changes that rlmm serve has not acknowledged yet, in the broker's order:
 * the server owns the assignment, so this is all the plugin keeps. One thread drains it, sending
 * each change until acknowledged, so the broker's metadata thread never waits for a server; a read
 * refused NOT_ASSIGNED is retriable while its partition has a change here ({@link #waiting}).
 */
final class Outbox implements AutoCloseable {
    /** One change: its request and the partitions it names. */
    record Change(String what, BrokerRequest.Builder request, Collection<TopicIdPartition> partitions) {}

    /** Sends one change to the server and returns when it acknowledged it. */
    interface Sender {
        void send(Change c) throws Exception;
    }

    /** What a test injects to hold a change back before it is sent (the window a change is on its way). */
    interface Gate {
        Gate OPEN = c -> { };

        void before(Change c) throws InterruptedException;
    }

    private final Sender sender;
    private final Gate gate;
    private final Logger log;
    private final Backoff backoff;
    /** One thread: the changes are sent in the order submitted. */
    private final ExecutorService drainer = Executors.newSingleThreadExecutor(r -> {
        Thread t = new Thread(r, "rlmm-plugin-assignment");
        t.setDaemon(true);
        return t;
    });
    /** How many unacknowledged changes name each partition. */
    private final Map<TopicIdPartition, Integer> waiting = new ConcurrentHashMap<>();
    /** Reads of a partition with a change waiting, since the last acknowledgement (logged with it). */
    private final AtomicLong readsWaiting = new AtomicLong();

    Outbox(Sender sender, Gate gate, Logger log, Backoff backoff) {
        this.sender = sender;
        this.gate = gate;
        this.log = log;
        this.backoff = backoff;
    }

    /** Queues a change; never waits. */
    void submit(Change c) {
        for (TopicIdPartition tp : c.partitions()) {
            waiting.merge(tp, 1, Integer::sum);
        }
        try {
            drainer.execute(() -> send(c));
        } catch (RejectedExecutionException e) {
            // closed: nothing more is sent
        }
    }

    /** Whether a change naming tp waits to be acknowledged (counted: a read asks). */
    boolean waiting(TopicIdPartition tp) {
        boolean w = waiting.containsKey(tp);
        if (w) {
            readsWaiting.incrementAndGet();
        }
        return w;
    }

    private void send(Change c) {
        try {
            gate.before(c);
            while (true) {
                try {
                    sender.send(c);
                    backoff.reset();
                    break;
                } catch (InterruptedException e) {
                    return;
                } catch (Exception e) {
                    if (drainer.isShutdown()) {
                        return;
                    }
                    log.warn("rlmm plugin: the {} did not reach rlmm serve yet ({}); trying again in {} ms", c.what(),
                            e.getMessage(), backoff.peek().toMillis());
                    if (!backoff.sleep()) {
                        return;
                    }
                }
            }
        } catch (InterruptedException e) {
            return; // closed
        }
        for (TopicIdPartition tp : c.partitions()) {
            waiting.computeIfPresent(tp, (k, n) -> n == 1 ? null : n - 1);
        }
        // test/broker/window_test.go reads this line.
        log.info("rlmm plugin: the {} reached rlmm serve ({} reads of its partitions came while it was on its way)",
                c.what(), readsWaiting.getAndSet(0));
    }

    @Override
    public void close() {
        drainer.shutdownNow();
        try {
            drainer.awaitTermination(1, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}

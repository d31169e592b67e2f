package org.rlmm.plugin;

import java.util.ArrayDeque;
import java.util.Collection;
import java.util.Deque;
import java.util.HashMap;
import java.util.Map;
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
    private final Deque<Change> pending = new ArrayDeque<>();
    private final Map<Link.Key, Integer> waiting = new HashMap<>();
    private final Thread drainer;
    private boolean sending;
    private volatile boolean closed;
    /** Changes not acknowledged: a read checks {@link #waiting} only when there are some. */
    private volatile int size;
    /** Reads of a partition with a change waiting, since the last acknowledgement (logged with it). */
    private final java.util.concurrent.atomic.AtomicLong readsWaiting = new java.util.concurrent.atomic.AtomicLong();

    Outbox(Sender sender, Gate gate, Logger log, Backoff backoff) {
        this.sender = sender;
        this.gate = gate;
        this.log = log;
        this.backoff = backoff;
        this.drainer = new Thread(this::drain, "rlmm-plugin-assignment");
        this.drainer.setDaemon(true);
        this.drainer.start();
    }

    /** Queues a change; never waits. */
    synchronized void submit(Change c) {
        pending.addLast(c);
        size = pending.size();
        for (TopicIdPartition tp : c.partitions()) {
            waiting.merge(Link.Key.of(tp), 1, Integer::sum);
        }
        notifyAll();
    }

    /** Whether a change naming tp waits to be acknowledged (counted: a read asks). */
    boolean waiting(TopicIdPartition tp) {
        if (size == 0) {
            return false;
        }
        boolean w;
        synchronized (this) {
            w = waiting.containsKey(Link.Key.of(tp));
        }
        if (w) {
            readsWaiting.incrementAndGet();
        }
        return w;
    }

    /** Whether every change so far was acknowledged. */
    synchronized boolean idle() {
        return pending.isEmpty() && !sending;
    }

    private synchronized Change next() throws InterruptedException {
        while (pending.isEmpty() && !closed) {
            wait();
        }
        sending = !closed;
        return closed ? null : pending.peekFirst();
    }

    private synchronized void acknowledged(Change c) {
        pending.removeFirst();
        size = pending.size();
        sending = false;
        for (TopicIdPartition tp : c.partitions()) {
            waiting.computeIfPresent(Link.Key.of(tp), (k, n) -> n == 1 ? null : n - 1);
        }
    }

    private void drain() {
        try {
            Change c;
            while ((c = next()) != null) {
                gate.before(c);
                while (!closed) {
                    try {
                        sender.send(c);
                        backoff.reset();
                        break;
                    } catch (InterruptedException e) {
                        return;
                    } catch (Exception e) {
                        if (closed) {
                            return;
                        }
                        log.warn("rlmm plugin: the {} did not reach rlmm serve yet ({}); trying again in {} ms", c.what(),
                                e.getMessage(), backoff.peek().toMillis());
                        if (!backoff.sleep()) {
                            return;
                        }
                    }
                }
                acknowledged(c);
                // brokertest/window_test.go reads this line.
                log.info("rlmm plugin: the {} reached rlmm serve ({} reads of its partitions came while it was on its way)",
                        c.what(), readsWaiting.getAndSet(0));
            }
        } catch (InterruptedException e) {
            // closed
        }
    }

    @Override
    public void close() {
        synchronized (this) {
            closed = true;
            notifyAll();
        }
        drainer.interrupt();
        try {
            drainer.join(1000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}

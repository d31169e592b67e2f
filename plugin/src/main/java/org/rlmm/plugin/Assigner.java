package org.rlmm.plugin;

import java.time.Duration;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import org.slf4j.Logger;

/**
 * Hands assignment changes (leadership changes, stopped partitions) to the server in the order
 * the broker made them, on one thread of its own: the broker calls onPartitionLeadershipChanges
 * from the thread that applies cluster metadata, which must not wait for a server that is
 * starting or restarting (Kafka's own manager only queues them there too). A change that fails is
 * retried, with a doubling pause, until it goes through or the plugin closes.
 */
final class Assigner implements AutoCloseable {
    /** Sends one change; throws when the server did not take it. */
    interface Change {
        void send() throws Exception;

        String describe();
    }

    private static final Change STOP = new Change() {
        @Override
        public void send() {}

        @Override
        public String describe() {
            return "stop";
        }
    };

    private final BlockingQueue<Change> queue = new LinkedBlockingQueue<>();
    private final Logger log;
    private final Backoff backoff;
    private final Thread thread;
    private volatile boolean closed;
    private volatile long sent;
    private volatile long queued;

    Assigner(Logger log, Duration backoff, Duration backoffMax) {
        this.log = log;
        this.backoff = new Backoff(backoff, backoffMax);
        this.thread = new Thread(this::run, "rlmm-plugin-assigner");
        this.thread.setDaemon(true);
        this.thread.start();
    }

    /** One try of sending a change; throws when the server did not take it. */
    interface Send {
        void run() throws Exception;
    }

    /** Queues the change what, sent by send (tried again, after the backoff, until it goes through). */
    void submit(String what, Send send) {
        submit(new Change() {
            @Override
            public void send() throws Exception {
                send.run();
            }

            @Override
            public String describe() {
                return what;
            }
        });
    }

    void submit(Change c) {
        if (closed) {
            throw new IllegalStateException("rlmm plugin: closed");
        }
        synchronized (this) {
            queued++;
        }
        queue.add(c);
    }

    /** Whether every change submitted so far has gone through. */
    boolean idle() {
        return sent == queued;
    }

    private void run() {
        while (!closed) {
            Change c;
            try {
                c = queue.take();
            } catch (InterruptedException e) {
                return;
            }
            if (c == STOP) {
                return;
            }
            backoff.reset();
            while (!closed) {
                try {
                    c.send();
                    break;
                } catch (Exception e) {
                    if (closed) {
                        return;
                    }
                    log.warn("rlmm plugin: {} not taken by rlmm serve yet ({}); retrying in {} ms", c.describe(),
                            e.getMessage(), backoff.peek().toMillis());
                    if (!backoff.sleep()) {
                        return;
                    }
                }
            }
            synchronized (this) {
                sent++;
            }
        }
    }

    @Override
    public void close() {
        closed = true;
        queue.add(STOP);
        thread.interrupt();
        try {
            thread.join(5000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}

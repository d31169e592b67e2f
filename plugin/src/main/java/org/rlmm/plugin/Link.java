package org.rlmm.plugin;

import java.io.IOException;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.common.TopicIdPartition;
import org.rlmm.plugin.proto.BrokerReply;
import org.rlmm.plugin.proto.BrokerRequest;
import org.rlmm.plugin.proto.PartitionReadiness;
import org.rlmm.plugin.proto.Purpose;
import org.rlmm.plugin.proto.ReadinessUpdate;
import org.slf4j.Logger;

/**
 * The plugin's connections to one server process: a small pool of {@link Wire}s per purpose, each
 * call writing and reading its frame in the caller's thread, and one watch connection whose pushes
 * keep every hosted partition's readiness in memory, so {@code isReady} never waits. The watch
 * connection ends with its server: the link is then over ({@link #ended}), and the
 * {@link Supervisor} finds the next server. A connection answered by another pid is refused (the
 * socket was taken over).
 */
final class Link implements AutoCloseable {
    /** Idle connections kept per purpose; more are closed when handed back. */
    static final int MAX_IDLE = 8;

    /** A call that did not get its answer: the transport's failure, not the server's. */
    static final class Broken extends Exception {
        private static final long serialVersionUID = 1L;
        /** Whether the request was written (it may have reached the server). */
        final boolean sent;
        /** Whether the call's deadline closed it. */
        final boolean deadline;

        Broken(String message, Throwable cause, boolean sent, boolean deadline) {
            super(message, cause);
            this.sent = sent;
            this.deadline = deadline;
        }
    }

    private final Wire.Endpoint ep;
    private final Wire.Watchdog dog;
    /** The server's process. */
    final long pid;
    private final Logger log;
    private final int connectTimeoutMs;
    private final Map<Purpose, ConcurrentLinkedDeque<Wire>> idle = new EnumMap<>(Purpose.class);
    private final Set<Wire> live = ConcurrentHashMap.newKeySet();
    private final AtomicLong ids = new AtomicLong();
    private final Thread watcher;
    /** Completed, with why, when the link is over: its watch connection ended, or it was closed. */
    final CompletableFuture<String> ended = new CompletableFuture<>();
    private volatile boolean closed;
    /** The readiness the server last pushed: replaced whole by each push; empty while there is none. */
    private volatile Map<TopicIdPartition, Boolean> ready = Map.of();

    /** Opens the link on the server that answered first's hello (kept as a read connection) and starts its watch. */
    Link(Wire.Endpoint ep, Wire.Watchdog dog, Wire first, Logger log, int connectTimeoutMs) {
        this.ep = ep;
        this.dog = dog;
        this.pid = first.server.getPid();
        this.log = log;
        this.connectTimeoutMs = connectTimeoutMs;
        for (Purpose p : Purpose.values()) {
            idle.put(p, new ConcurrentLinkedDeque<>());
        }
        live.add(first);
        idle.get(first.purpose).add(first);
        watcher = new Thread(this::watch, "rlmm-plugin-readiness");
        watcher.setDaemon(true);
        watcher.start();
    }

    /**
     * Runs one call of purpose p within dueNanos (System.nanoTime()) and returns its reply (an
     * error reply too: the caller maps it); a list's earlier replies go to more.
     *
     * @throws Broken when no answer came: the connection broke, or the deadline closed it
     */
    BrokerReply call(Purpose p, BrokerRequest.Builder req, long dueNanos, List<BrokerReply> more) throws Broken {
        Wire w = idle.get(p).pollFirst();
        if (w == null) {
            w = dial(p, dueNanos);
        }
        if (p == Purpose.PURPOSE_MUTATE || p == Purpose.PURPOSE_ASSIGN) {
            // The server bounds these (never a read) by the time left and, on this host's Unix
            // socket, does not run one it reads past its deadline (one that waited in the socket
            // while the server was stopped).
            long left = Math.max(1, TimeUnit.NANOSECONDS.toMillis(dueNanos - System.nanoTime()));
            req.setTimeoutMs(left);
            if (ep.socket() != null) {
                req.setDeadlineUnixMs(System.currentTimeMillis() + left);
            }
        }
        BrokerRequest r = req.setId(ids.incrementAndGet()).build();
        w.due = dueNanos;
        boolean sent = false;
        try {
            w.write(r);
            sent = true;
            BrokerReply reply = w.read(r.getId(), more);
            w.due = 0;
            release(w);
            return reply;
        } catch (IOException e) {
            drop(w);
            throw new Broken(w.expired ? "no answer within the call's bound" : "the connection to rlmm serve pid " + pid + " at "
                    + ep.describe() + " broke: " + e, e, sent, w.expired);
        }
    }

    /** A new connection of purpose p to this link's server. */
    private Wire dial(Purpose p, long dueNanos) throws Broken {
        Wire w;
        try {
            long left = TimeUnit.NANOSECONDS.toMillis(dueNanos - System.nanoTime());
            w = Wire.open(ep, dog, p, (int) Math.max(1, Math.min(connectTimeoutMs, left)));
        } catch (IOException | Errors.Refused e) {
            throw new Broken("cannot connect to rlmm serve at " + ep.describe() + ": " + e.getMessage(), e, false,
                    System.nanoTime() - dueNanos > 0);
        }
        live.add(w);
        if (closed || w.server.getPid() != pid) {
            drop(w);
            throw new Broken(closed ? "the plugin's connection to rlmm serve pid " + pid + " ended"
                    : "rlmm serve at " + ep.describe() + " is now pid " + w.server.getPid() + ", not pid " + pid, null, false, false);
        }
        return w;
    }

    private void release(Wire w) {
        ConcurrentLinkedDeque<Wire> q = idle.get(w.purpose);
        if (closed || q.size() >= MAX_IDLE) {
            drop(w);
            return;
        }
        q.offerFirst(w);
        if (closed && q.remove(w)) {
            drop(w);
        }
    }

    private void drop(Wire w) {
        live.remove(w);
        idle.get(w.purpose).remove(w);
        w.close();
    }

    /** Keeps the readiness the server pushes until the watch connection ends, which ends the link. */
    private void watch() {
        String why;
        try {
            Wire w = Wire.open(ep, dog, Purpose.PURPOSE_WATCH, connectTimeoutMs);
            live.add(w);
            if (w.server.getPid() != pid) {
                throw new IOException("rlmm serve at " + ep.describe() + " is now pid " + w.server.getPid());
            }
            while (!closed) {
                ReadinessUpdate u = ReadinessUpdate.parseFrom(w.readFrame());
                Map<TopicIdPartition, Boolean> m = new HashMap<>(u.getPartitionsCount() * 2);
                for (PartitionReadiness r : u.getPartitionsList()) {
                    m.put(Convert.partition(r.getTopicIdPartition()), r.getReady());
                }
                ready = m;
            }
            why = "closed";
        } catch (IOException | Errors.Refused e) {
            why = "the readiness watch of rlmm serve pid " + pid + " at " + ep.describe() + " ended (" + e.getMessage() + ")";
        }
        if (!closed) {
            log.warn("rlmm plugin: {}", why);
        }
        close();
        ended.complete(why);
    }

    /** Whether the server last said tp is ready (false while no push came). */
    boolean ready(TopicIdPartition tp) {
        return Boolean.TRUE.equals(ready.get(tp));
    }

    /** How many hosted partitions the server last said are ready (or not). */
    long count(boolean isReady) {
        return ready.values().stream().filter(r -> r == isReady).count();
    }

    /** Ends the link: every connection closed (calls in flight fail), the watch stopped. */
    @Override
    public void close() {
        closed = true;
        ready = Map.of();
        for (Wire w : live) {
            drop(w);
        }
        if (Thread.currentThread() != watcher) {
            watcher.interrupt();
            try {
                watcher.join(1000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }
}

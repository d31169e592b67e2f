package org.rlmm.plugin;

import java.io.IOException;
import java.nio.channels.ClosedByInterruptException;
import java.util.EnumMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Consumer;
import org.apache.kafka.common.TopicIdPartition;
import org.rlmm.plugin.proto.BrokerReply;
import org.rlmm.plugin.proto.BrokerRequest;
import org.rlmm.plugin.proto.PartitionReadiness;
import org.rlmm.plugin.proto.Purpose;
import org.rlmm.plugin.proto.ReadinessUpdate;
import org.rlmm.plugin.proto.ServerInfoReply;
import org.slf4j.Logger;

/**
 * The plugin's connections to one server process (one generation): a small pool of {@link Wire}s
 * per purpose, each call writing and reading its frame in the caller's thread, and one watch
 * connection whose pushes keep every hosted partition's readiness in memory, so {@code isReady}
 * never waits. A connection answered by another pid is refused (the socket was taken over). A
 * watchdog thread closes a connection whose call passed its deadline, so a hung (SIGSTOP) server
 * fails a call in time.
 */
final class Link implements AutoCloseable {
    /** Idle connections kept per purpose; more are closed when handed back. */
    static final int MAX_IDLE = 8;

    /** A call that did not get its answer: the transport's failure, not the server's. */
    static final class Broken extends Exception {
        private static final long serialVersionUID = 1L;
        /** Whether the request may have reached the server (written before the connection broke). */
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
    private final long pid;
    final ServerInfoReply server;
    private final Logger log;
    /** Told (connect mode) when the watch connection ends: its server is gone or another took its place. */
    private final Consumer<String> gone;
    private final int connectTimeoutMs;
    private final Map<Purpose, ConcurrentLinkedDeque<Wire>> idle = new EnumMap<>(Purpose.class);
    private final Set<Wire> live = ConcurrentHashMap.newKeySet();
    private final AtomicLong ids = new AtomicLong();
    private final Thread watchdog;
    private final Thread watcher;
    private final long tick;
    private volatile boolean closed;
    /** The readiness the server last pushed: replaced whole by each push; empty while there is none. */
    private volatile Map<Key, Boolean> ready = Map.of();

    /** A partition as the server keys it: topic id and partition. */
    record Key(long most, long least, int partition) {
        static Key of(TopicIdPartition tp) {
            return new Key(tp.topicId().getMostSignificantBits(), tp.topicId().getLeastSignificantBits(), tp.partition());
        }

        static Key of(org.rlmm.plugin.proto.TopicIdPartition tp) {
            return new Key(tp.getTopicId().getMostSignificantBits(), tp.getTopicId().getLeastSignificantBits(), tp.getPartition());
        }
    }

    /**
     * Opens the generation on the server that answered first's hello (first is kept as its first
     * read connection) and starts the watch.
     */
    Link(Wire.Endpoint ep, Wire first, Logger log, long callTimeoutMs, Consumer<String> gone) {
        this.ep = ep;
        this.server = first.server;
        this.pid = first.server.getPid();
        this.log = log;
        this.gone = gone;
        this.connectTimeoutMs = (int) Math.min(Integer.MAX_VALUE, callTimeoutMs);
        for (Purpose p : Purpose.values()) {
            idle.put(p, new ConcurrentLinkedDeque<>());
        }
        live.add(first);
        idle.get(first.purpose).add(first);
        this.tick = TimeUnit.MILLISECONDS.toNanos(Math.max(1, Math.min(50, callTimeoutMs / 20)));
        this.watchdog = daemon(this::watchdog, "rlmm-plugin-deadline");
        this.watcher = daemon(this::watch, "rlmm-plugin-readiness");
    }

    private static Thread daemon(Runnable r, String name) {
        Thread t = new Thread(r, name);
        t.setDaemon(true);
        t.start();
        return t;
    }

    long pid() {
        return pid;
    }

    boolean closed() {
        return closed;
    }

    /**
     * Runs one call of purpose p within dueNanos (System.nanoTime()) and returns its reply (an
     * error reply too: the caller maps it); a list's earlier replies go to more.
     *
     * @throws Broken when no answer came: the connection broke, or the deadline closed it
     */
    BrokerReply call(Purpose p, BrokerRequest.Builder req, long dueNanos, Consumer<BrokerReply> more)
            throws Broken, InterruptedException {
        boolean retried = false;
        while (true) {
            if (closed) {
                throw new Broken("the plugin's connection to rlmm serve pid " + pid + " ended", null, false, false);
            }
            Wire w = idle.get(p).pollFirst();
            boolean reused = w != null;
            if (w == null) {
                w = dial(p, dueNanos);
            }
            w.due = dueNanos;
            boolean sent = false;
            try {
                if (p == Purpose.PURPOSE_MUTATE || p == Purpose.PURPOSE_ASSIGN) {
                    // The server bounds these (never a read) by the time left and, on this host's
                    // Unix socket, does not run one it reads past its deadline (one that waited in
                    // the socket while the server was stopped).
                    long left = Math.max(1, TimeUnit.NANOSECONDS.toMillis(dueNanos - System.nanoTime()));
                    req.setTimeoutMs(left);
                    if (ep.socket() != null) {
                        req.setDeadlineUnixMs(System.currentTimeMillis() + left);
                    }
                }
                BrokerRequest r = req.setId(ids.incrementAndGet()).build();
                sent = true;
                BrokerReply reply = w.call(r, more);
                w.due = 0;
                release(w);
                return reply;
            } catch (IOException e) {
                drop(w);
                if (w.expired) {
                    throw new Broken("no answer within the call's bound", e, true, true);
                }
                if (e instanceof ClosedByInterruptException || Thread.currentThread().isInterrupted()) {
                    throw new InterruptedException("interrupted in a call to rlmm serve pid " + pid);
                }
                // An idle connection the server may have closed since: once more on a new one,
                // for a call that may be repeated (not a mutation: its event may be recorded).
                if (reused && !retried && p != Purpose.PURPOSE_MUTATE) {
                    retried = true;
                    continue;
                }
                throw new Broken("the connection to rlmm serve pid " + pid + " at " + ep.describe() + " broke: " + e, e, sent,
                        false);
            }
        }
    }

    /** A new connection of purpose p to this generation's server. */
    private Wire dial(Purpose p, long dueNanos) throws Broken {
        Wire w;
        try {
            long left = TimeUnit.NANOSECONDS.toMillis(dueNanos - System.nanoTime());
            w = Wire.open(ep, p, (int) Math.max(1, Math.min(connectTimeoutMs, left)));
        } catch (IOException | Errors.Refused e) {
            throw new Broken("cannot connect to rlmm serve at " + ep.describe() + ": " + e.getMessage(), e, false,
                    System.nanoTime() - dueNanos > 0);
        }
        if (w.server.getPid() != pid) {
            w.close();
            throw new Broken("rlmm serve at " + ep.describe() + " is now pid " + w.server.getPid() + ", not pid " + pid, null,
                    false, false);
        }
        live.add(w);
        if (closed) {
            drop(w);
            throw new Broken("the plugin's connection to rlmm serve pid " + pid + " ended", null, false, false);
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

    /** Closes every connection whose call passed its deadline. */
    private void watchdog() {
        while (!closed) {
            long now = System.nanoTime();
            for (Wire w : live) {
                long due = w.due;
                if (due != 0 && now - due > 0) {
                    w.expired = true;
                    w.close();
                }
            }
            LockSupport.parkNanos(this, tick);
        }
    }

    /** Keeps the readiness the server pushes, until the link closes; reconnects after a pause. */
    private void watch() {
        Backoff backoff = new Backoff(java.time.Duration.ofMillis(50), java.time.Duration.ofSeconds(2));
        while (!closed) {
            Wire w = null;
            try {
                w = Wire.open(ep, Purpose.PURPOSE_WATCH, connectTimeoutMs);
                if (w.server.getPid() != pid) {
                    ended("rlmm serve at " + ep.describe() + " is now pid " + w.server.getPid());
                    return; // another server: this generation is over
                }
                live.add(w);
                if (closed) {
                    return;
                }
                while (!closed) {
                    ReadinessUpdate u = ReadinessUpdate.parseFrom(w.readFrame());
                    Map<Key, Boolean> m = new java.util.HashMap<>(u.getPartitionsCount() * 2);
                    for (PartitionReadiness r : u.getPartitionsList()) {
                        m.put(Key.of(r.getTopicIdPartition()), r.getReady());
                    }
                    ready = m;
                    backoff.reset();
                }
            } catch (IOException | Errors.Refused e) {
                ready = Map.of();
                if (!closed) {
                    log.debug("rlmm plugin: the readiness watch of rlmm serve pid {} ended: {}", pid, e.toString());
                }
                if (gone != null) {
                    ended("rlmm serve pid " + pid + " at " + ep.describe() + " is gone (" + e.getMessage() + ")");
                    return;
                }
            } finally {
                if (w != null) {
                    live.remove(w);
                    w.close();
                }
            }
            if (!closed && !backoff.sleep()) {
                return;
            }
        }
    }

    private void ended(String why) {
        if (gone != null && !closed) {
            log.warn("rlmm plugin: {}; waiting for the next server", why);
            close(); // first: a link that ends before it is used must not go UP
            gone.accept(why);
        }
    }

    /** Whether the server last said tp is ready (false while no push came). */
    boolean ready(TopicIdPartition tp) {
        return Boolean.TRUE.equals(ready.get(Key.of(tp)));
    }

    /** How many hosted partitions are ready ([0]) and not ([1]). */
    long[] counts() {
        long yes = 0;
        long no = 0;
        for (boolean r : ready.values()) {
            if (r) {
                yes++;
            } else {
                no++;
            }
        }
        return new long[] {yes, no};
    }

    /** Ends the generation: every connection closed (calls in flight fail), the threads stopped. */
    @Override
    public void close() {
        closed = true;
        ready = Map.of();
        for (Wire w : live) {
            drop(w);
        }
        LockSupport.unpark(watchdog);
        watcher.interrupt();
        try {
            watchdog.join(1000);
            if (Thread.currentThread() != watcher) {
                watcher.join(1000); // not when the watch itself reported its server gone
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}

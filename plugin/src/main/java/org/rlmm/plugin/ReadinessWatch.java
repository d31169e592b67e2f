package org.rlmm.plugin;

import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.Status;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.StreamObserver;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.common.TopicIdPartition;
import org.rlmm.plugin.proto.PartitionReadiness;
import org.rlmm.plugin.proto.ReadinessUpdate;
import org.rlmm.plugin.proto.RemoteLogMetadataGrpc;
import org.rlmm.plugin.proto.WatchReadinessRequest;
import org.slf4j.Logger;

/**
 * The readiness of every partition the server hosts, pushed by it on one long-lived stream
 * ({@code WatchReadiness}) and kept here, so that {@code isReady}, which the broker asks for each
 * of its partitions from its tiering threads, reads memory and never waits for a call.
 *
 * <p>Each update is the server's whole list, which replaces the map at once (a partition not
 * listed is not ready). While there is no stream (the child died or restarts, the server is
 * unreachable) the map is empty: every partition answers false, as Kafka's manager answers while
 * it initializes. A stream that ends is opened again, with wait-for-ready (it waits for the
 * channel, so for a restarted child) and a doubling pause between failures; the new server's
 * first update then fills the map again. A server without the method (an older rlmm serve)
 * answers UNIMPLEMENTED: {@link #unimplemented} turns true and the owner asks per call instead.
 */
final class ReadinessWatch implements AutoCloseable {
    /** A partition as the server keys it: topic id and partition (the name is not compared). */
    private record Key(long most, long least, int partition) {
        static Key of(TopicIdPartition tp) {
            return new Key(tp.topicId().getMostSignificantBits(), tp.topicId().getLeastSignificantBits(), tp.partition());
        }

        static Key of(org.rlmm.plugin.proto.TopicIdPartition tp) {
            return new Key(tp.getTopicId().getMostSignificantBits(), tp.getTopicId().getLeastSignificantBits(), tp.getPartition());
        }
    }

    private final Channel channel;
    private final CallOptions options;
    private final Logger log;
    private final String target;
    private final Backoff backoff;
    private final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor(
            Channels.daemon("rlmm-plugin-readiness"));
    private final AtomicInteger opened = new AtomicInteger();
    private final AtomicInteger updates = new AtomicInteger();

    /** Replaced whole by every update; empty while there is no stream. */
    private volatile Map<Key, Boolean> ready = Map.of();
    private volatile boolean unimplemented;
    private volatile boolean closed;
    /** The open stream and its call; replaced under this object's lock. */
    private Watcher current;
    private ClientCall<WatchReadinessRequest, ReadinessUpdate> call;
    private String lastEnd = "";

    ReadinessWatch(Channel channel, CallOptions options, Logger log, String target, Duration backoff, Duration backoffMax) {
        this.channel = channel;
        this.options = options.withWaitForReady();
        this.log = log;
        this.target = target;
        this.backoff = new Backoff(backoff, backoffMax);
    }

    /** Opens the stream (once; later streams open by themselves). */
    void start() {
        open();
    }

    /** Whether the server said tp is hosted and ready in its last update (false without a stream). */
    boolean ready(TopicIdPartition tp) {
        return ready.getOrDefault(Key.of(tp), false);
    }

    /**
     * Waits until an update says tp is hosted and ready, at most nanos (the lookup in the window
     * after a restart, {@link PluginConfig#LOOKUP_READY_WAIT}); true when it is, false when the
     * time ran out or the watch closed.
     */
    boolean awaitReady(TopicIdPartition tp, long nanos) throws InterruptedException {
        Key k = Key.of(tp);
        long end = System.nanoTime() + nanos;
        synchronized (this) {
            while (!ready.getOrDefault(k, false)) {
                long left = end - System.nanoTime();
                if (closed || left <= 0) {
                    return false;
                }
                TimeUnit.NANOSECONDS.timedWait(this, left);
            }
            return true;
        }
    }

    /** How many hosted partitions the last update said are ready ([0]) and not ready ([1]). */
    long[] counts() {
        long yes = 0;
        long no = 0;
        for (Boolean b : ready.values()) {
            if (b) {
                yes++;
            } else {
                no++;
            }
        }
        return new long[] {yes, no};
    }

    /** True once the server answered the stream with UNIMPLEMENTED (an older rlmm serve). */
    boolean unimplemented() {
        return unimplemented;
    }

    /** Forgets every partition's readiness (the child died: nothing is ready until a new one says so). */
    void clear() {
        ready = Map.of();
    }

    /** How many streams were opened, and how many updates arrived (for tests). */
    int opened() {
        return opened.get();
    }

    int updates() {
        return updates.get();
    }

    private void open() {
        Watcher w = new Watcher();
        ClientCall<WatchReadinessRequest, ReadinessUpdate> c;
        synchronized (this) {
            if (closed) {
                return;
            }
            c = channel.newCall(RemoteLogMetadataGrpc.getWatchReadinessMethod(), options);
            current = w;
            call = c;
            opened.incrementAndGet();
        }
        ClientCalls.asyncServerStreamingCall(c, WatchReadinessRequest.getDefaultInstance(), w);
    }

    /** The stream w ended with st: empty the map and open another after the pause. */
    private void ended(Watcher w, Status st) {
        Duration wait;
        synchronized (this) {
            if (current != w) {
                return;
            }
            current = null;
            call = null;
            ready = Map.of();
            if (closed) {
                return;
            }
            if (st.getCode() == Status.Code.UNIMPLEMENTED) {
                unimplemented = true;
                log.warn("rlmm plugin: rlmm serve at {} does not push readiness (an older version: {}); isReady asks it"
                        + " with a call each time", target, st.getDescription());
                return;
            }
            wait = backoff.next();
            String why = st.getCode() + (st.getDescription() == null ? "" : ": " + st.getDescription());
            if (!why.equals(lastEnd)) {
                lastEnd = why;
                log.info("rlmm plugin: the readiness stream of rlmm serve at {} ended ({}); isReady answers false"
                        + " until it is open again (in {} ms)", target, why, wait.toMillis());
            }
        }
        try {
            timer.schedule(this::open, wait.toMillis(), TimeUnit.MILLISECONDS);
        } catch (RejectedExecutionException closing) {
            // closed meanwhile
        }
    }

    /** One stream's observer; its callbacks run on the channel's I/O thread. */
    private final class Watcher implements StreamObserver<ReadinessUpdate> {
        @Override
        public void onNext(ReadinessUpdate u) {
            Map<Key, Boolean> m = new HashMap<>(u.getPartitionsCount() * 2);
            for (PartitionReadiness p : u.getPartitionsList()) {
                m.put(Key.of(p.getTopicIdPartition()), p.getReady());
            }
            synchronized (ReadinessWatch.this) {
                if (current != this) {
                    return;
                }
                ready = m;
                backoff.reset();
                lastEnd = "";
                ReadinessWatch.this.notifyAll(); // lookups waiting in awaitReady
            }
            updates.incrementAndGet();
        }

        @Override
        public void onError(Throwable t) {
            ended(this, Status.fromThrowable(t));
        }

        @Override
        public void onCompleted() {
            ended(this, Status.UNAVAILABLE.withDescription("rlmm serve ended the readiness stream"));
        }
    }

    @Override
    public void close() {
        ClientCall<WatchReadinessRequest, ReadinessUpdate> c;
        synchronized (this) {
            closed = true;
            c = call;
            call = null;
            current = null;
            ready = Map.of();
            notifyAll(); // no lookup waits on a closed watch
        }
        if (c != null) {
            c.cancel("rlmm plugin closing", null);
        }
        timer.shutdownNow();
    }
}

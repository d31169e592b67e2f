package org.rlmm.plugin;

import java.util.ArrayList;
import java.util.Collections;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Supplier;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.server.log.remote.storage.RemoteLogMetadataManager;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadata;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadataUpdate;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentState;
import org.apache.kafka.server.log.remote.storage.RemotePartitionDeleteMetadata;
import org.apache.kafka.server.log.remote.storage.RemoteStorageException;
import org.rlmm.plugin.proto.AddSegmentRequest;
import org.rlmm.plugin.proto.BrokerReply;
import org.rlmm.plugin.proto.BrokerRequest;
import org.rlmm.plugin.proto.HighestOffsetForEpochRequest;
import org.rlmm.plugin.proto.LeadershipChangesRequest;
import org.rlmm.plugin.proto.ListSegmentsRequest;
import org.rlmm.plugin.proto.NextSegmentWithTxnIndexRequest;
import org.rlmm.plugin.proto.Purpose;
import org.rlmm.plugin.proto.PutPartitionDeleteRequest;
import org.rlmm.plugin.proto.RemoteLogSizeRequest;
import org.rlmm.plugin.proto.SegmentForOffsetRequest;
import org.rlmm.plugin.proto.SegmentMetadata;
import org.rlmm.plugin.proto.SegmentReply;
import org.rlmm.plugin.proto.StopPartitionsRequest;
import org.rlmm.plugin.proto.UpdateSegmentRequest;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * rlmm as the RemoteLogMetadataManager of an Apache Kafka 4.x broker: a thin client of
 * {@code rlmm serve}, which runs rlmm's topic-based manager over the cluster's
 * {@code __remote_log_metadata} topic and owns the broker's assignment. Nothing here decides a
 * segment's state: every method maps Kafka's arguments to one request on the server's framed
 * socket (rpc/brokerframe), written and read by the broker's calling thread, whose verdict comes
 * back as Kafka's own exceptions ({@link Errors}).
 *
 * <p>The parts (plugin/README.md): {@link PluginConfig}, {@link Supervisor} (the server's life as a
 * small state machine, and the one call primitive), {@link Link} and {@link Wire} (the connections),
 * {@link Outbox} (the assignment changes not acknowledged yet) and {@link RlmmMetrics}.
 */
public class RlmmRemoteLogMetadataManager implements RemoteLogMetadataManager {
    private static final Logger LOG = LoggerFactory.getLogger(RlmmRemoteLogMetadataManager.class);

    /**
     * The version of rlmm serve's broker frames this plugin speaks (rpc/brokerframe.Version): a server
     * of another version and the plugin refuse each other naming both, and the broker is stopped.
     */
    public static final int API_VERSION = 1;

    private volatile boolean closed;
    /** Set once configured, after the outbox and the metrics it was made with. */
    private volatile Supervisor supervisor;
    private Outbox outbox;
    private RlmmMetrics metrics;
    /** Set once the broker's first leadership change since it started is queued (broker_start). */
    private final AtomicBoolean startChangeQueued = new AtomicBoolean();
    /** Injected by tests before configure: holds assignment changes back (the window they are on their way). */
    private Outbox.Gate gate = Outbox.Gate.OPEN;

    /** Instantiated by the broker (public no-argument constructor). */
    public RlmmRemoteLogMetadataManager() {}

    /** A test's seam: the gate every assignment change passes before it is sent. */
    RlmmRemoteLogMetadataManager(Outbox.Gate gate) {
        this.gate = gate;
    }

    @Override
    public synchronized void configure(Map<String, ?> configs) {
        long began = System.nanoTime();
        if (closed) {
            throw Errors.misuse("configure after close");
        }
        if (supervisor != null) {
            LOG.info("rlmm plugin: already configured; ignoring this call");
            return;
        }
        PluginConfig c = PluginConfig.parse(configs);
        RlmmMetrics m = RlmmMetrics.register(c.brokerId(), LOG, this::upGauge, () -> readyCount(true), () -> readyCount(false));
        Backoff resend = new Backoff(c.ms(PluginConfig.RESTART_BACKOFF), c.ms(PluginConfig.RESTART_BACKOFF_MAX));
        Outbox o = new Outbox(this::send, gate, LOG, resend);
        Supervisor s = new Supervisor(c, LOG, Wire.Endpoint.of(c), m, o::waiting);
        try {
            s.start();
        } catch (RemoteStorageException | RuntimeException e) {
            s.close(); // what configure started so far; the instance may be configured again
            o.close();
            m.close();
            throw e instanceof RuntimeException r ? r : new KafkaException(e.getMessage(), e);
        }
        metrics = m;
        outbox = o;
        supervisor = s;
        LOG.info("rlmm plugin: configured in {} ms; rlmm serve at {} {} (calls wait up to {} ms for it)",
                TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - began), c.target(),
                c.mode == PluginConfig.Mode.SPAWN ? "starts in the background" : "is used as it runs",
                c.ms(PluginConfig.CALL_TIMEOUT).toMillis());
    }

    /** The child-up gauge: 1 while calls go to a server that answered the hello, else 0. */
    private long upGauge() {
        Supervisor s = supervisor;
        return s != null && !closed && s.state == Supervisor.State.UP ? 1 : 0;
    }

    /** Hosted partitions the server last said are ready (or not). */
    private long readyCount(boolean ready) {
        Supervisor s = supervisor;
        Link l = s == null ? null : s.current();
        return l == null ? 0 : l.count(ready);
    }

    /** The configured instance's supervisor. */
    private Supervisor supervisor() {
        if (closed) {
            throw Errors.misuse("this instance is closed");
        }
        Supervisor s = supervisor;
        if (s == null) {
            throw Errors.misuse("not configured");
        }
        return s;
    }

    /** One call through the supervisor; tp is the partition a read names (null: none). */
    private BrokerReply call(String rpc, Purpose p, TopicIdPartition tp, Supplier<String> what, BrokerRequest.Builder req)
            throws RemoteStorageException {
        return supervisor().call(rpc, p, tp, what, req, null);
    }

    // ---- reads -----------------------------------------------------------------------------

    @Override
    public Optional<RemoteLogSegmentMetadata> remoteLogSegmentMetadata(TopicIdPartition tp, int epochForOffset, long offset)
            throws RemoteStorageException {
        Objects.requireNonNull(tp, "topicIdPartition can not be null");
        BrokerRequest.Builder req = BrokerRequest.newBuilder().setSegmentForOffset(SegmentForOffsetRequest.newBuilder()
                .setTopicIdPartition(Convert.partition(tp)).setLeaderEpoch(epochForOffset).setOffset(offset));
        return segment(call("lookup", Purpose.PURPOSE_LOOKUP, tp,
                () -> "lookup of offset " + offset + " in epoch " + epochForOffset + " of " + tp, req).getSegment());
    }

    private static Optional<RemoteLogSegmentMetadata> segment(SegmentReply r) {
        return r.getFound() ? Optional.of(Convert.segment(r.getSegment())) : Optional.empty();
    }

    @Override
    public Optional<Long> highestOffsetForEpoch(TopicIdPartition tp, int leaderEpoch) throws RemoteStorageException {
        Objects.requireNonNull(tp, "topicIdPartition can not be null");
        BrokerRequest.Builder req = BrokerRequest.newBuilder().setHighestOffsetForEpoch(HighestOffsetForEpochRequest.newBuilder()
                .setTopicIdPartition(Convert.partition(tp)).setLeaderEpoch(leaderEpoch));
        var r = call("highest-offset", Purpose.PURPOSE_READ, tp, () -> "highest offset of epoch " + leaderEpoch + " of " + tp, req)
                .getHighestOffset();
        return r.getFound() ? Optional.of(r.getOffset()) : Optional.empty();
    }

    @Override
    public Iterator<RemoteLogSegmentMetadata> listRemoteLogSegments(TopicIdPartition tp) throws RemoteStorageException {
        Objects.requireNonNull(tp, "topicIdPartition can not be null");
        return list(tp, () -> "list of the segments of " + tp, ListSegmentsRequest.newBuilder().setTopicIdPartition(Convert.partition(tp)));
    }

    @Override
    public Iterator<RemoteLogSegmentMetadata> listRemoteLogSegments(TopicIdPartition tp, int leaderEpoch)
            throws RemoteStorageException {
        Objects.requireNonNull(tp, "topicIdPartition can not be null");
        return list(tp, () -> "list of the segments of epoch " + leaderEpoch + " of " + tp,
                ListSegmentsRequest.newBuilder().setTopicIdPartition(Convert.partition(tp)).setLeaderEpoch(leaderEpoch));
    }

    /** Reads the whole list before returning: a failure is thrown from this call as Kafka's exception. */
    private Iterator<RemoteLogSegmentMetadata> list(TopicIdPartition tp, Supplier<String> what, ListSegmentsRequest.Builder q)
            throws RemoteStorageException {
        List<BrokerReply> replies = new ArrayList<>();
        replies.add(supervisor().call("list", Purpose.PURPOSE_READ, tp, what, BrokerRequest.newBuilder().setListSegments(q), replies));
        List<RemoteLogSegmentMetadata> out = new ArrayList<>();
        for (BrokerReply r : replies) {
            for (SegmentMetadata m : r.getSegments().getSegmentsList()) {
                out.add(Convert.segment(m));
            }
        }
        return Collections.unmodifiableList(out).iterator();
    }

    @Override
    public long remoteLogSize(TopicIdPartition tp, int leaderEpoch) throws RemoteStorageException {
        Objects.requireNonNull(tp, "topicIdPartition can not be null");
        BrokerRequest.Builder req = BrokerRequest.newBuilder().setRemoteLogSize(RemoteLogSizeRequest.newBuilder()
                .setTopicIdPartition(Convert.partition(tp)).setLeaderEpoch(leaderEpoch));
        return call("remote-log-size", Purpose.PURPOSE_READ, tp, () -> "remote log size of epoch " + leaderEpoch + " of " + tp, req)
                .getRemoteLogSize().getSizeInBytes();
    }

    @Override
    public Optional<RemoteLogSegmentMetadata> nextSegmentWithTxnIndex(TopicIdPartition tp, int epoch, long offset)
            throws RemoteStorageException {
        Objects.requireNonNull(tp, "topicIdPartition can not be null");
        BrokerRequest.Builder req = BrokerRequest.newBuilder().setNextSegmentWithTxnIndex(NextSegmentWithTxnIndexRequest.newBuilder()
                .setTopicIdPartition(Convert.partition(tp)).setLeaderEpoch(epoch).setOffset(offset));
        return segment(call("next-txn-index", Purpose.PURPOSE_READ, tp,
                () -> "next segment with a transaction index from offset " + offset + " in epoch " + epoch + " of " + tp, req)
                .getSegment());
    }

    /** Whether tp's metadata is ready, as the server last pushed it: a read of memory, never a wait. */
    @Override
    public boolean isReady(TopicIdPartition tp) {
        Objects.requireNonNull(tp, "topicIdPartition can not be null");
        Link l = supervisor().current();
        return l != null && l.ready(tp);
    }

    // ---- mutations -------------------------------------------------------------------------

    /**
     * A mutation runs in the broker's thread, which returns with the future settled: the broker
     * waits for every add and finish at once (RemoteLogManager calls get() on the future).
     */
    private CompletableFuture<Void> mutate(String rpc, String what, BrokerRequest.Builder req) {
        Supervisor s = supervisor(); // closed, not configured: thrown, as Kafka's manager does
        try {
            s.call(rpc, Purpose.PURPOSE_MUTATE, null, () -> what, req, null);
            return CompletableFuture.completedFuture(null);
        } catch (RemoteStorageException | RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
    }

    @Override
    public CompletableFuture<Void> addRemoteLogSegmentMetadata(RemoteLogSegmentMetadata metadata) throws RemoteStorageException {
        Objects.requireNonNull(metadata, "remoteLogSegmentMetadata can not be null");
        if (metadata.state() != RemoteLogSegmentState.COPY_SEGMENT_STARTED) {
            throw new IllegalArgumentException("Given remoteLogSegmentMetadata should have state as "
                    + RemoteLogSegmentState.COPY_SEGMENT_STARTED + " but it contains state as: " + metadata.state());
        }
        return mutate("add", "adding segment " + metadata.remoteLogSegmentId(), BrokerRequest.newBuilder()
                .setAddSegment(AddSegmentRequest.newBuilder().setSegment(Convert.segment(metadata))));
    }

    @Override
    public CompletableFuture<Void> updateRemoteLogSegmentMetadata(RemoteLogSegmentMetadataUpdate update)
            throws RemoteStorageException {
        Objects.requireNonNull(update, "remoteLogSegmentMetadataUpdate can not be null");
        if (update.state() == RemoteLogSegmentState.COPY_SEGMENT_STARTED) {
            throw new IllegalArgumentException("Given remoteLogSegmentMetadata should not have the state as: "
                    + RemoteLogSegmentState.COPY_SEGMENT_STARTED);
        }
        return mutate("update", "updating segment " + update.remoteLogSegmentId() + " to " + update.state(),
                BrokerRequest.newBuilder().setUpdateSegment(UpdateSegmentRequest.newBuilder().setUpdate(Convert.update(update))));
    }

    @Override
    public CompletableFuture<Void> putRemotePartitionDeleteMetadata(RemotePartitionDeleteMetadata metadata)
            throws RemoteStorageException {
        Objects.requireNonNull(metadata, "remotePartitionDeleteMetadata can not be null");
        return mutate("partition-delete", "recording " + metadata.state() + " of partition " + metadata.topicIdPartition(),
                BrokerRequest.newBuilder().setPutPartitionDelete(PutPartitionDeleteRequest.newBuilder()
                        .setDelete(Convert.partitionDelete(metadata))));
    }

    // ---- assignment ------------------------------------------------------------------------

    /**
     * Queues the change in the {@link Outbox} and returns: this is the broker's metadata thread,
     * which never waits for a server. The server records the change when it arrives.
     */
    @Override
    public void onPartitionLeadershipChanges(Set<TopicIdPartition> leaderPartitions, Set<TopicIdPartition> followerPartitions) {
        Objects.requireNonNull(leaderPartitions, "leaderPartitions can not be null");
        Objects.requireNonNull(followerPartitions, "followerPartitions can not be null");
        supervisor();
        List<TopicIdPartition> all = new ArrayList<>(leaderPartitions);
        all.addAll(followerPartitions);
        outbox.submit(new Outbox.Change("leadership change of " + leaderPartitions.size() + " leader and "
                + followerPartitions.size() + " follower partitions", BrokerRequest.newBuilder().setLeadershipChanges(
                LeadershipChangesRequest.newBuilder().addAllLeaders(Convert.partitions(leaderPartitions))
                        .addAllFollowers(Convert.partitions(followerPartitions))
                        .setBrokerStart(startChangeQueued.compareAndSet(false, true))), all));
    }

    /** Like {@link #onPartitionLeadershipChanges}: queued, sent in order. */
    @Override
    public void onStopPartitions(Set<TopicIdPartition> partitions) {
        Objects.requireNonNull(partitions, "partitions can not be null");
        supervisor();
        outbox.submit(new Outbox.Change("stop of " + partitions.size() + " partitions", BrokerRequest.newBuilder()
                .setStopPartitions(StopPartitionsRequest.newBuilder().addAllPartitions(Convert.partitions(partitions))), partitions));
    }

    /** The outbox's sender: one change, until the server acknowledges it. */
    private void send(Outbox.Change c) throws RemoteStorageException {
        call(c.request().hasLeadershipChanges() ? "leadership" : "stop", Purpose.PURPOSE_ASSIGN, null, c::what, c.request());
    }

    // ---- lifecycle -------------------------------------------------------------------------

    /** Stops the child (SIGTERM, then SIGKILL after rlmm.serve.stop.timeout.ms) and every connection; idempotent. */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        if (supervisor != null) { // configured: the three parts were made together
            outbox.close();
            supervisor.close();
            metrics.close();
        }
        LOG.info("rlmm plugin: closed");
    }
}

package org.rlmm.plugin;

import java.time.Duration;
import java.util.Collections;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.server.log.remote.storage.RemoteLogMetadataManager;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadata;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadataUpdate;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentState;
import org.apache.kafka.server.log.remote.storage.RemotePartitionDeleteMetadata;
import org.apache.kafka.server.log.remote.storage.RemoteStorageException;
import org.rlmm.plugin.proto.AddSegmentRequest;
import org.rlmm.plugin.proto.HighestOffsetForEpochReply;
import org.rlmm.plugin.proto.HighestOffsetForEpochRequest;
import org.rlmm.plugin.proto.LeadershipChangesRequest;
import org.rlmm.plugin.proto.ListSegmentsRequest;
import org.rlmm.plugin.proto.MutationFrameRequest;
import org.rlmm.plugin.proto.NextSegmentWithTxnIndexRequest;
import org.rlmm.plugin.proto.PutPartitionDeleteRequest;
import org.rlmm.plugin.proto.RemoteLogSizeRequest;
import org.rlmm.plugin.proto.SegmentForOffsetRequest;
import org.rlmm.plugin.proto.SegmentReply;
import org.rlmm.plugin.proto.StopPartitionsRequest;
import org.rlmm.plugin.proto.UpdateSegmentRequest;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * rlmm as the RemoteLogMetadataManager of an Apache Kafka 4.x broker: a thin gRPC client of
 * {@code rlmm serve} (proto/rlmm/v1/rlmm.proto), which runs rlmm's topic-based manager over the
 * cluster's {@code __remote_log_metadata} topic. Nothing here decides a segment's state: every
 * method maps Kafka's arguments to one call to the server, whose verdict comes back as Kafka's own
 * exceptions ({@link Errors}).
 *
 * <p>The parts: {@link PluginConfig} (the settings, on Kafka's ConfigDef), {@link Supervisor} (the
 * child, or a running server, and one {@link Session} per generation of it: channel, lookup and
 * readiness streams, version handshake, the broker's partitions handed over), {@link Caller} (the
 * one call primitive: deadline, wait for a session, Errors), {@link Assigner} (the broker's
 * assignment changes, in order, off its metadata thread) and {@link RlmmMetrics}. configure returns
 * without waiting for the server; calls wait for it within their bounds; a setting the child refuses
 * stops the broker as Kafka's own manager does when it cannot initialize. The settings are in
 * plugin/README.md.
 */
public class RlmmRemoteLogMetadataManager implements RemoteLogMetadataManager {
    private static final Logger LOG = LoggerFactory.getLogger(RlmmRemoteLogMetadataManager.class);

    /**
     * The version of rlmm serve's API (proto/rlmm/v1/rlmm.proto) this plugin speaks: every server
     * it reaches must state the same api_version in ServerInfo (server.APIVersion in the Go code)
     * before any call goes through; one of another version is refused naming both, and the broker
     * is stopped as when the child refuses its settings.
     */
    public static final int API_VERSION = 1;

    /** For tests only: {@link PluginConfig#TEST_ASSIGN_DELAY}. */
    static final String TEST_ASSIGN_DELAY = PluginConfig.TEST_ASSIGN_DELAY;

    private volatile PluginConfig cfg;
    private volatile boolean closed;
    private ExecutorService callbacks;
    private Supervisor supervisor;
    private Caller caller;
    private Assigner assigner;
    private volatile RlmmMetrics metrics;
    /** The lookup path that overrides the configured one (the benchmark's A/B), or null. */
    private volatile PluginConfig.LookupTransport lookupPath;

    /** Instantiated by the broker (public no-argument constructor). */
    public RlmmRemoteLogMetadataManager() {}

    @Override
    public synchronized void configure(Map<String, ?> configs) {
        long began = System.nanoTime();
        if (closed) {
            throw Errors.configureAfterClose();
        }
        if (cfg != null) {
            LOG.info("rlmm plugin: already configured (server {}); ignoring this call", cfg.target());
            return;
        }
        PluginConfig c = PluginConfig.parse(configs);
        c.logNotes(LOG);
        callbacks = Executors.newCachedThreadPool(Channels.daemon("rlmm-plugin-callback"));
        RlmmMetrics m = RlmmMetrics.register(c.brokerId, LOG, this::upGauge, () -> readyCount(true), () -> readyCount(false));
        metrics = m;
        supervisor = new Supervisor(c, LOG, API_VERSION, m != null ? m : Supervisor.Listener.NONE);
        caller = new Caller(c, supervisor, LOG, callbacks);
        assigner = new Assigner(LOG, c.restartBackoff, c.restartBackoffMax);
        caller.metrics(m);
        cfg = c;
        try {
            supervisor.start();
        } catch (RemoteStorageException | RuntimeException e) {
            close(); // what configure started so far; the instance may be configured again
            closed = false;
            cfg = null;
            throw e instanceof RuntimeException r ? r : Errors.configureFailed(e);
        }
        LOG.info("rlmm plugin: configured in {} ms; rlmm serve at {} {} (calls wait up to {} ms for it)",
                TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - began), c.target(),
                c.mode == PluginConfig.Mode.SPAWN ? "starts in the background" : "is used as it runs", c.callTimeout.toMillis());
    }

    /** The child-up gauge: 1 while calls go to a server that passed the handshake, else 0. */
    private long upGauge() {
        Supervisor s = supervisor;
        return s != null && !closed && s.up() ? 1 : 0;
    }

    /** Hosted partitions the open session's server last said are ready (or not). */
    private long readyCount(boolean ready) {
        Supervisor s = supervisor;
        Session open = s == null ? null : s.current();
        return open == null ? 0 : open.readiness.counts()[ready ? 0 : 1];
    }

    private Caller caller() {
        if (closed) {
            throw Errors.closed();
        }
        if (cfg == null) {
            throw Errors.notConfigured();
        }
        return caller;
    }

    // ---- reads -----------------------------------------------------------------------------

    @Override
    public Optional<RemoteLogSegmentMetadata> remoteLogSegmentMetadata(TopicIdPartition tp, int epochForOffset, long offset)
            throws RemoteStorageException {
        return lookup(tp, epochForOffset, offset, lookupPath);
    }

    /** {@link #remoteLogSegmentMetadata} by the given path, or (null) the configured one (tests, benchmark). */
    Optional<RemoteLogSegmentMetadata> lookup(TopicIdPartition tp, int epochForOffset, long offset,
            PluginConfig.LookupTransport path) throws RemoteStorageException {
        Objects.requireNonNull(tp, "topicIdPartition can not be null");
        SegmentForOffsetRequest req = SegmentForOffsetRequest.newBuilder()
                .setTopicIdPartition(Convert.partition(tp)).setLeaderEpoch(epochForOffset).setOffset(offset).build();
        SegmentReply r = caller().lookup("lookup", tp, () -> "lookup of offset " + offset + " in epoch " + epochForOffset + " of " + tp,
                (s, d) -> s.lookup(req, d, path != null ? path : cfg.lookupTransport));
        return r.getFound() ? Optional.of(Convert.segment(r.getSegment())) : Optional.empty();
    }

    @Override
    public Optional<Long> highestOffsetForEpoch(TopicIdPartition tp, int leaderEpoch) throws RemoteStorageException {
        Objects.requireNonNull(tp, "topicIdPartition can not be null");
        HighestOffsetForEpochRequest req = HighestOffsetForEpochRequest.newBuilder()
                .setTopicIdPartition(Convert.partition(tp)).setLeaderEpoch(leaderEpoch).build();
        HighestOffsetForEpochReply r = caller().call("highest-offset", tp,
                () -> "highest offset of epoch " + leaderEpoch + " of " + tp,
                (s, d) -> s.blocking.withDeadline(d).withWaitForReady().highestOffsetForEpoch(req));
        return r.getFound() ? Optional.of(r.getOffset()) : Optional.empty();
    }

    @Override
    public Iterator<RemoteLogSegmentMetadata> listRemoteLogSegments(TopicIdPartition tp) throws RemoteStorageException {
        Objects.requireNonNull(tp, "topicIdPartition can not be null");
        return list(tp, () -> "list of the segments of " + tp,
                ListSegmentsRequest.newBuilder().setTopicIdPartition(Convert.partition(tp)).build());
    }

    @Override
    public Iterator<RemoteLogSegmentMetadata> listRemoteLogSegments(TopicIdPartition tp, int leaderEpoch)
            throws RemoteStorageException {
        Objects.requireNonNull(tp, "topicIdPartition can not be null");
        return list(tp, () -> "list of the segments of epoch " + leaderEpoch + " of " + tp,
                ListSegmentsRequest.newBuilder().setTopicIdPartition(Convert.partition(tp)).setLeaderEpoch(leaderEpoch).build());
    }

    /**
     * Reads the whole stream before returning: a failure (unknown partition, not ready, a server
     * gone mid-stream) is thrown from this call as Kafka's exception, and no stream stays open
     * when the caller stops iterating early.
     */
    private Iterator<RemoteLogSegmentMetadata> list(TopicIdPartition tp, Supplier<String> what, ListSegmentsRequest req)
            throws RemoteStorageException {
        List<RemoteLogSegmentMetadata> out = caller().call("list", tp, what, (s, d) -> s.list(req, d));
        return Collections.unmodifiableList(out).iterator();
    }

    @Override
    public long remoteLogSize(TopicIdPartition tp, int leaderEpoch) throws RemoteStorageException {
        Objects.requireNonNull(tp, "topicIdPartition can not be null");
        RemoteLogSizeRequest req = RemoteLogSizeRequest.newBuilder()
                .setTopicIdPartition(Convert.partition(tp)).setLeaderEpoch(leaderEpoch).build();
        return caller().call("remote-log-size", tp, () -> "remote log size of epoch " + leaderEpoch + " of " + tp,
                (s, d) -> s.blocking.withDeadline(d).withWaitForReady().remoteLogSize(req)).getSizeInBytes();
    }

    @Override
    public Optional<RemoteLogSegmentMetadata> nextSegmentWithTxnIndex(TopicIdPartition tp, int epoch, long offset)
            throws RemoteStorageException {
        Objects.requireNonNull(tp, "topicIdPartition can not be null");
        NextSegmentWithTxnIndexRequest req = NextSegmentWithTxnIndexRequest.newBuilder()
                .setTopicIdPartition(Convert.partition(tp)).setLeaderEpoch(epoch).setOffset(offset).build();
        SegmentReply r = caller().call("next-txn-index", tp,
                () -> "next segment with a transaction index from offset " + offset + " in epoch " + epoch + " of " + tp,
                (s, d) -> s.blocking.withDeadline(d).withWaitForReady().nextSegmentWithTxnIndex(req));
        return r.getFound() ? Optional.of(Convert.segment(r.getSegment())) : Optional.empty();
    }

    /** Whether tp's metadata is ready, as the server last pushed it: a read of memory ({@link Caller#isReady}). */
    @Override
    public boolean isReady(TopicIdPartition tp) {
        Objects.requireNonNull(tp, "topicIdPartition can not be null");
        return caller().isReady(tp);
    }

    // ---- mutations -------------------------------------------------------------------------

    @Override
    public CompletableFuture<Void> addRemoteLogSegmentMetadata(RemoteLogSegmentMetadata metadata) throws RemoteStorageException {
        Objects.requireNonNull(metadata, "remoteLogSegmentMetadata can not be null");
        if (metadata.state() != RemoteLogSegmentState.COPY_SEGMENT_STARTED) {
            throw new IllegalArgumentException("Given remoteLogSegmentMetadata should have state as "
                    + RemoteLogSegmentState.COPY_SEGMENT_STARTED + " but it contains state as: " + metadata.state());
        }
        AddSegmentRequest req = AddSegmentRequest.newBuilder().setSegment(Convert.segment(metadata)).build();
        return caller().mutate("add", "adding segment " + metadata.remoteLogSegmentId(),
                MutationFrameRequest.newBuilder().setAddSegment(req), (stub, obs) -> stub.addSegment(req, obs));
    }

    @Override
    public CompletableFuture<Void> updateRemoteLogSegmentMetadata(RemoteLogSegmentMetadataUpdate update)
            throws RemoteStorageException {
        Objects.requireNonNull(update, "remoteLogSegmentMetadataUpdate can not be null");
        if (update.state() == RemoteLogSegmentState.COPY_SEGMENT_STARTED) {
            throw new IllegalArgumentException("Given remoteLogSegmentMetadata should not have the state as: "
                    + RemoteLogSegmentState.COPY_SEGMENT_STARTED);
        }
        UpdateSegmentRequest req = UpdateSegmentRequest.newBuilder().setUpdate(Convert.update(update)).build();
        return caller().mutate("update", "updating segment " + update.remoteLogSegmentId() + " to " + update.state(),
                MutationFrameRequest.newBuilder().setUpdateSegment(req), (stub, obs) -> stub.updateSegment(req, obs));
    }

    @Override
    public CompletableFuture<Void> putRemotePartitionDeleteMetadata(RemotePartitionDeleteMetadata metadata)
            throws RemoteStorageException {
        Objects.requireNonNull(metadata, "remotePartitionDeleteMetadata can not be null");
        PutPartitionDeleteRequest req = PutPartitionDeleteRequest.newBuilder().setDelete(Convert.partitionDelete(metadata)).build();
        return caller().mutate("partition-delete", "recording " + metadata.state() + " of partition " + metadata.topicIdPartition(),
                MutationFrameRequest.newBuilder().setPutPartitionDelete(req), (stub, obs) -> stub.putPartitionDelete(req, obs));
    }

    // ---- assignment ------------------------------------------------------------------------

    /**
     * Records the change and hands it to the server in the background, in order ({@link Assigner}):
     * this is called from the broker's metadata thread, which must not wait for a server that is
     * starting. The broker waits for {@link #isReady} before it copies.
     */
    @Override
    public void onPartitionLeadershipChanges(Set<TopicIdPartition> leaderPartitions, Set<TopicIdPartition> followerPartitions) {
        Objects.requireNonNull(leaderPartitions, "leaderPartitions can not be null");
        Objects.requireNonNull(followerPartitions, "followerPartitions can not be null");
        Caller c = caller();
        LeadershipChangesRequest req = LeadershipChangesRequest.newBuilder()
                .addAllLeaders(Convert.partitions(leaderPartitions)).addAllFollowers(Convert.partitions(followerPartitions)).build();
        String what = "leadership change of " + leaderPartitions.size() + " leader and " + followerPartitions.size()
                + " follower partitions";
        boolean[] held = {false};
        supervisor.recordLeadership(leaderPartitions, followerPartitions, () -> assigner.submit(what, () -> {
            if (!held[0]) {
                held[0] = true;
                supervisor.holdBackChange(what);
            }
            c.call("leadership", null, () -> what, (s, d) -> s.blocking.withDeadline(d).withWaitForReady()
                    .onPartitionLeadershipChanges(req));
            if (!cfg.testAssignDelay.isZero()) { // brokertest/window_test.go reads this line
                LOG.warn("rlmm plugin: {}: the {} reached rlmm serve ({} reads of partitions assigned here were refused"
                        + " NOT_ASSIGNED so far)", TEST_ASSIGN_DELAY, what, c.refusedAssigned());
            }
        }));
    }

    /** Like {@link #onPartitionLeadershipChanges}: recorded at once, handed over in the background. */
    @Override
    public void onStopPartitions(Set<TopicIdPartition> partitions) {
        Objects.requireNonNull(partitions, "partitions can not be null");
        Caller c = caller();
        StopPartitionsRequest req = StopPartitionsRequest.newBuilder().addAllPartitions(Convert.partitions(partitions)).build();
        String what = "stopping " + partitions.size() + " partitions";
        supervisor.recordStop(partitions, () -> assigner.submit(what, () -> c.call("stop", null, () -> what,
                (s, d) -> s.blocking.withDeadline(d).withWaitForReady().onStopPartitions(req))));
    }

    // ---- lifecycle -------------------------------------------------------------------------

    /** Stops the child (SIGTERM, then SIGKILL after rlmm.serve.stop.timeout.ms) and every channel; idempotent. */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        if (assigner != null) {
            assigner.close();
        }
        if (supervisor != null) {
            supervisor.close();
        }
        if (callbacks != null) {
            callbacks.shutdownNow();
        }
        RlmmMetrics m = metrics;
        if (m != null) {
            m.close();
        }
        LOG.info("rlmm plugin: closed");
    }

    // ---- for tests and the benchmark -------------------------------------------------------

    /** The pid of the child this instance started, or -1 (connect mode, or none alive). */
    long childPid() {
        return supervisor == null ? -1 : supervisor.childPid();
    }

    /** The exit code of the child close() stopped (-1: none). */
    int stoppedChildExitCode() {
        return supervisor == null ? -1 : supervisor.stoppedChildExitCode();
    }

    /** Why this instance will use no server (it stopped the broker), or null. */
    String failure() {
        return supervisor == null ? null : supervisor.failure();
    }

    /** Waits until calls go to a server, at most timeout; false when not, or when the plugin gave up. */
    boolean awaitServer(Duration timeout) throws InterruptedException {
        return supervisor.awaitOpen(timeout);
    }

    /** The plugin's metrics; null when not registered. */
    RlmmMetrics metrics() {
        return metrics;
    }

    /** The open session's readiness stream; null between generations. */
    ReadinessWatch readinessWatch() {
        Session s = supervisor.current();
        return s == null ? null : s.readiness;
    }

    /** How many lookup streams this instance opened, over every session. */
    int lookupStreamsOpened() {
        return supervisor == null ? 0 : supervisor.lookupStreamsOpened();
    }

    /** Makes {@link #remoteLogSegmentMetadata} go by path (null: the configured one; the benchmark's A/B switch). */
    void lookupPath(PluginConfig.LookupTransport path) {
        lookupPath = path;
    }

    /** How many framed lookup connections this instance opened, over every session. */
    int framedConnectionsOpened() {
        return supervisor == null ? 0 : supervisor.framedConnectionsOpened();
    }

    /** How many framed mutation connections this instance opened, over every session. */
    int framedMutationConnectionsOpened() {
        return supervisor == null ? 0 : supervisor.framedMutationConnectionsOpened();
    }

    /** System.nanoTime() when the server's answer to a mutation last reached the plugin (the benchmark's split). */
    long lastMutationSettled() {
        return caller == null ? 0 : caller.lastSettled();
    }

    /** Whether every assignment change so far has reached the server. */
    boolean assignmentsSent() {
        return assigner == null || assigner.idle();
    }
}

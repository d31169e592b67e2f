package org.rlmm.plugin;

import io.grpc.ClientCall;
import io.grpc.ConnectivityState;
import io.grpc.Deadline;
import io.grpc.MethodDescriptor;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.ClientCalls;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import java.util.stream.Collectors;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.server.log.remote.storage.RemoteStorageException;
import org.rlmm.plugin.proto.LeadershipChangesRequest;
import org.rlmm.plugin.proto.RemoteLogMetadataGrpc;
import org.rlmm.plugin.proto.SegmentForOffsetRequest;
import org.rlmm.plugin.proto.SegmentReply;
import org.rlmm.plugin.proto.ServerInfoReply;
import org.rlmm.plugin.proto.ServerInfoRequest;
import org.slf4j.Logger;

/**
 * One generation of the server: the plugin's channel to one {@code rlmm serve} process (a child
 * this plugin started, or, in connect mode, one server seen at the address), with that channel's
 * lookup stream ({@link LookupStream}) and readiness stream ({@link ReadinessWatch}), and the
 * handshake that must pass before any call of the broker goes to it: its API version, then the
 * broker's partitions handed over ({@link #handOver}). When the process dies or is replaced the
 * session is closed as a whole (its channel, and with it every call still on it, ends) and the
 * {@link Supervisor} opens the next one, so no call of one generation reaches the next.
 */
final class Session implements AutoCloseable {
    /** The plugin's generation number of this session (1 for the first). */
    final int generation;
    private final PluginConfig cfg;
    private final Logger log;
    private final Channels.Conn conn;
    /** The stub of blocking calls; each call adds its own deadline. */
    final RemoteLogMetadataGrpc.RemoteLogMetadataBlockingStub blocking;
    /** The stub of mutations (their futures complete from gRPC's callback). */
    final RemoteLogMetadataGrpc.RemoteLogMetadataStub async;
    /** The channel's I/O thread, where mutations are started ({@link Channels.Conn#loop}). */
    final java.util.concurrent.Executor loop;
    final LookupStream lookups;
    /** The framed socket's lookup pool, set by {@link #handOver} when the server has one; null before or without. */
    private volatile FramedPool framed;
    /** The framed socket's mutation pool, set with {@link #framed} when mutations go framed; null before or without. */
    private volatile FramedPool framedMutations;
    /** Framed lookup connections opened, counted across sessions (for tests). */
    private final AtomicInteger framedOpened;
    /** Framed mutation connections opened, counted across sessions (for tests). */
    private final AtomicInteger framedMutationsOpened;
    /** The server's last answer to ServerInfo (it names the framed socket), or null. */
    private volatile ServerInfoReply lastInfo;
    final ReadinessWatch readiness;
    private volatile boolean closed;
    /** The pid of the server the handshake passed with; -1 before. */
    private volatile long pid = -1;
    /** Why the last ServerInfo failed (said once per distinct reason), or "". */
    private volatile String lastProbeFailure = "";

    /** Opens the channel and the readiness stream (which waits for the server by itself). */
    Session(PluginConfig cfg, Logger log, int generation, AtomicInteger lookupStreams, AtomicInteger framedOpened,
            AtomicInteger framedMutationsOpened) {
        this.cfg = cfg;
        this.framedOpened = framedOpened;
        this.framedMutationsOpened = framedMutationsOpened;
        this.log = log;
        this.generation = generation;
        this.conn = Channels.open(cfg);
        this.blocking = RemoteLogMetadataGrpc.newBlockingStub(conn.channel);
        this.async = RemoteLogMetadataGrpc.newStub(conn.channel);
        this.loop = conn.loop;
        this.lookups = new LookupStream(conn.channel, blocking.getCallOptions(), log, cfg.target(), lookupStreams);
        this.readiness = new ReadinessWatch(conn.channel, blocking.getCallOptions(), log, cfg.target(),
                cfg.restartBackoff, cfg.restartBackoffMax);
        this.readiness.start();
    }

    /** Whether this generation ended (its server died or was replaced, or the plugin closed). */
    boolean closed() {
        return closed;
    }

    /** The pid of the server this session's handshake passed with, or -1. */
    long pid() {
        return pid;
    }

    /**
     * Whether e, a call's failure on this session, says its generation ended: the session was
     * closed, or the transport failed (UNAVAILABLE or CANCELLED without rlmm's detail) and the
     * child this session talks to is dead, which the supervisor may not have seen yet. A call that
     * failed so is run again on the next session ({@link Caller}). In connect mode only a closed
     * session says so: a server the plugin did not start cannot be seen dying.
     */
    boolean ended(StatusRuntimeException e) {
        if (closed) {
            return true;
        }
        if (cfg.mode != PluginConfig.Mode.SPAWN || !transportFailed(e) || Errors.info(e) != null) {
            return false;
        }
        long p = pid;
        return p > 0 && !ProcessHandle.of(p).map(ProcessHandle::isAlive).orElse(false);
    }

    /**
     * Whether e is the transport's failure: UNAVAILABLE or CANCELLED, or UNKNOWN from a write on a
     * channel already closed (grpc-java's status when a call starts on a connection that a dead
     * child closed just before).
     */
    private static boolean transportFailed(StatusRuntimeException e) {
        io.grpc.Status.Code code = e.getStatus().getCode();
        if (code == io.grpc.Status.Code.UNAVAILABLE || code == io.grpc.Status.Code.CANCELLED) {
            return true;
        }
        if (code != io.grpc.Status.Code.UNKNOWN) {
            return false;
        }
        for (Throwable c = e.getCause(); c != null; c = c.getCause()) {
            if (c instanceof java.nio.channels.ClosedChannelException) {
                return true;
            }
        }
        return false;
    }

    /** Whether the channel is connected (connect mode's child-up gauge). */
    boolean connected() {
        return !closed && conn.channel.getState(false) == ConnectivityState.READY;
    }

    /** Why the server did not answer ServerInfo last, or "" (for the message of a call that waited for it). */
    String lastProbeFailure() {
        return lastProbeFailure;
    }

    /**
     * Asks the server who it is, within timeout: empty when it does not answer (logged once per
     * distinct reason, with the cause: a transport that cannot even connect shows here).
     */
    Optional<ServerInfoReply> serverInfo(Duration timeout) {
        conn.channel.resetConnectBackoff();
        try {
            ServerInfoReply r = blocking.withDeadlineAfter(timeout.toMillis(), TimeUnit.MILLISECONDS)
                    .serverInfo(ServerInfoRequest.getDefaultInstance());
            lastProbeFailure = "";
            lastInfo = r;
            return Optional.of(r);
        } catch (StatusRuntimeException e) {
            // A deadline's description carries timings, so the code and cause tell reasons apart.
            String why = e.getStatus().getCode() + (e.getCause() == null ? "" : " " + e.getCause());
            if (!why.equals(lastProbeFailure)) {
                log.info("rlmm plugin: ServerInfo to {} failed: {}", cfg.target(), e.getStatus(), e.getCause());
            }
            lastProbeFailure = e.getStatus().getCode() + (e.getStatus().getDescription() == null ? ""
                    : ": " + e.getStatus().getDescription());
            return Optional.empty();
        }
    }

    /**
     * The handshake's first step: refuses a server of another API version, naming both.
     *
     * @throws Errors.Refused when the versions differ
     */
    void checkVersion(ServerInfoReply info, int apiVersion) throws Errors.Refused {
        String mismatch = Errors.versionMismatch(info, cfg.target(), apiVersion);
        if (mismatch != null) {
            throw new Errors.Refused(mismatch);
        }
    }

    /**
     * The handshake's last step: hands the server the partitions this broker holds (true for a
     * leader), trying with the plugin's {@link Backoff} until the server takes them (it may still
     * be opening its log), the server is gone, or the session closes. Only after this do the
     * broker's calls go to this session.
     *
     * @param gone whether the server this session talks to is gone (a dead child, another server)
     */
    void handOver(Map<TopicIdPartition, Boolean> assigned, long serverPid, String who, BooleanSupplier gone)
            throws RemoteStorageException {
        Set<TopicIdPartition> leaders = assigned.entrySet().stream().filter(Map.Entry::getValue)
                .map(Map.Entry::getKey).collect(Collectors.toSet());
        Set<TopicIdPartition> followers = assigned.entrySet().stream().filter(e -> !e.getValue())
                .map(Map.Entry::getKey).collect(Collectors.toSet());
        if (!assigned.isEmpty()) {
            LeadershipChangesRequest req = LeadershipChangesRequest.newBuilder()
                    .addAllLeaders(Convert.partitions(leaders))
                    .addAllFollowers(Convert.partitions(followers))
                    .build();
            Backoff backoff = new Backoff(cfg.restartBackoff, cfg.restartBackoffMax);
            while (true) {
                try {
                    blocking.withDeadlineAfter(cfg.callTimeout.toMillis(), TimeUnit.MILLISECONDS).withWaitForReady()
                            .onPartitionLeadershipChanges(req);
                    break;
                } catch (StatusRuntimeException e) {
                    if (closed || gone.getAsBoolean()) {
                        throw Errors.storage("rlmm plugin: handing partitions to rlmm serve pid " + serverPid
                                + " failed: it is gone", e);
                    }
                    log.warn("rlmm plugin: {} did not take this broker's {} partitions yet ({}); retrying in {} ms",
                            who, assigned.size(), Errors.map(e, "handing partitions", cfg.target()).getMessage(),
                            backoff.peek().toMillis());
                    if (!backoff.sleep()) {
                        throw Errors.interrupted("rlmm plugin: handing partitions to " + who, e);
                    }
                }
            }
        }
        pid = serverPid;
        openFramed(serverPid);
        log.info("rlmm plugin: handed {} leader and {} follower partitions to {} (generation {})",
                leaders.size(), followers.size(), who, generation);
    }

    /**
     * Opens the framed socket's pools when the plugin reaches its server on a Unix socket and the
     * server's ServerInfo, from this pid, named its framed socket (an older server names none: calls
     * stay on gRPC): the lookup pool when lookups go framed ({@code rlmm.serve.lookup.transport}), the
     * mutation pool when mutations do ({@code rlmm.serve.mutation.transport}).
     */
    private void openFramed(long serverPid) {
        ServerInfoReply info = lastInfo;
        boolean lookups = cfg.lookupTransport == PluginConfig.LookupTransport.FRAMED;
        boolean mutations = cfg.mutationTransport == PluginConfig.MutationTransport.FRAMED;
        if (!(lookups || mutations) || cfg.mode == PluginConfig.Mode.TCP || info == null || info.getPid() != serverPid
                || framed != null || framedMutations != null) {
            return;
        }
        if (info.getLookupSocket().isEmpty()) {
            log.info("rlmm plugin: rlmm serve pid {} has no framed socket (an older version, or --lookup-socket"
                    + " none); lookups go on the lookup stream, mutations as gRPC calls", serverPid);
            return;
        }
        java.nio.file.Path path = java.nio.file.Path.of(info.getLookupSocket());
        if (lookups) {
            framed = new FramedPool(FramedPool.Kind.LOOKUPS, path, serverPid, cfg.callTimeout.toMillis(), log,
                    cfg.target(), framedOpened);
        }
        if (mutations) {
            framedMutations = new FramedPool(FramedPool.Kind.MUTATIONS, path, serverPid, cfg.mutationTimeout.toMillis(), log,
                    cfg.target(), framedMutationsOpened);
        }
        if (closed) {
            closeFramed(); // closed meanwhile: close() may have missed them
        }
    }

    /** This session's framed mutation pool, or null (mutations go as gRPC calls). */
    FramedPool framedMutations() {
        return framedMutations;
    }

    private void closeFramed() {
        FramedPool f = framed;
        if (f != null) {
            f.close();
        }
        FramedPool m = framedMutations;
        if (m != null) {
            m.close();
        }
    }

    /**
     * A unary call bounded by a timed wait of the caller's own thread instead of a gRPC deadline.
     * A deadline costs a timer on Netty's event loop and another in rlmm serve (its grpc-timeout
     * header) with every call, each waking a thread that then has nothing to do: about 20 µs of the
     * lookup's round trip (docs/BENCHMARKS.md, "Broker plugin"). When the wait ends the call is
     * cancelled and fails as a deadline would, with DEADLINE_EXCEEDED. A failed call is thrown as
     * its status, for {@link Caller} to map.
     */
    <Q, R> R unary(MethodDescriptor<Q, R> method, Q request, Deadline deadline) throws InterruptedException {
        ClientCall<Q, R> call = conn.channel.newCall(method, blocking.getCallOptions().withWaitForReady());
        Future<R> f = ClientCalls.futureUnaryCall(call, request);
        try {
            return f.get(Math.max(0, deadline.timeRemaining(TimeUnit.NANOSECONDS)), TimeUnit.NANOSECONDS);
        } catch (TimeoutException e) {
            f.cancel(true);
            throw Errors.deadline(cfg.callTimeout.toMillis());
        } catch (InterruptedException e) {
            f.cancel(true);
            throw e;
        } catch (ExecutionException e) {
            if (e.getCause() instanceof StatusRuntimeException s) {
                throw s;
            }
            throw io.grpc.Status.UNKNOWN.withCause(e.getCause()).asRuntimeException();
        }
    }

    /**
     * The fetch path's lookup, by {@code path}: on this session's framed lookup socket
     * ({@link FramedPool}; on the stream when the server has none or it cannot be used now), on
     * its lookup stream, or as a unary call (also when the server has no stream, an older rlmm
     * serve). Waited for within the deadline; a failure is thrown as its status.
     */
    SegmentReply lookup(SegmentForOffsetRequest req, Deadline deadline, PluginConfig.LookupTransport path)
            throws InterruptedException {
        if (path == PluginConfig.LookupTransport.UNARY || lookups.unimplemented()) {
            return unary(RemoteLogMetadataGrpc.getSegmentForOffsetMethod(), req, deadline);
        }
        FramedPool f = framed;
        if (path == PluginConfig.LookupTransport.FRAMED && f != null) {
            SegmentReply r = f.lookup(req, deadline);
            if (r != null) {
                return r;
            }
        }
        LookupStream.Call call = lookups.send(req);
        try {
            return call.await(Math.max(0, deadline.timeRemaining(TimeUnit.NANOSECONDS)));
        } catch (TimeoutException e) {
            call.abandon();
            throw Errors.deadline(cfg.callTimeout.toMillis());
        } catch (InterruptedException e) {
            call.abandon();
            throw e;
        } catch (StatusRuntimeException e) {
            if (e.getStatus().getCode() == io.grpc.Status.Code.UNIMPLEMENTED && lookups.unimplemented()) {
                return unary(RemoteLogMetadataGrpc.getSegmentForOffsetMethod(), req, deadline);
            }
            throw e;
        }
    }

    /**
     * A list of segments, read whole from the server's stream of batches before it returns: a
     * failure (a server gone mid-stream) is thrown from here, and no stream stays open when the
     * broker stops iterating early.
     */
    java.util.List<org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadata> list(
            org.rlmm.plugin.proto.ListSegmentsRequest req, Deadline deadline) {
        java.util.List<org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadata> out = new java.util.ArrayList<>();
        java.util.Iterator<org.rlmm.plugin.proto.SegmentBatch> batches = blocking.withDeadline(deadline).withWaitForReady()
                .listSegments(req);
        while (batches.hasNext()) {
            for (org.rlmm.plugin.proto.SegmentMetadata m : batches.next().getSegmentsList()) {
                out.add(Convert.segment(m));
            }
        }
        return out;
    }

    /** Ends the generation: the readiness stream, then the channel (every call on it fails). */
    @Override
    public void close() {
        closed = true;
        closeFramed();
        readiness.close();
        conn.close();
    }
}

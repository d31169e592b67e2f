package org.rlmm.plugin;

import io.grpc.Deadline;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.StreamObserver;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.server.log.remote.storage.RemoteStorageException;
import org.rlmm.plugin.proto.IsReadyRequest;
import org.rlmm.plugin.proto.MutationFrameRequest;
import org.rlmm.plugin.proto.MutationReply;
import org.rlmm.plugin.proto.RemoteLogMetadataGrpc;
import org.slf4j.Logger;

/**
 * The one way a call of the broker reaches the server. {@link #call} (reads, assignment changes)
 * and {@link #mutate} (adds, updates, partition deletes) each: set the call's bound
 * ({@code rlmm.serve.call.timeout.ms}, {@code rlmm.serve.mutation.timeout.ms}) as one deadline,
 * wait within it for an open {@link Session} (the child starts or restarts), run the call on that
 * session, map a failure through {@link Errors} and record the call in the metrics. A call whose
 * session ended under it (its child died, its channel was closed) is run again on the next
 * session within the same deadline, since reads and assignment changes may be repeated; a
 * mutation is not, since its event may already be recorded.
 */
final class Caller {
    /** One try of a call on a session, bounded by the call's deadline; a failure is thrown as its status. */
    interface Attempt<T> {
        T run(Session s, Deadline deadline) throws InterruptedException;
    }

    /** Starts one mutation on a session's async stub. */
    interface AsyncCall {
        void start(RemoteLogMetadataGrpc.RemoteLogMetadataStub stub, StreamObserver<MutationReply> observer);
    }

    private final PluginConfig cfg;
    private final Supervisor supervisor;
    private final Logger log;
    private final ExecutorService callbacks;
    /** The plugin's metrics; null when not registered. */
    private volatile RlmmMetrics metrics;
    private final long callNanos;
    /** Reads of partitions assigned here that the server refused NOT_ASSIGNED (logged by the test hook). */
    private final java.util.concurrent.atomic.AtomicLong refusedAssigned = new java.util.concurrent.atomic.AtomicLong();
    private volatile long lastReadyWarning = System.nanoTime() - TimeUnit.MINUTES.toNanos(1);
    /** System.nanoTime() when gRPC last answered a mutation (the benchmark's split of a call). */
    private volatile long lastSettled;

    Caller(PluginConfig cfg, Supervisor supervisor, Logger log, ExecutorService callbacks) {
        this.cfg = cfg;
        this.supervisor = supervisor;
        this.log = log;
        this.callbacks = callbacks;
        this.callNanos = cfg.callTimeout.toNanos();
    }

    void metrics(RlmmMetrics m) {
        metrics = m;
    }

    /**
     * A blocking call: a read of partition tp, or (tp null) an assignment change. Which exception
     * a refusal becomes depends on whether the broker assigned tp here ({@link Errors.Call}).
     */
    <T> T call(String rpc, TopicIdPartition tp, Supplier<String> what, Attempt<T> attempt) throws RemoteStorageException {
        return call(rpc, tp, what, attempt, 0);
    }

    /**
     * A lookup of tp, the fetch path's read: as {@link #call}, but a refusal NOT_READY or
     * NOT_ASSIGNED waits, once and within the call's deadline, up to
     * {@link PluginConfig#LOOKUP_READY_WAIT} for the readiness stream to say tp is ready, and then
     * asks again. After a broker restart the broker serves fetches of a partition before its
     * leadership change has reached the server and the server has caught up; a remote read that
     * fails there costs the consumer a whole round of the broker's remote fetch wait, one that
     * waits a little is answered in the same round. A partition still not ready fails as before.
     */
    <T> T lookup(String rpc, TopicIdPartition tp, Supplier<String> what, Attempt<T> attempt) throws RemoteStorageException {
        return call(rpc, tp, what, attempt, cfg.lookupReadyWait.toNanos());
    }

    private <T> T call(String rpc, TopicIdPartition tp, Supplier<String> what, Attempt<T> attempt, long readyWaitNanos)
            throws RemoteStorageException {
        long began = System.nanoTime();
        boolean ok = false;
        boolean waited = false;
        try {
            Deadline deadline = Deadline.after(callNanos, TimeUnit.NANOSECONDS);
            while (true) {
                Session s = supervisor.await(deadline, what, cfg.callTimeout.toMillis());
                try {
                    T r = attempt.run(s, deadline);
                    ok = true;
                    return r;
                } catch (StatusRuntimeException e) {
                    if (!deadline.isExpired() && s.ended(e)) {
                        continue; // its generation ended under it: the next session answers
                    }
                    if (readyWaitNanos > 0 && !waited && tp != null && !deadline.isExpired() && notYetReady(e)) {
                        waited = true;
                        if (awaitReady(s, tp, Math.min(readyWaitNanos, deadline.timeRemaining(TimeUnit.NANOSECONDS)), what)) {
                            continue; // ready now: asked again, in the same fetch round
                        }
                    }
                    Errors.Call kind = tp == null ? Errors.Call.OTHER
                            : supervisor.assignedHere(tp) ? Errors.Call.READ_ASSIGNED : Errors.Call.READ_NOT_ASSIGNED;
                    if (kind == Errors.Call.READ_ASSIGNED && Errors.kind(e) == org.rlmm.plugin.proto.ErrorKind.NOT_ASSIGNED) {
                        refusedAssigned.incrementAndGet();
                    }
                    throw Errors.rethrow(e, what.get(), cfg.target(), kind);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw Errors.interrupted(what.get(), e);
                }
            }
        } finally {
            timed(rpc, began, !ok);
        }
    }

    /** Whether e is a refusal that the partition's readiness ends: NOT_READY, or NOT_ASSIGNED. */
    private static boolean notYetReady(StatusRuntimeException e) {
        org.rlmm.plugin.proto.ErrorKind k = Errors.kind(e);
        return k == org.rlmm.plugin.proto.ErrorKind.NOT_READY || k == org.rlmm.plugin.proto.ErrorKind.NOT_ASSIGNED;
    }

    /** Waits up to nanos for s's readiness stream to say tp is ready (an older server has none: false). */
    private static boolean awaitReady(Session s, TopicIdPartition tp, long nanos, Supplier<String> what)
            throws RemoteStorageException {
        if (s.readiness.unimplemented() || nanos <= 0) {
            return false;
        }
        try {
            return s.readiness.awaitReady(tp, nanos);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw Errors.interrupted(what.get(), e);
        }
    }

    /**
     * A mutation: sent once a session is open (the broker's thread does not wait for it), its
     * future settled from gRPC's callback with the answer or the mapped failure
     * ({@link MutationFuture}: a caller waiting in get() is woken from the I/O thread itself,
     * stages chained on the future run on the plugin's callback pool). When the session is open
     * and has a framed mutation pool ({@code rlmm.serve.mutation.transport=framed}), the mutation
     * runs there instead, in the broker's thread, which returns with the future settled
     * ({@link #framed}); framed is the same request for it.
     */
    CompletableFuture<Void> mutate(String rpc, String what, MutationFrameRequest.Builder framed, AsyncCall call) {
        long began = System.nanoTime();
        long boundMs = cfg.mutationTimeout.toMillis();
        Deadline deadline = Deadline.after(boundMs, TimeUnit.MILLISECONDS);
        MutationFuture result = new MutationFuture(callbacks);
        CompletableFuture<Session> session = supervisor.whenReady(what, boundMs);
        if (session.isDone() && !session.isCompletedExceptionally()) {
            Session s = session.getNow(null);
            if (!framed(s, framed, rpc, what, began, deadline, result)) {
                send(s, call, rpc, what, began, deadline, result);
            }
        } else {
            session.whenComplete((s, err) -> {
                if (err != null) {
                    settle(result, rpc, began, err);
                } else {
                    send(s, call, rpc, what, began, deadline, result);
                }
            });
        }
        return result;
    }

    /**
     * Runs the mutation on s's framed mutation pool in the calling thread and settles result with
     * its answer; false when s has no pool or it cannot be used now (nothing was sent: the caller
     * sends the gRPC call). Why the caller's own thread: the broker waits for every add and finish
     * at once (RemoteLogManager calls get() on the future), and a gRPC call's hand-overs between its
     * thread, Netty's I/O thread and grpc-go's goroutines cost more than the blocking round trip on a
     * Unix socket (docs/BENCHMARKS.md, "Broker plugin").
     */
    private boolean framed(Session s, MutationFrameRequest.Builder framed, String rpc, String what, long began, Deadline deadline,
            MutationFuture result) {
        FramedPool pool = s.framedMutations();
        if (pool == null) {
            return false;
        }
        try {
            if (!pool.mutate(framed, deadline)) {
                return false;
            }
            lastSettled = System.nanoTime();
            settle(result, rpc, began, null);
        } catch (StatusRuntimeException e) {
            settle(result, rpc, began, Errors.map(e, what, cfg.target(), Errors.Call.MUTATION));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            settle(result, rpc, began, Errors.interrupted(what, e));
        }
        return true;
    }

    /**
     * Starts the call on the channel's I/O thread. grpc-java's unary call is four steps (start,
     * request, message, half-close); from another thread each step is a task handed to the event
     * loop, and the loop, asleep between them, was woken up to three times and wrote the request in
     * two writes (headers and message, then the end of the stream). Started on the loop, the steps
     * run inline and the request goes out in one write after one wake-up (docs/BENCHMARKS.md,
     * "Broker plugin": the split of an add + finish).
     */
    private void send(Session s, AsyncCall call, String rpc, String what, long began, Deadline deadline, MutationFuture result) {
        RemoteLogMetadataGrpc.RemoteLogMetadataStub stub = s.async.withDeadline(deadline).withWaitForReady();
        StreamObserver<MutationReply> observer = observer(rpc, what, began, result);
        Runnable start = () -> {
            try {
                call.start(stub, observer);
            } catch (RuntimeException e) {
                observer.onError(e);
            }
        };
        try {
            s.loop.execute(start);
        } catch (RejectedExecutionException closing) {
            start.run(); // the channel is closing: the call fails on it as any other does
        }
    }

    /** The observer of one mutation's answer, called on the channel's I/O thread (direct executor). */
    private StreamObserver<MutationReply> observer(String rpc, String what, long began, MutationFuture result) {
        return new StreamObserver<>() {
            @Override
            public void onNext(MutationReply value) {}

            @Override
            public void onError(Throwable t) {
                settle(result, rpc, began, Errors.map(t, what, cfg.target(), Errors.Call.MUTATION));
            }

            @Override
            public void onCompleted() {
                lastSettled = System.nanoTime();
                settle(result, rpc, began, null);
            }
        };
    }

    /** Records the mutation in the metrics, then settles its future (failure null: recorded). */
    private void settle(MutationFuture result, String rpc, long began, Throwable failure) {
        timed(rpc, began, failure != null);
        result.answer(failure);
    }

    /**
     * Whether tp's metadata is ready, as the open session's server last pushed it ({@link ReadinessWatch}):
     * a read of memory, never a wait, since the broker asks for each of its partitions from its
     * tiering threads; false between generations. Only a server without the readiness stream (an
     * older rlmm serve) is asked with a call, bounded by the call timeout.
     */
    boolean isReady(TopicIdPartition tp) {
        Session s = supervisor.current();
        if (s == null) {
            return false;
        }
        if (!s.readiness.unimplemented()) {
            return s.readiness.ready(tp);
        }
        try {
            return s.blocking.withDeadlineAfter(cfg.callTimeout.toMillis(), TimeUnit.MILLISECONDS)
                    .isReady(IsReadyRequest.newBuilder().setTopicIdPartition(Convert.partition(tp)).build())
                    .getReady();
        } catch (StatusRuntimeException e) {
            long now = System.nanoTime();
            if (now - lastReadyWarning > TimeUnit.SECONDS.toNanos(30)) {
                lastReadyWarning = now; // at most one line per 30 s: the broker asks for every partition, often
                log.warn("rlmm plugin: isReady({}) answers false: {}", tp, Errors.map(e, "isReady", cfg.target()).getMessage());
            }
            return false;
        }
    }

    /** System.nanoTime() when a mutation was last answered with success (0: none yet). */
    long lastSettled() {
        return lastSettled;
    }

    /** How many reads of partitions assigned here the server refused NOT_ASSIGNED so far. */
    long refusedAssigned() {
        return refusedAssigned.get();
    }

    private void timed(String rpc, long began, boolean failed) {
        RlmmMetrics m = metrics;
        if (m != null) {
            m.call(rpc, System.nanoTime() - began, failed);
        }
    }
}

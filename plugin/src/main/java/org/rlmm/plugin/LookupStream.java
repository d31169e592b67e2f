package org.rlmm.plugin;

import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.protobuf.StatusProto;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.StreamObserver;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.rlmm.plugin.proto.CallStatus;
import org.rlmm.plugin.proto.RemoteLogMetadataGrpc;
import org.rlmm.plugin.proto.SegmentForOffsetRequest;
import org.rlmm.plugin.proto.SegmentForOffsetStreamReply;
import org.rlmm.plugin.proto.SegmentForOffsetStreamRequest;
import org.rlmm.plugin.proto.SegmentReply;
import org.slf4j.Logger;

/**
 * The fetch path's lookup by (epoch, offset) on one long-lived bidirectional stream of the channel
 * ({@code SegmentForOffsetStream}) instead of one unary call each: a request carries an id of
 * this object's, its reply comes back with it, and the caller waits for its own id. That saves,
 * per lookup, a new HTTP/2 stream with its HEADERS and trailers each way, a ClientCall and its
 * listener here, and a new stream and handler dispatch in {@code rlmm serve}.
 *
 * <p>The stream is opened at the first lookup, with wait-for-ready as the unary call has, so a
 * lookup while the server restarts waits for it within the caller's own bound. Sends are
 * serialized (a {@link StreamObserver} is not thread-safe); replies arrive on the channel's I/O
 * thread and complete the caller's future. When the stream fails (the server died, restarted,
 * stopped), every lookup waiting on it fails with the stream's status, which the caller maps as it
 * maps a unary call's failure; the next lookup opens a new stream. A server without the method (an
 * older {@code rlmm serve}) answers UNIMPLEMENTED: from then on {@link #unimplemented} is true and
 * the caller uses the unary call for the life of the channel.
 */
final class LookupStream {
    private final Channel channel;
    private final CallOptions options;
    private final Logger log;
    private final String target;
    private final AtomicLong ids = new AtomicLong();
    /** Streams opened, counted across the plugin's sessions (for tests). */
    private final AtomicInteger opened;
    private final Object lock = new Object();
    /** The open stream, or null; replaced under {@link #lock}. */
    private Session session;
    private volatile boolean unimplemented;

    LookupStream(Channel channel, CallOptions options, Logger log, String target, AtomicInteger opened) {
        this.channel = channel;
        this.opened = opened;
        this.options = options.withWaitForReady();
        this.log = log;
        this.target = target;
    }

    /** True once the server answered the stream with UNIMPLEMENTED: lookups go unary. */
    boolean unimplemented() {
        return unimplemented;
    }

    /** One lookup in flight: {@link #await} its answer, or {@link #abandon} it. */
    static final class Call {
        private final Session session;
        private final long id;
        private final CompletableFuture<SegmentForOffsetStreamReply> reply;

        private Call(Session session, long id, CompletableFuture<SegmentForOffsetStreamReply> reply) {
            this.session = session;
            this.id = id;
            this.reply = reply;
        }

        /**
         * The server's reply; an error reply is thrown as the StatusRuntimeException the unary call
         * would have failed with, a failed stream as its own status.
         */
        SegmentReply await(long nanos) throws TimeoutException, InterruptedException {
            SegmentForOffsetStreamReply r;
            try {
                r = reply.get(nanos, TimeUnit.NANOSECONDS);
            } catch (ExecutionException e) {
                Throwable c = e.getCause();
                throw c instanceof StatusRuntimeException s ? s : Status.UNKNOWN.withCause(c).asRuntimeException();
            }
            if (r.hasError()) {
                throw toException(r.getError());
            }
            return r.getReply();
        }

        /** Forgets the lookup (its wait ended): a late reply is dropped. */
        void abandon() {
            session.pending.remove(id);
        }
    }

    /** Sends a lookup on the stream (opening it if there is none) and returns its handle. */
    Call send(SegmentForOffsetRequest request) {
        long id = ids.incrementAndGet();
        CompletableFuture<SegmentForOffsetStreamReply> f = new CompletableFuture<>();
        Session s = current();
        s.pending.put(id, f);
        SegmentForOffsetStreamRequest req = SegmentForOffsetStreamRequest.newBuilder().setId(id).setRequest(request).build();
        synchronized (s) {
            if (s.failure == null) {
                s.requests.onNext(req);
            }
        }
        // A failure after the registration has failed f already, or fails it now.
        StatusRuntimeException failed = s.failure;
        if (failed != null && s.pending.remove(id) != null) {
            f.completeExceptionally(failed);
        }
        return new Call(s, id, f);
    }

    private Session current() {
        synchronized (lock) {
            Session s = session;
            if (s == null) {
                s = new Session();
                // Calls the session's listener methods only from the I/O thread, later.
                s.requests = ClientCalls.asyncBidiStreamingCall(
                        channel.newCall(RemoteLogMetadataGrpc.getSegmentForOffsetStreamMethod(), options), s);
                opened.incrementAndGet();
                // A call that failed at once (a channel shut down) ran its listener on this thread,
                // before it was the session: it serves this lookup its failure, and no other.
                if (s.failure == null) {
                    session = s;
                }
            }
            return s;
        }
    }

    /** The reply's CallStatus as the exception a unary call fails with (status and ErrorInfo detail). */
    static StatusRuntimeException toException(CallStatus s) {
        return StatusProto.toStatusRuntimeException(com.google.rpc.Status.newBuilder()
                .setCode(s.getCode())
                .setMessage(s.getMessage())
                .addAllDetails(s.getDetailsList())
                .build());
    }

    /** One stream and the lookups waiting on it. */
    private final class Session implements StreamObserver<SegmentForOffsetStreamReply> {
        final Map<Long, CompletableFuture<SegmentForOffsetStreamReply>> pending = new ConcurrentHashMap<>();
        /** Written once, under {@link #lock}, before any lookup can see this session. */
        StreamObserver<SegmentForOffsetStreamRequest> requests;
        volatile StatusRuntimeException failure;

        @Override
        public void onNext(SegmentForOffsetStreamReply r) {
            CompletableFuture<SegmentForOffsetStreamReply> f = pending.remove(r.getId());
            if (f != null) {
                f.complete(r);
            }
        }

        @Override
        public void onError(Throwable t) {
            Status st = Status.fromThrowable(t);
            StatusRuntimeException e = t instanceof StatusRuntimeException s ? s : st.asRuntimeException();
            if (st.getCode() == Status.Code.UNIMPLEMENTED && !unimplemented) {
                unimplemented = true;
                log.info("rlmm plugin: rlmm serve at {} has no lookup stream (an older version: {}); lookups use the"
                        + " unary call on this channel", target, st.getDescription());
            }
            fail(e);
        }

        @Override
        public void onCompleted() {
            fail(Status.UNAVAILABLE.withDescription("rlmm serve ended the lookup stream").asRuntimeException());
        }

        private void fail(StatusRuntimeException e) {
            synchronized (lock) {
                if (session == this) {
                    session = null;
                }
            }
            failure = e;
            for (Long id : pending.keySet()) {
                CompletableFuture<SegmentForOffsetStreamReply> f = pending.remove(id);
                if (f != null) {
                    f.completeExceptionally(e);
                }
            }
        }
    }
}

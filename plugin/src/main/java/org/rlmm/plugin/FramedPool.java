package org.rlmm.plugin;

import com.google.protobuf.CodedOutputStream;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.MessageLite;
import com.google.protobuf.Parser;
import io.grpc.Deadline;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedByInterruptException;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import org.rlmm.plugin.proto.MutationFrameReply;
import org.rlmm.plugin.proto.MutationFrameRequest;
import org.rlmm.plugin.proto.SegmentForOffsetRequest;
import org.rlmm.plugin.proto.SegmentForOffsetStreamReply;
import org.rlmm.plugin.proto.SegmentForOffsetStreamRequest;
import org.rlmm.plugin.proto.SegmentReply;
import org.slf4j.Logger;

/**
 * A pool of connections to {@code rlmm serve}'s framed socket (the Go package rpc/lookupframe
 * documents the format), of one kind: the fetch path's lookups ({@link #lookup}) or the copy
 * path's mutations ({@link #mutate}). No gRPC, no I/O thread: the broker's calling thread takes a
 * connection from a small pool of blocking Unix-socket {@link SocketChannel}s, writes its request
 * frame and reads the reply frame itself, so a call is one write and one read of the caller's own
 * thread against the server's one goroutine per connection. The frames carry the gRPC calls' own
 * messages, and an error reply is thrown as gRPC's status is ({@link LookupStream#toException}),
 * so the caller maps it exactly as before.
 *
 * <p>The caller's deadline holds even when the server hangs (SIGSTOP): a connection in use carries
 * its deadline, and one watchdog thread per pool, which wakes every tick (a twentieth of the call
 * timeout, 1 to 50 ms), closes a connection whose deadline passed; the blocked read then fails and the
 * call fails as a deadline does. That costs the call two volatile writes; a non-blocking channel
 * waiting in a Selector instead would cost every call whose reply is not already there a
 * select and a second read, two more system calls per round trip (docs/BENCHMARKS.md).
 *
 * <p>A connection that breaks (the server died, restarted, closed it) is dropped, never reused.
 * A lookup on a reused one that breaks before its reply is tried once more on a new connection,
 * since a lookup may be repeated; a mutation is not, since its event may already be recorded (it
 * fails UNAVAILABLE, as a gRPC mutation whose channel broke). A server that does not accept
 * connections (it is restarting, its socket is gone) makes a call return null: the caller sends it
 * on gRPC instead (the lookup stream, the unary mutation), which waits for the server within the
 * same deadline as before. A socket whose server answers the hello with another pid than the
 * session's, or refuses it (an older server knows no mutation hello), turns the pool off for the
 * session (logged once): every call of its kind then goes on gRPC.
 */
final class FramedPool implements AutoCloseable {
    /** The kinds of connection (rpc/lookupframe.Kind): each names its hello's magic. */
    enum Kind {
        /** SegmentForOffsetStreamRequest, answered by SegmentForOffsetStreamReply. */
        LOOKUPS("RLMMLOOKUP", "lookup", "the stream"),
        /** MutationFrameRequest, answered by MutationFrameReply when the mutation is applied or failed. */
        MUTATIONS("RLMMMUTATE", "mutation", "unary gRPC calls");

        final byte[] magic;
        final String noun;
        /** Where calls of this kind go when the pool cannot be used. */
        final String fallback;

        Kind(String magic, String noun, String fallback) {
            this.magic = magic.getBytes(StandardCharsets.US_ASCII);
            this.noun = noun;
            this.fallback = fallback;
        }
    }

    /** rpc/lookupframe.Version. */
    private static final byte VERSION = 1;
    /** rpc/lookupframe.MaxReply: the largest reply body read. */
    static final int MAX_REPLY = 64 << 20;
    /** Idle connections kept; more are closed when they are handed back. */
    static final int MAX_IDLE = 8;

    private final Kind kind;
    private final Path socket;
    private final long serverPid;
    /** The bound of a call of this kind, as a deadline's failure names it. */
    private final long callTimeoutMs;
    private final Logger log;
    private final String target;
    private final long tick;
    private final AtomicLong ids = new AtomicLong();
    /** Connections opened, counted across the plugin's sessions (for tests). */
    private final AtomicInteger opened;
    /** Idle connections, the last handed back first (the warmest). */
    private final ConcurrentLinkedDeque<Conn> idle = new ConcurrentLinkedDeque<>();
    /** Every open connection, idle or in use: what the watchdog looks at. */
    private final Set<Conn> live = ConcurrentHashMap.newKeySet();
    private final Thread watchdog;
    private volatile boolean closed;
    /** Why the pool was turned off for good (every call of its kind on gRPC), or null. */
    private volatile String off;
    /** The last reason a dial failed (logged once per distinct reason). */
    private volatile String lastDialFailure = "";

    FramedPool(Kind kind, Path socket, long serverPid, long callTimeoutMs, Logger log, String target, AtomicInteger opened) {
        this.kind = kind;
        this.socket = socket;
        this.serverPid = serverPid;
        this.callTimeoutMs = callTimeoutMs;
        this.log = log;
        this.target = target;
        this.opened = opened;
        // The deadline is overshot by at most a tick: a twentieth of the bound, 1 to 50 ms.
        this.tick = TimeUnit.MILLISECONDS.toNanos(Math.max(1, Math.min(50, callTimeoutMs / 20)));
        this.watchdog = new Thread(this::watch, "rlmm-plugin-" + kind.noun + "-watchdog");
        this.watchdog.setDaemon(true);
        this.watchdog.start();
    }

    /** Why the pool is off for this session (its calls on gRPC), or null. */
    String off() {
        return off;
    }

    /**
     * The server's answer to req, within deadline; null when the framed socket cannot be used now
     * (the caller sends the lookup on the stream). An error reply is thrown as the stream's
     * (a StatusRuntimeException with the ErrorInfo detail), a broken connection as UNAVAILABLE,
     * a passed deadline as {@link Errors#deadline}.
     */
    SegmentReply lookup(SegmentForOffsetRequest req, Deadline deadline) throws InterruptedException {
        SegmentForOffsetStreamRequest framed = SegmentForOffsetStreamRequest.newBuilder()
                .setId(ids.incrementAndGet()).setRequest(req).build();
        SegmentForOffsetStreamReply r = exchange(framed, framed.getId(), SegmentForOffsetStreamReply.parser(), deadline, true);
        if (r == null) {
            return null;
        }
        if (r.getId() != framed.getId()) {
            throw wrongId(r.getId(), framed.getId());
        }
        if (r.hasError()) {
            throw LookupStream.toException(r.getError());
        }
        return r.getReply();
    }

    /**
     * Runs a mutation on the framed socket within deadline (its time left goes to the server as the
     * request's timeout_ms) and returns true when it was applied; false when the framed socket
     * cannot be used now and nothing was sent (the caller sends it as a unary gRPC call). A failure
     * is thrown as the unary call's would be (a StatusRuntimeException with the ErrorInfo detail),
     * a broken connection as UNAVAILABLE, a passed deadline as {@link Errors#deadline}: the caller
     * maps each as a mutation's ({@link Errors#map}).
     */
    boolean mutate(MutationFrameRequest.Builder req, Deadline deadline) throws InterruptedException {
        long id = ids.incrementAndGet();
        long leftMs = Math.max(1, deadline.timeRemaining(TimeUnit.MILLISECONDS));
        MutationFrameRequest framed = req.setId(id).setTimeoutMs(leftMs).build();
        MutationFrameReply r = exchange(framed, id, MutationFrameReply.parser(), deadline, false);
        if (r == null) {
            return false;
        }
        if (r.getId() != id) {
            throw wrongId(r.getId(), id);
        }
        if (r.hasError()) {
            throw LookupStream.toException(r.getError());
        }
        return true;
    }

    private StatusRuntimeException wrongId(long got, long want) {
        return Status.INTERNAL.withDescription("the framed " + kind.noun + " socket " + socket + " answered id " + got
                + " to request " + want).asRuntimeException();
    }

    /**
     * One request and its reply on a pooled connection, within deadline; null when no connection
     * can be had now (nothing was sent). A reused connection that breaks is tried once more on a new
     * one when mayRepeat (the request may be sent twice). A reply with another id drops the
     * connection (the caller throws).
     */
    private <R extends MessageLite> R exchange(MessageLite framed, long id, Parser<R> parser, Deadline deadline,
            boolean mayRepeat) throws InterruptedException {
        if (off != null || closed) {
            return null;
        }
        boolean retried = false;
        while (true) {
            long remaining = deadline.timeRemaining(TimeUnit.NANOSECONDS);
            if (remaining <= 0) {
                throw Errors.deadline(callTimeoutMs);
            }
            long due = System.nanoTime() + remaining;
            Conn c = idle.pollFirst();
            boolean reused = c != null;
            if (c == null) {
                c = dial(due);
                if (c == null) {
                    return null;
                }
            }
            R r;
            try {
                r = c.roundTrip(framed, parser, due);
            } catch (InvalidProtocolBufferException e) {
                drop(c);
                throw Status.INTERNAL.withDescription("the framed " + kind.noun + " socket " + socket
                        + " answered a reply that does not decode: " + e.getMessage()).withCause(e).asRuntimeException();
            } catch (IOException e) {
                drop(c);
                if (c.expired) {
                    throw Errors.deadline(callTimeoutMs);
                }
                if (e instanceof ClosedByInterruptException) {
                    throw new InterruptedException("interrupted in a " + kind.noun + " on " + socket);
                }
                if (closed) {
                    throw Status.UNAVAILABLE.withDescription("the plugin's session with rlmm serve ended").withCause(e)
                            .asRuntimeException();
                }
                if (mayRepeat && reused && !retried) {
                    retried = true; // an idle connection the server may have closed since: once more, on a new one
                    continue;
                }
                throw Status.UNAVAILABLE.withDescription("the framed " + kind.noun + " connection to " + socket + " broke: " + e)
                        .withCause(e).asRuntimeException();
            }
            if (idOf(r) != id) {
                drop(c);
            } else {
                release(c);
            }
            return r;
        }
    }

    /** The id of a reply of either kind. */
    private static long idOf(MessageLite reply) {
        if (reply instanceof SegmentForOffsetStreamReply l) {
            return l.getId();
        }
        return ((MutationFrameReply) reply).getId();
    }

    /** A new connection that passed the hello, or null (the call goes on gRPC). */
    private Conn dial(long due) throws InterruptedException {
        Conn c;
        try {
            c = new Conn(kind, SocketChannel.open(StandardProtocolFamily.UNIX));
        } catch (IOException e) {
            dialFailed("cannot open a socket: " + e);
            return null;
        }
        live.add(c);
        if (closed) {
            drop(c);
            return null;
        }
        c.due = due;
        long pid;
        try {
            c.ch.connect(UnixDomainSocketAddress.of(socket));
            pid = c.hello();
        } catch (ClosedByInterruptException e) {
            drop(c);
            throw new InterruptedException("interrupted connecting to " + socket);
        } catch (IOException e) {
            drop(c);
            if (c.expired) {
                throw Errors.deadline(callTimeoutMs);
            }
            dialFailed(e.toString());
            return null;
        } catch (Refused e) {
            drop(c);
            turnOff(e.getMessage());
            return null;
        }
        c.due = 0;
        if (pid != serverPid) {
            drop(c);
            turnOff("its server is pid " + pid + ", not the session's pid " + serverPid);
            return null;
        }
        opened.incrementAndGet();
        return c;
    }

    private void dialFailed(String why) {
        if (!why.equals(lastDialFailure)) {
            lastDialFailure = why;
            log.info("rlmm plugin: the framed {} socket {} of {} does not answer ({}); {}s go on {} meanwhile",
                    kind.noun, socket, target, why, kind.noun, kind.fallback);
        }
    }

    private void turnOff(String why) {
        if (off == null) {
            off = why;
            log.warn("rlmm plugin: not using the framed socket {} of {} for {}s: {}; they go on {}", socket, target,
                    kind.noun, why, kind.fallback);
        }
    }

    /** Hands c back to the pool (closes it when the pool has enough idle ones, or is closed). */
    private void release(Conn c) {
        if (closed || !c.ch.isOpen() || idle.size() >= MAX_IDLE) {
            drop(c);
            return;
        }
        idle.offerFirst(c);
        if (closed && idle.remove(c)) {
            drop(c); // closed meanwhile: close() may have missed it
        }
    }

    private void drop(Conn c) {
        live.remove(c);
        idle.remove(c);
        c.close();
    }

    /** The watchdog: closes every connection whose call's deadline passed. */
    private void watch() {
        while (!closed) {
            long now = System.nanoTime();
            for (Conn c : live) {
                long due = c.due;
                if (due != 0 && now - due > 0) {
                    c.expired = true;
                    c.close();
                }
            }
            LockSupport.parkNanos(this, tick);
        }
    }

    /** Closes every connection (calls in flight fail UNAVAILABLE) and stops the watchdog. */
    @Override
    public void close() {
        closed = true;
        for (Conn c : live) {
            drop(c);
        }
        LockSupport.unpark(watchdog);
        try {
            watchdog.join(TimeUnit.SECONDS.toMillis(1));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** The hello was refused, or answered by something that is not a framed socket of this kind. */
    private static final class Refused extends Exception {
        Refused(String why) {
            super(why);
        }
    }

    /** One blocking connection and its buffers, used by one caller at a time. */
    private static final class Conn {
        final Kind kind;
        final SocketChannel ch;
        /** System.nanoTime() by which the call in flight must be answered; 0 when idle. */
        volatile long due;
        /** Set by the watchdog when it closed this connection for its deadline. */
        volatile boolean expired;
        private ByteBuffer out = ByteBuffer.allocateDirect(1024);
        private ByteBuffer in = ByteBuffer.allocateDirect(8192);

        Conn(Kind kind, SocketChannel ch) {
            this.kind = kind;
            this.ch = ch;
        }

        /** Says hello and returns the server's pid from its answer. */
        long hello() throws IOException, Refused {
            out.clear();
            byte[] magic = kind.magic;
            out.putInt(magic.length + 1).put(magic).put(VERSION).flip();
            writeAll();
            ByteBuffer body = readFrame(1024);
            byte[] got = new byte[magic.length];
            if (body.remaining() < magic.length + 2) {
                throw new Refused("its answer to the hello (" + body.remaining() + " bytes) is not one");
            }
            body.get(got);
            if (!java.util.Arrays.equals(got, magic) || body.get() != VERSION) {
                throw new Refused("its answer to the " + kind.noun + " hello is not rlmm's framed format, version " + VERSION);
            }
            byte status = body.get();
            if (status == 0 && body.remaining() == 8) {
                return body.getLong();
            }
            byte[] why = new byte[body.remaining()];
            body.get(why);
            throw new Refused("it refused the hello (status " + status + "): " + new String(why, StandardCharsets.UTF_8));
        }

        /** Writes one request frame and reads its reply; due is for the watchdog. */
        <R extends MessageLite> R roundTrip(MessageLite req, Parser<R> parser, long dueNanos) throws IOException {
            due = dueNanos;
            try {
                int n = req.getSerializedSize();
                if (out.capacity() < 4 + n) {
                    out = ByteBuffer.allocateDirect(4 + n);
                }
                out.clear();
                out.putInt(n);
                CodedOutputStream cos = CodedOutputStream.newInstance(out);
                req.writeTo(cos);
                cos.flush();
                out.flip();
                writeAll();
                return parser.parseFrom(readFrame(MAX_REPLY));
            } finally {
                due = 0;
            }
        }

        private void writeAll() throws IOException {
            while (out.hasRemaining()) {
                ch.write(out);
            }
        }

        /**
         * Reads one frame (usually one read: the server writes header and body at once) and returns
         * its body, valid until the next read.
         */
        private ByteBuffer readFrame(int max) throws IOException {
            in.clear();
            fill(4);
            int n = in.getInt(0);
            if (n < 0 || n > max) {
                throw new IOException("a frame of " + Integer.toUnsignedString(n) + " bytes, more than the " + max + " allowed");
            }
            if (in.capacity() < 4 + n) {
                ByteBuffer bigger = ByteBuffer.allocateDirect(4 + n);
                in.flip();
                bigger.put(in);
                in = bigger;
            }
            fill(4 + n);
            if (in.position() != 4 + n) {
                throw new IOException("the server sent " + (in.position() - 4 - n) + " bytes past its reply");
            }
            return in.flip().position(4).slice();
        }

        /** Reads until the buffer holds at least n bytes. */
        private void fill(int n) throws IOException {
            while (in.position() < n) {
                if (ch.read(in) < 0) {
                    throw new java.io.EOFException("rlmm serve closed the connection");
                }
            }
        }

        void close() {
            try {
                ch.close();
            } catch (IOException ignored) {
                // closing: nothing more to do with it
            }
        }
    }
}

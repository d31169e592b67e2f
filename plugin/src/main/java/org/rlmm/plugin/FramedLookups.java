package org.rlmm.plugin;

import com.google.protobuf.CodedOutputStream;
import io.grpc.Deadline;
import io.grpc.Status;
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
import org.rlmm.plugin.proto.SegmentForOffsetRequest;
import org.rlmm.plugin.proto.SegmentForOffsetStreamReply;
import org.rlmm.plugin.proto.SegmentForOffsetStreamRequest;
import org.rlmm.plugin.proto.SegmentReply;
import org.slf4j.Logger;

/**
 * The fetch path's lookup on {@code rlmm serve}'s framed lookup socket (the Go package
 * rpc/lookupframe documents the format): no gRPC, no I/O thread. The broker's calling thread takes
 * a connection from a small pool of blocking Unix-socket {@link SocketChannel}s, writes its request
 * frame and reads the reply frame itself, so a lookup is one write and one read of the caller's
 * own thread against the server's one goroutine per connection. The frames carry the gRPC
 * stream's own messages, and an error reply is thrown as the stream's is
 * ({@link LookupStream#toException}), so the caller maps it exactly as before.
 *
 * <p>The caller's deadline holds even when the server hangs (SIGSTOP): a connection in use carries
 * its deadline, and one watchdog thread per pool, which wakes every tick (a twentieth of the call
 * timeout, 1 to 50 ms), closes a connection whose deadline passed; the blocked read then fails and the
 * lookup fails as a deadline does. That costs the lookup two volatile writes; a non-blocking channel
 * waiting in a Selector instead would cost every lookup whose reply is not already there a
 * select and a second read, two more system calls per round trip (docs/BENCHMARKS.md).
 *
 * <p>A connection that breaks (the server died, restarted, closed it) is dropped, never reused;
 * a reused one that breaks before its reply is tried once more on a new connection, since a
 * lookup may be repeated. A server that does not accept connections (it is restarting, its socket
 * is gone) makes {@link #lookup} return null: that lookup goes on the lookup stream, which waits
 * for the server within the same deadline as today. A socket whose server answers the hello with
 * another pid than the session's, or refuses it, turns the pool off for the session (logged
 * once): every lookup then goes on the stream.
 */
final class FramedLookups implements AutoCloseable {
    /** rpc/lookupframe's constants. */
    private static final byte[] MAGIC = "RLMMLOOKUP".getBytes(StandardCharsets.US_ASCII);
    private static final byte VERSION = 1;
    /** rpc/lookupframe.MaxReply: the largest reply body read. */
    static final int MAX_REPLY = 64 << 20;
    /** Idle connections kept; more are closed when they are handed back. */
    static final int MAX_IDLE = 8;

    private final Path socket;
    private final long serverPid;
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
    /** Why the pool was turned off for good (every lookup on the stream), or null. */
    private volatile String off;
    /** The last reason a dial failed (logged once per distinct reason). */
    private volatile String lastDialFailure = "";

    FramedLookups(Path socket, long serverPid, long callTimeoutMs, Logger log, String target, AtomicInteger opened) {
        this.socket = socket;
        this.serverPid = serverPid;
        this.callTimeoutMs = callTimeoutMs;
        this.log = log;
        this.target = target;
        this.opened = opened;
        // The deadline is overshot by at most a tick: a twentieth of the bound, 1 to 50 ms.
        this.tick = TimeUnit.MILLISECONDS.toNanos(Math.max(1, Math.min(50, callTimeoutMs / 20)));
        this.watchdog = new Thread(this::watch, "rlmm-plugin-lookup-watchdog");
        this.watchdog.setDaemon(true);
        this.watchdog.start();
    }

    /** Why the pool is off for this session (lookups on the stream), or null. */
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
        if (off != null || closed) {
            return null;
        }
        SegmentForOffsetStreamRequest framed = SegmentForOffsetStreamRequest.newBuilder()
                .setId(ids.incrementAndGet()).setRequest(req).build();
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
            SegmentForOffsetStreamReply r;
            try {
                r = c.roundTrip(framed, due);
            } catch (IOException e) {
                drop(c);
                if (c.expired) {
                    throw Errors.deadline(callTimeoutMs);
                }
                if (e instanceof ClosedByInterruptException) {
                    throw new InterruptedException("interrupted in a lookup on " + socket);
                }
                if (closed) {
                    throw Status.UNAVAILABLE.withDescription("the plugin's session with rlmm serve ended").withCause(e)
                            .asRuntimeException();
                }
                if (reused && !retried) {
                    retried = true; // an idle connection the server may have closed since: once more, on a new one
                    continue;
                }
                throw Status.UNAVAILABLE.withDescription("the framed lookup connection to " + socket + " broke: " + e)
                        .withCause(e).asRuntimeException();
            }
            if (r.getId() != framed.getId()) {
                drop(c);
                throw Status.INTERNAL.withDescription("the framed lookup socket " + socket + " answered id " + r.getId()
                        + " to request " + framed.getId()).asRuntimeException();
            }
            release(c);
            if (r.hasError()) {
                throw LookupStream.toException(r.getError());
            }
            return r.getReply();
        }
    }

    /** A new connection that passed the hello, or null (the lookup goes on the stream). */
    private Conn dial(long due) throws InterruptedException {
        Conn c;
        try {
            c = new Conn(SocketChannel.open(StandardProtocolFamily.UNIX));
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
            log.info("rlmm plugin: the framed lookup socket {} of {} does not answer ({}); lookups go on the stream meanwhile",
                    socket, target, why);
        }
    }

    private void turnOff(String why) {
        if (off == null) {
            off = why;
            log.warn("rlmm plugin: not using the framed lookup socket {} of {}: {}; lookups go on the stream", socket, target, why);
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

    /** The watchdog: closes every connection whose lookup's deadline passed. */
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

    /** Closes every connection (lookups in flight fail UNAVAILABLE) and stops the watchdog. */
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

    /** The hello was refused, or answered by something that is not a framed lookup socket. */
    private static final class Refused extends Exception {
        Refused(String why) {
            super(why);
        }
    }

    /** One blocking connection and its buffers, used by one caller at a time. */
    private static final class Conn {
        final SocketChannel ch;
        /** System.nanoTime() by which the lookup in flight must be answered; 0 when idle. */
        volatile long due;
        /** Set by the watchdog when it closed this connection for its deadline. */
        volatile boolean expired;
        private ByteBuffer out = ByteBuffer.allocateDirect(1024);
        private ByteBuffer in = ByteBuffer.allocateDirect(8192);

        Conn(SocketChannel ch) {
            this.ch = ch;
        }

        /** Says hello and returns the server's pid from its answer. */
        long hello() throws IOException, Refused {
            out.clear();
            out.putInt(MAGIC.length + 1).put(MAGIC).put(VERSION).flip();
            writeAll();
            ByteBuffer body = readFrame(1024);
            byte[] magic = new byte[MAGIC.length];
            if (body.remaining() < MAGIC.length + 2) {
                throw new Refused("its answer to the hello (" + body.remaining() + " bytes) is not one");
            }
            body.get(magic);
            if (!java.util.Arrays.equals(magic, MAGIC) || body.get() != VERSION) {
                throw new Refused("its answer to the hello is not rlmm's framed lookup format, version " + VERSION);
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
        SegmentForOffsetStreamReply roundTrip(SegmentForOffsetStreamRequest req, long dueNanos) throws IOException {
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
                return SegmentForOffsetStreamReply.parseFrom(readFrame(MAX_REPLY));
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

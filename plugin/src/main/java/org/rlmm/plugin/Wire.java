package org.rlmm.plugin;

import java.io.BufferedInputStream;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import javax.net.ssl.SSLSocketFactory;
import org.rlmm.plugin.proto.BrokerAnswer;
import org.rlmm.plugin.proto.BrokerHello;
import org.rlmm.plugin.proto.BrokerReply;
import org.rlmm.plugin.proto.BrokerRequest;
import org.rlmm.plugin.proto.Purpose;
import org.rlmm.plugin.proto.ServerInfoReply;

/**
 * One blocking connection to {@code rlmm serve}'s framed socket, opened for one purpose (the Go
 * package rpc/brokerframe documents the format): a 4-byte big-endian length, then a protobuf body,
 * either way; the hello first, answered by who the server is or why it refuses. The calling thread
 * writes its request and reads the reply itself: no I/O thread, no hand-over. Used by one caller
 * at a time ({@link Link} pools them); {@link #close} from another thread (the deadline watchdog)
 * ends a blocked read with an IOException.
 */
final class Wire implements AutoCloseable {
    /** rpc/brokerframe.Magic: opens every hello and answer, the same in every version. */
    static final byte[] MAGIC = "RLMMBROKER".getBytes(StandardCharsets.US_ASCII);
    /** rpc/brokerframe.MaxReply. */
    static final int MAX_REPLY = 64 << 20;

    /** Where the server is and what a hello carries: one per plugin. */
    record Endpoint(java.nio.file.Path socket, String host, int port, SSLSocketFactory tls, byte[] token, int brokerId,
            int version) {
        String describe() {
            return socket != null ? socket.toString() : host + ":" + port;
        }
    }

    /** The hello was refused, or answered by something that is not rlmm serve of this version: never retried. */
    static final class Refused extends Exception {
        private static final long serialVersionUID = 1L;

        Refused(String why) {
            super(why);
        }
    }

    private final java.io.Closeable closer;
    /** The Unix socket's channel, read and written with reused buffers; null over TCP (the streams). */
    private final SocketChannel ch;
    private final DataInputStream in;
    private final OutputStream out;
    /** The request frame being written: reused, grown when too small. */
    private byte[] frame = new byte[1024];
    /** What was read from ch and not yet taken (read mode): reused, grown when too small. */
    private java.nio.ByteBuffer reply = java.nio.ByteBuffer.allocateDirect(8192).flip();
    /** Who the server is, from its answer to the hello. */
    final ServerInfoReply server;
    final Purpose purpose;
    /** System.nanoTime() by which the call in flight must be answered; 0 when idle (the watchdog reads it). */
    volatile long due;
    /** Set when the watchdog closed this connection for its deadline. */
    volatile boolean expired;

    private Wire(java.io.Closeable closer, SocketChannel ch, InputStream in, OutputStream out, Purpose purpose, Endpoint ep)
            throws IOException, Refused {
        this.closer = closer;
        this.ch = ch;
        this.in = in == null ? null : new DataInputStream(new BufferedInputStream(in, 8192));
        this.out = out;
        this.purpose = purpose;
        BrokerHello.Builder h = BrokerHello.newBuilder().setPurpose(purpose).setBrokerId(ep.brokerId())
                .setClientPid(ProcessHandle.current().pid());
        if (ep.token() != null) {
            h.setToken(com.google.protobuf.ByteString.copyFrom(ep.token()));
        }
        byte[] hello = h.build().toByteArray();
        byte[] body = new byte[MAGIC.length + 1 + hello.length];
        System.arraycopy(MAGIC, 0, body, 0, MAGIC.length);
        body[MAGIC.length] = (byte) ep.version();
        System.arraycopy(hello, 0, body, MAGIC.length + 1, hello.length);
        writeFrame(body.length, o -> o.writeRawBytes(body));
        this.server = answer(readFrame(), ep);
    }

    /** Closes a connection whose hello is not answered in time; its one thread ends when idle. */
    private static final java.util.concurrent.ScheduledThreadPoolExecutor HELLO_TIMER = helloTimer();

    private static java.util.concurrent.ScheduledThreadPoolExecutor helloTimer() {
        java.util.concurrent.ScheduledThreadPoolExecutor t = new java.util.concurrent.ScheduledThreadPoolExecutor(1, r -> {
            Thread th = new Thread(r, "rlmm-plugin-hello-timer");
            th.setDaemon(true);
            return th;
        });
        t.setKeepAliveTime(1, java.util.concurrent.TimeUnit.SECONDS);
        t.allowCoreThreadTimeOut(true);
        t.setRemoveOnCancelPolicy(true);
        return t;
    }

    /**
     * Connects to ep and says the hello of purpose p, within timeoutMs (a server that accepts but
     * does not answer, stopped or hung, is closed then): calls on the connection are bounded by
     * the watchdog through {@link #due}.
     */
    static Wire open(Endpoint ep, Purpose p, int timeoutMs) throws IOException, Refused {
        if (ep.socket() != null) {
            SocketChannel ch = SocketChannel.open(StandardProtocolFamily.UNIX);
            java.util.concurrent.ScheduledFuture<?> timer = HELLO_TIMER.schedule(() -> {
                try {
                    ch.close();
                } catch (IOException ignored) {
                    // closing: nothing more to do
                }
            }, timeoutMs, java.util.concurrent.TimeUnit.MILLISECONDS);
            try {
                ch.connect(UnixDomainSocketAddress.of(ep.socket()));
                Wire w = new Wire(ch, ch, null, null, p, ep);
                if (!timer.cancel(false)) {
                    throw new IOException("rlmm serve at " + ep.describe() + " did not answer the hello within " + timeoutMs + " ms");
                }
                return w;
            } catch (java.nio.channels.AsynchronousCloseException e) {
                ch.close();
                throw new IOException("rlmm serve at " + ep.describe() + " did not answer the hello within " + timeoutMs + " ms", e);
            } catch (IOException | Refused | RuntimeException e) {
                timer.cancel(false);
                ch.close();
                throw e;
            }
        }
        Socket s = ep.tls() != null ? ep.tls().createSocket() : new Socket();
        try {
            s.setTcpNoDelay(true);
            s.connect(new InetSocketAddress(ep.host(), ep.port()), timeoutMs);
            s.setSoTimeout(timeoutMs);
            Wire w = new Wire(s, null, s.getInputStream(), s.getOutputStream(), p, ep);
            s.setSoTimeout(0); // calls are bounded by the watchdog
            return w;
        } catch (IOException | Refused | RuntimeException e) {
            s.close();
            throw e;
        }
    }

    private static ServerInfoReply answer(byte[] body, Endpoint ep) throws Refused {
        if (body.length < MAGIC.length + 1 || !Arrays.equals(body, 0, MAGIC.length, MAGIC, 0, MAGIC.length)) {
            throw new Refused(ep.describe() + " answered the hello with " + body.length
                    + " bytes that are not rlmm serve's broker frames");
        }
        int version = body[MAGIC.length] & 0xff;
        BrokerAnswer a;
        try {
            a = BrokerAnswer.parseFrom(java.nio.ByteBuffer.wrap(body, MAGIC.length + 1, body.length - MAGIC.length - 1));
        } catch (com.google.protobuf.InvalidProtocolBufferException e) {
            a = null;
        }
        if (a != null && !a.getRefused().isEmpty()) {
            throw new Refused("rlmm serve at " + ep.describe() + " refused the plugin: " + a.getRefused());
        }
        if (version != ep.version()) {
            throw new Refused(Errors.versionMismatch(ep.describe(), version, ep.version()));
        }
        if (a == null || !a.hasServer()) {
            throw new Refused(ep.describe() + " answered the hello without saying who it is");
        }
        return a.getServer();
    }

    /** Sends req and returns its reply; a list's replies are handed to each until the last. */
    BrokerReply call(BrokerRequest req, java.util.function.Consumer<BrokerReply> more) throws IOException {
        writeFrame(req.getSerializedSize(), req::writeTo);
        while (true) {
            BrokerReply r = BrokerReply.parseFrom(readBody());
            if (r.getId() != req.getId()) {
                throw new IOException("rlmm serve answered id " + r.getId() + " to request " + req.getId());
            }
            if (!r.getMore()) {
                return r;
            }
            more.accept(r);
        }
    }

    /** Reads one frame pushed by the server (a watch connection's readiness). */
    byte[] readPush() throws IOException {
        return readFrame();
    }

    /** Writes a body of n bytes, which body writes, as one frame in one write. */
    private interface Body {
        void writeTo(com.google.protobuf.CodedOutputStream o) throws IOException;
    }

    private void writeFrame(int n, Body body) throws IOException {
        if (frame.length < 4 + n) {
            frame = new byte[Math.max(4 + n, 2 * frame.length)];
        }
        frame[0] = (byte) (n >>> 24);
        frame[1] = (byte) (n >>> 16);
        frame[2] = (byte) (n >>> 8);
        frame[3] = (byte) n;
        com.google.protobuf.CodedOutputStream o = com.google.protobuf.CodedOutputStream.newInstance(frame, 4, n);
        body.writeTo(o);
        o.checkNoSpaceLeft();
        if (ch == null) {
            out.write(frame, 0, 4 + n);
            out.flush();
            return;
        }
        java.nio.ByteBuffer b = java.nio.ByteBuffer.wrap(frame, 0, 4 + n);
        while (b.hasRemaining()) {
            ch.write(b);
        }
    }

    /** One frame's body as a copy (the hello's answer, a push). */
    private byte[] readFrame() throws IOException {
        java.nio.ByteBuffer b = readBody();
        byte[] out = new byte[b.remaining()];
        b.get(out);
        return out;
    }

    /**
     * Reads one frame and returns its body, valid until the next read. On the Unix socket it is
     * read into one reused buffer.
     */
    private java.nio.ByteBuffer readBody() throws IOException {
        if (ch == null) {
            int n;
            try {
                n = in.readInt();
            } catch (EOFException e) {
                throw new EOFException("rlmm serve closed the connection");
            }
            checkSize(n);
            byte[] body = new byte[n];
            in.readFully(body);
            return java.nio.ByteBuffer.wrap(body);
        }
        fill(4);
        int n = reply.getInt(reply.position());
        checkSize(n);
        fill(4 + n);
        java.nio.ByteBuffer body = reply.slice(reply.position() + 4, n);
        reply.position(reply.position() + 4 + n);
        return body;
    }

    private static void checkSize(int n) throws IOException {
        if (n < 0 || n > MAX_REPLY) {
            throw new IOException("a frame of " + Integer.toUnsignedString(n) + " bytes, more than the " + MAX_REPLY + " allowed");
        }
    }

    /**
     * Reads from ch until at least n bytes are unread (usually one read: the server writes a
     * frame's header and body at once; a watch's pushes or a list's replies may come in one read).
     */
    private void fill(int n) throws IOException {
        if (reply.remaining() >= n) {
            return;
        }
        if (reply.capacity() < n) {
            java.nio.ByteBuffer bigger = java.nio.ByteBuffer.allocateDirect(Math.max(n, 2 * reply.capacity()));
            bigger.put(reply);
            reply = bigger;
        } else {
            reply.compact();
        }
        while (reply.position() < n) {
            if (ch.read(reply) < 0) {
                throw new EOFException("rlmm serve closed the connection");
            }
        }
        reply.flip();
    }

    @Override
    public void close() {
        try {
            closer.close();
        } catch (IOException ignored) {
            // closing: nothing more to do with it
        }
    }
}

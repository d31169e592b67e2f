package org.rlmm.plugin;

import com.google.protobuf.ByteString;
import com.google.protobuf.CodedOutputStream;
import com.google.protobuf.InvalidProtocolBufferException;
import java.io.BufferedInputStream;
import java.io.Closeable;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.Channels;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
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
 * at a time ({@link Link} pools them); {@link #close} from another thread (the deadline watchdog,
 * the hello's timer) ends a blocked read with an IOException. The same streams over a Unix socket
 * and over TCP (TLS or not).
 */
final class Wire implements AutoCloseable {
    /** rpc/brokerframe.Magic: opens every hello and answer, the same in every version. */
    static final byte[] MAGIC = "RLMMBROKER".getBytes(StandardCharsets.US_ASCII);
    /** rpc/brokerframe.MaxReply. */
    static final int MAX_REPLY = 64 << 20;

    /** Where the server is and what a hello carries: one per plugin. */
    record Endpoint(Path socket, String host, int port, SSLSocketFactory tls, byte[] token, int brokerId, int version) {
        String describe() {
            return socket != null ? socket.toString() : host + ":" + port;
        }
    }

    /** Closes a connection whose hello is not answered in time; its one thread ends when idle. */
    private static final ScheduledThreadPoolExecutor HELLO_TIMER = new ScheduledThreadPoolExecutor(1, r -> {
        Thread t = new Thread(r, "rlmm-plugin-hello-timer");
        t.setDaemon(true);
        return t;
    });

    static {
        HELLO_TIMER.setKeepAliveTime(1, TimeUnit.SECONDS);
        HELLO_TIMER.allowCoreThreadTimeOut(true);
        HELLO_TIMER.setRemoveOnCancelPolicy(true);
    }

    private final Closeable closer;
    private final DataInputStream in;
    private final OutputStream out;
    /** The request frame being written: reused, grown when too small. */
    private byte[] frame = new byte[1024];
    /** Who the server is, from its answer to the hello. */
    final ServerInfoReply server;
    final Purpose purpose;
    /** System.nanoTime() by which the call in flight must be answered; 0 when idle (the watchdog reads it). */
    volatile long due;
    /** Set when the watchdog closed this connection for its deadline. */
    volatile boolean expired;

    private Wire(Closeable closer, DataInputStream in, OutputStream out, Purpose purpose, Endpoint ep) throws IOException, Errors.Refused {
        this.closer = closer;
        this.in = in;
        this.out = out;
        this.purpose = purpose;
        BrokerHello.Builder h = BrokerHello.newBuilder().setPurpose(purpose).setBrokerId(ep.brokerId())
                .setClientPid(ProcessHandle.current().pid());
        if (ep.token() != null) {
            h.setToken(ByteString.copyFrom(ep.token()));
        }
        byte[] hello = h.build().toByteArray();
        writeFrame(MAGIC.length + 1 + hello.length, o -> {
            o.writeRawBytes(MAGIC);
            o.writeRawByte((byte) ep.version());
            o.writeRawBytes(hello);
        });
        this.server = answer(readFrame(), ep);
    }

    /**
     * Connects to ep and says the hello of purpose p, within timeoutMs (a server that accepts but
     * does not answer, stopped or hung, is closed then): calls on the connection are bounded by
     * the watchdog through {@link #due}.
     */
    static Wire open(Endpoint ep, Purpose p, int timeoutMs) throws IOException, Errors.Refused {
        Closeable c = ep.socket() != null ? SocketChannel.open(StandardProtocolFamily.UNIX)
                : ep.tls() != null ? ep.tls().createSocket() : new Socket();
        ScheduledFuture<?> timer = HELLO_TIMER.schedule(() -> closeQuietly(c), timeoutMs, TimeUnit.MILLISECONDS);
        try {
            Wire w;
            if (c instanceof SocketChannel ch) {
                ch.connect(UnixDomainSocketAddress.of(ep.socket()));
                w = new Wire(ch, new DataInputStream(new BufferedInputStream(Channels.newInputStream(ch), 8192)),
                        Channels.newOutputStream(ch), p, ep);
            } else {
                Socket s = (Socket) c;
                s.setTcpNoDelay(true);
                s.connect(new InetSocketAddress(ep.host(), ep.port()), timeoutMs);
                w = new Wire(s, new DataInputStream(new BufferedInputStream(s.getInputStream(), 8192)), s.getOutputStream(), p, ep);
            }
            if (!timer.cancel(false)) {
                throw new IOException("the timer closed it");
            }
            return w;
        } catch (IOException | Errors.Refused | RuntimeException e) {
            closeQuietly(c);
            if (!timer.cancel(false) && e instanceof IOException) {
                throw new IOException("rlmm serve at " + ep.describe() + " did not answer the hello within " + timeoutMs + " ms", e);
            }
            throw e;
        }
    }

    private static ServerInfoReply answer(byte[] body, Endpoint ep) throws Errors.Refused {
        if (body.length < MAGIC.length + 1 || !Arrays.equals(body, 0, MAGIC.length, MAGIC, 0, MAGIC.length)) {
            throw new Errors.Refused(ep.describe() + " answered the hello with " + body.length
                    + " bytes that are not rlmm serve's broker frames");
        }
        int version = body[MAGIC.length] & 0xff;
        BrokerAnswer a;
        try {
            a = BrokerAnswer.parseFrom(ByteBuffer.wrap(body, MAGIC.length + 1, body.length - MAGIC.length - 1));
        } catch (InvalidProtocolBufferException e) {
            a = null;
        }
        if (a != null && !a.getRefused().isEmpty()) {
            throw new Errors.Refused("rlmm serve at " + ep.describe() + " refused the plugin: " + a.getRefused());
        }
        if (version != ep.version()) {
            throw new Errors.Refused(Errors.versionMismatch(ep.describe(), version, ep.version()));
        }
        if (a == null || !a.hasServer()) {
            throw new Errors.Refused(ep.describe() + " answered the hello without saying who it is");
        }
        return a.getServer();
    }

    /** Sends req and returns its reply; a list's replies are handed to more until the last. */
    BrokerReply call(BrokerRequest req, Consumer<BrokerReply> more) throws IOException {
        writeFrame(req.getSerializedSize(), req::writeTo);
        while (true) {
            BrokerReply r = BrokerReply.parseFrom(readFrame());
            if (r.getId() != req.getId()) {
                throw new IOException("rlmm serve answered id " + r.getId() + " to request " + req.getId());
            }
            if (!r.getMore()) {
                return r;
            }
            more.accept(r);
        }
    }

    /** Writes a body of n bytes, which body writes, as one frame in one write. */
    private interface Body {
        void writeTo(CodedOutputStream o) throws IOException;
    }

    private void writeFrame(int n, Body body) throws IOException {
        if (frame.length < 4 + n) {
            frame = new byte[Math.max(4 + n, 2 * frame.length)];
        }
        ByteBuffer.wrap(frame).putInt(n);
        CodedOutputStream o = CodedOutputStream.newInstance(frame, 4, n);
        body.writeTo(o);
        o.checkNoSpaceLeft();
        out.write(frame, 0, 4 + n);
        out.flush();
    }

    /** Reads one frame's body (a reply, the hello's answer, a watch connection's push). */
    byte[] readFrame() throws IOException {
        int n;
        try {
            n = in.readInt();
        } catch (EOFException e) {
            throw new EOFException("rlmm serve closed the connection");
        }
        if (n < 0 || n > MAX_REPLY) {
            throw new IOException("a frame of " + Integer.toUnsignedString(n) + " bytes, more than the " + MAX_REPLY + " allowed");
        }
        byte[] body = new byte[n];
        in.readFully(body);
        return body;
    }

    private static void closeQuietly(Closeable c) {
        try {
            c.close();
        } catch (IOException ignored) {
            // closing: nothing more to do with it
        }
    }

    @Override
    public void close() {
        closeQuietly(closer);
    }
}

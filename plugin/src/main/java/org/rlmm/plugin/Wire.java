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
import java.nio.channels.Channels;
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
    private final DataInputStream in;
    private final OutputStream out;
    /** Who the server is, from its answer to the hello. */
    final ServerInfoReply server;
    final Purpose purpose;
    /** System.nanoTime() by which the call in flight must be answered; 0 when idle (the watchdog reads it). */
    volatile long due;
    /** Set when the watchdog closed this connection for its deadline. */
    volatile boolean expired;

    private Wire(java.io.Closeable closer, InputStream in, OutputStream out, Purpose purpose, Endpoint ep)
            throws IOException, Refused {
        this.closer = closer;
        this.in = new DataInputStream(new BufferedInputStream(in, 8192));
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
        writeFrame(body);
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
                Wire w = new Wire(ch, Channels.newInputStream(ch), Channels.newOutputStream(ch), p, ep);
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
            Wire w = new Wire(s, s.getInputStream(), s.getOutputStream(), p, ep);
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
        writeFrame(req.toByteArray());
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

    /** Reads one frame pushed by the server (a watch connection's readiness). */
    byte[] readPush() throws IOException {
        return readFrame();
    }

    private void writeFrame(byte[] body) throws IOException {
        byte[] frame = new byte[4 + body.length];
        frame[0] = (byte) (body.length >>> 24);
        frame[1] = (byte) (body.length >>> 16);
        frame[2] = (byte) (body.length >>> 8);
        frame[3] = (byte) body.length;
        System.arraycopy(body, 0, frame, 4, body.length);
        out.write(frame);
        out.flush();
    }

    private byte[] readFrame() throws IOException {
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

    @Override
    public void close() {
        try {
            closer.close();
        } catch (IOException ignored) {
            // closing: nothing more to do with it
        }
    }
}

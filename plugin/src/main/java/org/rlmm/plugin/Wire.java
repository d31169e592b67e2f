package org.rlmm.plugin;

import com.google.protobuf.ByteString;
import com.google.protobuf.CodedOutputStream;
import com.google.protobuf.InvalidProtocolBufferException;
import java.io.BufferedInputStream;
import java.io.Closeable;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.Channels;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLSocketFactory;
import javax.net.ssl.TrustManagerFactory;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.utils.Utils;
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
 * at a time ({@link Link} pools them). The {@link Watchdog} closes one whose hello or call passed
 * its deadline ({@link #due}), which ends a blocked read with an IOException. The same streams over
 * a Unix socket and over TCP (TLS or not).
 */
final class Wire implements AutoCloseable {
    /** rpc/brokerframe.Magic: opens every hello and answer, the same in every version. */
    static final byte[] MAGIC = "RLMMBROKER".getBytes(StandardCharsets.US_ASCII);
    /** The version of the frames the hello states: {@link RlmmRemoteLogMetadataManager#API_VERSION}. */
    private static final int VERSION = RlmmRemoteLogMetadataManager.API_VERSION;
    /** rpc/brokerframe.MaxReply. */
    static final int MAX_REPLY = 64 << 20;

    /**
     * Where the server is and what a hello carries: one per plugin. Over TCP, a JDK TLS socket
     * factory verifies rlmm serve by the CA of a PEM file, and a bearer token authenticates the plugin.
     */
    record Endpoint(Path socket, String host, int port, SSLSocketFactory tls, byte[] token, int brokerId) {
        /** The endpoint of cfg. */
        static Endpoint of(PluginConfig cfg) {
            if (cfg.mode != PluginConfig.Mode.TCP) {
                return new Endpoint(cfg.socket, null, 0, null, null, cfg.brokerId());
            }
            Path tokenFile = cfg.path(PluginConfig.TOKEN_FILE);
            byte[] token = null;
            if (tokenFile != null) {
                try {
                    token = Files.readString(tokenFile, StandardCharsets.UTF_8).trim().getBytes(StandardCharsets.UTF_8);
                } catch (IOException e) {
                    throw new ConfigException(PluginConfig.TOKEN_FILE, tokenFile.toString(), "unreadable: " + e.getMessage());
                }
                if (token.length == 0) {
                    throw new ConfigException(PluginConfig.TOKEN_FILE, tokenFile.toString(), "the file is empty");
                }
            }
            Path ca = cfg.path(PluginConfig.TLS_CA);
            SSLSocketFactory tls = null;
            if (ca != null) {
                try (InputStream in = Files.newInputStream(ca)) {
                    KeyStore trust = KeyStore.getInstance(KeyStore.getDefaultType());
                    trust.load(null, null);
                    int i = 0;
                    for (Certificate c : CertificateFactory.getInstance("X.509").generateCertificates(in)) {
                        trust.setCertificateEntry("ca" + i++, c);
                    }
                    TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
                    tmf.init(trust);
                    SSLContext ctx = SSLContext.getInstance("TLS");
                    ctx.init(null, tmf.getTrustManagers(), null);
                    tls = ctx.getSocketFactory();
                } catch (IOException | GeneralSecurityException e) {
                    throw new ConfigException(PluginConfig.TLS_CA, ca.toString(), "the CA file could not be loaded: " + e.getMessage());
                }
            }
            String address = cfg.string(PluginConfig.ADDRESS);
            return new Endpoint(null, Utils.getHost(address), Utils.getPort(address), tls, token, cfg.brokerId());
        }

        String describe() {
            return socket != null ? socket.toString() : host + ":" + port;
        }
    }

    /**
     * The one thread that bounds every hello and call: it closes each connection whose deadline
     * passed, so a server that hangs (SIGSTOP) or accepts without answering fails its caller in time.
     */
    static final class Watchdog implements AutoCloseable {
        private final Set<Wire> live = ConcurrentHashMap.newKeySet();
        private final long tickNanos;
        private final Thread thread = new Thread(this::run, "rlmm-plugin-deadline");
        private volatile boolean closed;

        /** Checks the deadlines every tickNanos. */
        Watchdog(long tickNanos) {
            this.tickNanos = tickNanos;
            thread.setDaemon(true);
            thread.start();
        }

        private void run() {
            while (!closed) {
                long now = System.nanoTime();
                for (Wire w : live) {
                    long due = w.due;
                    if (due != 0 && now - due > 0) {
                        w.expired = true;
                        w.close();
                    }
                }
                LockSupport.parkNanos(this, tickNanos);
            }
        }

        /** Stops the thread: it ends at once. */
        @Override
        public void close() {
            closed = true;
            LockSupport.unpark(thread);
        }
    }

    private final Endpoint ep;
    private final Watchdog dog;
    private final Closeable closer;
    private DataInputStream in;
    private OutputStream out;
    /** The request frame being written: reused, grown when too small. */
    private byte[] frame = new byte[1024];
    /** Who the server is, from its answer to the hello. */
    ServerInfoReply server;
    final Purpose purpose;
    /** System.nanoTime() by which the hello or call in flight must be answered; 0 when idle. */
    volatile long due;
    /** Set when the watchdog closed this connection for its deadline. */
    volatile boolean expired;

    private Wire(Endpoint ep, Watchdog dog, Purpose purpose, int timeoutMs) throws IOException {
        this.ep = ep;
        this.dog = dog;
        this.purpose = purpose;
        this.closer = ep.socket() != null ? SocketChannel.open(StandardProtocolFamily.UNIX)
                : ep.tls() != null ? ep.tls().createSocket() : new Socket();
        due = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
        dog.live.add(this);
    }

    /**
     * Connects to ep and says the hello of purpose p, within timeoutMs (a server that accepts but
     * does not answer, stopped or hung, is closed then by the watchdog, as calls are).
     */
    static Wire open(Endpoint ep, Watchdog dog, Purpose p, int timeoutMs) throws IOException, Errors.Refused {
        Wire w = new Wire(ep, dog, p, timeoutMs);
        try {
            if (w.closer instanceof SocketChannel ch) {
                ch.connect(UnixDomainSocketAddress.of(ep.socket()));
                w.in = new DataInputStream(new BufferedInputStream(Channels.newInputStream(ch), 8192));
                w.out = Channels.newOutputStream(ch);
            } else {
                Socket s = (Socket) w.closer;
                s.setTcpNoDelay(true);
                s.connect(new InetSocketAddress(ep.host(), ep.port()), timeoutMs);
                w.in = new DataInputStream(new BufferedInputStream(s.getInputStream(), 8192));
                w.out = s.getOutputStream();
            }
            w.hello();
            w.due = 0;
            return w;
        } catch (IOException | Errors.Refused | RuntimeException e) {
            w.close();
            if (w.expired && e instanceof IOException) {
                throw new IOException("rlmm serve at " + ep.describe() + " did not answer the hello within " + timeoutMs + " ms", e);
            }
            throw e;
        }
    }

    private void hello() throws IOException, Errors.Refused {
        BrokerHello.Builder h = BrokerHello.newBuilder().setPurpose(purpose).setBrokerId(ep.brokerId())
                .setClientPid(ProcessHandle.current().pid());
        if (ep.token() != null) {
            h.setToken(ByteString.copyFrom(ep.token()));
        }
        byte[] hello = h.build().toByteArray();
        writeFrame(MAGIC.length + 1 + hello.length, o -> {
            o.writeRawBytes(MAGIC);
            o.writeRawByte((byte) VERSION);
            o.writeRawBytes(hello);
        });
        byte[] body = readFrame();
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
        if (version != VERSION) {
            throw new Errors.Refused(Errors.versionMismatch(ep.describe(), version, VERSION));
        }
        if (a == null || !a.hasServer()) {
            throw new Errors.Refused(ep.describe() + " answered the hello without saying who it is");
        }
        server = a.getServer();
    }

    /** Sends req as one frame. */
    void write(BrokerRequest req) throws IOException {
        writeFrame(req.getSerializedSize(), req::writeTo);
    }

    /** Reads the reply to request id; a list's replies before the last go to more. */
    BrokerReply read(long id, List<BrokerReply> more) throws IOException {
        while (true) {
            BrokerReply r = BrokerReply.parseFrom(readFrame());
            if (r.getId() != id) {
                throw new IOException("rlmm serve answered id " + r.getId() + " to request " + id);
            }
            if (!r.getMore()) {
                return r;
            }
            if (more == null) {
                throw new IOException("rlmm serve answered request " + id + " with more than one reply");
            }
            more.add(r);
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

    @Override
    public void close() {
        dog.live.remove(this);
        try {
            closer.close();
        } catch (IOException ignored) {
            // closing: nothing more to do with it
        }
    }
}

package org.rlmm.plugin;

import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.ForwardingClientCall;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.netty.shaded.io.grpc.netty.GrpcSslContexts;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.netty.buffer.ByteBufAllocator;
import io.grpc.netty.shaded.io.netty.buffer.UnpooledByteBufAllocator;
import io.grpc.netty.shaded.io.netty.channel.ChannelOption;
import io.grpc.netty.shaded.io.netty.channel.EventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.IoHandlerFactory;
import io.grpc.netty.shaded.io.netty.channel.MultiThreadIoEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.epoll.Epoll;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollDomainSocketChannel;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollIoHandler;
import io.grpc.netty.shaded.io.netty.channel.nio.NioIoHandler;
import io.grpc.netty.shaded.io.netty.channel.socket.nio.NioDomainSocketChannel;
import io.grpc.netty.shaded.io.netty.channel.socket.nio.NioSocketChannel;
import io.grpc.netty.shaded.io.netty.channel.unix.DomainSocketAddress;
import io.grpc.netty.shaded.io.netty.handler.ssl.SslContextBuilder;
import java.io.IOException;
import java.net.SocketAddress;
import java.net.UnixDomainSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.common.config.ConfigException;
import org.slf4j.LoggerFactory;

/**
 * Builds the gRPC channel to {@code rlmm serve}: a Unix domain socket through Netty's epoll
 * transport ({@code rlmm.serve.transport}, the default; the jar carries its JNI library, renamed
 * for the relocated package) or NIO (the JDK's own {@code UnixDomainSocketAddress}, no native
 * code), or TCP with optional TLS and bearer token. Epoll because the lookup is a ping-pong whose
 * time is mostly the I/O thread's system calls and wake-ups: epoll's event loop makes fewer than
 * the JDK's selector (docs/bench/plugin.md). Its library binds to one class loader,
 * so a broker JVM that loads the plugin in a loader per instance loads one copy (about 110 KB) per
 * instance (docs/COMPATIBILITY.md); nio avoids that.
 */
final class Channels {
    private Channels() {}

    private static final AtomicBoolean EPOLL_WARNED = new AtomicBoolean();

    /** A channel and the event loop it runs on; both go at {@link #close}. */
    static final class Conn implements AutoCloseable {
        final ManagedChannel channel;
        private final EventLoopGroup group;
        /**
         * The channel's one I/O thread as an executor: a call started from it costs the channel one
         * wake-up and one socket write, where one started from another thread costs one of each per
         * step of the call ({@link Caller#mutate}).
         */
        final java.util.concurrent.Executor loop;

        Conn(ManagedChannel channel, EventLoopGroup group) {
            this.channel = channel;
            this.group = group;
            this.loop = group.next();
        }

        @Override
        public void close() {
            channel.shutdownNow();
            try {
                channel.awaitTermination(5, java.util.concurrent.TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            group.shutdownGracefully(0, 1, java.util.concurrent.TimeUnit.SECONDS);
        }
    }

    /**
     * Opens the channel. Its executor is direct: gRPC's callbacks run on the I/O thread, which
     * saves a thread hand-off per call; blocking calls run their callbacks on the caller's own
     * thread anyway, and the plugin hands mutations' chained stages to its own pool.
     */
    static Conn open(PluginConfig cfg) {
        if (cfg.mode == PluginConfig.Mode.TCP) {
            return tcp(cfg);
        }
        return unix(cfg);
    }

    private static Conn unix(PluginConfig cfg) {
        if (cfg.transport == PluginConfig.Transport.EPOLL && epollAvailable()) {
            return unix(cfg, EpollIoHandler.newFactory(), EpollDomainSocketChannel.class,
                    new DomainSocketAddress(cfg.socket.toString()));
        }
        return unix(cfg, NioIoHandler.newFactory(), NioDomainSocketChannel.class, UnixDomainSocketAddress.of(cfg.socket));
    }

    /** The channel over the Unix socket through one transport: its event loop, channel and address types. */
    private static Conn unix(PluginConfig cfg, IoHandlerFactory io,
            Class<? extends io.grpc.netty.shaded.io.netty.channel.Channel> type, SocketAddress address) {
        EventLoopGroup group = new MultiThreadIoEventLoopGroup(1, daemon("rlmm-plugin-io"), io);
        ManagedChannel ch;
        try {
            ch = NettyChannelBuilder.forAddress(address)
                    .eventLoopGroup(group)
                    .channelType(type, address.getClass())
                    .overrideAuthority("localhost")
                    // gRPC asks every transport for TCP keep-alive; a Unix socket has none, and Netty
                    // would log a warning at every connect. null takes the option away.
                    .withOption(ChannelOption.SO_KEEPALIVE, null)
                    .withOption(ChannelOption.ALLOCATOR, allocator())
                    .usePlaintext()
                    .directExecutor()
                    .maxInboundMessageSize(64 << 20)
                    .build();
        } catch (RuntimeException e) {
            group.shutdownGracefully(0, 1, java.util.concurrent.TimeUnit.SECONDS);
            throw new IllegalStateException("rlmm plugin: cannot open a channel to the Unix socket " + cfg.socket + ": " + e, e);
        }
        return new Conn(ch, group);
    }

    /** Whether epoll's JNI library loads here; logs why not, once per class loader. */
    private static boolean epollAvailable() {
        if (Epoll.isAvailable()) {
            return true;
        }
        if (EPOLL_WARNED.compareAndSet(false, true)) {
            LoggerFactory.getLogger(Channels.class).warn("rlmm plugin: Netty's epoll transport does not load here ({});"
                    + " the Unix socket goes through nio", String.valueOf(Epoll.unavailabilityCause()));
        }
        return false;
    }

    private static Conn tcp(PluginConfig cfg) {
        EventLoopGroup group = new MultiThreadIoEventLoopGroup(1, daemon("rlmm-plugin-io"), NioIoHandler.newFactory());
        NettyChannelBuilder b = NettyChannelBuilder.forAddress(PluginConfig.host(cfg.address), PluginConfig.port(cfg.address))
                .eventLoopGroup(group)
                .channelType(NioSocketChannel.class)
                .withOption(ChannelOption.ALLOCATOR, allocator())
                .directExecutor()
                .maxInboundMessageSize(64 << 20);
        if (cfg.tlsCa != null || cfg.tlsCert != null) {
            try {
                SslContextBuilder ssl = GrpcSslContexts.forClient();
                if (cfg.tlsCa != null) {
                    ssl.trustManager(cfg.tlsCa.toFile());
                }
                if (cfg.tlsCert != null) {
                    ssl.keyManager(cfg.tlsCert.toFile(), cfg.tlsKey.toFile());
                }
                b.sslContext(ssl.build());
            } catch (IOException | IllegalArgumentException e) {
                group.shutdownGracefully(0, 1, java.util.concurrent.TimeUnit.SECONDS);
                throw new ConfigException(PluginConfig.TLS_CA, String.valueOf(cfg.tlsCa),
                        "the TLS files could not be loaded: " + e.getMessage());
            }
        } else {
            b.usePlaintext();
        }
        if (cfg.tokenFile != null) {
            String token;
            try {
                token = new String(Files.readAllBytes(cfg.tokenFile), StandardCharsets.UTF_8).trim();
            } catch (IOException e) {
                group.shutdownGracefully(0, 1, java.util.concurrent.TimeUnit.SECONDS);
                throw new ConfigException(PluginConfig.TOKEN_FILE, cfg.tokenFile.toString(), "unreadable: " + e.getMessage());
            }
            if (token.isEmpty()) {
                group.shutdownGracefully(0, 1, java.util.concurrent.TimeUnit.SECONDS);
                throw new ConfigException(PluginConfig.TOKEN_FILE, cfg.tokenFile.toString(), "the file is empty");
            }
            b.intercept(bearer(token));
        }
        return new Conn(b.build(), group);
    }

    /** Sends "authorization: Bearer TOKEN" with every call. */
    private static ClientInterceptor bearer(String token) {
        Metadata.Key<String> key = Metadata.Key.of("authorization", Metadata.ASCII_STRING_MARSHALLER);
        String value = "Bearer " + token;
        return new ClientInterceptor() {
            @Override
            public <Q, R> ClientCall<Q, R> interceptCall(MethodDescriptor<Q, R> method, CallOptions options, Channel next) {
                return new ForwardingClientCall.SimpleForwardingClientCall<Q, R>(next.newCall(method, options)) {
                    @Override
                    public void start(Listener<R> listener, Metadata headers) {
                        headers.put(key, value);
                        super.start(listener, headers);
                    }
                };
            }
        };
    }

    /**
     * The channel's buffers: unpooled, so memory goes back at release. gRPC's default is a pooled
     * allocator held in a static field, which keeps its direct-memory chunks (some 4 MB) for the
     * life of its class loader; a JVM that loads the plugin in a class loader per instance (a test
     * harness with many brokers) ran out of direct memory after about 60 instances, and the next
     * channel then blocked in its first write (docs/COMPATIBILITY.md).
     */
    private static ByteBufAllocator allocator() {
        return new UnpooledByteBufAllocator(false);
    }

    static ThreadFactory daemon(String name) {
        AtomicInteger n = new AtomicInteger();
        return r -> {
            Thread t = new Thread(r, name + "-" + n.incrementAndGet());
            t.setDaemon(true);
            return t;
        };
    }
}

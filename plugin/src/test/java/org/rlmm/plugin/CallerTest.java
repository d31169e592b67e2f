package org.rlmm.plugin;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.protobuf.Any;
import io.grpc.Server;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.StreamObserver;
import java.net.InetSocketAddress;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Stream;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.errors.ReplicaNotAvailableException;
import org.apache.kafka.server.log.remote.storage.RemoteResourceNotFoundException;
import org.apache.kafka.server.log.remote.storage.RemoteStorageException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.rlmm.plugin.proto.CallStatus;
import org.rlmm.plugin.proto.ErrorInfo;
import org.rlmm.plugin.proto.ErrorKind;
import org.rlmm.plugin.proto.HighestOffsetForEpochReply;
import org.rlmm.plugin.proto.HighestOffsetForEpochRequest;
import org.rlmm.plugin.proto.AssignmentReply;
import org.rlmm.plugin.proto.LeadershipChangesRequest;
import org.rlmm.plugin.proto.MutationReply;
import org.rlmm.plugin.proto.PutPartitionDeleteRequest;
import org.rlmm.plugin.proto.RemoteLogMetadataGrpc;
import org.rlmm.plugin.proto.ServerInfoReply;
import org.rlmm.plugin.proto.ServerInfoRequest;
import org.slf4j.LoggerFactory;

/**
 * The call primitive against a server that answers what each case asks: every failure reaches the
 * broker as the exception {@link Errors} maps it to, by whether the broker assigned the partition,
 * and a call with no server fails within its bound naming the address.
 */
class CallerTest {
    /** The answer the fake server gives to a read and a mutation; null: a normal answer. */
    private final AtomicReference<io.grpc.StatusRuntimeException> answer = new AtomicReference<>();
    private Server server;
    private Supervisor supervisor;
    private Caller caller;
    private ExecutorService callbacks;
    private String address;

    private final class FakeServer extends RemoteLogMetadataGrpc.RemoteLogMetadataImplBase {
        @Override
        public void serverInfo(ServerInfoRequest req, StreamObserver<ServerInfoReply> out) {
            out.onNext(ServerInfoReply.newBuilder().setVersion("fake").setPid(4242).setStartedUnixMs(1)
                    .setApiVersion(RlmmRemoteLogMetadataManager.API_VERSION).build());
            out.onCompleted();
        }

        @Override
        public void onPartitionLeadershipChanges(LeadershipChangesRequest req, StreamObserver<AssignmentReply> out) {
            out.onNext(AssignmentReply.getDefaultInstance());
            out.onCompleted();
        }

        @Override
        public void highestOffsetForEpoch(HighestOffsetForEpochRequest req, StreamObserver<HighestOffsetForEpochReply> out) {
            io.grpc.StatusRuntimeException e = answer.get();
            if (e != null) {
                out.onError(e);
                return;
            }
            out.onNext(HighestOffsetForEpochReply.newBuilder().setFound(true).setOffset(77).build());
            out.onCompleted();
        }

        @Override
        public void putPartitionDelete(PutPartitionDeleteRequest req, StreamObserver<MutationReply> out) {
            io.grpc.StatusRuntimeException e = answer.get();
            if (e != null) {
                out.onError(e);
                return;
            }
            out.onNext(MutationReply.getDefaultInstance());
            out.onCompleted();
        }
    }

    @BeforeEach
    void start() throws Exception {
        server = NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0)).addService(new FakeServer()).build().start();
        address = "127.0.0.1:" + server.getPort();
        PluginConfig cfg = PluginConfig.parse(Map.of("broker.id", 1, "rlmm.serve.address", address,
                "rlmm.serve.call.timeout.ms", "3000", "rlmm.serve.mutation.timeout.ms", "3000"));
        callbacks = Executors.newCachedThreadPool();
        supervisor = new Supervisor(cfg, LoggerFactory.getLogger(CallerTest.class), RlmmRemoteLogMetadataManager.API_VERSION,
                new Supervisor.Listener() {
                    @Override
                    public void started() {}

                    @Override
                    public void error() {}

                    @Override
                    public void failed() {}
                });
        supervisor.start();
        assertTrue(supervisor.awaitOpen(java.time.Duration.ofSeconds(10)), "the fake server passed the handshake");
        caller = new Caller(cfg, supervisor, LoggerFactory.getLogger(CallerTest.class), callbacks);
    }

    @AfterEach
    void stop() throws Exception {
        supervisor.close();
        callbacks.shutdownNow();
        server.shutdownNow();
        server.awaitTermination(10, TimeUnit.SECONDS);
    }

    private static io.grpc.StatusRuntimeException refusal(io.grpc.Status.Code code, ErrorKind kind) {
        CallStatus.Builder s = CallStatus.newBuilder().setCode(code.value()).setMessage("test: " + kind);
        if (kind != null) {
            s.addDetails(Any.pack(ErrorInfo.newBuilder().setKind(kind).build()));
        }
        return LookupStream.toException(s.build());
    }

    private long highestOffset(TopicIdPartition tp) throws RemoteStorageException {
        HighestOffsetForEpochRequest req = HighestOffsetForEpochRequest.newBuilder().setTopicIdPartition(Convert.partition(tp)).build();
        return caller.call("highest-offset", tp, () -> "highest offset of " + tp,
                (s, d) -> s.blocking.withDeadline(d).highestOffsetForEpoch(req)).getOffset();
    }

    /** The server's answer, whether the broker assigned the partition here, and what the broker must see. */
    static Stream<Arguments> readRefusals() {
        return Stream.of(
                Arguments.of(io.grpc.Status.Code.FAILED_PRECONDITION, ErrorKind.NOT_ASSIGNED, true, ReplicaNotAvailableException.class),
                Arguments.of(io.grpc.Status.Code.FAILED_PRECONDITION, ErrorKind.NOT_ASSIGNED, false, RemoteResourceNotFoundException.class),
                Arguments.of(io.grpc.Status.Code.UNAVAILABLE, ErrorKind.NOT_READY, true, ReplicaNotAvailableException.class),
                Arguments.of(io.grpc.Status.Code.NOT_FOUND, ErrorKind.UNKNOWN_SEGMENT, true, RemoteResourceNotFoundException.class),
                Arguments.of(io.grpc.Status.Code.FAILED_PRECONDITION, ErrorKind.INVALID_TRANSITION, true, RemoteStorageException.class),
                Arguments.of(io.grpc.Status.Code.NOT_FOUND, null, false, RemoteResourceNotFoundException.class),
                Arguments.of(io.grpc.Status.Code.INTERNAL, null, true, RemoteStorageException.class));
    }

    @ParameterizedTest(name = "{0} {1}, assigned here {2}")
    @MethodSource("readRefusals")
    void aReadsRefusalIsKafkasException(io.grpc.Status.Code code, ErrorKind kind, boolean assignedHere, Class<? extends Exception> want)
            throws Exception {
        TopicIdPartition tp = TestSupport.newPartition("caller");
        if (assignedHere) {
            supervisor.recordLeadership(Set.of(tp), Set.of(), () -> { });
        }
        assertEquals(77, highestOffset(tp), "a normal answer goes through");
        answer.set(refusal(code, kind));
        Exception e = assertThrows(Exception.class, () -> highestOffset(tp));
        assertSame(want, e.getClass(), e.toString());
        assertTrue(e.getMessage().contains(address) && e.getMessage().contains("highest offset of"), e.getMessage());
    }

    @Test
    void aMutationsRefusalFailsItsFutureMapped() throws Exception {
        answer.set(refusal(io.grpc.Status.Code.FAILED_PRECONDITION, ErrorKind.NOT_ASSIGNED));
        java.util.concurrent.CompletableFuture<Void> f = caller.mutate("partition-delete", "recording a delete", framedDelete(),
                (stub, obs) -> stub.putPartitionDelete(PutPartitionDeleteRequest.getDefaultInstance(), obs));
        ExecutionException e = assertThrows(ExecutionException.class, () -> f.get(10, TimeUnit.SECONDS));
        assertSame(RemoteStorageException.class, e.getCause().getClass(), e.getCause().toString());
        assertTrue(e.getCause().getMessage().contains("recording a delete") && e.getCause().getMessage().contains(address),
                e.getCause().getMessage());
        answer.set(null);
        caller.mutate("partition-delete", "recording a delete", framedDelete(),
                (stub, obs) -> stub.putPartitionDelete(PutPartitionDeleteRequest.getDefaultInstance(), obs)).get(10, TimeUnit.SECONDS);
    }

    /** The framed form of an empty partition delete (unused here: this server has no framed socket). */
    private static org.rlmm.plugin.proto.MutationFrameRequest.Builder framedDelete() {
        return org.rlmm.plugin.proto.MutationFrameRequest.newBuilder()
                .setPutPartitionDelete(PutPartitionDeleteRequest.getDefaultInstance());
    }

    @Test
    void withNoServerACallFailsWithinItsBoundNamingTheAddress() throws Exception {
        server.shutdownNow();
        server.awaitTermination(10, TimeUnit.SECONDS);
        TopicIdPartition tp = TestSupport.newPartition("caller-gone");
        long t0 = System.nanoTime();
        RemoteStorageException e = assertThrows(RemoteStorageException.class, () -> highestOffset(tp));
        long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
        assertTrue(ms < 3000 + 2000, "failed after " + ms + " ms, the bound is 3000 ms");
        assertTrue(e.getMessage().contains(address), e.getMessage());
        assertInstanceOf(RemoteStorageException.class, e);
    }
}

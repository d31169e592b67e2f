package org.rlmm.plugin;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.protobuf.Any;
import io.grpc.StatusRuntimeException;
import org.apache.kafka.common.errors.ReplicaNotAvailableException;
import org.apache.kafka.server.log.remote.storage.RemoteResourceNotFoundException;
import org.apache.kafka.server.log.remote.storage.RemoteStorageException;
import org.junit.jupiter.api.Test;
import org.rlmm.plugin.proto.CallStatus;
import org.rlmm.plugin.proto.ErrorInfo;
import org.rlmm.plugin.proto.ErrorKind;

/** The one rule of {@link Errors}: what each of rlmm serve's answers raises, by the kind of call. */
class ErrorsTest {
    private static StatusRuntimeException status(io.grpc.Status.Code code, ErrorKind kind, boolean mayBeRecorded) {
        return LookupStream.toException(CallStatus.newBuilder().setCode(code.value()).setMessage("rlmm: " + kind)
                .addDetails(Any.pack(ErrorInfo.newBuilder().setKind(kind).setMayBeRecorded(mayBeRecorded).build())).build());
    }

    @Test
    void notAssignedOfAReadDependsOnWhatTheBrokerAssigned() {
        StatusRuntimeException e = status(io.grpc.Status.Code.FAILED_PRECONDITION, ErrorKind.NOT_ASSIGNED, false);

        // Assigned here, not at the server yet: retriable, as Kafka's manager answers while it catches up.
        Exception pending = Errors.map(e, "lookup", "unix:/x.sock", Errors.Call.READ_ASSIGNED);
        assertInstanceOf(ReplicaNotAvailableException.class, pending);
        assertTrue(pending.getMessage().contains("has not reached rlmm serve yet"), pending.getMessage());
        assertSame(e, pending.getCause());

        // Never assigned here: not found, as Kafka's manager throws it.
        Exception never = Errors.map(e, "lookup", "unix:/x.sock", Errors.Call.READ_NOT_ASSIGNED);
        assertInstanceOf(RemoteResourceNotFoundException.class, never);
        assertTrue(never.getMessage().contains("does not host") && never.getMessage().contains("unix:/x.sock"),
                never.getMessage());

        // A mutation's future and any other call: RemoteStorageException naming the kind.
        StatusRuntimeException recorded = status(io.grpc.Status.Code.FAILED_PRECONDITION, ErrorKind.NOT_ASSIGNED, true);
        Exception mutation = Errors.map(recorded, "adding", "unix:/x.sock", Errors.Call.MUTATION);
        assertEquals(RemoteStorageException.class, mutation.getClass());
        assertTrue(mutation.getMessage().contains("NOT_ASSIGNED") && mutation.getMessage().contains("may still be recorded"),
                mutation.getMessage());
        Exception other = Errors.map(e, "handing partitions", "unix:/x.sock");
        assertEquals(RemoteStorageException.class, other.getClass());
    }

    @Test
    void theOtherKindsDoNotDependOnTheCall() {
        for (Errors.Call call : Errors.Call.values()) {
            assertInstanceOf(ReplicaNotAvailableException.class,
                    Errors.map(status(io.grpc.Status.Code.UNAVAILABLE, ErrorKind.NOT_READY, false), "x", "t", call), call.name());
            assertInstanceOf(RemoteResourceNotFoundException.class,
                    Errors.map(status(io.grpc.Status.Code.NOT_FOUND, ErrorKind.UNKNOWN_SEGMENT, false), "x", "t", call), call.name());
            Exception forbidden = Errors.map(status(io.grpc.Status.Code.FAILED_PRECONDITION, ErrorKind.INVALID_TRANSITION, false),
                    "x", "t", call);
            assertEquals(RemoteStorageException.class, forbidden.getClass(), call.name());
            assertFalse(forbidden.getMessage().contains("may still be recorded"), forbidden.getMessage());
        }
    }
}

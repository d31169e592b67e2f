package org.rlmm.plugin;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.apache.kafka.common.errors.NotLeaderOrFollowerException;
import org.apache.kafka.common.errors.ReplicaNotAvailableException;
import org.apache.kafka.server.log.remote.storage.RemoteResourceNotFoundException;
import org.apache.kafka.server.log.remote.storage.RemoteStorageException;
import org.junit.jupiter.api.Test;
import org.rlmm.plugin.proto.BrokerError;
import org.rlmm.plugin.proto.ErrorKind;

/** The one rule of {@link Errors}: what each of rlmm serve's answers raises, by the kind of call. */
class ErrorsTest {
    private static BrokerError error(ErrorKind kind, boolean mayBeRecorded) {
        return BrokerError.newBuilder().setKind(kind).setMayBeRecorded(mayBeRecorded).setMessage("rlmm: " + kind).build();
    }

    @Test
    void notAssignedOfAReadDependsOnTheOutbox() {
        BrokerError e = error(ErrorKind.NOT_ASSIGNED, false);

        // A change of the partition waits in the outbox: retriable.
        Exception pending = Errors.map(e, "lookup", "unix:/x.sock", Errors.Call.READ_WAITING);
        assertInstanceOf(ReplicaNotAvailableException.class, pending);
        assertTrue(pending.getMessage().contains("has not reached rlmm serve yet"), pending.getMessage());

        // None waits: the server's answer is the broker's assignment, not found as Kafka's manager throws it.
        Exception never = Errors.map(e, "lookup", "unix:/x.sock", Errors.Call.READ);
        assertInstanceOf(RemoteResourceNotFoundException.class, never);
        assertTrue(never.getMessage().contains("does not host") && never.getMessage().contains("unix:/x.sock"),
                never.getMessage());

        // A mutation's future and any other call: RemoteStorageException naming the kind.
        Exception mutation = Errors.map(error(ErrorKind.NOT_ASSIGNED, true), "adding", "unix:/x.sock", Errors.Call.MUTATION);
        assertEquals(RemoteStorageException.class, mutation.getClass());
        assertTrue(mutation.getMessage().contains("NOT_ASSIGNED") && mutation.getMessage().contains("may still be recorded"),
                mutation.getMessage());
        assertEquals(RemoteStorageException.class, Errors.map(e, "leadership change", "unix:/x.sock", Errors.Call.OTHER).getClass());
    }

    @Test
    void theOtherKindsDoNotDependOnTheCall() {
        for (Errors.Call call : Errors.Call.values()) {
            assertInstanceOf(ReplicaNotAvailableException.class, Errors.map(error(ErrorKind.NOT_READY, false), "x", "t", call),
                    call.name());
            assertInstanceOf(RemoteResourceNotFoundException.class,
                    Errors.map(error(ErrorKind.UNKNOWN_SEGMENT, false), "x", "t", call), call.name());
            assertInstanceOf(NotLeaderOrFollowerException.class, Errors.map(error(ErrorKind.NOT_LEADER, false), "x", "t", call),
                    call.name());
            Exception forbidden = Errors.map(error(ErrorKind.INVALID_TRANSITION, false), "x", "t", call);
            assertEquals(RemoteStorageException.class, forbidden.getClass(), call.name());
            assertFalse(forbidden.getMessage().contains("may still be recorded"), forbidden.getMessage());
        }
    }

    @Test
    void aCallWithoutAnswerSaysWhy() {
        Exception late = Errors.broken(new Link.Broken("closed", null, true, true), "adding", "t", 1000, true);
        assertTrue(late.getMessage().contains("did not answer within 1000 ms") && late.getMessage().contains("may still be recorded"),
                late.getMessage());
        Exception gone = Errors.broken(new Link.Broken("refused", null, false, false), "lookup", "t", 1000, false);
        assertTrue(gone.getMessage().contains("unreachable") && !gone.getMessage().contains("recorded"), gone.getMessage());
    }
}

package org.rlmm.plugin;

import com.google.protobuf.Any;
import com.google.protobuf.InvalidProtocolBufferException;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.protobuf.StatusProto;
import org.apache.kafka.common.errors.ReplicaNotAvailableException;
import org.apache.kafka.server.log.remote.storage.RemoteResourceNotFoundException;
import org.apache.kafka.server.log.remote.storage.RemoteStorageException;
import org.rlmm.plugin.proto.ErrorInfo;
import org.rlmm.plugin.proto.ErrorKind;

/**
 * Maps a failed call to the exception Kafka's own RLMM raises in that case (kafka-rlmm.md §2,
 * §5.12): NOT_READY is {@link ReplicaNotAvailableException} (retriable, unchecked, as Kafka throws
 * it from reads); an unknown segment, or a partition this server does not hold, is
 * {@link RemoteResourceNotFoundException}; everything else is {@link RemoteStorageException}.
 * Every message carries rlmm's own message and the server's address.
 */
final class Errors {
    private Errors() {}

    /** The ErrorInfo detail of a failed call, or null when the server sent none. */
    static ErrorInfo info(Throwable t) {
        com.google.rpc.Status s = StatusProto.fromThrowable(t);
        if (s == null) {
            return null;
        }
        for (Any a : s.getDetailsList()) {
            if (a.is(ErrorInfo.class)) {
                try {
                    return a.unpack(ErrorInfo.class);
                } catch (InvalidProtocolBufferException e) {
                    return null;
                }
            }
        }
        return null;
    }

    /** The kind of rlmm error a failed call carries (UNSPECIFIED when it carries none). */
    static ErrorKind kind(Throwable t) {
        ErrorInfo i = info(t);
        return i == null ? ErrorKind.ERROR_KIND_UNSPECIFIED : i.getKind();
    }

    /**
     * The exception a read (or a mutation's future) fails with. Unchecked results (NOT_READY)
     * come back as {@link RuntimeException}s to be thrown as they are.
     *
     * @param what the call, as the message names it ("lookup of ...")
     * @param target the server's address
     */
    static Exception map(Throwable t, String what, String target) {
        return map(t, what, target, false);
    }

    /**
     * Like {@link #map(Throwable, String, String)}; for a mutation, a partition the server does
     * not consume is a {@link RemoteStorageException} (Kafka's manager fails the future with
     * "not assigned"), for a read it is {@link RemoteResourceNotFoundException} (Kafka's "No
     * resource found for partition").
     */
    static Exception map(Throwable t, String what, String target, boolean mutation) {
        Status status = Status.fromThrowable(t);
        String rlmm = status.getDescription() == null ? status.getCode().toString() : status.getDescription();
        ErrorInfo info = info(t);
        ErrorKind kind = info == null ? ErrorKind.ERROR_KIND_UNSPECIFIED : info.getKind();
        String msg = what + " failed at rlmm serve " + target + ": " + rlmm;
        switch (kind) {
            case NOT_READY:
                return new ReplicaNotAvailableException(msg, t);
            case UNKNOWN_SEGMENT:
                return new RemoteResourceNotFoundException(msg, t);
            case NOT_ASSIGNED:
                if (!mutation) {
                    return new RemoteResourceNotFoundException(msg, t);
                }
                if (info.getMayBeRecorded()) {
                    msg += " (the event may still be recorded)";
                }
                return new RemoteStorageException(msg + " [" + kind + "]", t);
            case ERROR_KIND_UNSPECIFIED:
                return unclassified(status, t, what, target, rlmm);
            default:
                if (info.getMayBeRecorded()) {
                    msg += " (the event may still be recorded)";
                }
                return new RemoteStorageException(msg + " [" + kind + "]", t);
        }
    }

    /** A failure without rlmm's detail: the transport's own (unreachable, deadline, cancelled). */
    private static Exception unclassified(Status status, Throwable t, String what, String target, String rlmm) {
        switch (status.getCode()) {
            case UNAVAILABLE:
                return new RemoteStorageException(
                        what + " failed: rlmm serve at " + target + " is unreachable (" + rlmm + ")", t);
            case DEADLINE_EXCEEDED:
                return new RemoteStorageException(
                        what + " failed: rlmm serve at " + target + " did not answer in time (" + rlmm + ")", t);
            case NOT_FOUND:
                return new RemoteResourceNotFoundException(
                        what + " failed at rlmm serve " + target + ": " + rlmm, t);
            default:
                return new RemoteStorageException(
                        what + " failed at rlmm serve " + target + ": " + status.getCode() + ": " + rlmm, t);
        }
    }

    /** Throws what {@link #map} returns: the checked kind as it is, the unchecked kind unwrapped. */
    static RemoteStorageException rethrow(StatusRuntimeException e, String what, String target)
            throws RemoteStorageException {
        Exception m = map(e, what, target);
        if (m instanceof RuntimeException) {
            throw (RuntimeException) m;
        }
        throw (RemoteStorageException) m;
    }
}

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
 * §5.12), in one rule ({@link #map(Throwable, String, String, Call)}): NOT_READY, and a read of a
 * partition the broker assigned that the server does not hold yet, are
 * {@link ReplicaNotAvailableException} (retriable, unchecked, as Kafka throws it from reads); an
 * unknown segment, or a read of a partition the broker never assigned here, is
 * {@link RemoteResourceNotFoundException}; everything else is {@link RemoteStorageException}.
 * Every message carries rlmm's own message and the server's address.
 *
 * <p>Every exception the plugin raises to the broker is built here, the mapped ones above and the
 * plugin's own (a server that did not come back in time, an interrupted wait, a closed or
 * unconfigured instance, a server of another API version), so that one file says what the broker
 * sees in each case.
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

    /** What the failed call was: the one thing besides the server's answer the mapping depends on. */
    enum Call {
        /** A read of a partition in the plugin's record of what the broker assigned to it. */
        READ_ASSIGNED,
        /** A read of a partition the broker did not assign to this plugin (or stopped). */
        READ_NOT_ASSIGNED,
        /** A mutation (its future fails with the result). */
        MUTATION,
        /** Anything else: assignment changes, probes, log lines. */
        OTHER
    }

    /** {@link #map(Throwable, String, String, Call)} of a call that is neither a read nor a mutation. */
    static Exception map(Throwable t, String what, String target) {
        return map(t, what, target, Call.OTHER);
    }

    /**
     * The exception a failed call raises (a read throws it, a mutation's future fails with it).
     * Unchecked results (NOT_READY, and NOT_ASSIGNED of an assigned partition) come back as
     * {@link RuntimeException}s to be thrown as they are. The rule, as Kafka's own manager answers:
     *
     * <ul>
     *   <li>NOT_READY (the partition's metadata is being built or catches up):
     *       {@link ReplicaNotAvailableException}, retriable;
     *   <li>NOT_ASSIGNED of a read: {@link ReplicaNotAvailableException} when the broker did assign
     *       the partition here (the assignment has not reached the server yet: a child that just
     *       started, a change still on its way; Kafka's manager answers the same while it catches
     *       up), {@link RemoteResourceNotFoundException} when it did not (Kafka's "No resource found
     *       for partition"). Never an empty answer;
     *   <li>NOT_ASSIGNED of a mutation or another call: {@link RemoteStorageException} (Kafka's
     *       manager fails the future "not assigned");
     *   <li>UNKNOWN_SEGMENT, or NOT_FOUND without rlmm's detail: {@link RemoteResourceNotFoundException};
     *   <li>everything else: {@link RemoteStorageException} with rlmm's message and kind, and "the
     *       event may still be recorded" when the server says so.
     * </ul>
     *
     * @param what the call, as the message names it ("lookup of ...")
     * @param target the server's address
     */
    static Exception map(Throwable t, String what, String target, Call call) {
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
                if (call == Call.READ_ASSIGNED) {
                    return new ReplicaNotAvailableException(msg + " (this broker assigned the partition; the assignment"
                            + " has not reached rlmm serve yet)", t);
                }
                if (call == Call.READ_NOT_ASSIGNED) {
                    return new RemoteResourceNotFoundException(msg + " (this broker does not host the partition)", t);
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
    static RemoteStorageException rethrow(Throwable e, String what, String target, Call call)
            throws RemoteStorageException {
        Exception m = map(e, what, target, call);
        if (m instanceof RuntimeException) {
            throw (RuntimeException) m;
        }
        throw (RemoteStorageException) m;
    }

    /** A failure of the plugin itself (not a call's answer): a {@link RemoteStorageException}. */
    static RemoteStorageException storage(String message) {
        return new RemoteStorageException(message);
    }

    /** {@link #storage(String)} with its cause. */
    static RemoteStorageException storage(String message, Throwable cause) {
        return new RemoteStorageException(message, cause);
    }

    /**
     * A call that found no server to go to within its bound: the child starts or restarts, or a
     * server in connect mode does not answer (why says what the plugin last saw).
     */
    static RemoteStorageException notInTime(String what, String target, long boundMs, String why) {
        return new RemoteStorageException(what + " failed: rlmm serve at " + target + " did not come back within "
                + boundMs + " ms (" + why + ")");
    }

    /** A call whose wait was interrupted (the thread's interrupt flag is set again by the caller). */
    static RemoteStorageException interrupted(String what, Throwable cause) {
        return new RemoteStorageException(what + " interrupted", cause);
    }

    /** A call on an instance that will use no server: the reason it gave up. */
    static RemoteStorageException gaveUp(String why) {
        return new RemoteStorageException("rlmm plugin: " + why);
    }

    /** The status a call that ran out its own timed wait fails with, as a gRPC deadline would. */
    static StatusRuntimeException deadline(long boundMs) {
        return Status.DEADLINE_EXCEEDED.withDescription("no answer within " + boundMs + " ms").asRuntimeException();
    }

    /** A method of Kafka's interface called on an instance that is closed. */
    static IllegalStateException closed() {
        return new IllegalStateException("rlmm plugin: this instance is closed");
    }

    /** A method of Kafka's interface called before configure. */
    static IllegalStateException notConfigured() {
        return new IllegalStateException("rlmm plugin: not configured");
    }

    /** configure after close. */
    static IllegalStateException configureAfterClose() {
        return new IllegalStateException("rlmm plugin: configure after close");
    }

    /** configure could not prepare the child (its directory, its binary): the broker's start fails. */
    static org.apache.kafka.common.KafkaException configureFailed(Exception cause) {
        return new org.apache.kafka.common.KafkaException(cause.getMessage(), cause);
    }

    /**
     * Why a server that states another API version than the plugin's is refused, naming both; null
     * when it matches.
     */
    static String versionMismatch(org.rlmm.plugin.proto.ServerInfoReply info, String target, int apiVersion) {
        if (info.getApiVersion() == apiVersion) {
            return null;
        }
        return "rlmm serve " + info.getVersion() + " (pid " + info.getPid() + ") at " + target + " speaks API version "
                + info.getApiVersion() + (info.getApiVersion() == 0 ? " (older than the version handshake)" : "")
                + ", but this plugin speaks API version " + apiVersion
                + ": refused (use the rlmm binary of the plugin's own jar, or a plugin jar of the server's release)";
    }

    /** A server the plugin will not use (another API version): thrown by the handshake, never retried. */
    static final class Refused extends RemoteStorageException {
        private static final long serialVersionUID = 1L;

        Refused(String message) {
            super(message);
        }
    }

    /** A child that exited before it answered, with its exit code. */
    static final class ExitedEarly extends RemoteStorageException {
        private static final long serialVersionUID = 1L;
        final int code;

        ExitedEarly(String message, int code) {
            super(message);
            this.code = code;
        }
    }
}

package org.rlmm.plugin;

import org.apache.kafka.common.errors.ReplicaNotAvailableException;
import org.apache.kafka.server.log.remote.storage.RemoteResourceNotFoundException;
import org.apache.kafka.server.log.remote.storage.RemoteStorageException;
import org.rlmm.plugin.proto.BrokerError;

/**
 * Every exception the plugin raises to the broker, built here so that one file says what the broker
 * sees in each case: the server's answer mapped as Kafka's own RLMM raises it (kafka-rlmm.md §2,
 * §5.12; the one rule is {@link #map}), and the plugin's own (a server that did not come back in
 * time, an interrupted wait, a closed or unconfigured instance, a server of another API version).
 * Every message carries rlmm's own message and the server's address.
 */
final class Errors {
    private Errors() {}

    /** What the failed call was: the one thing besides the server's answer the mapping depends on. */
    enum Call {
        /** A read of a partition with an assignment change waiting in the plugin's outbox. */
        READ_WAITING,
        /** A read of a partition with no change waiting: the server's answer is the broker's assignment. */
        READ,
        /** A mutation (its future fails with the result). */
        MUTATION,
        /** Anything else: assignment changes, probes, log lines. */
        OTHER
    }

    /**
     * The exception a call the server refused raises (a read throws it, a mutation's future fails
     * with it): the one mapping of the server's {@link BrokerError}. Unchecked results (NOT_READY,
     * and NOT_ASSIGNED of a partition with a change waiting) come back as {@link RuntimeException}s
     * to be thrown as they are. The rule, as Kafka's own manager answers:
     *
     * <ul>
     *   <li>NOT_READY (the partition's metadata is being built or catches up):
     *       {@link ReplicaNotAvailableException}, retriable;
     *   <li>NOT_ASSIGNED of a read: {@link ReplicaNotAvailableException} when a change of the
     *       partition waits in the outbox (it has not reached the server yet),
     *       {@link RemoteResourceNotFoundException} otherwise (Kafka's "No resource found for
     *       partition"). Never an empty answer;
     *   <li>UNKNOWN_SEGMENT: {@link RemoteResourceNotFoundException};
     *   <li>everything else: {@link RemoteStorageException} with rlmm's message and kind, and "the
     *       event may still be recorded" when the server says so.
     * </ul>
     *
     * @param what the call, as the message names it ("lookup of ...")
     * @param target the server's address
     */
    static Exception map(BrokerError e, String what, String target, Call call) {
        String msg = what + " failed at rlmm serve " + target + ": " + e.getMessage();
        switch (e.getKind()) {
            case NOT_READY:
                return new ReplicaNotAvailableException(msg);
            case UNKNOWN_SEGMENT:
                return new RemoteResourceNotFoundException(msg);
            case NOT_ASSIGNED:
                if (call == Call.READ_WAITING) {
                    return new ReplicaNotAvailableException(msg + " (this broker's change of the partition has not reached"
                            + " rlmm serve yet)");
                }
                if (call == Call.READ) {
                    return new RemoteResourceNotFoundException(msg + " (this broker does not host the partition)");
                }
                break;
            default:
                break;
        }
        if (e.getMayBeRecorded()) {
            msg += " (the event may still be recorded)";
        }
        return new RemoteStorageException(msg + " [" + e.getKind() + "]");
    }

    /** A call that got no answer: the connection broke, or its deadline closed it. */
    static RemoteStorageException broken(Link.Broken b, String what, String target, long boundMs, boolean mutation) {
        String may = mutation && b.sent ? " (the event may still be recorded)" : "";
        if (b.deadline) {
            return new RemoteStorageException(what + " failed: rlmm serve at " + target + " did not answer within " + boundMs
                    + " ms" + may, b);
        }
        return new RemoteStorageException(what + " failed: rlmm serve at " + target + " is unreachable (" + b.getMessage()
                + ")" + may, b);
    }

    /** Throws what {@link #map} returns: the checked kind as it is, the unchecked kind unwrapped. */
    static RemoteStorageException rethrow(BrokerError e, String what, String target, Call call) throws RemoteStorageException {
        Exception m = map(e, what, target, call);
        if (m instanceof RuntimeException r) {
            throw r;
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

    /** Why a server of another version than the plugin's is refused, naming both. */
    static String versionMismatch(String target, int serverVersion, int pluginVersion) {
        return "rlmm serve at " + target + " speaks version " + serverVersion + " of the broker frames, but this plugin speaks"
                + " version " + pluginVersion + ": refused (use the rlmm binary of the plugin's own jar, or a plugin jar of the"
                + " server's release)";
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

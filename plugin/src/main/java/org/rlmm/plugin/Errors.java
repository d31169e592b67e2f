package org.rlmm.plugin;

import org.apache.kafka.common.errors.NotLeaderOrFollowerException;
import org.apache.kafka.common.errors.ReplicaNotAvailableException;
import org.apache.kafka.server.log.remote.storage.RemoteResourceNotFoundException;
import org.apache.kafka.server.log.remote.storage.RemoteStorageException;
import org.rlmm.plugin.proto.BrokerError;

/**
 * Every exception the plugin raises to the broker, so that one file says what the broker sees:
 * the server's answer mapped as Kafka's own RLMM raises it (kafka-rlmm.md §2, §5.12), and the
 * plugin's own failures, each naming the call and the server's address.
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
     * The one mapping of the server's {@link BrokerError} (the table "Errors" of plugin/README.md);
     * the unchecked results (NOT_READY, NOT_ASSIGNED with a change waiting) are thrown as they are.
     */
    static Exception map(BrokerError e, String what, String target, Call call) {
        String msg = what + " failed at rlmm serve " + target + ": " + e.getMessage();
        switch (e.getKind()) {
            case NOT_READY:
                return new ReplicaNotAvailableException(msg);
            case NOT_LEADER:
                return new NotLeaderOrFollowerException(msg);
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
        String why = b.deadline ? " did not answer within " + boundMs + " ms" : " is unreachable (" + b.getMessage() + ")";
        return new RemoteStorageException(what + " failed: rlmm serve at " + target + why + may, b);
    }

    /** Throws what {@link #map} returns: the checked kind as it is, the unchecked kind unwrapped. */
    static RemoteStorageException rethrow(BrokerError e, String what, String target, Call call) throws RemoteStorageException {
        Exception m = map(e, what, target, call);
        if (m instanceof RuntimeException r) {
            throw r;
        }
        throw (RemoteStorageException) m;
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

    /** A method of Kafka's interface called out of order: closed, not configured, configure after close. */
    static IllegalStateException misuse(String what) {
        return new IllegalStateException("rlmm plugin: " + what);
    }

    /** Why a server of another version than the plugin's is refused, naming both. */
    static String versionMismatch(String target, int serverVersion, int pluginVersion) {
        return "rlmm serve at " + target + " speaks version " + serverVersion + " of the broker frames, but this plugin speaks"
                + " version " + pluginVersion + ": refused (use the rlmm binary of the plugin's own jar, or a plugin jar of the"
                + " server's release)";
    }

    /** A hello refused, or answered by what is not rlmm serve of this version: never retried. */
    static final class Refused extends RemoteStorageException {
        private static final long serialVersionUID = 1L;

        Refused(String message) {
            super(message);
        }
    }
}

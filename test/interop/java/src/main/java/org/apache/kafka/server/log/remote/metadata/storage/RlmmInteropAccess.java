package org.apache.kafka.server.log.remote.metadata.storage;

import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadata;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadataUpdate;
import org.apache.kafka.server.log.remote.storage.RemoteResourceNotFoundException;

import java.util.Optional;

/**
 * Part of rlmm's interop harness, not of Kafka: it lives in Kafka's package only to reach the
 * package-private methods of RemoteLogMetadataCache and TopicBasedRemoteLogMetadataManager that the
 * benchmarks time directly (reflection would add its own cost to every timed call).
 */
public final class RlmmInteropAccess {
    private RlmmInteropAccess() {
    }

    /** Kafka's per-partition cache, as RemotePartitionMetadataStore creates one. */
    public static RemoteLogMetadataCache newCache() {
        RemoteLogMetadataCache cache = new RemoteLogMetadataCache();
        cache.markInitialized();
        return cache;
    }

    /** Applies an add (COPY_SEGMENT_STARTED) as Kafka's consumer does. */
    public static void addCopyInProgress(RemoteLogMetadataCache cache, RemoteLogSegmentMetadata md) {
        cache.addCopyInProgressSegment(md);
    }

    /** Applies an update as Kafka's consumer does. */
    public static void update(RemoteLogMetadataCache cache, RemoteLogSegmentMetadataUpdate u)
            throws RemoteResourceNotFoundException {
        cache.updateRemoteLogSegmentMetadata(u);
    }

    /** The fetch-path lookup: the finished segment holding offset in leaderEpoch. */
    public static Optional<RemoteLogSegmentMetadata> lookup(RemoteLogMetadataCache cache, int leaderEpoch, long offset) {
        return cache.remoteLogSegmentMetadata(leaderEpoch, offset);
    }

    /** Whether the manager's initialization thread finished (topic checked, clients created). */
    public static boolean isInitialized(TopicBasedRemoteLogMetadataManager m) {
        return m.isInitialized();
    }
}

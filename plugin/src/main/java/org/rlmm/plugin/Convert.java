package org.rlmm.plugin;

import com.google.protobuf.ByteString;
import java.util.Collection;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentId;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadata;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadata.CustomMetadata;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadataUpdate;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentState;
import org.apache.kafka.server.log.remote.storage.RemotePartitionDeleteMetadata;
import org.apache.kafka.server.log.remote.storage.RemotePartitionDeleteState;
import org.rlmm.plugin.proto.EpochStart;
import org.rlmm.plugin.proto.PartitionDelete;
import org.rlmm.plugin.proto.PartitionDeleteState;
import org.rlmm.plugin.proto.SegmentMetadata;
import org.rlmm.plugin.proto.SegmentState;
import org.rlmm.plugin.proto.SegmentUpdate;
import org.rlmm.plugin.proto.Uuid;

/**
 * Converts Kafka's model objects to the frames' messages (and a segment back), field for field:
 * states travel by Kafka's ids, custom metadata keeps the difference between absent and empty, and
 * the leader epoch map keeps every entry.
 */
final class Convert {
    private Convert() {}

    static Uuid uuid(org.apache.kafka.common.Uuid u) {
        return Uuid.newBuilder().setMostSignificantBits(u.getMostSignificantBits()).setLeastSignificantBits(u.getLeastSignificantBits())
                .build();
    }

    static org.apache.kafka.common.Uuid uuid(Uuid u) {
        return new org.apache.kafka.common.Uuid(u.getMostSignificantBits(), u.getLeastSignificantBits());
    }

    static org.rlmm.plugin.proto.TopicIdPartition partition(TopicIdPartition tp) {
        return org.rlmm.plugin.proto.TopicIdPartition.newBuilder().setTopicId(uuid(tp.topicId())).setTopic(tp.topic())
                .setPartition(tp.partition()).build();
    }

    static TopicIdPartition partition(org.rlmm.plugin.proto.TopicIdPartition tp) {
        return new TopicIdPartition(uuid(tp.getTopicId()), tp.getPartition(), tp.getTopic());
    }

    static Iterable<org.rlmm.plugin.proto.TopicIdPartition> partitions(Collection<TopicIdPartition> tps) {
        return tps.stream().map(Convert::partition)::iterator;
    }

    /** Kafka's segment state as the RPC's enum; the RPC's numbers are Kafka's ids. */
    static SegmentState state(RemoteLogSegmentState s) {
        SegmentState p = SegmentState.forNumber(s.id());
        if (p == null) {
            throw new IllegalArgumentException("segment state " + s + " (id " + s.id() + ") has no RPC value");
        }
        return p;
    }

    static RemoteLogSegmentState state(SegmentState s) {
        if (s == SegmentState.UNRECOGNIZED) {
            throw new IllegalArgumentException("rlmm serve sent an unknown segment state");
        }
        return RemoteLogSegmentState.forId((byte) s.getNumber());
    }

    static PartitionDeleteState state(RemotePartitionDeleteState s) {
        PartitionDeleteState p = PartitionDeleteState.forNumber(s.id());
        if (p == null) {
            throw new IllegalArgumentException("partition delete state " + s + " (id " + s.id() + ") has no RPC value");
        }
        return p;
    }

    static SegmentMetadata segment(RemoteLogSegmentMetadata m) {
        SegmentMetadata.Builder b = SegmentMetadata.newBuilder()
                .setTopicIdPartition(partition(m.topicIdPartition()))
                .setSegmentId(uuid(m.remoteLogSegmentId().id()))
                .setStartOffset(m.startOffset())
                .setEndOffset(m.endOffset())
                .setMaxTimestampMs(m.maxTimestampMs())
                .setBrokerId(m.brokerId())
                .setEventTimestampMs(m.eventTimestampMs())
                .setSegmentSizeInBytes(m.segmentSizeInBytes())
                .setState(state(m.state()))
                .setTxnIndexEmpty(m.isTxnIdxEmpty());
        for (Map.Entry<Integer, Long> e : m.segmentLeaderEpochs().entrySet()) {
            b.addLeaderEpochs(EpochStart.newBuilder().setEpoch(e.getKey()).setStartOffset(e.getValue()));
        }
        m.customMetadata().ifPresent(c -> b.setCustomMetadata(ByteString.copyFrom(c.value())));
        return b.build();
    }

    static RemoteLogSegmentMetadata segment(SegmentMetadata m) {
        TopicIdPartition tp = partition(m.getTopicIdPartition());
        TreeMap<Integer, Long> epochs = new TreeMap<>();
        for (EpochStart e : m.getLeaderEpochsList()) {
            epochs.put(e.getEpoch(), e.getStartOffset());
        }
        return new RemoteLogSegmentMetadata(
                new RemoteLogSegmentId(tp, uuid(m.getSegmentId())),
                m.getStartOffset(),
                m.getEndOffset(),
                m.getMaxTimestampMs(),
                m.getBrokerId(),
                m.getEventTimestampMs(),
                m.getSegmentSizeInBytes(),
                m.hasCustomMetadata()
                        ? Optional.of(new CustomMetadata(m.getCustomMetadata().toByteArray()))
                        : Optional.empty(),
                state(m.getState()),
                epochs,
                m.getTxnIndexEmpty());
    }

    static SegmentUpdate update(RemoteLogSegmentMetadataUpdate u) {
        SegmentUpdate.Builder b = SegmentUpdate.newBuilder()
                .setTopicIdPartition(partition(u.topicIdPartition()))
                .setSegmentId(uuid(u.remoteLogSegmentId().id()))
                .setEventTimestampMs(u.eventTimestampMs())
                .setState(state(u.state()))
                .setBrokerId(u.brokerId());
        u.customMetadata().ifPresent(c -> b.setCustomMetadata(ByteString.copyFrom(c.value())));
        return b.build();
    }

    static PartitionDelete partitionDelete(RemotePartitionDeleteMetadata d) {
        return PartitionDelete.newBuilder()
                .setTopicIdPartition(partition(d.topicIdPartition()))
                .setState(state(d.state()))
                .setEventTimestampMs(d.eventTimestampMs())
                .setBrokerId(d.brokerId())
                .build();
    }
}

package rlmm

import "context"

// Manager is Kafka's RemoteLogMetadataManager in Go: it records the lifecycle
// of the remote log segments of user partitions and answers the broker's
// fetch and retention paths.
//
// Mutations return once the event is recorded and visible to this manager's
// reads (read-your-writes). Reads never block on I/O. For a partition the
// manager does not serve (a broker's manager serves the partitions the
// broker hosts), reads return an error wrapping ErrNotAssigned, never an
// empty answer; for one that is still catching up they return ErrNotReady.
type Manager interface {
	// AddSegment records a new segment; its state must be COPY_SEGMENT_STARTED.
	AddSegment(ctx context.Context, m SegmentMetadata) error
	// UpdateSegment moves a segment to a new state (not COPY_SEGMENT_STARTED).
	UpdateSegment(ctx context.Context, u SegmentUpdate) error
	// PutPartitionDelete records a partition's deletion state;
	// DELETE_PARTITION_FINISHED drops the partition's segments.
	PutPartitionDelete(ctx context.Context, d PartitionDelete) error

	// SegmentForOffset returns the COPY_SEGMENT_FINISHED segment that holds
	// offset within leaderEpoch's range.
	SegmentForOffset(tp TopicIDPartition, leaderEpoch int32, offset int64) (SegmentMetadata, bool, error)
	// HighestOffsetForEpoch returns the highest offset copied to remote
	// storage for leaderEpoch; it never decreases.
	HighestOffsetForEpoch(tp TopicIDPartition, leaderEpoch int32) (int64, bool, error)
	// ListSegments returns every segment of tp not yet DELETE_SEGMENT_FINISHED,
	// ordered by start offset, then end offset, then segment id.
	ListSegments(tp TopicIDPartition) ([]SegmentMetadata, error)
	// ListSegmentsForEpoch returns the segments of ListSegments that carry leaderEpoch.
	ListSegmentsForEpoch(tp TopicIDPartition, leaderEpoch int32) ([]SegmentMetadata, error)
	// RemoteLogSize sums the sizes of ListSegmentsForEpoch.
	RemoteLogSize(tp TopicIDPartition, leaderEpoch int32) (int64, error)
	// NextSegmentWithTxnIndex returns the first finished segment at or after
	// offset in leaderEpoch that has a transaction index.
	NextSegmentWithTxnIndex(tp TopicIDPartition, leaderEpoch int32, offset int64) (SegmentMetadata, bool, error)

	// OnPartitionLeadershipChanges tells the manager the user partitions this
	// broker now leads and follows (both are served alike).
	OnPartitionLeadershipChanges(ctx context.Context, leaders, followers []TopicIDPartition) error
	// OnStopPartitions tells the manager the broker no longer hosts these partitions.
	OnStopPartitions(ctx context.Context, partitions []TopicIDPartition) error
	// IsReady reports whether tp's metadata is assigned and caught up.
	IsReady(tp TopicIDPartition) bool
	// Close releases the manager; later calls return ErrClosed.
	Close() error
}

// Package rebuild reconstructs lost remote log metadata from remote storage
// alone, and plans and publishes the events the metadata log lacks.
//
// Scan lists a store with a layout (scrub/layout) and reconstructs, for
// every remote segment it finds, the rlmm.SegmentMetadata Kafka's
// RemoteLogManager wrote when it copied the segment:
//
//   - LocalTieredStorage ("local"): topic, topic id, partition, start offset
//     and segment id from the names; end offset (the last batch's last
//     offset), largest timestamp (the largest batch max timestamp, else the
//     file's modification time, as LogSegment.largestTimestamp) and the
//     batches' leader epochs from the record batch headers of the .log file
//     (ReadLogSummary reads only the headers, walking the batch lengths);
//     the segment's leader epochs from the .leader_epoch_checkpoint file
//     (ParseLeaderEpochCheckpoint), cut to the segment's offsets as Kafka's
//     LeaderEpochFileCache.epochEntriesInRange does; the size from the .log
//     file's size; an empty transaction index when no .txnindex (or an
//     empty one) is there.
//   - Aiven's tiered-storage-for-apache-kafka ("aiven"): the segment
//     metadata its plugin records in the .rsm-manifest JSON
//     (ParseAivenManifest: offsets, largest timestamp, leader epochs), the
//     size from the manifest's chunk index (the original file size; the log
//     object may be compressed or encrypted), the transaction index from the
//     manifest's segment indexes. ScanOptions.AivenFields (rlmm rebuild
//     --aiven-custom-metadata-fields, the plugin's
//     custom.metadata.fields.include) gives every segment the custom
//     metadata the plugin returned when it copied it: the remote size (the
//     sum of its three objects' sizes), the objects' prefix and main path,
//     byte for byte (test/broker's TestAivenScrubRebuild compares them with
//     the events the broker had written). A segment found under another key
//     prefix than the configured one always gets the object prefix, with a
//     warning: Aiven's plugin (1.0.0) reads the log and indexes where the
//     custom metadata says, but the manifest under its configured prefix.
//
// Every event carries the broker id and the event time the caller chooses
// (PlanOptions: rlmm rebuild uses broker -1, no real broker's id, and the
// time the command started).
//
// MakePlan compares what Scan found with the metadata log as it is (Known,
// read with internal/view's ReadLog): a segment the log names in any state
// is left alone, so is every segment of a partition with a partition delete
// event; each other segment gets COPY_SEGMENT_STARTED then
// COPY_SEGMENT_FINISHED, in Kafka's bytes (wire), to the metadata partition
// Kafka's partitioner gives its user partition (wire.MetadataPartition). A
// segment the log holds only as COPY_SEGMENT_STARTED written by the
// rebuild's own (negative) broker id is an interrupted rebuild: it gets the
// FINISHED event only. So a second run plans nothing.
//
// Apply publishes a plan, in order, reporting every event published.
//
// The package never deletes or writes remote storage, never writes an event
// for a segment the metadata log already names, and prints nothing.
package rebuild

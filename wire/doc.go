// Package wire reads and writes the records of Kafka's
// __remote_log_metadata topic byte for byte as Apache Kafka 4.x does, and
// maps user partitions to metadata partitions with Kafka's partitioner, so
// that rlmm, its tools and Java brokers can share one topic.
//
// # Records
//
// A record value is a frame (frame version 1, api key, record version 0 or
// 1, as unsigned varints) followed by one of four "flexible" message bodies:
// RemoteLogSegmentMetadataRecord (KeySegment), ...UpdateRecord (KeyUpdate),
// RemotePartitionDeleteMetadataRecord (KeyPartitionDelete) and
// RemoteLogSegmentMetadataSnapshotRecord (KeySnapshot), in the Kafka 3.6+
// layout (with CustomMetadata) and with Kafka 4.0's tagged TxnIndexEmpty
// (tag 0, written only when true). An Event holds one decoded record.
//
// AppendEvent encodes into a caller's buffer without allocating. DecodeEvent
// accepts exactly what Kafka's RemoteLogMetadataSerde accepts, never panics,
// never allocates for a length before checking it against the remaining
// bytes, and reports every failure as a *DecodeError (rlmm.ErrCorrupt) that
// names the field and byte offset. What Kafka accepts but does not write is
// decoded to the event Kafka would build (unknown tagged fields skipped,
// leader epochs sorted with the last duplicate winning, non-minimal varints),
// so re-encoding such input gives Kafka's canonical bytes, not the input.
//
// Two deliberate details: a topic name that is not valid UTF-8 keeps its
// bytes (Java would replace them with U+FFFD), and in 4.4 Kafka's snapshot
// record also carries TxnIndexEmpty as tag 0, which is read and written.
//
// # Record version 1 (KIP-1266), read only
//
// KIP-1266 (apache/kafka PR #22459, open and unreleased) keys the records
// so that the topic can be compacted. Its record version 1 keeps the
// version 0 layout and adds tagged fields to the record's own tagged-field
// section (DecodeEvent reads them into Event.BrokerLeaderEpoch and
// Event.EndOffset, their defaults when absent):
//
//	api key 0 segment           tag 0 TxnIndexEmpty bool (any version), tag 1 BrokerLeaderEpoch int32, default 0
//	api key 1 update            tag 0 BrokerLeaderEpoch int32, default -1; tag 1 EndOffset int64, default -1
//	api key 2 partition delete  tag 0 BrokerLeaderEpoch int32, default 0;  tag 1 EndOffset int64, default 0
//	api key 3 snapshot          tag 0 TxnIndexEmpty bool (any version), tag 1 BrokerLeaderEpoch int32, default 0
//
// and gives each record a UTF-8 key (RecordKey, ParseRecordKey):
// topicId:topicName:partition:endOffset:brokerLeaderEpoch, with ":UPDATE"
// for update and partition delete records; after DELETE_SEGMENT_FINISHED
// its writer sends tombstones (a null value) for both keys of the segment.
//
// The KIP is not final, so nothing here trusts it further than it must: a
// tagged field not listed above, in any struct and any version (tag 1 of a
// version 0 record too, which released Kafka skips), or a listed one whose
// size is not its type's, is kept whole in Event.UnknownTags, and `rlmm
// decode` shows it; a record version above 1 stays a *DecodeError naming
// the version ("unsupported record version 2"). rlmm writes version 0
// without a key, as every released Kafka does: AppendEvent ignores the
// version 1 fields.
//
// What reading the log does with them (internal/apply, used by the
// topic-based manager's pump, its replay after a snapshot restore, `rlmm
// inspect`/`verify`/`simulate`, and rebuild's reading of the log):
//   - a version 1 record is applied exactly as version 0: the state machine
//     holds Kafka's model, and BrokerLeaderEpoch and EndOffset (which
//     Kafka's writer uses only to build keys) are not part of it;
//   - a key is ignored for state (routing is by the value's user partition,
//     as Kafka's partitioner does); `rlmm verify` checks it against its
//     record and finds keys that compaction would use to drop a live
//     segment's history (two segments under one key, a tombstone for the
//     key of a live segment);
//   - a tombstone has nothing to apply: it is skipped and counted
//     (topicbased Stats.Tombstones, inspect's counts), never an error that
//     stops the pump or a rejected event; only a tombstone without a
//     usable key is reported (a warning).
//
// # Partitioner
//
// MetadataPartition is Kafka's RemoteLogMetadataTopicPartitioner: Java's
// Objects.hash(lsb, msb, partition) of the topic id and partition, as four
// big-endian bytes, through Kafka's murmur2, sign bit masked, modulo the
// partition count.
//
// # Text and JSON
//
// Event.String is Kafka's model toString and AppendText is the line of
// Kafka's RemoteLogMetadataFormatter (kafka-console-consumer --formatter).
// The JSON form (Event.MarshalJSON, UnmarshalJSON) uses Kafka's field names;
// it is the form of testdata/kafka-vectors.json and of `rlmm decode --json`:
//
//	{"type":"RemoteLogSegmentMetadata","remoteLogSegmentId":{"topicIdPartition":
//	  {"topicId":"AAAAAAAAAAEAAAAAAAAAAg","topic":"foo","partition":3},"id":"AAAAAAAAAAMAAAAAAAAABA"},
//	  "startOffset":0,"endOffset":99,"brokerId":1,"maxTimestampMs":1000,"eventTimestampMs":2000,
//	  "segmentLeaderEpochs":[{"epoch":0,"startOffset":0}],"segmentSizeInBytes":1024,
//	  "customMetadata":null,"state":"COPY_SEGMENT_STARTED","txnIdxEmpty":false}
//	{"type":"RemoteLogSegmentMetadataUpdate","remoteLogSegmentId":{...},"customMetadata":"CgsM",
//	  "state":"COPY_SEGMENT_FINISHED","eventTimestampMs":3000,"brokerId":2}
//	{"type":"RemotePartitionDeleteMetadata","topicIdPartition":{...},
//	  "state":"DELETE_PARTITION_MARKED","eventTimestampMs":4000,"brokerId":5}
//	{"type":"RemoteLogSegmentMetadataSnapshot","segmentId":"AAAAAAAAAAMAAAAAAAAABA", ...same as the
//	  segment from startOffset on}
//
// Custom metadata is standard base64 with padding, "" when present but
// empty, null when absent. A record of version 1 adds "recordVersion":1,
// "brokerLeaderEpoch" and, for an update or partition delete, "endOffset";
// a record with tagged fields rlmm does not know adds
// "unknownTaggedFields":[{"struct":"","tag":5,"data":"qrs="}] ("struct" is
// "" for the record's own section, "index" the SegmentLeaderEpochs element).
// None of these is present for a version 0 record without unknown tags, so
// its JSON is Kafka's model alone. The text form (String) follows Kafka's
// toString with the same, in brackets.
//
// # Libraries
//
// The primitive encoders come from franz-go's kbin (github.com/twmb/franz-go/pkg/kbin,
// already a dependency through the Kafka client): they are Kafka's
// encodings and inline to plain appends. The decoder has its own small
// reader, because it must report the byte offset and field of every
// failure, read varints with Java's exact overflow rules, and check every
// length before allocating, which kbin.Reader does not do. murmur2 is
// written here: franz-go's is not exported.
package wire

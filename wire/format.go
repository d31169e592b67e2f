package wire

import (
	"encoding/base64"
	"encoding/hex"
	"strconv"

	"github.com/rlmm-go/rlmm"
)

// AppendText appends the line Kafka 4.x's RemoteLogMetadataFormatter (the
// kafka-console-consumer formatter for __remote_log_metadata) prints for a
// record, including the final newline:
//
//	partition: <metadataPartition>, offset: <offset>, value: <event toString>
//
// The value part is e.String(), appended without the intermediate strings
// (no allocation when dst has room), for tools that print whole logs. For a
// record of version 1, or with unknown tagged fields, it is followed by
// what the record held beyond Kafka's model (appendRecordText), which
// Kafka 4.x's formatter does not show.
func AppendText(dst []byte, metadataPartition int32, offset int64, e *Event) []byte {
	dst = append(dst, "partition: "...)
	dst = strconv.AppendInt(dst, int64(metadataPartition), 10)
	dst = append(dst, ", offset: "...)
	dst = strconv.AppendInt(dst, offset, 10)
	dst = append(dst, ", value: "...)
	dst = appendEventText(dst, e)
	return append(dst, '\n')
}

// AppendString appends e.String() to dst without the intermediate string.
func AppendString(dst []byte, e *Event) []byte { return appendEventText(dst, e) }

// appendEventText appends e.String(): Kafka's toString of the model, then
// what the record held beyond it (appendRecordText).
func appendEventText(dst []byte, e *Event) []byte {
	dst = appendModelText(dst, e)
	return appendRecordText(dst, e)
}

// appendRecordText appends, for a record of version 1 or with unknown
// tagged fields, what it held beyond Kafka's model, which Kafka 4.x's
// toString does not show (nothing for any other record, whose line stays
// Kafka's exactly):
//
//	[recordVersion=1, brokerLeaderEpoch=3, endOffset=99, unknownTaggedFields={5=aabbcc, RemoteLogSegmentId.7=01}]
//
// endOffset only for an update or partition delete; an unknown field is
// <struct>[.<element>].<tag>=<hex bytes>, the record's own without a struct.
func appendRecordText(dst []byte, e *Event) []byte {
	if e.Version == 0 && len(e.UnknownTags) == 0 {
		return dst
	}
	dst = append(dst, " [recordVersion="...)
	dst = strconv.AppendInt(dst, int64(e.Version), 10)
	if e.Version >= 1 {
		dst = appendField(dst, ", brokerLeaderEpoch=", int64(e.BrokerLeaderEpoch))
		if e.Key == KeyUpdate || e.Key == KeyPartitionDelete {
			dst = appendField(dst, ", endOffset=", e.EndOffset)
		}
	}
	if len(e.UnknownTags) > 0 {
		dst = append(dst, ", unknownTaggedFields={"...)
		for i, f := range e.UnknownTags {
			if i > 0 {
				dst = append(dst, ", "...)
			}
			dst = append(dst, f.Name()...)
			dst = append(dst, '=')
			dst = hex.AppendEncode(dst, f.Data)
		}
		dst = append(dst, '}')
	}
	return append(dst, ']')
}

// Name is the field's place and tag as the text form shows it: the tag
// alone for the record's own section, else Struct, the element index for
// SegmentLeaderEpochs, and the tag, joined by dots.
func (f TaggedField) Name() string {
	tag := strconv.FormatUint(uint64(f.Tag), 10)
	switch {
	case f.Struct == "":
		return tag
	case f.Index >= 0:
		return f.Struct + "." + strconv.Itoa(f.Index) + "." + tag
	}
	return f.Struct + "." + tag
}

// appendModelText appends Kafka's toString of e's model. The tests hold it
// equal to the root package's String methods, which are the reference.
func appendModelText(dst []byte, e *Event) []byte {
	switch e.Key {
	case KeySegment:
		m := &e.Segment
		dst = append(dst, "RemoteLogSegmentMetadata{remoteLogSegmentId="...)
		dst = appendSegmentIDText(dst, &m.ID)
		dst = appendField(dst, ", startOffset=", m.StartOffset)
		dst = appendField(dst, ", endOffset=", m.EndOffset)
		dst = appendField(dst, ", brokerId=", int64(m.BrokerID))
		dst = appendField(dst, ", maxTimestampMs=", m.MaxTimestampMs)
		dst = appendField(dst, ", eventTimestampMs=", m.EventTimestampMs)
		return appendSegmentTailText(dst, m)
	case KeyUpdate:
		u := &e.Update
		dst = append(dst, "RemoteLogSegmentMetadataUpdate{remoteLogSegmentId="...)
		dst = appendSegmentIDText(dst, &u.ID)
		dst = append(dst, ", customMetadata="...)
		dst = appendCustomText(dst, u.CustomMetadata)
		dst = append(dst, ", state="...)
		dst = append(dst, u.State.String()...)
		dst = appendField(dst, ", eventTimestampMs=", u.EventTimestampMs)
		dst = appendField(dst, ", brokerId=", int64(u.BrokerID))
		return append(dst, '}')
	case KeyPartitionDelete:
		d := &e.PartitionDelete
		dst = append(dst, "RemotePartitionDeleteMetadata{topicPartition="...)
		dst = appendTPText(dst, &d.TopicIDPartition)
		dst = append(dst, ", state="...)
		dst = append(dst, d.State.String()...)
		dst = appendField(dst, ", eventTimestampMs=", d.EventTimestampMs)
		dst = appendField(dst, ", brokerId=", int64(d.BrokerID))
		return append(dst, '}')
	case KeySnapshot:
		m := &e.Segment
		dst = append(dst, "RemoteLogSegmentMetadataSnapshot{segmentId="...)
		dst = appendUuidText(dst, m.ID.ID)
		dst = appendField(dst, ", startOffset=", m.StartOffset)
		dst = appendField(dst, ", endOffset=", m.EndOffset)
		dst = appendField(dst, ", maxTimestampMs=", m.MaxTimestampMs)
		return appendSegmentTailText(dst, m)
	}
	return append(dst, "Event{key="+e.Key.String()+"}"...)
}

// appendSegmentTailText appends the fields a segment's and a snapshot's
// toString share, from the leader epochs to the end.
func appendSegmentTailText(dst []byte, m *rlmm.SegmentMetadata) []byte {
	dst = append(dst, ", segmentLeaderEpochs="...)
	dst = appendEpochsText(dst, m.LeaderEpochs)
	dst = appendField(dst, ", segmentSizeInBytes=", int64(m.SizeInBytes))
	dst = append(dst, ", customMetadata="...)
	dst = appendCustomText(dst, m.CustomMetadata)
	dst = append(dst, ", state="...)
	dst = append(dst, m.State.String()...)
	dst = append(dst, ", txnIdxEmpty="...)
	dst = strconv.AppendBool(dst, m.TxnIndexEmpty)
	return append(dst, '}')
}

func appendField(dst []byte, label string, v int64) []byte {
	dst = append(dst, label...)
	return strconv.AppendInt(dst, v, 10)
}

func appendUuidText(dst []byte, u rlmm.Uuid) []byte {
	return base64.RawURLEncoding.AppendEncode(dst, u[:])
}

// appendTPText is TopicIDPartition.String: <topicId>:<topic>-<partition>.
func appendTPText(dst []byte, tp *rlmm.TopicIDPartition) []byte {
	dst = appendUuidText(dst, tp.TopicID)
	dst = append(dst, ':')
	dst = append(dst, tp.Topic...)
	dst = append(dst, '-')
	return strconv.AppendInt(dst, int64(tp.Partition), 10)
}

// appendSegmentIDText is SegmentID.String.
func appendSegmentIDText(dst []byte, id *rlmm.SegmentID) []byte {
	dst = append(dst, "RemoteLogSegmentId{topicIdPartition="...)
	dst = appendTPText(dst, &id.TopicIDPartition)
	dst = append(dst, ", id="...)
	dst = appendUuidText(dst, id.ID)
	return append(dst, '}')
}

// appendEpochsText is rlmm.WriteEpochs: Java's sorted-map form {0=0, 1=20}.
func appendEpochsText(dst []byte, epochs []rlmm.EpochStart) []byte {
	dst = append(dst, '{')
	for i, e := range epochs {
		if i > 0 {
			dst = append(dst, ", "...)
		}
		dst = strconv.AppendInt(dst, int64(e.Epoch), 10)
		dst = append(dst, '=')
		dst = strconv.AppendInt(dst, e.StartOffset, 10)
	}
	return append(dst, '}')
}

// appendCustomText is rlmm.FormatCustomMetadata.
func appendCustomText(dst []byte, c []byte) []byte {
	if c == nil {
		return append(dst, "Optional.empty"...)
	}
	dst = append(dst, "Optional[CustomMetadata{"...)
	dst = strconv.AppendInt(dst, int64(len(c)), 10)
	return append(dst, " bytes}]"...)
}

package wire

import (
	"bytes"
	"strconv"
	"unicode/utf8"

	"github.com/rlmm-go/rlmm"
)

// updateSuffix ends the key of an update and of a partition delete record.
const updateSuffix = ":UPDATE"

// RecordKey is the key KIP-1266 (apache/kafka PR #22459, unreleased) gives
// a __remote_log_metadata record so that the topic can be compacted: the
// UTF-8 text
//
//	<topicId>:<topicName>:<partition>:<endOffset>:<brokerLeaderEpoch>
//
// for a segment record, and the same text followed by ":UPDATE" for an
// update or partition delete record. A tombstone (a null value) carries the
// key of the records it deletes. The key names no segment id: two segments
// with one end offset under one broker leader epoch share it, and
// compaction keeps only the last record of a key. Released Kafka, and rlmm,
// write no key.
type RecordKey struct {
	TopicIDPartition  rlmm.TopicIDPartition
	EndOffset         int64
	BrokerLeaderEpoch int32
	// Update is the ":UPDATE" suffix.
	Update bool
}

// String returns the key's text, as KIP-1266's writer builds it.
func (k RecordKey) String() string { return string(k.Append(nil)) }

// Append appends the key's text to dst.
func (k RecordKey) Append(dst []byte) []byte {
	dst = appendUuidText(dst, k.TopicIDPartition.TopicID)
	dst = append(dst, ':')
	dst = append(dst, k.TopicIDPartition.Topic...)
	dst = append(dst, ':')
	dst = strconv.AppendInt(dst, int64(k.TopicIDPartition.Partition), 10)
	dst = append(dst, ':')
	dst = strconv.AppendInt(dst, k.EndOffset, 10)
	dst = append(dst, ':')
	dst = strconv.AppendInt(dst, int64(k.BrokerLeaderEpoch), 10)
	if k.Update {
		dst = append(dst, updateSuffix...)
	}
	return dst
}

// Base returns the key without its ":UPDATE" suffix: the key of the segment
// record an update's key goes with.
func (k RecordKey) Base() RecordKey {
	k.Update = false
	return k
}

// ParseRecordKey parses a KIP-1266 record key. The topic id is the first
// part and the numbers the last three (before ":UPDATE"), so a topic name
// holding ':' (which Kafka forbids) still parses. A failure is a
// *DecodeError (rlmm.ErrCorrupt) of record "record key" naming the part
// and its byte offset.
func ParseRecordKey(b []byte) (RecordKey, error) {
	var k RecordKey
	fail := func(off int, field, reason string) (RecordKey, error) {
		return RecordKey{}, &DecodeError{Record: "record key", Field: field, Offset: off, Reason: reason}
	}
	if !utf8.Valid(b) {
		return fail(0, "key", "not UTF-8")
	}
	rest := b
	if bytes.HasSuffix(rest, []byte(updateSuffix)) {
		k.Update = true
		rest = rest[:len(rest)-len(updateSuffix)]
	}
	first := bytes.IndexByte(rest, ':')
	if first < 0 {
		return fail(0, "key", "no ':': want topicId:topicName:partition:endOffset:brokerLeaderEpoch")
	}
	id, err := rlmm.ParseUuid(string(rest[:first]))
	if err != nil {
		return fail(0, "topicId", err.Error())
	}
	k.TopicIDPartition.TopicID = id
	// The three numbers, from the end.
	var nums [3]int64
	fields := [3]string{"brokerLeaderEpoch", "endOffset", "partition"}
	bits := [3]int{32, 64, 32}
	end := len(rest)
	for i := range 3 {
		colon := bytes.LastIndexByte(rest[:end], ':')
		if colon <= first {
			return fail(0, "key", "fewer than 5 parts: want topicId:topicName:partition:endOffset:brokerLeaderEpoch")
		}
		n, err := strconv.ParseInt(string(rest[colon+1:end]), 10, bits[i])
		if err != nil {
			return fail(colon+1, fields[i], "not a decimal int"+strconv.Itoa(bits[i])+": "+strconv.Quote(string(rest[colon+1:end])))
		}
		nums[i] = n
		end = colon
	}
	k.TopicIDPartition.Topic = string(rest[first+1 : end])
	if k.TopicIDPartition.Topic == "" {
		return fail(first+1, "topicName", "empty")
	}
	k.BrokerLeaderEpoch, k.EndOffset, k.TopicIDPartition.Partition = int32(nums[0]), nums[1], int32(nums[2])
	return k, nil
}

// RecordKey returns the key a KIP-1266 writer gives the record of e: a
// segment record's from its end offset and broker leader epoch, an update's
// and a partition delete's from their version 1 EndOffset and
// BrokerLeaderEpoch, with ":UPDATE". It is false for a snapshot record,
// which is never in the topic. For a version 0 event, whose record carries
// no broker leader epoch (and an update no end offset), the key holds
// zeros there; compare only what the record carries (KeyMismatch does).
func (e *Event) RecordKey() (RecordKey, bool) {
	switch e.Key {
	case KeySegment:
		return RecordKey{TopicIDPartition: e.Segment.ID.TopicIDPartition, EndOffset: e.Segment.EndOffset,
			BrokerLeaderEpoch: e.BrokerLeaderEpoch}, true
	case KeyUpdate:
		return RecordKey{TopicIDPartition: e.Update.ID.TopicIDPartition, EndOffset: e.EndOffset,
			BrokerLeaderEpoch: e.BrokerLeaderEpoch, Update: true}, true
	case KeyPartitionDelete:
		return RecordKey{TopicIDPartition: e.PartitionDelete.TopicIDPartition, EndOffset: e.EndOffset,
			BrokerLeaderEpoch: e.BrokerLeaderEpoch, Update: true}, true
	}
	return RecordKey{}, false
}

// KeyMismatch says how key disagrees with the record it keys, or "" when
// it does not: the user partition and the suffix always; the end offset of
// a segment record always and of a version 1 update or partition delete;
// the broker leader epoch of a version 1 record.
func (e *Event) KeyMismatch(key RecordKey) string {
	want, ok := e.RecordKey()
	if !ok {
		return "a " + e.Key.String() + " has no key"
	}
	switch {
	case key.TopicIDPartition != want.TopicIDPartition:
		return "the key names " + key.TopicIDPartition.String() + ", the record " + want.TopicIDPartition.String()
	case key.Update != want.Update && want.Update:
		return "the key of a " + e.Key.String() + " must end with " + updateSuffix
	case key.Update != want.Update:
		return "the key of a " + e.Key.String() + " must not end with " + updateSuffix
	case (e.Key == KeySegment || e.Version >= 1) && key.EndOffset != want.EndOffset:
		return "the key's end offset is " + strconv.FormatInt(key.EndOffset, 10) + ", the record's " + strconv.FormatInt(want.EndOffset, 10)
	case e.Version >= 1 && key.BrokerLeaderEpoch != want.BrokerLeaderEpoch:
		return "the key's broker leader epoch is " + strconv.FormatInt(int64(key.BrokerLeaderEpoch), 10) +
			", the record's " + strconv.FormatInt(int64(want.BrokerLeaderEpoch), 10)
	}
	return ""
}

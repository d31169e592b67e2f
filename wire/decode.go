package wire

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/rlmm-go/rlmm"
)

// Kafka's generated readers refuse collections and tagged-field sections
// larger than these, whatever the remaining bytes.
const (
	maxCollectionLen = 1_000_000
	maxTaggedFields  = 10_000
)

// Sizes of the smallest possible encodings, used to refuse a count before
// anything is allocated for it.
const (
	minEpochEntrySize = 4 + 8 + 1 // epoch, offset, empty tagged fields
)

// DecodeError says why a record value could not be decoded, and where. It
// matches rlmm.ErrCorrupt with errors.Is.
type DecodeError struct {
	// Record names the record type being read, or "record frame" while the
	// frame header is read.
	Record string
	// Field is the field being read when the problem was found.
	Field string
	// Offset is the byte offset in the value where that field starts (for a
	// check of the whole record, such as validation, the end of the value).
	Offset int
	// Reason says what was wrong.
	Reason string
}

// Error prints what, where and why.
func (e *DecodeError) Error() string {
	return fmt.Sprintf("%s: %s: %s at byte %d: %s", rlmm.ErrCorrupt, e.Record, e.Field, e.Offset, e.Reason)
}

// Unwrap makes errors.Is(err, rlmm.ErrCorrupt) true.
func (e *DecodeError) Unwrap() error { return rlmm.ErrCorrupt }

// reader walks a record value. The first failure is kept in err; after it
// every read returns a zero value, so decoding code can check once per
// record. Nothing is allocated for a length before it is checked against
// the remaining bytes.
type reader struct {
	b      []byte
	off    int
	record string
	err    *DecodeError
	// topic and epochs are what DecodeEventInto may reuse: the topic name
	// of the event decoded before, and its leader epoch list's memory.
	topic  string
	epochs []rlmm.EpochStart
	// version is the record version of the frame (0 or 1): it says which
	// top-level tags are known (see taggedFieldsSlow).
	version int16
	// ev is the event being decoded, which receives the known top-level
	// tagged fields and every unknown tagged field (nil: PeekPartition).
	ev *Event
}

func (r *reader) failAt(off int, field, format string, args ...any) {
	if r.err == nil {
		r.err = &DecodeError{Record: r.record, Field: field, Offset: off, Reason: fmt.Sprintf(format, args...)}
	}
	// Stop every later read.
	r.off = len(r.b)
}

func (r *reader) remaining() int { return len(r.b) - r.off }

// needFor reports whether n more bytes are there for a field that started
// at start (before its length), failing the read if not. After a failure
// nothing is left (failAt moves to the end), so every later read fails too
// and the first error stays.
func (r *reader) needFor(start, n int, field string) bool {
	if len(r.b)-r.off < n {
		r.truncated(start, n, field)
		return false
	}
	return true
}

// truncated records a read past the end (out of line, so that the reads
// above stay small enough to inline).
//
//go:noinline
func (r *reader) truncated(start, n int, field string) {
	r.failAt(start, field, "truncated: need %d bytes, %d left", n, r.remaining())
}

func (r *reader) int8(field string) int8 {
	if len(r.b)-r.off < 1 {
		r.truncated(r.off, 1, field)
		return 0
	}
	v := r.b[r.off]
	r.off++
	return int8(v)
}

func (r *reader) int32(field string) int32 {
	if len(r.b)-r.off < 4 {
		r.truncated(r.off, 4, field)
		return 0
	}
	v := binary.BigEndian.Uint32(r.b[r.off:])
	r.off += 4
	return int32(v)
}

func (r *reader) uuid(field string) (u rlmm.Uuid) {
	if len(r.b)-r.off < 16 {
		r.truncated(r.off, 16, field)
		return u
	}
	copy(u[:], r.b[r.off:])
	r.off += 16
	return u
}

// fixedField is one fixed-size field of a run read at once.
type fixedField struct {
	name string
	size int
}

// Runs of fixed-size fields, read with one bounds check.
var (
	topicIDAndPartition = []fixedField{{"TopicIdPartition.Id", 16}, {"TopicIdPartition.Partition", 4}}
	segmentNumbers      = []fixedField{{"StartOffset", 8}, {"EndOffset", 8}, {"BrokerId", 4}, {"MaxTimestampMs", 8}, {"EventTimestampMs", 8}}
	snapshotNumbers     = []fixedField{{"SegmentId", 16}, {"StartOffset", 8}, {"EndOffset", 8}, {"BrokerId", 4}, {"MaxTimestampMs", 8}, {"EventTimestampMs", 8}}
	epochEntry          = []fixedField{{"SegmentLeaderEpochs.LeaderEpoch", 4}, {"SegmentLeaderEpochs.Offset", 8}}
	brokerAndTimestamp  = []fixedField{{"BrokerId", 4}, {"EventTimestampMs", 8}}
)

// fixed returns the next n bytes, n being the sum of the fields' sizes, or
// nil after failing on the first of the fields that runs past the end.
func (r *reader) fixed(n int, fields []fixedField) []byte {
	if len(r.b)-r.off < n {
		r.fixedShort(fields)
		return nil
	}
	p := r.b[r.off : r.off+n : r.off+n]
	r.off += n
	return p
}

// fixedShort names the field of a run that is truncated.
func (r *reader) fixedShort(fields []fixedField) {
	off := r.off
	for _, f := range fields {
		if left := len(r.b) - off; left < f.size {
			r.failAt(off, f.name, "truncated: need %d bytes, %d left", f.size, left)
			return
		}
		off += f.size
	}
}

func be32(p []byte) int32 { return int32(binary.BigEndian.Uint32(p)) }
func be64(p []byte) int64 { return int64(binary.BigEndian.Uint64(p)) }

// uvarint reads an unsigned varint exactly as Kafka's
// ByteUtils.readUnsignedVarint does: at most 5 bytes, the fifth must not
// have its continuation bit set, and bits beyond 32 are dropped. The result
// holds the bits of Java's int.
func (r *reader) uvarint(field string) uint32 {
	// Fast path: one byte, which is every length and count in practice.
	if r.off < len(r.b) && r.b[r.off] < 0x80 {
		v := r.b[r.off]
		r.off++
		return uint32(v)
	}
	return r.uvarintSlow(field)
}

// uvarintSlow is uvarint for a multi-byte (or missing) varint.
func (r *reader) uvarintSlow(field string) uint32 {
	if r.err != nil {
		return 0
	}
	start := r.off
	var v uint32
	for i := 0; i < 5; i++ {
		if r.off >= len(r.b) {
			r.failAt(start, field, "truncated varint")
			return 0
		}
		c := r.b[r.off]
		r.off++
		if i == 4 {
			if c&0x80 != 0 {
				r.failAt(start, field, "varint longer than 5 bytes")
				return 0
			}
			return v | uint32(c)<<28
		}
		v |= uint32(c&0x7f) << (7 * i)
		if c&0x80 == 0 {
			return v
		}
	}
	return v
}

// header reads a frame header varint the way AbstractApiMessageSerde does:
// Java's int must not exceed 32767, then it is narrowed to a short.
func (r *reader) header(field string) int16 {
	start := r.off
	v := int32(r.uvarint(field))
	if r.err != nil {
		return 0
	}
	if v > 32767 {
		r.failAt(start, field, "value %d too large (max 32767)", v)
		return 0
	}
	return int16(v)
}

// compactStringBytes reads a non-nullable compact string and returns its
// bytes in place (nil after a failure).
func (r *reader) compactStringBytes(field string) []byte {
	start := r.off
	n := int32(r.uvarint(field)) - 1 // wraps as Java's int does
	if r.err != nil {
		return nil
	}
	switch {
	case n < 0:
		r.failAt(start, field, "non-nullable string serialized as null")
		return nil
	case n > maxStringLen:
		r.failAt(start, field, "string length %d exceeds %d", n, maxStringLen)
		return nil
	}
	if !r.needFor(start, int(n), field) {
		return nil
	}
	s := r.b[r.off : r.off+int(n) : r.off+int(n)]
	r.off += int(n)
	return s
}

// nullableBytes reads compact nullable bytes: nil for null, a non-nil
// (possibly empty) copy otherwise.
func (r *reader) nullableBytes(field string) []byte {
	start := r.off
	n := int32(r.uvarint(field)) - 1
	if r.err != nil || n < 0 {
		return nil
	}
	if !r.needFor(start, int(n), field) {
		return nil
	}
	b := make([]byte, n)
	copy(b, r.b[r.off:])
	r.off += int(n)
	return b
}

// arrayLen reads a non-nullable compact array count with Kafka's checks,
// and refuses a count whose smallest encoding does not fit in what is left.
func (r *reader) arrayLen(field string, minElemSize int) int {
	start := r.off
	n := int32(r.uvarint(field)) - 1
	if r.err != nil {
		return 0
	}
	switch {
	case n < 0:
		r.failAt(start, field, "non-nullable array serialized as null")
		return 0
	case n > maxCollectionLen:
		r.failAt(start, field, "array of %d elements exceeds Kafka's maximum of %d", n, maxCollectionLen)
		return 0
	case int(n)*minElemSize > r.remaining():
		r.failAt(start, field, "array of %d elements cannot fit in the %d bytes left", n, r.remaining())
		return 0
	}
	return int(n)
}

// Where a tagged-field section is: the record's own (top level) or one of
// its nested structs. The name is what TaggedField.Struct says.
const (
	sectionTop              = ""
	sectionTopicIDPartition = "TopicIdPartition"
	sectionSegmentID        = "RemoteLogSegmentId"
	sectionLeaderEpochs     = "SegmentLeaderEpochs"
)

// taggedFields reads a tagged-field section: section names it (sectionTop
// for the record's own, whose known tags fill r.ev), index is the element
// of an array it belongs to (-1: not in an array). Unknown tags are kept in
// r.ev.UnknownTags.
func (r *reader) taggedFields(field, section string, index int) {
	// Fast path: no tagged fields, what Kafka writes almost always.
	if r.off < len(r.b) && r.b[r.off] == 0 {
		r.off++
		return
	}
	r.taggedFieldsSlow(field, section, index)
}

// taggedFieldsSlow reads a tagged-field section that is not empty.
//
// The known tags are those of the record's top-level section, by api key
// and record version (kafka-rlmm.md 6.4, kip-1266.md):
//   - segment and snapshot records, any version: tag 0 TxnIndexEmpty (bool).
//     Like Kafka's generated reader, one byte is read as the bool whatever
//     the declared size.
//   - version 1 (KIP-1266, apache/kafka PR #22459): segment and snapshot
//     tag 1 BrokerLeaderEpoch (int32); update and partition delete tag 0
//     BrokerLeaderEpoch (int32) and tag 1 EndOffset (int64).
//
// A version 1 tag is decoded only when its declared size is its type's
// size; otherwise, like every other tag (any tag of a version 0 record but
// TxnIndexEmpty, and any tag of a nested struct), it is kept whole in
// UnknownTags: the KIP is not final, and a changed field must not make a
// record that is otherwise sound undecodable.
func (r *reader) taggedFieldsSlow(field, section string, index int) {
	start := r.off
	count := int32(r.uvarint(field))
	if r.err != nil {
		return
	}
	switch {
	case count < 0:
		r.failAt(start, field, "negative number of tagged fields %d", count)
		return
	case int(count) > r.remaining():
		r.failAt(start, field, "%d tagged fields cannot fit in the %d bytes left", count, r.remaining())
		return
	case count > maxTaggedFields:
		r.failAt(start, field, "%d tagged fields exceed Kafka's maximum of %d", count, maxTaggedFields)
		return
	}
	for i := int32(0); i < count && r.err == nil; i++ {
		tagStart := r.off
		tag := r.uvarint(field)
		size := int32(r.uvarint(field))
		if r.err != nil {
			return
		}
		if section == sectionTop && r.ev != nil && tag == 0 && (r.ev.Key == KeySegment || r.ev.Key == KeySnapshot) {
			r.ev.Segment.TxnIndexEmpty = r.int8("TxnIndexEmpty") != 0
			continue
		}
		if size < 0 || int(size) > r.remaining() {
			r.failAt(tagStart, field, "tagged field %d of %d bytes, %d left", tag, size, r.remaining())
			return
		}
		data := r.b[r.off : r.off+int(size)]
		r.off += int(size)
		if section == sectionTop && r.ev != nil && r.version >= 1 && r.knownV1Tag(tag, data) {
			continue
		}
		if r.ev != nil {
			r.ev.UnknownTags = append(r.ev.UnknownTags, TaggedField{Struct: section, Index: index, Tag: tag, Data: bytes.Clone(data)})
		}
	}
}

// knownV1Tag stores a version 1 top-level tagged field in r.ev when tag is
// one of its record type's and data has its type's size.
func (r *reader) knownV1Tag(tag uint32, data []byte) bool {
	e := r.ev
	switch {
	case (e.Key == KeySegment || e.Key == KeySnapshot) && tag == 1 && len(data) == 4,
		(e.Key == KeyUpdate || e.Key == KeyPartitionDelete) && tag == 0 && len(data) == 4:
		e.BrokerLeaderEpoch = be32(data)
	case (e.Key == KeyUpdate || e.Key == KeyPartitionDelete) && tag == 1 && len(data) == 8:
		e.EndOffset = be64(data)
	default:
		return false
	}
	return true
}

func (r *reader) topicIDPartition(tp *rlmm.TopicIDPartition) {
	if name := r.compactStringBytes("TopicIdPartition.Name"); string(name) == r.topic {
		tp.Topic = r.topic // the last event's topic: no new string
	} else {
		tp.Topic = string(name)
	}
	if p := r.fixed(20, topicIDAndPartition); p != nil {
		tp.TopicID = rlmm.Uuid(p[:16])
		tp.Partition = be32(p[16:])
	}
	r.taggedFields("TopicIdPartition tagged fields", sectionTopicIDPartition, -1)
}

func (r *reader) segmentID(id *rlmm.SegmentID) {
	r.topicIDPartition(&id.TopicIDPartition)
	id.ID = r.uuid("RemoteLogSegmentId.Id")
	r.taggedFields("RemoteLogSegmentId tagged fields", sectionSegmentID, -1)
}

// segmentTail reads what segment and snapshot records share after the
// timestamps.
func (r *reader) segmentTail(m *rlmm.SegmentMetadata) {
	n := r.arrayLen("SegmentLeaderEpochs", minEpochEntrySize)
	if r.err != nil {
		return
	}
	if n > 0 {
		if cap(r.epochs) >= n {
			m.LeaderEpochs = r.epochs[:n]
		} else {
			m.LeaderEpochs = make([]rlmm.EpochStart, n)
		}
		for i := range m.LeaderEpochs {
			p := r.fixed(12, epochEntry)
			if p == nil {
				return
			}
			m.LeaderEpochs[i] = rlmm.EpochStart{Epoch: be32(p), StartOffset: be64(p[4:])}
			r.taggedFields("SegmentLeaderEpochs tagged fields", sectionLeaderEpochs, i)
		}
		m.LeaderEpochs = normalizeEpochs(m.LeaderEpochs)
	}
	m.SizeInBytes = r.int32("SegmentSizeInBytes")
	m.CustomMetadata = r.nullableBytes("CustomMetadata")
	m.State = rlmm.SegmentState(r.int8("RemoteLogSegmentState"))
	r.taggedFields("tagged fields", sectionTop, -1)
}

// normalizeEpochs does what Kafka does by reading the epochs into a map and
// then a sorted map: sorts by epoch, and a duplicate epoch keeps the value
// that came last. The common sorted case is left untouched.
func normalizeEpochs(es []rlmm.EpochStart) []rlmm.EpochStart {
	sorted := true
	for i := 1; i < len(es); i++ {
		if es[i].Epoch <= es[i-1].Epoch {
			sorted = false
			break
		}
	}
	if sorted {
		return es
	}
	slices.SortStableFunc(es, func(a, b rlmm.EpochStart) int { return cmp.Compare(a.Epoch, b.Epoch) })
	out := es[:0]
	for i, e := range es {
		if i+1 < len(es) && es[i+1].Epoch == e.Epoch {
			continue // a later duplicate wins
		}
		out = append(out, e)
	}
	return out
}

// DecodeEvent decodes one __remote_log_metadata record value. It accepts
// exactly what Kafka 4.x's RemoteLogMetadataSerde.deserialize accepts: an
// apiKey 0 record whose state is not COPY_SEGMENT_STARTED and an update to
// COPY_SEGMENT_STARTED decode (Kafka rejects them only when applying), leader
// epochs are sorted and de-duplicated as Kafka's map does, unknown tagged
// fields are skipped. Custom metadata is copied: the event does not alias b.
//
// Every failure is a *DecodeError (errors.Is rlmm.ErrCorrupt) naming the
// field and byte offset: bad frame version, unknown api key, unsupported
// record version, a truncated field, null where Kafka forbids it, an
// undefined state, trailing bytes, and a segment that fails Kafka's model
// rules (SegmentMetadata.Validate; for a snapshot, empty epochs).
func DecodeEvent(b []byte) (Event, error) {
	var e Event
	err := DecodeEventInto(b, &e)
	return e, err
}

// DecodeEventInto is DecodeEvent into *e, for a caller that decodes record
// after record into one Event (the pump): the leader epoch list reuses the
// memory of e's, and the topic name is e's own when the record names the
// same topic, so such a record costs no allocation but its custom metadata.
// The slices e held before are overwritten: a caller that keeps them passes
// a fresh Event. After a failure *e is the zero Event.
func DecodeEventInto(b []byte, e *Event) error {
	prev, _ := e.TopicIDPartition()
	r := reader{b: b, record: "record frame", topic: prev.Topic, epochs: e.Segment.LeaderEpochs[:0], ev: e}
	*e = Event{}
	key := r.frame()
	if r.err != nil {
		return r.err
	}
	e.Key = key
	e.Version = r.version
	if r.version >= 1 {
		e.BrokerLeaderEpoch, e.EndOffset = V1Defaults(key)
	}
	switch key {
	case KeySegment:
		m := &e.Segment
		r.segmentID(&m.ID)
		if p := r.fixed(36, segmentNumbers); p != nil {
			readSegmentNumbers(m, p)
		}
		r.segmentTail(m)
	case KeyUpdate:
		u := &e.Update
		r.segmentID(&u.ID)
		if p := r.fixed(12, brokerAndTimestamp); p != nil {
			u.BrokerID, u.EventTimestampMs = be32(p), be64(p[4:])
		}
		u.CustomMetadata = r.nullableBytes("CustomMetadata")
		u.State = rlmm.SegmentState(r.int8("RemoteLogSegmentState"))
		r.taggedFields("tagged fields", sectionTop, -1)
	case KeyPartitionDelete:
		d := &e.PartitionDelete
		r.topicIDPartition(&d.TopicIDPartition)
		if p := r.fixed(12, brokerAndTimestamp); p != nil {
			d.BrokerID, d.EventTimestampMs = be32(p), be64(p[4:])
		}
		d.State = rlmm.PartitionDeleteState(r.int8("RemotePartitionDeleteState"))
		r.taggedFields("tagged fields", sectionTop, -1)
	case KeySnapshot:
		m := &e.Segment
		if p := r.fixed(52, snapshotNumbers); p != nil {
			m.ID.ID = rlmm.Uuid(p[:16])
			readSegmentNumbers(m, p[16:])
		}
		r.segmentTail(m)
	}
	if r.err != nil {
		*e = Event{}
		return r.err
	}
	if r.remaining() > 0 {
		r.failAt(r.off, "end of record", "%d byte(s) of garbage after the record", r.remaining())
		*e = Event{}
		return r.err
	}
	if err := checkDecoded(e); err != "" {
		r.failAt(len(b), "record", "%s", err)
		*e = Event{}
		return r.err
	}
	return nil
}

// frame reads the frame header (frame version, api key, record version)
// with Kafka's checks and names the record being read after it; r.err is
// set when the header is refused.
func (r *reader) frame() APIKey {
	fv := r.header("frame version")
	if r.err == nil && fv != frameVersion {
		if fv == 0 {
			r.failAt(0, "frame version", "frame version 0 (the KRaft preview of Kafka 2.8) is not supported")
		} else {
			r.failAt(0, "frame version", "unknown frame version %d (only 1 is supported)", fv)
		}
	}
	keyOff := r.off
	key := APIKey(r.header("api key"))
	if r.err == nil && !key.Valid() {
		r.failAt(keyOff, "api key", "unknown metadata id %d", key)
	}
	verOff := r.off
	ver := r.header("record version")
	if r.err != nil {
		return 0
	}
	r.record = key.String()
	if ver > maxRecordVersion {
		// Kafka's generated readers reject it at the first nested struct,
		// which every valid record of every type has.
		r.failAt(verOff, "record version", "unsupported record version %d (versions 0 and 1 are read)", ver)
		return 0
	}
	// A negative version (a 5-byte varint Java narrows to a negative
	// short) reads as version 0, as Kafka's version checks do.
	r.version = max(ver, 0)
	return key
}

// readSegmentNumbers reads the 36 bytes of offsets, broker and timestamps
// that segment and snapshot records share (in wire order: BrokerId before
// the timestamps).
func readSegmentNumbers(m *rlmm.SegmentMetadata, p []byte) {
	m.StartOffset = be64(p)
	m.EndOffset = be64(p[8:])
	m.BrokerID = be32(p[16:])
	m.MaxTimestampMs = be64(p[20:])
	m.EventTimestampMs = be64(p[28:])
}

// checkDecoded applies the rules Kafka's model constructors apply to a
// decoded record, returning why it fails or "".
func checkDecoded(e *Event) string {
	switch e.Key {
	case KeySegment:
		if err := e.Segment.Validate(); err != nil {
			return err.Error()
		}
	case KeyUpdate:
		if !e.Update.State.Valid() {
			return fmt.Sprintf("undefined segment state %d", int8(e.Update.State))
		}
	case KeyPartitionDelete:
		if !e.PartitionDelete.State.Valid() {
			return fmt.Sprintf("undefined partition delete state %d", int8(e.PartitionDelete.State))
		}
	case KeySnapshot:
		if len(e.Segment.LeaderEpochs) == 0 {
			return "leader epochs are empty"
		}
		if !e.Segment.State.Valid() {
			return fmt.Sprintf("undefined segment state %d", int8(e.Segment.State))
		}
	}
	return ""
}

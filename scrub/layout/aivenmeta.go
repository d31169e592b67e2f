package layout

import (
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/rlmm-go/rlmm"
)

// Aiven's custom metadata field tags (its SegmentCustomMetadataField).
const (
	aivenTagRemoteSize   = 0
	aivenTagObjectPrefix = 1
	aivenTagObjectKey    = 2
)

// AivenFields are the fields of Aiven's per-segment custom metadata.
type AivenFields struct {
	// RemoteSize is the sum of the sizes of the segment's uploaded objects.
	RemoteSize    int64
	HasRemoteSize bool
	// ObjectPrefix is the key prefix the segment was uploaded under.
	ObjectPrefix    string
	HasObjectPrefix bool
	// ObjectKey is the main path (the key without prefix and suffix).
	ObjectKey    string
	HasObjectKey bool
}

// DecodeAivenCustomMetadata decodes Aiven's custom metadata: a Kafka
// tagged-fields section (an unsigned varint count, then per field an
// unsigned varint tag, an unsigned varint size and the value), tag 0 a
// zig-zag varlong, tags 1 and 2 compact strings (unsigned varint length+1,
// then UTF-8). Unknown tags are skipped, as Kafka's reader does. Errors wrap
// rlmm.ErrCorrupt.
func DecodeAivenCustomMetadata(b []byte) (AivenFields, error) {
	r, err := decodeAiven(b)
	return AivenFields{RemoteSize: r.remoteSize, HasRemoteSize: r.hasRemoteSize,
		ObjectPrefix: string(r.prefix), HasObjectPrefix: r.prefix != nil,
		ObjectKey: string(r.key), HasObjectKey: r.key != nil}, err
}

// aivenRaw is decoded custom metadata whose strings are views of the input
// (nil when absent), so Expect allocates nothing for the common case.
type aivenRaw struct {
	remoteSize    int64
	hasRemoteSize bool
	prefix, key   []byte
}

func decodeAiven(b []byte) (aivenRaw, error) {
	var f aivenRaw
	if len(b) == 0 {
		return f, nil
	}
	n, used := binary.Uvarint(b)
	if used <= 0 {
		return f, fmt.Errorf("%w: aiven custom metadata: bad field count", rlmm.ErrCorrupt)
	}
	b = b[used:]
	if n > uint64(len(b)) {
		return f, fmt.Errorf("%w: aiven custom metadata: %d fields in %d bytes", rlmm.ErrCorrupt, n, len(b))
	}
	prev := int64(-1)
	for i := uint64(0); i < n; i++ {
		tag, used := binary.Uvarint(b)
		if used <= 0 {
			return f, fmt.Errorf("%w: aiven custom metadata: bad tag of field %d", rlmm.ErrCorrupt, i)
		}
		b = b[used:]
		size, used := binary.Uvarint(b)
		if used <= 0 || size > uint64(len(b)-used) {
			return f, fmt.Errorf("%w: aiven custom metadata: bad size of tag %d", rlmm.ErrCorrupt, tag)
		}
		val := b[used : used+int(size)]
		b = b[used+int(size):]
		if tag > 1<<31-1 || int64(tag) <= prev {
			return f, fmt.Errorf("%w: aiven custom metadata: tag %d out of order", rlmm.ErrCorrupt, tag)
		}
		prev = int64(tag)
		switch tag {
		case aivenTagRemoteSize:
			v, used := binary.Varint(val)
			if used <= 0 || used != len(val) {
				return f, fmt.Errorf("%w: aiven custom metadata: bad remote size", rlmm.ErrCorrupt)
			}
			f.remoteSize, f.hasRemoteSize = v, true
		case aivenTagObjectPrefix, aivenTagObjectKey:
			s, err := compactString(val)
			if err != nil {
				return f, fmt.Errorf("%w: aiven custom metadata: tag %d: %v", rlmm.ErrCorrupt, tag, err)
			}
			if tag == aivenTagObjectPrefix {
				f.prefix = s
			} else {
				f.key = s
			}
		}
	}
	if len(b) != 0 {
		return f, fmt.Errorf("%w: aiven custom metadata: %d bytes after the last field", rlmm.ErrCorrupt, len(b))
	}
	return f, nil
}

// compactString returns the bytes of a non-null compact string (never nil).
func compactString(b []byte) ([]byte, error) {
	n, used := binary.Uvarint(b)
	if used <= 0 || n == 0 {
		return nil, fmt.Errorf("bad or null compact string")
	}
	if n-1 != uint64(len(b)-used) {
		return nil, fmt.Errorf("compact string of %d bytes in a field of %d", n-1, len(b)-used)
	}
	return b[used:len(b):len(b)], nil
}

// EncodeAivenCustomMetadata encodes f as Aiven's plugin does (the fields
// present, in tag order). An AivenFields with no field encodes to an empty
// slice, as Aiven's serializer returns for an empty map.
func EncodeAivenCustomMetadata(f AivenFields) []byte {
	var fields [][]byte
	var tags []uint64
	if f.HasRemoteSize {
		tags = append(tags, aivenTagRemoteSize)
		fields = append(fields, binary.AppendVarint(nil, f.RemoteSize))
	}
	for _, s := range []struct {
		tag uint64
		has bool
		v   string
	}{{aivenTagObjectPrefix, f.HasObjectPrefix, f.ObjectPrefix}, {aivenTagObjectKey, f.HasObjectKey, f.ObjectKey}} {
		if s.has {
			tags = append(tags, s.tag)
			fields = append(fields, append(binary.AppendUvarint(nil, uint64(len(s.v))+1), s.v...))
		}
	}
	if len(fields) == 0 {
		return []byte{}
	}
	out := binary.AppendUvarint(nil, uint64(len(fields)))
	for i, v := range fields {
		out = binary.AppendUvarint(out, tags[i])
		out = binary.AppendUvarint(out, uint64(len(v)))
		out = append(out, v...)
	}
	return out
}

// AivenFieldSet is which fields Aiven's plugin puts in a segment's custom
// metadata: its rsm.config.custom.metadata.fields.include.
type AivenFieldSet struct{ RemoteSize, ObjectPrefix, ObjectKey bool }

// Any reports whether the set names a field.
func (s AivenFieldSet) Any() bool { return s.RemoteSize || s.ObjectPrefix || s.ObjectKey }

// ParseAivenFieldSet reads a list of Aiven's field names as its
// custom.metadata.fields.include takes them (REMOTE_SIZE, OBJECT_PREFIX,
// OBJECT_KEY, comma-separated; "" names none). An unknown or repeated name
// is an error wrapping rlmm.ErrInvalidArgument.
func ParseAivenFieldSet(list string) (AivenFieldSet, error) {
	var s AivenFieldSet
	if strings.TrimSpace(list) == "" {
		return s, nil
	}
	for name := range strings.SplitSeq(list, ",") {
		var f *bool
		switch strings.TrimSpace(name) {
		case "REMOTE_SIZE":
			f = &s.RemoteSize
		case "OBJECT_PREFIX":
			f = &s.ObjectPrefix
		case "OBJECT_KEY":
			f = &s.ObjectKey
		default:
			return AivenFieldSet{}, fmt.Errorf("%w: aiven custom metadata field %q (known: REMOTE_SIZE, OBJECT_PREFIX, OBJECT_KEY)",
				rlmm.ErrInvalidArgument, strings.TrimSpace(name))
		}
		if *f {
			return AivenFieldSet{}, fmt.Errorf("%w: aiven custom metadata field %q given twice", rlmm.ErrInvalidArgument, strings.TrimSpace(name))
		}
		*f = true
	}
	return s, nil
}

// Fields returns the custom metadata fields of the set for a segment whose
// objects add up to remoteSize bytes, under prefix at main path key: what
// Aiven's plugin returns for it.
func (s AivenFieldSet) Fields(remoteSize int64, prefix, key string) AivenFields {
	return AivenFields{RemoteSize: remoteSize, HasRemoteSize: s.RemoteSize, ObjectPrefix: prefix, HasObjectPrefix: s.ObjectPrefix,
		ObjectKey: key, HasObjectKey: s.ObjectKey}
}

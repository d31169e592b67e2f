package wire

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/rlmm-go/rlmm"
)

// The JSON form of an event uses Kafka's model field names (the package doc
// shows one of each type): every field is always present,
// Uuids in Kafka's 22-character text form, custom metadata as standard
// base64 ("" present but empty, null absent), states by Kafka's names. The
// "type" field names the Kafka model class.
const (
	jsonTypeSegment         = "RemoteLogSegmentMetadata"
	jsonTypeUpdate          = "RemoteLogSegmentMetadataUpdate"
	jsonTypePartitionDelete = "RemotePartitionDeleteMetadata"
	jsonTypeSnapshot        = "RemoteLogSegmentMetadataSnapshot"
)

type jsonTopicIDPartition struct {
	TopicID   rlmm.Uuid `json:"topicId"`
	Topic     string    `json:"topic"`
	Partition int32     `json:"partition"`
}

type jsonSegmentID struct {
	TopicIDPartition jsonTopicIDPartition `json:"topicIdPartition"`
	ID               rlmm.Uuid            `json:"id"`
}

type jsonEpoch struct {
	Epoch       int32 `json:"epoch"`
	StartOffset int64 `json:"startOffset"`
}

type jsonSegment struct {
	Type               string        `json:"type"`
	RemoteLogSegmentID jsonSegmentID `json:"remoteLogSegmentId"`
	jsonSegmentFields
	jsonRecordFields
}

// jsonRecordFields are what a record held beyond Kafka's model, all left
// out for a version 0 record without unknown tagged fields (whose JSON is
// then the model's alone): recordVersion, brokerLeaderEpoch (version 1),
// endOffset (version 1 of an update or partition delete; a segment's is
// its own endOffset) and unknownTaggedFields.
type jsonRecordFields struct {
	RecordVersion       int16             `json:"recordVersion,omitempty"`
	BrokerLeaderEpoch   *int32            `json:"brokerLeaderEpoch,omitempty"`
	UnknownTaggedFields []jsonTaggedField `json:"unknownTaggedFields,omitempty"`
}

// jsonTaggedField is a TaggedField: struct "" for the record's own section,
// index only for SegmentLeaderEpochs, data in standard base64.
type jsonTaggedField struct {
	Struct string `json:"struct"`
	Index  *int   `json:"index,omitempty"`
	Tag    uint32 `json:"tag"`
	Data   []byte `json:"data"`
}

// jsonEndOffset is version 1's EndOffset of an update or partition delete.
type jsonEndOffset struct {
	EndOffset *int64 `json:"endOffset,omitempty"`
}

func toJSONRecordFields(e *Event) (jsonRecordFields, jsonEndOffset) {
	var j jsonRecordFields
	var end jsonEndOffset
	j.RecordVersion = e.Version
	if e.Version >= 1 {
		j.BrokerLeaderEpoch = ptrTo(e.BrokerLeaderEpoch)
		if e.Key == KeyUpdate || e.Key == KeyPartitionDelete {
			end.EndOffset = ptrTo(e.EndOffset)
		}
	}
	for _, f := range e.UnknownTags {
		jf := jsonTaggedField{Struct: f.Struct, Tag: f.Tag, Data: f.Data}
		if f.Index >= 0 {
			jf.Index = ptrTo(f.Index)
		}
		if jf.Data == nil {
			jf.Data = []byte{}
		}
		j.UnknownTaggedFields = append(j.UnknownTaggedFields, jf)
	}
	return j, end
}

// fromJSONRecordFields sets e's record fields: a version 1 field left out
// takes its record type's default (V1Defaults).
func fromJSONRecordFields(e *Event, j *jsonRecordFields, end *jsonEndOffset) error {
	if j.RecordVersion < 0 || j.RecordVersion > maxRecordVersion {
		return fmt.Errorf("%w: wire: %s JSON: recordVersion %d (0 or 1)", rlmm.ErrInvalidArgument, e.Key, j.RecordVersion)
	}
	e.Version = j.RecordVersion
	if e.Version >= 1 {
		e.BrokerLeaderEpoch, e.EndOffset = V1Defaults(e.Key)
	}
	if j.BrokerLeaderEpoch != nil || end != nil && end.EndOffset != nil {
		if e.Version == 0 {
			return fmt.Errorf("%w: wire: %s JSON: brokerLeaderEpoch and endOffset need recordVersion 1", rlmm.ErrInvalidArgument, e.Key)
		}
		if j.BrokerLeaderEpoch != nil {
			e.BrokerLeaderEpoch = *j.BrokerLeaderEpoch
		}
		if end != nil && end.EndOffset != nil {
			e.EndOffset = *end.EndOffset
		}
	}
	for _, jf := range j.UnknownTaggedFields {
		f := TaggedField{Struct: jf.Struct, Index: -1, Tag: jf.Tag, Data: jf.Data}
		if jf.Index != nil {
			f.Index = *jf.Index
		}
		if f.Data == nil {
			f.Data = []byte{}
		}
		e.UnknownTags = append(e.UnknownTags, f)
	}
	return nil
}

func ptrTo[T any](v T) *T { return &v }

// jsonSegmentFields are the fields a segment and a snapshot share, after
// their different ids; embedded, they keep their place in the JSON object.
type jsonSegmentFields struct {
	StartOffset      int64       `json:"startOffset"`
	EndOffset        int64       `json:"endOffset"`
	BrokerID         int32       `json:"brokerId"`
	MaxTimestampMs   int64       `json:"maxTimestampMs"`
	EventTimestampMs int64       `json:"eventTimestampMs"`
	LeaderEpochs     []jsonEpoch `json:"segmentLeaderEpochs"`
	SizeInBytes      int32       `json:"segmentSizeInBytes"`
	CustomMetadata   []byte      `json:"customMetadata"`
	State            string      `json:"state"`
	TxnIdxEmpty      bool        `json:"txnIdxEmpty"`
}

func toJSONSegmentFields(m *rlmm.SegmentMetadata) jsonSegmentFields {
	return jsonSegmentFields{
		StartOffset: m.StartOffset, EndOffset: m.EndOffset, BrokerID: m.BrokerID,
		MaxTimestampMs: m.MaxTimestampMs, EventTimestampMs: m.EventTimestampMs,
		LeaderEpochs: toJSONEpochs(m.LeaderEpochs), SizeInBytes: m.SizeInBytes,
		CustomMetadata: m.CustomMetadata, State: m.State.String(), TxnIdxEmpty: m.TxnIndexEmpty,
	}
}

// metadata is the segment with id these fields describe; typ names the
// event type in an error about the state.
func (j *jsonSegmentFields) metadata(id rlmm.SegmentID, typ string) (rlmm.SegmentMetadata, error) {
	st, err := rlmm.ParseSegmentState(j.State)
	if err != nil {
		return rlmm.SegmentMetadata{}, fmt.Errorf("wire: %s JSON: %w", typ, err)
	}
	return rlmm.SegmentMetadata{
		ID:          id,
		StartOffset: j.StartOffset, EndOffset: j.EndOffset, MaxTimestampMs: j.MaxTimestampMs,
		BrokerID: j.BrokerID, EventTimestampMs: j.EventTimestampMs, LeaderEpochs: fromJSONEpochs(j.LeaderEpochs),
		SizeInBytes: j.SizeInBytes, CustomMetadata: j.CustomMetadata, State: st, TxnIndexEmpty: j.TxnIdxEmpty,
	}, nil
}

type jsonUpdate struct {
	Type               string        `json:"type"`
	RemoteLogSegmentID jsonSegmentID `json:"remoteLogSegmentId"`
	CustomMetadata     []byte        `json:"customMetadata"`
	State              string        `json:"state"`
	EventTimestampMs   int64         `json:"eventTimestampMs"`
	BrokerID           int32         `json:"brokerId"`
	jsonRecordFields
	jsonEndOffset
}

type jsonPartitionDelete struct {
	Type             string               `json:"type"`
	TopicIDPartition jsonTopicIDPartition `json:"topicIdPartition"`
	State            string               `json:"state"`
	EventTimestampMs int64                `json:"eventTimestampMs"`
	BrokerID         int32                `json:"brokerId"`
	jsonRecordFields
	jsonEndOffset
}

type jsonSnapshot struct {
	Type      string    `json:"type"`
	SegmentID rlmm.Uuid `json:"segmentId"`
	jsonSegmentFields
	jsonRecordFields
}

func toJSONTP(tp rlmm.TopicIDPartition) jsonTopicIDPartition {
	return jsonTopicIDPartition{TopicID: tp.TopicID, Topic: tp.Topic, Partition: tp.Partition}
}

func fromJSONTP(j jsonTopicIDPartition) rlmm.TopicIDPartition {
	return rlmm.TopicIDPartition{TopicID: j.TopicID, Topic: j.Topic, Partition: j.Partition}
}

func toJSONEpochs(es []rlmm.EpochStart) []jsonEpoch {
	out := make([]jsonEpoch, len(es)) // never nil: the schema wants an array
	for i, e := range es {
		out[i] = jsonEpoch(e)
	}
	return out
}

func fromJSONEpochs(js []jsonEpoch) []rlmm.EpochStart {
	if js == nil {
		return nil
	}
	out := make([]rlmm.EpochStart, len(js))
	for i, j := range js {
		out[i] = rlmm.EpochStart(j)
	}
	return out
}

// MarshalJSON encodes the event in wire's JSON form (the schema of
// testdata/kafka-vectors.json). An unknown key is an error.
func (e Event) MarshalJSON() ([]byte, error) {
	rec, end := toJSONRecordFields(&e)
	switch e.Key {
	case KeySegment:
		m := &e.Segment
		return json.Marshal(jsonSegment{
			Type:               jsonTypeSegment,
			RemoteLogSegmentID: jsonSegmentID{TopicIDPartition: toJSONTP(m.ID.TopicIDPartition), ID: m.ID.ID},
			jsonSegmentFields:  toJSONSegmentFields(m),
			jsonRecordFields:   rec,
		})
	case KeyUpdate:
		u := &e.Update
		return json.Marshal(jsonUpdate{
			Type:               jsonTypeUpdate,
			RemoteLogSegmentID: jsonSegmentID{TopicIDPartition: toJSONTP(u.ID.TopicIDPartition), ID: u.ID.ID},
			CustomMetadata:     u.CustomMetadata, State: u.State.String(),
			EventTimestampMs: u.EventTimestampMs, BrokerID: u.BrokerID,
			jsonRecordFields: rec, jsonEndOffset: end,
		})
	case KeyPartitionDelete:
		d := &e.PartitionDelete
		return json.Marshal(jsonPartitionDelete{
			Type: jsonTypePartitionDelete, TopicIDPartition: toJSONTP(d.TopicIDPartition),
			State: d.State.String(), EventTimestampMs: d.EventTimestampMs, BrokerID: d.BrokerID,
			jsonRecordFields: rec, jsonEndOffset: end,
		})
	case KeySnapshot:
		m := &e.Segment
		return json.Marshal(jsonSnapshot{Type: jsonTypeSnapshot, SegmentID: m.ID.ID, jsonSegmentFields: toJSONSegmentFields(m),
			jsonRecordFields: rec})
	}
	return nil, fmt.Errorf("%w: wire: cannot marshal an event with unknown key %d", rlmm.ErrInvalidArgument, int16(e.Key))
}

// UnmarshalJSON decodes wire's JSON form. Unknown fields, an unknown type and
// unknown state names are errors (wrapping rlmm.ErrInvalidArgument). The
// event is not validated: use AppendEvent or SegmentMetadata.Validate.
func (e *Event) UnmarshalJSON(b []byte) error {
	var head struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return fmt.Errorf("%w: wire: event JSON: %v", rlmm.ErrInvalidArgument, err)
	}
	strict := func(v any) error {
		d := json.NewDecoder(bytes.NewReader(b))
		d.DisallowUnknownFields()
		if err := d.Decode(v); err != nil {
			return fmt.Errorf("%w: wire: %s JSON: %v", rlmm.ErrInvalidArgument, head.Type, err)
		}
		return nil
	}
	var out Event
	switch head.Type {
	case jsonTypeSegment:
		var j jsonSegment
		if err := strict(&j); err != nil {
			return err
		}
		m, err := j.metadata(rlmm.SegmentID{TopicIDPartition: fromJSONTP(j.RemoteLogSegmentID.TopicIDPartition), ID: j.RemoteLogSegmentID.ID}, head.Type)
		if err != nil {
			return err
		}
		out = SegmentEvent(m)
		if err := fromJSONRecordFields(&out, &j.jsonRecordFields, nil); err != nil {
			return err
		}
	case jsonTypeUpdate:
		var j jsonUpdate
		if err := strict(&j); err != nil {
			return err
		}
		st, err := rlmm.ParseSegmentState(j.State)
		if err != nil {
			return fmt.Errorf("wire: %s JSON: %w", head.Type, err)
		}
		out = UpdateEvent(rlmm.SegmentUpdate{
			ID:               rlmm.SegmentID{TopicIDPartition: fromJSONTP(j.RemoteLogSegmentID.TopicIDPartition), ID: j.RemoteLogSegmentID.ID},
			EventTimestampMs: j.EventTimestampMs, CustomMetadata: j.CustomMetadata, State: st, BrokerID: j.BrokerID,
		})
		if err := fromJSONRecordFields(&out, &j.jsonRecordFields, &j.jsonEndOffset); err != nil {
			return err
		}
	case jsonTypePartitionDelete:
		var j jsonPartitionDelete
		if err := strict(&j); err != nil {
			return err
		}
		st, err := rlmm.ParsePartitionDeleteState(j.State)
		if err != nil {
			return fmt.Errorf("wire: %s JSON: %w", head.Type, err)
		}
		out = PartitionDeleteEvent(rlmm.PartitionDelete{
			TopicIDPartition: fromJSONTP(j.TopicIDPartition), State: st,
			EventTimestampMs: j.EventTimestampMs, BrokerID: j.BrokerID,
		})
		if err := fromJSONRecordFields(&out, &j.jsonRecordFields, &j.jsonEndOffset); err != nil {
			return err
		}
	case jsonTypeSnapshot:
		var j jsonSnapshot
		if err := strict(&j); err != nil {
			return err
		}
		m, err := j.metadata(rlmm.SegmentID{ID: j.SegmentID}, head.Type)
		if err != nil {
			return err
		}
		out = Event{Key: KeySnapshot, Segment: m}
		if err := fromJSONRecordFields(&out, &j.jsonRecordFields, nil); err != nil {
			return err
		}
	default:
		return fmt.Errorf("%w: wire: event JSON: unknown type %q", rlmm.ErrInvalidArgument, head.Type)
	}
	*e = out
	return nil
}

package server

import (
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/rpc/rlmmpb"
)

// lookupAnswerer answers the lookups of one stream or one framed connection,
// one request at a time, exactly as SegmentForOffset answers them: the one
// rule of both lookup paths. The request is decoded into a reused message,
// the segment filled in place (SegmentForOffsetInto) and the reply refilled
// for every answer (lookupAnswer), so a hit allocates nothing of its own.
type lookupAnswerer struct {
	v   *service
	req rlmmpb.SegmentForOffsetStreamRequest
	md  rlmm.SegmentMetadata
	ans lookupAnswer
}

// answerBytes answers the encoded request raw. One that does not decode
// gets an INVALID_ARGUMENT reply of its own (undecodable), with the id read
// from its bytes as far as they go. The reply is valid until the next
// answer.
func (a *lookupAnswerer) answerBytes(raw []byte) *rlmmpb.SegmentForOffsetStreamReply {
	if err := proto.Unmarshal(raw, &a.req); err != nil {
		return undecodable(raw, err)
	}
	return a.answer(&a.req)
}

// answer answers one request (a request without its SegmentForOffsetRequest
// is one without a partition: INVALID_ARGUMENT), in a.ans, which it
// returns: valid until the next answer.
func (a *lookupAnswerer) answer(req *rlmmpb.SegmentForOffsetStreamRequest) *rlmmpb.SegmentForOffsetStreamReply {
	found, err := a.find(req.GetRequest())
	if err != nil {
		return a.ans.failed(req.GetId(), err)
	}
	if !found {
		return a.ans.miss(req.GetId())
	}
	return a.ans.hit(req.GetId(), &a.md)
}

// find is findSegment's lookup into a.md, with the error unconverted.
func (a *lookupAnswerer) find(q *rlmmpb.SegmentForOffsetRequest) (bool, error) {
	tp, err := tpFromProto(q.GetTopicIdPartition(), "topic_id_partition")
	if err != nil {
		return false, err
	}
	m, err := a.v.reader()
	if err != nil {
		return false, err
	}
	return m.SegmentForOffsetInto(tp, q.GetLeaderEpoch(), q.GetOffset(), &a.md)
}

// lookupAnswer is a lookup's reply and every message inside it, kept
// by the stream and refilled for each answer: on a hit, the reply points at
// the segment's fields as SegmentForOffsetInto filled them, and nothing is
// allocated but what grows (the epochs, once per stream). The stream
// encodes one answer before it fills the next.
type lookupAnswer struct {
	reply  rlmmpb.SegmentForOffsetStreamReply
	ok     rlmmpb.SegmentForOffsetStreamReply_Reply
	found  rlmmpb.SegmentReply
	seg    rlmmpb.SegmentMetadata
	tp     rlmmpb.TopicIdPartition
	topic  rlmmpb.Uuid
	id     rlmmpb.Uuid
	epochs []rlmmpb.EpochStart
	ptrs   []*rlmmpb.EpochStart

	bad     rlmmpb.SegmentForOffsetStreamReply_Error
	status  rlmmpb.CallStatus
	detail  anypb.Any
	details [1]*anypb.Any
}

// hit answers id with md (segmentToProto's message, field for field).
func (a *lookupAnswer) hit(id uint64, md *rlmm.SegmentMetadata) *rlmmpb.SegmentForOffsetStreamReply {
	a.topic.MostSignificantBits = uint64(md.ID.TopicIDPartition.TopicID.MostSignificantBits())
	a.topic.LeastSignificantBits = uint64(md.ID.TopicIDPartition.TopicID.LeastSignificantBits())
	a.tp.TopicId, a.tp.Topic, a.tp.Partition = &a.topic, md.ID.TopicIDPartition.Topic, md.ID.TopicIDPartition.Partition
	a.id.MostSignificantBits = uint64(md.ID.ID.MostSignificantBits())
	a.id.LeastSignificantBits = uint64(md.ID.ID.LeastSignificantBits())
	if n := len(md.LeaderEpochs); cap(a.epochs) < n {
		a.epochs = make([]rlmmpb.EpochStart, n)
		a.ptrs = make([]*rlmmpb.EpochStart, n)
		for i := range a.epochs {
			a.ptrs[i] = &a.epochs[i]
		}
	}
	for i, e := range md.LeaderEpochs {
		a.epochs[i].Epoch, a.epochs[i].StartOffset = e.Epoch, e.StartOffset
	}
	s := &a.seg
	s.TopicIdPartition, s.SegmentId = &a.tp, &a.id
	s.StartOffset, s.EndOffset = md.StartOffset, md.EndOffset
	s.MaxTimestampMs, s.BrokerId, s.EventTimestampMs = md.MaxTimestampMs, md.BrokerID, md.EventTimestampMs
	s.LeaderEpochs = a.ptrs[:len(md.LeaderEpochs)]
	s.SegmentSizeInBytes, s.CustomMetadata = md.SizeInBytes, md.CustomMetadata
	s.State, s.TxnIndexEmpty = rlmmpb.SegmentState(md.State), md.TxnIndexEmpty
	a.found.Found, a.found.Segment = true, s
	return a.answer(id)
}

// miss answers id with "no segment" (an empty SegmentReply).
func (a *lookupAnswer) miss(id uint64) *rlmmpb.SegmentForOffsetStreamReply {
	a.found.Found, a.found.Segment = false, nil
	return a.answer(id)
}

func (a *lookupAnswer) answer(id uint64) *rlmmpb.SegmentForOffsetStreamReply {
	a.ok.Reply = &a.found
	a.reply.Id, a.reply.Result = id, &a.ok
	return &a.reply
}

// failed answers id with err's status as toStatus (not a mutation) would
// make it, without building the status: the code and ErrorInfo of err's
// class (the detail's bytes encoded once per kind) and err's text.
func (a *lookupAnswer) failed(id uint64, err error) *rlmmpb.SegmentForOffsetStreamReply {
	code, kind := classify(err)
	a.detail.TypeUrl, a.detail.Value = errorInfoTypeURL, errorInfoBytes(kind)
	a.details[0] = &a.detail
	a.status.Code, a.status.Message, a.status.Details = int32(code), err.Error(), a.details[:]
	a.bad.Error = &a.status
	a.reply.Id, a.reply.Result = id, &a.bad
	return &a.reply
}

// errorInfoTypeURL is the type URL anypb.New gives an ErrorInfo.
const errorInfoTypeURL = "type.googleapis.com/rlmm.v1.ErrorInfo"

// errorInfoValues holds each kind's encoded ErrorInfo{Kind: kind} of a read
// (may_be_recorded false), encoded once; shared read-only by every stream.
var errorInfoValues = func() map[rlmmpb.ErrorKind][]byte {
	m := make(map[rlmmpb.ErrorKind][]byte, len(rlmmpb.ErrorKind_name))
	for k := range rlmmpb.ErrorKind_name {
		m[rlmmpb.ErrorKind(k)] = errorInfoValue(rlmmpb.ErrorKind(k))
	}
	return m
}()

func errorInfoBytes(kind rlmmpb.ErrorKind) []byte {
	if b, ok := errorInfoValues[kind]; ok {
		return b
	}
	return errorInfoValue(kind) // not a kind of this build's proto: classify gives none
}

func errorInfoValue(kind rlmmpb.ErrorKind) []byte {
	// An ErrorInfo of one enum field always marshals.
	b, _ := proto.Marshal(&rlmmpb.ErrorInfo{Kind: kind})
	return b
}

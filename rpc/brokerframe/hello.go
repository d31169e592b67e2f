package brokerframe

import (
	"bytes"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/rpc/rlmmpb"
)

// Magic opens every hello and every answer to one. It is fixed for every
// version, so that any two versions can read each other's version byte and
// refuse naming both.
const Magic = "RLMMBROKER"

// Version is the version of this format (and of the messages it carries)
// that this build speaks, stated in the hello and in the answer. A server
// refuses a hello of another version, and a client an answer of another,
// naming both. It changes when a change would make one side misread the
// other; a new optional field does not change it.
const Version = 1

// prefixLen is the magic and the version byte.
const prefixLen = len(Magic) + 1

// AppendHello appends the client's hello body (not framed) of version v to
// dst: the magic, v, then h.
func AppendHello(dst []byte, v byte, h *rlmmpb.BrokerHello) ([]byte, error) {
	dst = append(dst, Magic...)
	dst = append(dst, v)
	return proto.MarshalOptions{}.MarshalAppend(dst, h)
}

// ParseHello reads a client's hello body. It returns the version the hello
// states even when it returns an error, so the refusal can name it; a
// hello of another version than v is an error naming both, a body that is
// not a hello (another magic, cut short, a message that does not decode) one
// naming what was wrong. Every error wraps rlmm.ErrInvalidArgument.
func ParseHello(body []byte, v byte) (*rlmmpb.BrokerHello, byte, error) {
	rest, ok := bytes.CutPrefix(body, []byte(Magic))
	if !ok || len(rest) < 1 {
		return nil, 0, fmt.Errorf("%w: the first frame of %d bytes is not a broker hello (it starts with %q)",
			rlmm.ErrInvalidArgument, len(body), body[:min(len(body), prefixLen)])
	}
	if rest[0] != v {
		return nil, rest[0], fmt.Errorf("%w: the client speaks version %d of the broker frames; this server speaks version %d",
			rlmm.ErrInvalidArgument, rest[0], v)
	}
	h := &rlmmpb.BrokerHello{}
	if err := proto.Unmarshal(rest[1:], h); err != nil {
		return nil, rest[0], fmt.Errorf("%w: a broker hello that does not decode: %v", rlmm.ErrInvalidArgument, err)
	}
	if h.GetPurpose() == rlmmpb.Purpose_PURPOSE_UNSPECIFIED || rlmmpb.Purpose_name[int32(h.GetPurpose())] == "" {
		return nil, rest[0], fmt.Errorf("%w: a broker hello of purpose %d, not one of lookup, mutate, read, assign, watch",
			rlmm.ErrInvalidArgument, h.GetPurpose())
	}
	return h, rest[0], nil
}

// AppendAnswer appends the server's answer body of version v to dst.
func AppendAnswer(dst []byte, v byte, a *rlmmpb.BrokerAnswer) ([]byte, error) {
	dst = append(dst, Magic...)
	dst = append(dst, v)
	return proto.MarshalOptions{}.MarshalAppend(dst, a)
}

// ParseAnswer reads the server's answer to a hello of version v: who the
// server is when it accepted; an error with the server's reason when it
// refused, one naming both versions when it speaks another, or one naming
// what was wrong when the body is not an answer. Every error wraps
// rlmm.ErrInvalidArgument.
func ParseAnswer(body []byte, v byte) (*rlmmpb.ServerInfoReply, error) {
	rest, ok := bytes.CutPrefix(body, []byte(Magic))
	if !ok || len(rest) < 1 {
		return nil, fmt.Errorf("%w: the answer to the broker hello (%d bytes) is not one", rlmm.ErrInvalidArgument, len(body))
	}
	var a rlmmpb.BrokerAnswer
	if err := proto.Unmarshal(rest[1:], &a); err != nil {
		if rest[0] != v {
			return nil, fmt.Errorf("%w: the server speaks version %d of the broker frames; this client speaks version %d",
				rlmm.ErrInvalidArgument, rest[0], v)
		}
		return nil, fmt.Errorf("%w: an answer to the broker hello that does not decode: %v", rlmm.ErrInvalidArgument, err)
	}
	if a.GetRefused() != "" {
		return nil, fmt.Errorf("%w: the server refused the hello: %s", rlmm.ErrInvalidArgument, a.GetRefused())
	}
	if rest[0] != v {
		return nil, fmt.Errorf("%w: the server speaks version %d of the broker frames; this client speaks version %d",
			rlmm.ErrInvalidArgument, rest[0], v)
	}
	if a.GetServer() == nil {
		return nil, fmt.Errorf("%w: the server accepted the hello without saying who it is", rlmm.ErrInvalidArgument)
	}
	return a.GetServer(), nil
}

// Allows reports whether a connection opened for purpose p carries the
// request req (the server answers any other INVALID_ARGUMENT). A request
// without a call is allowed by none.
func Allows(p rlmmpb.Purpose, req *rlmmpb.BrokerRequest) bool {
	switch req.GetCall().(type) {
	case *rlmmpb.BrokerRequest_SegmentForOffset:
		return p == rlmmpb.Purpose_PURPOSE_LOOKUP
	case *rlmmpb.BrokerRequest_AddSegment, *rlmmpb.BrokerRequest_UpdateSegment, *rlmmpb.BrokerRequest_PutPartitionDelete:
		return p == rlmmpb.Purpose_PURPOSE_MUTATE
	case *rlmmpb.BrokerRequest_HighestOffsetForEpoch, *rlmmpb.BrokerRequest_ListSegments, *rlmmpb.BrokerRequest_RemoteLogSize,
		*rlmmpb.BrokerRequest_NextSegmentWithTxnIndex, *rlmmpb.BrokerRequest_ServerInfo:
		return p == rlmmpb.Purpose_PURPOSE_READ
	case *rlmmpb.BrokerRequest_LeadershipChanges, *rlmmpb.BrokerRequest_StopPartitions:
		return p == rlmmpb.Purpose_PURPOSE_ASSIGN
	}
	return false
}

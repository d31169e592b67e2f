package server

import (
	"context"
	"errors"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/rpc/rlmmpb"
	"github.com/rlmm-go/rlmm/topicbased"
)

// notPublished marks an error of a mutation that certainly published
// nothing (a malformed request, the server still starting): its
// BrokerError says may_be_recorded=false whatever the sentinel.
type notPublished struct{ error }

func (e notPublished) Unwrap() error { return e.error }

// classify maps an error to its ErrorKind. The order matters where an
// error wraps two sentinels: a timeout that the client's cancellation
// caused is a timeout, and a partition that is replayed because its
// snapshot state is corrupt is NotReady (retriable), not Corrupt.
func classify(err error) rlmmpb.ErrorKind {
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, rlmm.ErrTimeout), errors.Is(err, context.DeadlineExceeded):
		return rlmmpb.ErrorKind_TIMEOUT
	case errors.Is(err, rlmm.ErrClosed):
		return rlmmpb.ErrorKind_CLOSED
	case errors.Is(err, rlmm.ErrNotReady):
		return rlmmpb.ErrorKind_NOT_READY
	case errors.Is(err, rlmm.ErrNotLeader):
		return rlmmpb.ErrorKind_NOT_LEADER
	case errors.Is(err, rlmm.ErrNotAssigned):
		return rlmmpb.ErrorKind_NOT_ASSIGNED
	case errors.Is(err, rlmm.ErrInvalidTransition):
		return rlmmpb.ErrorKind_INVALID_TRANSITION
	case errors.Is(err, rlmm.ErrUnknownSegment):
		return rlmmpb.ErrorKind_UNKNOWN_SEGMENT
	case errors.Is(err, rlmm.ErrInvalidArgument):
		return rlmmpb.ErrorKind_INVALID_ARGUMENT
	case errors.Is(err, rlmm.ErrCorrupt):
		return rlmmpb.ErrorKind_CORRUPT
	}
	return rlmmpb.ErrorKind_INTERNAL
}

// mayBeRecorded says whether a failed mutation's event may still be (or
// already is) in the log: topicbased.MayBeRecorded, except for notPublished
// (the server refused the call before reaching the manager).
func mayBeRecorded(err error) bool {
	var np notPublished
	if errors.As(err, &np) {
		return false
	}
	return topicbased.MayBeRecorded(err)
}

// brokerErr is err as a reply's one error: its kind, whether a mutation's
// event may still be recorded, and its text.
func brokerErr(err error, mutation bool) *rlmmpb.BrokerReply_Error {
	return &rlmmpb.BrokerReply_Error{Error: &rlmmpb.BrokerError{Kind: classify(err), MayBeRecorded: mutation && mayBeRecorded(err), Message: err.Error()}}
}

package server

import (
	"context"
	"errors"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/rpc/rlmmpb"
)

// notPublished marks an error of a mutation that certainly published
// nothing (a malformed request, the server still starting): its ErrorInfo
// says may_be_recorded=false whatever the sentinel.
type notPublished struct{ error }

func (e notPublished) Unwrap() error { return e.error }

// classify maps an error to its gRPC code and ErrorKind. The order matters
// where an error wraps two sentinels: a timeout that the client's
// cancellation caused is Canceled, and a partition that is replayed because
// its snapshot state is corrupt is NotReady (retriable), not DataLoss.
func classify(err error) (codes.Code, rlmmpb.ErrorKind) {
	switch {
	case errors.Is(err, context.Canceled):
		return codes.Canceled, rlmmpb.ErrorKind_TIMEOUT
	case errors.Is(err, rlmm.ErrTimeout), errors.Is(err, context.DeadlineExceeded):
		return codes.DeadlineExceeded, rlmmpb.ErrorKind_TIMEOUT
	case errors.Is(err, rlmm.ErrClosed):
		return codes.Unavailable, rlmmpb.ErrorKind_CLOSED
	case errors.Is(err, rlmm.ErrNotReady):
		return codes.Unavailable, rlmmpb.ErrorKind_NOT_READY
	case errors.Is(err, rlmm.ErrNotAssigned):
		return codes.FailedPrecondition, rlmmpb.ErrorKind_NOT_ASSIGNED
	case errors.Is(err, rlmm.ErrInvalidTransition):
		return codes.FailedPrecondition, rlmmpb.ErrorKind_INVALID_TRANSITION
	case errors.Is(err, rlmm.ErrUnknownSegment):
		return codes.NotFound, rlmmpb.ErrorKind_UNKNOWN_SEGMENT
	case errors.Is(err, rlmm.ErrInvalidArgument):
		return codes.InvalidArgument, rlmmpb.ErrorKind_INVALID_ARGUMENT
	case errors.Is(err, rlmm.ErrCorrupt):
		return codes.DataLoss, rlmmpb.ErrorKind_CORRUPT
	}
	return codes.Internal, rlmmpb.ErrorKind_INTERNAL
}

// mayBeRecorded says whether a failed mutation's event may still be (or
// already is) in the log. topicbased does not type this, so it is derived
// conservatively (when unsure: true): false for what it refuses before
// publishing (validation, a forbidden transition, an unknown segment, a
// metadata partition not consumed here) and for notPublished; true for a
// timeout, a close, a cancellation and anything unexpected (a publish
// failure "may or may not be in the log"). ErrNotAssigned is the one
// sentinel topicbased returns both before and after publishing; after, its
// message says "the event is in the log".
func mayBeRecorded(err error, kind rlmmpb.ErrorKind) bool {
	var np notPublished
	if errors.As(err, &np) {
		return false
	}
	switch kind {
	case rlmmpb.ErrorKind_INVALID_ARGUMENT, rlmmpb.ErrorKind_INVALID_TRANSITION,
		rlmmpb.ErrorKind_UNKNOWN_SEGMENT, rlmmpb.ErrorKind_NOT_READY:
		return false
	case rlmmpb.ErrorKind_NOT_ASSIGNED:
		return strings.Contains(err.Error(), "the event is in the log")
	}
	return true
}

// toStatus turns an rlmm error into the RPC's status: the code of its
// class, rlmm's message, and one ErrorInfo detail. mutation says whether
// may_be_recorded applies (it is false for every other call).
func toStatus(err error, mutation bool) error {
	if err == nil {
		return nil
	}
	code, kind := classify(err)
	info := &rlmmpb.ErrorInfo{Kind: kind, MayBeRecorded: mutation && mayBeRecorded(err, kind)}
	st, derr := status.New(code, err.Error()).WithDetails(info)
	if derr != nil {
		// Only a detail that does not marshal fails here; ErrorInfo always does.
		return status.Error(code, err.Error())
	}
	return st.Err()
}

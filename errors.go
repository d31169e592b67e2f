package rlmm

import (
	"errors"
	"fmt"
)

// Sentinel errors. Every error rlmm returns wraps one of these where one
// applies; match them with errors.Is.
var (
	// ErrInvalidArgument: a value that fails validation, an add whose state
	// is not COPY_SEGMENT_STARTED, an update to COPY_SEGMENT_STARTED, a bad
	// option or flag. Not retriable.
	ErrInvalidArgument = errors.New("invalid argument")
	// ErrInvalidTransition: the segment's current state does not allow the
	// requested one (see CanTransition). A *TransitionError carries the details.
	ErrInvalidTransition = errors.New("invalid state transition")
	// ErrUnknownSegment: an update names a segment that does not exist (never
	// added, or already DELETE_SEGMENT_FINISHED).
	ErrUnknownSegment = errors.New("unknown remote log segment")
	// ErrNotReady: the partition's metadata is still catching up with the
	// log. Retriable: Kafka's ReplicaNotAvailableException.
	ErrNotReady = errors.New("remote log metadata not ready")
	// ErrNotAssigned: the user partition is not hosted by this manager (no
	// leadership or follower change named it, or it was stopped): a read is
	// refused rather than answered empty (Kafka's
	// RemoteResourceNotFoundException), and a mutation publishes nothing,
	// since it could not be read back.
	ErrNotAssigned = errors.New("metadata partition not assigned")
	// ErrNotLeader: the cluster's metadata names another broker as the
	// user partition's leader, so this broker's segment mutation (a copy's
	// or a deletion's start) is refused and publishes nothing. A deposed
	// leader that has not learnt it yet gets it; retriable: Kafka's task
	// runs again and then finds it no longer leads.
	ErrNotLeader = errors.New("not the partition's leader")
	// ErrClosed: the manager or log was closed.
	ErrClosed = errors.New("closed")
	// ErrCorrupt: bytes read from disk or the network could not be decoded.
	ErrCorrupt = errors.New("corrupt data")
	// ErrTimeout: a bounded wait ran out. For a mutation the event may still
	// be recorded later.
	ErrTimeout = errors.New("timed out")
)

// TransitionError reports a transition that the state machine forbids.
// It matches ErrInvalidTransition with errors.Is.
type TransitionError struct {
	Segment SegmentID
	// From is the current state; Exists is false when the segment does not
	// exist (From is then meaningless).
	From   SegmentState
	Exists bool
	To     SegmentState
}

// Error says which segment, from which state, to which.
func (e *TransitionError) Error() string {
	from := "(none)"
	if e.Exists {
		from = e.From.String()
	}
	return fmt.Sprintf("%s: segment %s cannot go from %s to %s", ErrInvalidTransition, e.Segment, from, e.To)
}

// Unwrap makes errors.Is(err, ErrInvalidTransition) true.
func (e *TransitionError) Unwrap() error { return ErrInvalidTransition }

// IsRetriable reports whether err is worth retrying unchanged: ErrNotReady,
// ErrTimeout and ErrNotLeader (the leadership may come back, and a deposed
// broker's retry finds out) are, everything else is not.
func IsRetriable(err error) bool {
	return errors.Is(err, ErrNotReady) || errors.Is(err, ErrTimeout) || errors.Is(err, ErrNotLeader)
}

package rlmm

import "fmt"

// SegmentState is the lifecycle state of a remote log segment, with Kafka's
// wire ids (RemoteLogSegmentState).
type SegmentState int8

// The segment states, in lifecycle order.
const (
	CopySegmentStarted    SegmentState = 0
	CopySegmentFinished   SegmentState = 1
	DeleteSegmentStarted  SegmentState = 2
	DeleteSegmentFinished SegmentState = 3
)

var segmentStateNames = [...]string{"COPY_SEGMENT_STARTED", "COPY_SEGMENT_FINISHED", "DELETE_SEGMENT_STARTED", "DELETE_SEGMENT_FINISHED"}

// Valid reports whether s is one of the four defined states.
func (s SegmentState) Valid() bool { return s >= CopySegmentStarted && s <= DeleteSegmentFinished }

// String returns Kafka's name of the state, or SegmentState(n) for an undefined value.
func (s SegmentState) String() string {
	if s.Valid() {
		return segmentStateNames[s]
	}
	return fmt.Sprintf("SegmentState(%d)", int8(s))
}

// ParseSegmentState parses Kafka's name of a segment state.
func ParseSegmentState(name string) (SegmentState, error) {
	for i, n := range segmentStateNames {
		if n == name {
			return SegmentState(i), nil
		}
	}
	return 0, fmt.Errorf("%w: unknown segment state %q", ErrInvalidArgument, name)
}

// CanTransition is Kafka's RemoteLogSegmentState.isValidTransition for an
// existing segment: every self-transition (so retries are idempotent),
// STARTED to FINISHED or DELETE_STARTED, FINISHED to DELETE_STARTED, and
// DELETE_STARTED to DELETE_FINISHED. A segment that does not exist yet can
// only be created in COPY_SEGMENT_STARTED (see CanCreate).
func CanTransition(from, to SegmentState) bool {
	if !from.Valid() || !to.Valid() {
		return false
	}
	if from == to {
		return true
	}
	switch from {
	case CopySegmentStarted:
		return to == CopySegmentFinished || to == DeleteSegmentStarted
	case CopySegmentFinished:
		return to == DeleteSegmentStarted
	case DeleteSegmentStarted:
		return to == DeleteSegmentFinished
	}
	return false
}

// CanCreate reports whether a segment that does not exist may be created in
// state to: only COPY_SEGMENT_STARTED.
func CanCreate(to SegmentState) bool { return to == CopySegmentStarted }

// PartitionDeleteState is the deletion state of a user partition's remote
// data, with Kafka's wire ids (RemotePartitionDeleteState).
type PartitionDeleteState int8

// The partition delete states, in lifecycle order.
const (
	DeletePartitionMarked   PartitionDeleteState = 0
	DeletePartitionStarted  PartitionDeleteState = 1
	DeletePartitionFinished PartitionDeleteState = 2
)

var partitionDeleteStateNames = [...]string{"DELETE_PARTITION_MARKED", "DELETE_PARTITION_STARTED", "DELETE_PARTITION_FINISHED"}

// Valid reports whether s is one of the three defined states.
func (s PartitionDeleteState) Valid() bool {
	return s >= DeletePartitionMarked && s <= DeletePartitionFinished
}

// String returns Kafka's name of the state, or PartitionDeleteState(n).
func (s PartitionDeleteState) String() string {
	if s.Valid() {
		return partitionDeleteStateNames[s]
	}
	return fmt.Sprintf("PartitionDeleteState(%d)", int8(s))
}

// ParsePartitionDeleteState parses Kafka's name of a partition delete state.
func ParsePartitionDeleteState(name string) (PartitionDeleteState, error) {
	for i, n := range partitionDeleteStateNames {
		if n == name {
			return PartitionDeleteState(i), nil
		}
	}
	return 0, fmt.Errorf("%w: unknown partition delete state %q", ErrInvalidArgument, name)
}

// CanTransitionPartitionDelete is Kafka's RemotePartitionDeleteState
// .isValidTransition for a partition that already has a delete state: self,
// MARKED to STARTED, STARTED to FINISHED. A partition without one may start
// only at MARKED. Kafka's topic-based manager never enforces this rule when
// it applies events (a STARTED without MARKED is accepted); rlmm follows
// Kafka there and uses the rule only to report anomalies.
func CanTransitionPartitionDelete(from, to PartitionDeleteState) bool {
	if !from.Valid() || !to.Valid() {
		return false
	}
	return from == to || to == from+1
}

package topicbased

// Reason says why the pump skipped an event of the log (RejectedEvent).
type Reason uint8

// The reasons an event is skipped.
const (
	// ReasonUndecodable: the record's bytes are not an event (wire's
	// decoder refused them).
	ReasonUndecodable Reason = iota + 1
	// ReasonRejected: the state machine refused the event (an update of an
	// unknown segment, a forbidden transition, an invalid argument).
	ReasonRejected
	// ReasonMisrouted: the event belongs in another metadata partition.
	ReasonMisrouted
	// ReasonUnexpected: a record of a kind that does not belong in the
	// metadata topic.
	ReasonUnexpected
	// ReasonHistoryLost: not one event but a range of them is gone from the
	// log (retention or DeleteRecords moved its start offset past events
	// this manager had not applied). The RejectedEvent's Offset is the
	// first lost offset and its Err a *HistoryLostError naming the range.
	ReasonHistoryLost
)

// String returns the reason's name as logs and the CLI show it:
// "undecodable", "rejected", "misrouted", "unexpected" or "history_lost".
func (r Reason) String() string {
	switch r {
	case ReasonUndecodable:
		return "undecodable"
	case ReasonRejected:
		return "rejected"
	case ReasonMisrouted:
		return "misrouted"
	case ReasonUnexpected:
		return "unexpected"
	case ReasonHistoryLost:
		return "history_lost"
	}
	return "unknown"
}

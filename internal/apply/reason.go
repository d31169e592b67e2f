package apply

// Reason says why an event of the log was not applied (0: it was).
type Reason uint8

// The reasons an event is not applied.
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
	// metadata topic (a snapshot record, api key 3).
	ReasonUnexpected
	// ReasonHistoryLost: not one event but a range of them is gone from the
	// log (retention or DeleteRecords moved its start offset past events
	// not applied yet). Record never returns it; the topic-based manager
	// reports such ranges with it.
	ReasonHistoryLost
	// ReasonNotKept: the event is of a user partition the caller does not
	// keep (a broker's manager keeps only the partitions it hosts). Not an
	// anomaly: it is counted, never listed.
	ReasonNotKept
	// ReasonTombstone: a record without a value (a null value: a tombstone,
	// as a compacted metadata topic under KIP-1266 holds). Nothing to
	// apply: it is skipped, and its callers count it rather than report it
	// as an anomaly (Kafka 4.3's own manager's consumer dies on one).
	ReasonTombstone
)

// String returns the reason's name as logs and the CLI show it.
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
	case ReasonNotKept:
		return "not_kept"
	case ReasonTombstone:
		return "tombstone"
	}
	return "unknown"
}

package topicbased

import "github.com/rlmm-go/rlmm/internal/apply"

// Reason says why the pump skipped an event of the log (RejectedEvent). It
// is the reason of the one event path (internal/apply) that the pump,
// `rlmm inspect`/`verify` and `rlmm simulate` share; String gives its name
// ("undecodable", "rejected", "misrouted", "unexpected", "history_lost",
// "not_kept", "tombstone").
type Reason = apply.Reason

// The reasons an event is skipped.
const (
	// ReasonUndecodable: the record's bytes are not an event (wire's
	// decoder refused them).
	ReasonUndecodable = apply.ReasonUndecodable
	// ReasonRejected: the state machine refused the event (an update of an
	// unknown segment, a forbidden transition, an invalid argument).
	ReasonRejected = apply.ReasonRejected
	// ReasonMisrouted: the event belongs in another metadata partition.
	ReasonMisrouted = apply.ReasonMisrouted
	// ReasonUnexpected: a record of a kind that does not belong in the
	// metadata topic.
	ReasonUnexpected = apply.ReasonUnexpected
	// ReasonHistoryLost: not one event but a range of them is gone from the
	// log (retention or DeleteRecords moved its start offset past events
	// this manager had not applied). The RejectedEvent's Offset is the
	// first lost offset and its Err a *HistoryLostError naming the range.
	ReasonHistoryLost = apply.ReasonHistoryLost
	// ReasonNotKept: an event of a user partition this manager does not
	// host. Counted (Stats.Skipped), never kept in Rejected.
	ReasonNotKept = apply.ReasonNotKept
	// ReasonTombstone: a record with a null value (a tombstone, as a
	// compacted metadata topic under KIP-1266 holds, two per deleted
	// segment): nothing to apply; skipped and counted (Stats.Tombstones),
	// neither rejected nor kept in Rejected (see package wire's doc).
	ReasonTombstone = apply.ReasonTombstone
)

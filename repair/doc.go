// Package repair turns what rlmm scrub finds into a plan of actions, and
// carries the plan out: the engine of `rlmm repair`.
//
// MakePlan is pure: from a scrub.Report, the COPY_SEGMENT_STARTED segments
// of which scrub saw no object, and the objects already in quarantine, it
// plans
//
//   - quarantine: every unprotected orphan (scrub.ReasonNotInMetadata: no
//     segment of the metadata, in any state but DELETE_SEGMENT_FINISHED,
//     has its id) at least Options.OrphanAge old is moved under
//     Options.Quarantine + <run time> + "/" + its key. Protected orphans
//     (objects of a copy in flight, of a live segment at another key, keys
//     the layout never writes) and the objects of live segments are never
//     in a plan: the rule is scrub.Plan's, the one scrub --delete-orphans
//     uses;
//   - purge: objects in quarantine whose run time (read from the key, not
//     the object's date: a rename keeps a file's modification time) is at
//     least Options.Grace ago are deleted; those younger are held, and a
//     key whose run time cannot be read is never deleted;
//   - close: a segment COPY_SEGMENT_STARTED for at least Options.StuckAfter
//     (from its event time) none of whose objects is in the storage is
//     closed with DELETE_SEGMENT_STARTED then DELETE_SEGMENT_FINISHED, in
//     Kafka's bytes, to the metadata partition of its user partition
//     (rebuild.Step, published by rebuild.Apply: the path rlmm rebuild
//     publishes with). Kafka's state machine allows COPY_SEGMENT_STARTED to
//     DELETE_SEGMENT_STARTED (rlmm.CanTransition). A segment
//     DELETE_SEGMENT_STARTED as long with no object (a deletion that removed
//     every object and did not record it) gets DELETE_SEGMENT_FINISHED, at
//     once when its last event is Options.BrokerID's (a negative id: a
//     repair interrupted between its two events); it is not reported lost;
//   - lost: a COPY_SEGMENT_FINISHED (or DELETE_SEGMENT_STARTED) segment
//     whose log object is missing is reported with its user partition,
//     segment id and the offsets lost; nothing is done about it.
//
// Apply carries a plan out, logging every action on the injected logger as
// it is done; an object that cannot be moved stays where it was. A second
// plan after Apply has nothing to do but the objects still held in
// quarantine (and the lost segments, which stay reported).
//
// The package starts no goroutine and prints nothing.
package repair

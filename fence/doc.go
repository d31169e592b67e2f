// Package fence keeps a deposed leader's broker from publishing segment
// mutations for a partition another broker now leads.
//
// A broker cut off from the controller quorum goes on believing it leads
// its partitions, and its RemoteLogManager goes on copying and expiring
// segments. Its `rlmm serve` sidecar is a separate process that may still
// reach the metadata topic; without a fence it publishes the zombie's
// COPY_SEGMENT_STARTED and DELETE_SEGMENT_STARTED, and Kafka's real leader
// then keeps its log start offset on a segment whose deletion the zombie
// started (consumers get OffsetOutOfRange).
//
// Before the server publishes such a mutation it asks Check, which asks
// every broker the client knows for the topic's metadata at once (one
// Metadata request per broker) and hands the answers to Decide, the pure
// rule: the answer with the highest leader epoch wins (a partitioned
// broker answers from its own stale cache, naming itself), and if it names
// a leader other than this broker the mutation is refused with
// rlmm.ErrNotLeader. A
// broker silent for the round's Config.Timeout is left out: a partition
// that deposes a leader often cuts its sidecar from it too.
//
// Each check asks its own round; no answer is kept or shared. An answer
// kept even a second would admit a deposed leader's mutation just after
// the election, or refuse the new leader's first copy (a 1 s cache did, in
// the soak). A round costs a Metadata request to each broker, beside a
// segment copy or deletion that happens a few times a minute per
// partition and waits for its record to be replicated.
//
// The requests go through franz-go's per-broker Request (kgo.Broker), the
// client the metadata log already holds, so the fence opens no
// connection of its own.
//
// When the metadata cannot be had (every broker failed, the topic or
// partition is absent from every answer) the mutation is published as it
// would be without the fence: the fence guards against a rare race, while
// refusing on a metadata hiccup would stall every copy and deletion of a
// healthy cluster; and a sidecar cut from every broker cannot publish
// anyway. A partition with no leader (-1, an election under way) in the
// newest answer is refused: no broker, least of all this one, is known to
// lead it, and the refusal is retriable.
//
// Where there is no Kafka (an embedded log) or no broker id, no fence is
// built and nothing is checked.
package fence

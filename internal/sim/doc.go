// Package sim plays a Kafka cluster's tiered-storage life against rlmm, the
// engine of `rlmm simulate`.
//
// Several simulated brokers, each with its own topicbased.Manager and
// snapshot directory, share one event log (filelog, kafkalog or memlog).
// User partitions of a few topics are spread over the brokers with a leader
// and followers each. In rounds, every partition's leader rolls a segment and
// copies it (COPY_SEGMENT_STARTED, then COPY_SEGMENT_FINISHED; some copies
// fail and are cleaned up with DELETE_SEGMENT_STARTED/FINISHED before a
// retry), retention deletes the oldest segments, and leaders and followers
// serve fetch-path reads by (leader epoch, offset). Between rounds,
// leadership moves with leader-epoch bumps (so segments span several
// epochs), one topic is deleted (partition delete MARKED, STARTED, its
// segments deleted, FINISHED), and one broker is shut down (ShutdownAndFlush)
// and later restarted from its snapshot.
//
// Every mutation is also applied to an independent model (model.go: plain
// slices of segments, written for this package and sharing no code with the
// memory package). Reads from leaders are checked exactly against it; reads
// from followers, which may lag, are checked for consistency. At the end
// every broker's view of every partition it hosts is compared with the model;
// each difference is reported.
//
// All randomness derives from Config.Seed: the same seed and sizes play the
// same workload (segment ids included). Event timestamps follow the wall
// clock of the run's start plus one simulated minute per round.
//
// Libraries: golang.org/x/sync/errgroup bounds the concurrent partition work
// of a round; everything else is the standard library and rlmm's packages.
package sim

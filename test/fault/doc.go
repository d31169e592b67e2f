// Package fault holds rlmm's tests against a real Apache Kafka cluster
// that fails.
//
// One cluster serves every test of a run: with RLMM_CLUSTER_FAULTS=1 (make
// test's faults step, make fault-test, make cluster-faults, make soak)
// TestMain starts a 3-broker Kafka 4.3.1 KRaft cluster of test/kafkatest
// (every node a broker and a controller voter) with tiered storage
// (LocalTieredStorage) and rlmm's plugin as its RLMM, a SASL_SSL listener
// (SCRAM-SHA-512 users created at format time, the StandardAuthorizer),
// every listener behind a test/faultnet proxy (the sidecars told apart from
// their brokers by their process), each sidecar's snapshot directory on a
// test/faultdisk tmpfs (root needed) and its metrics on a port of its own
// (kafkatest.Config.NodeExtra); it stops it at the end, and the harness
// ends every broker if the test binary dies first. RLMM_FAULT_KEEP=1 keeps
// the cluster's directory (its broker logs). Without the variable every
// test says why it skips, and fails when CI=true.
//
// The cluster fault tests (cluster_*_test.go) run a workload: three tiered
// topics (RF 3 and min.insync.replicas 2, one RF 2 topic whose replicas
// move) under acks=all produce, every acknowledged offset and value
// recorded; a reader from each partition's log start offset (remote
// storage) with auto.offset.reset=none; a preferred-leader election or a
// reassignment every 4 s; and the linearizability clients of
// linearizability_test.go on two managers of rlmm's API, the leadership of
// their partitions switching between the two every 5 s. After each phase
// the checker fails the run on an acknowledged record lost or changed
// (everything from the log start offset read back in order), an
// OffsetOutOfRange inside the log, a history porcupine rejects, a sidecar
// whose hosted partitions (from its metrics) differ from its broker's
// replicas, an `rlmm verify` anomaly (warnings aside) or an `rlmm scrub`
// missing segment; a disk fault also fails it unless the sidecar counted
// the failed snapshot writes and wrote one again once the disk was back.
// TestFaultsAlone runs each fault alone: a network cut between a sidecar
// and the metadata topic's leader, a broker's host (broker and sidecar)
// partitioned from the others, a 200 ms link, a
// 5% lossy link, the snapshot disk full, read-only, a broker JVM and a
// sidecar frozen 30 s, and a broker killed -9 and restarted. Beside the
// frozen and the killed broker (the leader of most of the managers'
// metadata topic) a single manager's mutators (mutators_test.go) check
// that no call outlives its bound, that every error says whether its event
// may be recorded, that the manager follows the new leaders, and that a
// fresh manager's replay shows every acknowledged mutation; after the kill
// both managers and a fresh replay agree. TestFaultSoak runs random
// schedules of one to three faults at once from RLMM_SOAK_SEED for
// RLMM_SOAK_MINUTES, each schedule logged.
//
// TestDeposedLeaderCannotStartDeletions partitions a partition's leader's
// process (not its sidecar: a cut of the listeners it uses) from the other
// brokers and, once another leads, asks its sidecar as the
// deposed broker would to start deleting the segment at the log start: the
// leader fence (package fence) must refuse it, the segment stay finished and
// a reader at offset 0 get records (without the fence the reader gets
// OffsetOutOfRange, as the soak once did).
//
// TestSecurityEndToEnd drives the SASL_SSL listener with right and wrong
// credentials, an unknown CA and missing ACLs.
//
// With RLMM_FAULT_TESTS=1 alone, the tests that need no tiering or fault
// proxies (TestSecurityEndToEnd) run on a plain three-node cluster
// (kafkatest.Config{Nodes: 3, Security: kafkatest.SASLSCRAM}) instead;
// RLMM_FAULT_DIR=<dir> puts that cluster in <dir>: a cluster already there
// (started by `go run ./test/kafkatest/cmd/kafkatest start <dir> --nodes 3
// --security sasl_scram`, which a repeated run can reuse) is used and left
// running; an empty directory gets a new cluster, stopped at the end.
//
// What each test promises, and the figures of the last runs, are in
// docs/RELIABILITY.md ("Faults a cluster meets"). Every test reports what
// it tried and what held with t.Logf (run with -v to see the figures).
//
// Tools chosen: franz-go's kadm (already the project's admin client) finds
// partition leaders and in-sync replicas and sets the ACLs; porcupine (as in
// topicbased's linearizability test) checks the recorded history of two
// managers; goleak checks that nothing outlives the run.
package fault

// Package fault holds rlmm's tests against a real Apache Kafka cluster
// that fails: a three-node KRaft cluster (every node a broker and a
// controller voter) started by test/kafkatest, whose nodes the tests kill
// with SIGKILL, restart, and pause with SIGSTOP while managers of the
// topic-based manager write through kafkalog; and the same cluster's
// SASL_SSL listener (SCRAM-SHA-512 users created at format time, the
// StandardAuthorizer) with right and wrong credentials, an unknown CA and
// missing ACLs.
//
// The package has tests only (this file exists for its documentation). They
// run when RLMM_FAULT_TESTS=1 (make fault-test): TestMain then starts the
// cluster (kafkatest.Config{Nodes: 3, Security: kafkatest.SASLSCRAM}) in a
// temporary directory and stops it at the end; the harness also ends every
// broker if the test binary dies first. Without the variable every test
// says why it skips, and fails when CI=true. RLMM_FAULT_KEEP=1 keeps the
// cluster's directory (its broker logs) after the run. RLMM_FAULT_DIR=<dir>
// puts the cluster in <dir>: a cluster already there (started by
// `go run ./test/kafkatest/cmd/kafkatest start <dir> --nodes 3 --security
// sasl_scram`, which a repeated run can reuse) is used and left running;
// an empty directory gets a new cluster, stopped at the end.
//
// The cluster fault tests (cluster_*_test.go) run when RLMM_CLUSTER_FAULTS=1
// (make cluster-faults, a step of make test; make soak): a 3-broker Kafka
// 4.3.1 cluster with tiered storage (LocalTieredStorage) and rlmm's plugin
// as its RLMM, every listener behind a test/faultnet proxy (the sidecars
// told apart from their brokers by their process), each sidecar's snapshot
// directory on a test/faultdisk tmpfs (root needed) and its metrics on a
// port of its own (kafkatest.Config.NodeExtra). The workload: three tiered
// topics (RF 3 and min.insync.replicas 2, one RF 2 topic whose replicas
// move) under acks=all produce, every acknowledged offset and value
// recorded; a reader from each partition's log start offset (remote
// storage) with auto.offset.reset=none; a preferred-leader election or a
// reassignment every 4 s; and the linearizability clients above on two
// managers of rlmm's API. After each phase the checker fails the run on an
// acknowledged record lost or changed (everything from the log start
// offset read back in order), an OffsetOutOfRange inside the log, a
// history porcupine rejects, a sidecar whose hosted partitions (from its
// metrics) differ from its broker's replicas, an `rlmm verify` anomaly
// (warnings aside) or an `rlmm scrub` missing segment; a disk fault also
// fails it unless the sidecar counted the failed snapshot writes and wrote
// one again once the disk was back. TestFaultsAlone runs each fault alone
// (network cut between a sidecar and the metadata topic's leader, a broker
// partitioned, a 200 ms link, a 5% lossy link, the snapshot disk full,
// read-only, a broker JVM and a sidecar frozen 30 s); TestFaultSoak random
// schedules of one to three at once from RLMM_SOAK_SEED for
// RLMM_SOAK_MINUTES, each schedule logged.
//
// What each test promises, and the figures of the last runs, are in
// docs/RELIABILITY.md ("A cluster that fails"). Every test reports what it tried and what held
// with t.Logf (run with -v to see the figures).
//
// Tools chosen: franz-go's kadm (already the project's admin client) finds
// partition leaders and in-sync replicas and sets the ACLs; porcupine (as in
// topicbased's linearizability test) checks the recorded history of two
// managers; goleak checks that nothing outlives Close.
package fault

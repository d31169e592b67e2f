// Package faulttest holds rlmm's tests against a real Apache Kafka cluster
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
// What each test promises, and the figures of the last runs, are in
// docs/RELIABILITY.md ("A cluster that fails"). Every test reports what it tried and what held
// with t.Logf (run with -v to see the figures).
//
// Tools chosen: franz-go's kadm (already the project's admin client) finds
// partition leaders and in-sync replicas and sets the ACLs; porcupine (as in
// topicbased's linearizability test) checks the recorded history of two
// managers; goleak checks that nothing outlives Close.
package faulttest

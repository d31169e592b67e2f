// Package faulttest holds rlmm's tests against a real Apache Kafka cluster
// that fails: a three-node KRaft cluster (every node a broker and a
// controller voter) started by scripts/kafka.sh, whose nodes the tests kill
// with SIGKILL, restart, and pause with SIGSTOP while managers of the
// topic-based manager write through kafkalog; and the same cluster's
// SASL_SSL listener (SCRAM-SHA-512 users created at format time, the
// StandardAuthorizer) with right and wrong credentials, an unknown CA and
// missing ACLs.
//
// The package has tests only (this file exists for its documentation). They
// run when RLMM_FAULT_TESTS=1 (make fault-test): TestMain then starts the
// cluster in a temporary directory, with KAFKA_SECURITY=sasl_ssl, and stops
// it at the end. Without the variable every test says why it skips, and
// fails when CI=true. RLMM_FAULT_KEEP=1 keeps the cluster's directory (its
// broker logs) after the run; RLMM_FAULT_DIR=<dir> uses (or starts) the
// cluster in <dir> and leaves it running, for the caller to stop
// (scripts/test.sh does, so no broker outlives a crashed test binary).
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

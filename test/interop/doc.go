// Package interop holds the interoperability tests between rlmm and
// Apache Kafka's own Java TopicBasedRemoteLogMetadataManager (4.4.0): both
// share one __remote_log_metadata topic on a real broker, and each must see
// exactly what the other wrote.
//
// The package has no library code; its tests need a broker
// (RLMM_KAFKA_BOOTSTRAP) and the Java harness of test/interop/java built
// (scripts/interop.sh build). scripts/test.sh provides both; without them
// every test skips with the reason, or fails when CI=true.
//
// The Java side is interop's KafkaRlmmDriver, run as a child process: its
// `workload` subcommand and, to pay for one JVM start only, its `serve` mode
// (one long-lived Kafka manager driven by JSON lines on stdin). The Go side
// is topicbased over eventlog/kafkalog (franz-go), and the rlmm binary for
// inspect and verify. franz-go's kgo is used directly only to plant a
// garbage record and to copy a topic, which the event log API deliberately
// cannot do. The in-memory manager (memory) applies the same events as an
// independent model of the expected view.
//
// cmd/rlmmbench, beside the tests, is the Go half of `make bench-compare`.
package interop

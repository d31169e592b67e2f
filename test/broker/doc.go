// Package brokertest drives a real Apache Kafka broker (4.3.1 unless
// RLMM_KAFKA_VERSION names another 4.x) with tiered storage on
// (Kafka's LocalTieredStorage as the remote storage manager) and checks
// what it does through the remote log metadata it writes: segments copied
// and finished, read back from remote storage, deleted by retention,
// the partition deletion of a deleted topic, a broker restart, the rlmm
// sidecar killed with -9, leadership moving between two brokers, and a
// cluster of three (TestClusterOfThree: topics of replication factor 1 and 2
// over a metadata topic of 3 partitions, so that every broker consumes every
// metadata partition; a partition reassigned to a broker that never hosted
// it and read from offset 0 out of remote storage; leadership moves; a
// broker restart; and, with rlmm, each sidecar holding in memory exactly its
// broker's partitions and their live segments, read from its /metrics:
// rlmm_hosted_partitions, rlmm_cached_partitions, rlmm_cached_segments and
// rlmm_remote_partition_segments against the replica assignment and the
// metadata topic), and a rolling migration (TestRollingMigration: three
// brokers started on Kafka's RLMM, moved one at a time onto rlmm's plugin
// under load, so that the cluster runs mixed, and one moved back, following
// docs/migration.md, whose settings blocks the test reads; it runs with
// RLMM_BROKER_TEST=rlmm only, since it needs the plugin, and skips saying so
// with kafka).
//
// Every broker a test starts must run the Kafka version asked for: the
// "Kafka version:" lines of its broker.log (Kafka's AppInfoParser, logged at
// INFO by test/kafkatest) must all name it, or the test fails.
//
// Every Kafka 4.x line hosts the plugin: scripts/broker-test.sh versions
// (make broker-test-versions, part of make test) runs TestTieringLifecycle on
// the oldest and the newest (4.0.1, 4.4.0) and TestTieringCheck (tier, kill
// the sidecar, read every record back from offset 0 out of remote storage)
// on 4.1.1 and 4.2.1; 4.3.1 runs every test. A -run pattern that matches no
// test fails scripts/broker-test.sh (go test alone passes it). Each version tiers to the
// LocalTieredStorage of its own kafka-storage:<version>:jar:test, but 4.4.0,
// whose test jar Maven Central does not serve (and 4.3.1's does not load
// into it), tiers to fixture-rsm/: a file-system RemoteStorageManager written
// for these tests, a test fixture and not a product, which keeps its files
// under the same names as LocalTieredStorage (in rlmm-fixture-rsm/ instead
// of kafka-tiered-storage/), so checkRemoteFiles reads either.
//
// Aiven's RemoteStorageManager (tiered-storage-for-apache-kafka v1.0.0, the
// build in ../shared/aiven-rsm beside the repository) on S3 (the SeaweedFS of
// RLMM_S3_ENDPOINT; scripts/broker-test.sh starts one when unset) is the RSM
// of aiven_test.go (kafkatest.AivenRSM, on a new bucket per test): TestAivenTiering
// (tiering, remote reads, the custom metadata the RSM returns kept and handed
// back byte for byte, broker restarts, the sidecar killed, rlmm scrub,
// retention, topic deletion) and TestAivenScrubRebuild (rlmm scrub and repair
// on planted defects in the objects the RSM wrote, then the metadata topic
// emptied and rebuilt from the bucket). make test runs both with rlmm's
// plugin and TestAivenTiering with Kafka's own RLMM as the control.
//
// The same tests run with either RLMM, selected by one environment variable:
//
//	RLMM_BROKER_TEST=rlmm   rlmm's broker plugin (which runs `rlmm serve`)   make broker-test
//	RLMM_BROKER_TEST=kafka  Kafka's own TopicBasedRemoteLogMetadataManager   make broker-test-kafka
//
// With the variable unset every test skips, printing why (and fails when
// CI=true, so CI never passes on skipped broker tests). By hand:
//
//	RLMM_BROKER_TEST=kafka go test -race -v ./test/broker/
//	RLMM_BROKER_TEST=rlmm go test -race -v ./test/broker/
//
// (scripts/broker-test.sh rlmm|kafka, behind the make targets, does the same
// with the race detector and an S3 server.) TestMain builds the rlmm binary
// (the plugin's sidecar and the inspect/verify checks) and, with rlmm, the
// plugin (scripts/plugin.sh build, which skips Maven when nothing changed).
// make test runs make broker-test as its own step, after the other
// packages' tests (which leave this package out). Every test starts and
// stops its own brokers with test/kafkatest (kafkatest.StartT: a tiered
// cluster of 384 MiB brokers in a temporary directory of its own, every
// process stopped when the test ends); the first run resolves the version's
// jars from Maven Central into ~/.cache/rlmm (RLMM_CACHE). A failed test
// prints the tail of every broker log it started (the plugin logs the
// sidecar's lines into its broker's log) and keeps its directory;
// RLMM_KAFKA_KEEP=1 keeps every test's. A test that edits a node's settings
// between its stop and its start (the migration steps, an RSM's key prefix)
// gives the node lines of its own (kafkatest's Config.NodeExtra), written
// after the cluster's at the node's next start.
//
// The environment switches: RLMM_BROKER_TEST (which RLMM), RLMM_KAFKA_VERSION
// (which Kafka), RLMM_CACHE (where the jars go), RLMM_SKIP_KAFKA=1 (no
// broker here: every test skips, saying why), RLMM_KAFKA_KEEP=1, and the S3
// server of the Aiven tests (RLMM_S3_ENDPOINT, RLMM_S3_ACCESS_KEY,
// RLMM_S3_SECRET_KEY; the tests skip without one, saying why).
//
// What a 4.3.1 broker does, as these tests found it (with either RLMM):
//   - deleting a topic deletes every remote segment (DELETE_SEGMENT_STARTED,
//     FINISHED) but writes no partition delete event: nothing in the broker's
//     jars calls putRemotePartitionDeleteMetadata; the test accepts none, or
//     the three in order;
//   - a new leader copies its own local segment that holds the offset after
//     the old leader's last remote one whole, so finished segments of two
//     brokers overlap in one leader epoch (e.g. 1250..2249 by broker 2, then
//     2000..2999 by broker 1); rlmm verify reports this as a warning, and
//     the tests accept an overlap only where the copying broker changes;
//   - a broker stopped during a copy leaves that segment in
//     COPY_SEGMENT_STARTED (an orphan, which rlmm verify reports once older
//     than --stuck-after); the tests wait only for copies no finished segment
//     covers.
//
// The package has no library code. The metadata is read with rlmm's own
// packages (eventlog/kafkalog, internal/view, wire) and with the rlmm binary
// (inspect --kafka --json, verify --kafka); producing and consuming use
// franz-go's kgo, and topic administration kadm (the clients the project
// already depends on) plus raw kmsg requests where kadm has no call (creating
// a topic with an explicit replica assignment, ListOffsets for the earliest
// local offset).
package brokertest

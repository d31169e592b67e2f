// Package kafkatest runs real Apache Kafka clusters for rlmm's tests: N
// KRaft nodes on 127.0.0.1 (the first K combined broker+controller voters
// of a static quorum, the rest broker-only) of a chosen Kafka 4.x version,
// with a chosen listener security, and tiered storage with a chosen remote
// storage manager (RSM) and remote log metadata manager (RLMM: Kafka's
// TopicBasedRemoteLogMetadataManager or rlmm's broker plugin). A test
// starts, stops, kills (SIGKILL), pauses (SIGSTOP), resumes (SIGCONT) and
// restarts nodes; each node keeps its data across restarts, so a restart
// can switch the RLMM (WithRLMM) on the same data.
//
//	c := kafkatest.StartT(t, kafkatest.Config{Nodes: 3, Security: kafkatest.SASLSCRAM}, 5*time.Minute)
//	c.Node(2).Kill()
//	c.StartNode(ctx, 2)
//
// The command test/kafkatest/cmd/kafkatest does the same for a person
// (start DIR, stop DIR, status DIR).
//
// # What it chose, and why
//
// The broker comes from Maven Central, not a release tarball: Maven (the
// ordinary mvn client) resolves org.apache.kafka:kafka_2.13:VERSION and its
// runtime dependencies with the pom.xml embedded here, into the cache
// directory ~/.cache/rlmm (RLMM_CACHE) as kafka-VERSION/libs, complete when
// libs/.complete exists. Kafka's LocalTieredStorage comes the same
// way (kafka-storage:VERSION:jar:test); the project's file-system RSM
// (test/broker/fixture-rsm) and rlmm's plugin are built by Maven and
// scripts/plugin.sh. RegisterRSM adds another RSM by name: AivenRSM is
// Aiven's tiered-storage-for-apache-kafka on an S3 bucket.
//
// Every node keeps a PLAINTEXT listener for the brokers, the controllers,
// the RLMM's own Kafka client and the harness's readiness probe (a franz-go
// metadata request that must list the node); Security adds a second
// listener, SECURE, for clients: SSL (client certificates required),
// SASL_SSL with PLAIN or SCRAM-SHA-512 (users Users, the StandardAuthorizer,
// User:ANONYMOUS of PLAINTEXT a super user), or SASL_SSL with GSSAPI
// against the KDC of scripts/kdc.sh. The CA, the certificates and the
// keystores are made with Go's crypto/x509, go-pkcs12 and keystore-go, not
// openssl.
//
// Ports are chosen free at the first start and kept (a restarted node comes
// back where its clients expect it). Config.Proxy, when set, is asked for
// the address to advertise in front of each listener (PLAINTEXT,
// CONTROLLER, SECURE): the controllers' quorum, the brokers' replication,
// the RLMM's client and every test client then connect through it, so a
// fault test can cut, delay or drop any node's traffic with a proxy such
// as toxiproxy, which the caller owns.
//
// Every JVM leads its own process group (its children, such as the
// plugin's `rlmm serve`, join it) and, unless Config.Detached (the
// command's start), gets SIGKILL from the kernel when the process that
// started it dies, however it dies (PR_SET_PDEATHSIG): a test binary that
// panics or is killed by its timeout leaves no broker behind. Stop sends
// SIGTERM (and SIGCONT, for a paused node), SIGKILL after
// Config.StopTimeout, then ends what is left of each group, each process
// by its pid; StartT registers it with t.Cleanup. TestNoProcessLeft checks
// both paths. Node.Wait returns the exit status of a JVM that ended by
// itself; Config.NoReadyWait starts nodes without waiting for them to
// answer, for a test of a broker that is to stop itself (the plugin's
// fail-loud promise, test/broker/failloud_test.go).
//
// A cluster's directory holds node-N/ (server.properties and
// log4j2.properties, rewritten at each start; data/, kept; broker.log,
// broker.out, format.log, pid), security/ (the TLS material and
// users.properties, mode 0600), tiered/ (the file-system RSMs' shared
// root), bin/ (the rlmm binary a plugin cluster built) and cluster.json,
// the record of what Start chose (ports, cluster id, resolved jars), read
// by Open for the same cluster only: a Config is never overridden by a
// directory's past.
//
// The environment switches: RLMM_KAFKA_VERSION, the version of a cluster
// whose Config names none (DefaultVersion when unset); RLMM_CACHE, the
// cache; RLMM_SKIP_KAFKA=1 (scripts/test.sh's switch too): tests
// that need a broker (Require, StartT) skip saying why, as they do without
// java or mvn, and fail under CI=true; RLMM_KAFKA_KEEP=1 keeps a passed
// test's cluster directory. Run the package's broker tests only under the
// shared lock: flock /tmp/rlmm-heavy.lock go test ./test/kafkatest.
package kafkatest

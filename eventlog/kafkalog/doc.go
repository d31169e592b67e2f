// Package kafkalog is the eventlog.Log over a real Apache Kafka topic, by
// default Kafka's own __remote_log_metadata, so rlmm and Kafka's Java
// TopicBasedRemoteLogMetadataManager can share one topic.
//
// It uses franz-go (github.com/twmb/franz-go): kgo for producing and
// consuming, because it is a pure-Go client that speaks the whole modern
// protocol (idempotent producer, direct partition consumption with runtime
// Add/Remove) without cgo, and kadm for the admin calls (topic creation and
// description, ListOffsets for high-water marks). TLS and SASL (PLAIN,
// SCRAM-SHA-256, SCRAM-SHA-512) come from kgo's dialer and franz-go's
// pkg/sasl. Command-line flags use github.com/spf13/pflag, the flag library
// under cobra, so the rlmm command registers the same flags.
//
// Secured clusters take Kafka's client settings by their names
// (ParseProperties). Key and trust stores may be JKS, PKCS12 or PEM; the
// two Java formats are decoded by well-kept pure-Go libraries rather than
// by hand: github.com/pavlo-v-chernykh/keystore-go/v4 for JKS (the JKS
// library cert-manager writes its JKS stores with; it checks the store's
// integrity digest and decrypts keys under Sun's key protector) and
// software.sslmate.com/src/go-pkcs12 for PKCS12 (SSLMate's maintained
// successor of golang.org/x/crypto/pkcs12, which reads the PBES2/AES
// stores current keytool writes and Java's trusted-certificate bags). As
// in Java, a store's content, not its declared type, tells JKS from
// PKCS12. Both decoders get at most 4 MiB of a file and run under a
// recover, so a damaged store is an error naming the setting and the file,
// never a crash. SASL GSSAPI (Kerberos) is franz-go's pkg/sasl/kerberos
// over github.com/jcmturner/gokrb5/v8, the pure-Go Kerberos client (the
// one franz-go and sarama build on), logged in from a keytab; only the
// Krb5LoginModule options rlmm needs are parsed from sasl.jaas.config and
// any other is refused by name. Every client of a log gets its own
// Kerberos client, destroyed when that client closes. OAUTHBEARER is not
// supported: Kafka's clients take its token from a Java callback handler.
//
// How the eventlog contract maps onto Kafka:
//   - Open creates the topic when it is absent, the way Kafka's manager does
//     (cleanup.policy=delete, retention.ms, the partition count and
//     replication factor, min.insync.replicas), or uses the existing topic and
//     reports its real partition count. A partition count configured
//     explicitly that differs from the existing topic's is an error. Until
//     the cluster answers (within ConnectTimeout) it asks again every 50 ms
//     while the address refuses connections (a broker starting: the sidecar
//     of a broker's plugin starts before its broker's listener opens, and
//     the broker's partitions wait for it after that), else in steps of 50
//     ms doubling to 250 ms.
//   - Publish produces to an explicit partition with a null key and the
//     value as given, through an idempotent producer with acks=all; it
//     returns the offset from the produce response. "Durable" is Kafka's
//     meaning: every in-sync replica has the record (and
//     min.insync.replicas bounds how few they may be); brokers leave fsync to
//     the operating system unless the topic says otherwise. Concurrent publishers
//     share produce requests: a committer goroutine takes every record
//     published since its last round, hands them to a manually flushed kgo
//     producer and flushes them (one produce request per broker, a batch
//     per partition), one round in flight at a time (commit.go says why),
//     and a publisher that finds nothing in flight sends its own record at
//     once: that is the group commit. Stats counts what it achieved.
//   - A subscription is a kgo client of its own that consumes partitions
//     directly (no consumer group, nothing committed). kgo may hold fetched
//     records of a partition that was just removed or restarted; Poll
//     therefore filters every record against the subscription's own view of
//     each partition (the next offset it must deliver, and whether the
//     assignment changed while the fetch was outstanding), so Remove and Add
//     are exact as eventlog.Subscription requires.
//   - HighWaterMarks lists end offsets (ListOffsets) and retries partitions
//     whose leader is moving, for a bounded time; StartOffsets does the same
//     for the log start offsets (ListOffsets for the earliest offset). One
//     request names only the partitions asked for, and the log retries
//     them itself, every 10 ms at first (kgo's own retries of ListOffsets
//     are off): after a broker restarts, a metadata partition's readiness
//     waits for its high-water mark, and its leader comes up any moment.
//     Each partition's request carries the newest leader epoch the log
//     knows (its clients' metadata, earlier answers): a leader deposed while
//     it was frozen or cut off, which still believes it leads until it
//     reads the controller's news, then refuses (UNKNOWN_LEADER_EPOCH,
//     retried) instead of answering its own, older end offset; a Sync built
//     on that answer would miss events its successor acknowledged.
//   - An Add below the log start offset (records deleted by retention or
//     DeleteRecords) makes the broker answer OFFSET_OUT_OF_RANGE; the
//     consumer resets to the earliest offset (kgo.ConsumeResetOffset
//     AtStart, Kafka's auto.offset.reset=earliest) and Poll delivers from
//     there, so the first offset delivered shows the gap, as eventlog's
//     contract requires.
//
// Differences from Kafka's manager, on purpose: the replication factor
// defaults to min(3, live brokers) rather than a fixed 3 (Kafka's default
// fails on a cluster of fewer than 3 brokers), and min.insync.replicas to
// min(2, replication factor) for the same reason.
package kafkalog

// Package server is `rlmm serve`: the broker's framed socket (format
// rpc/brokerframe, messages of proto/rlmm/v1/rlmm.proto generated into
// rpc/rlmmpb) through which a Kafka broker's rlmm plugin uses a
// topicbased.Manager as its RemoteLogMetadataManager, and the operations
// endpoint (/metrics, /healthz, /readyz) next to it. The frames are its one
// protocol: on the Unix socket, and the same frames over TCP (inside TLS,
// the token in each hello) for a plugin that connects to a server of its
// own (the connect mode, rlmm.serve.address).
//
// # Design
//
//   - Serve (framed.go) serves the frames on a listener (with TLS when the
//     endpoint has it: tls.NewListener, the handshake bounded by the hello's
//     10 s). A connection's hello (read within 10 s and 64 KiB) must be a
//     broker hello of this version (with the endpoint's token when it has
//     one, compared in constant time, and this server's broker id when it
//     names one), answered with ServerInfo or refused with why. Each
//     connection is opened for one purpose (lookup, mutate, read, assign,
//     watch) and served on its own goroutine (brokerframe.go): every call of
//     Kafka's RLMM, the handshake, readiness pushes and ServerInfo, a
//     failure as one BrokerError (ErrorKind, may_be_recorded, the text).
//     Stop closes every listener and connection and waits for their
//     goroutines.
//
//   - Calls are thin calls of the manager, with the conversions between the
//     messages and rlmm's types in convert.go. Mutations and assignment
//     changes run with the request's timeout_ms (and its deadline_unix_ms
//     on a Unix socket: one read after it is not run, and one read more
//     than a second after it was sent first has the manager catch up with
//     its metadata partition, Manager.Sync, since the process did not run
//     meanwhile and its cache missed what the log took), so the caller's
//     bound holds (together with the manager's ConsumeWait), and return
//     when the manager's mutation returns, with its verdict. A list goes in
//     replies of at most 1 MiB of segments (brokerframe.ListBatchBytes),
//     all but the last marked more. The fetch path's lookup fills a reused
//     reply in place (lookupanswer.go): a hit allocates nothing of its own.
//
//   - Readiness is pushed (readiness.go) on a watch connection: the
//     manager's HostedReadiness (every hosted user partition and whether it
//     is ready) at once, empty while the manager is not up, and again after
//     each ReadinessChanged, reading the list after the wait so that
//     changes close together coalesce, and never sending an update equal to
//     the last. The plugin keeps it and answers isReady from memory.
//
//   - A read of a user partition the manager does not host is refused
//     (NOT_ASSIGNED), one still being built NOT_READY: never an empty
//     answer the broker would turn into OffsetOutOfRange. The plugin raises
//     ReplicaNotAvailableException for the first when a change naming the
//     partition waits in its outbox, RemoteResourceNotFoundException when
//     none does.
//
//   - The server accepts calls before its manager is up (SetManager comes
//     later): the plugin can connect at once while the log is opened and the
//     snapshot loaded. Until then reads answer NOT_READY, ServerInfo works,
//     mutations wait for the manager within their bound, and assignment
//     changes are recorded.
//
//   - The server owns the broker's assignment (hosted.go): each leadership
//     change and stop is applied to the hosted set and to the manager when
//     it is up, and acknowledged once the set is written beside the snapshot
//     (hosted.pb); a change whose write fails (a full disk) is served but
//     refused NOT_READY, and the plugin sends it again. SetManager hands a
//     new manager the whole set first. A server restarted after a crash so
//     hosts the broker's partitions before its first call, and the plugin
//     keeps no copy of the assignment, only the changes not acknowledged
//     yet. The broker's first change since it started (broker_start)
//     replaces the set: a partition that moved away while the broker was
//     down is never stopped by the broker, so that change drops it.
//
//   - The leader fence (SetLeaderFence, package fence): before a broker's
//     add (COPY_SEGMENT_STARTED) or update to DELETE_SEGMENT_STARTED is
//     published, the fence is asked whether the cluster names this broker
//     the user partition's leader; a refusal (rlmm.ErrNotLeader) publishes
//     nothing. A deposed leader cut off from the quorum, whose sidecar
//     still reaches the metadata topic, so cannot start deleting segments
//     the real leader keeps its log start on. rlmm serve sets it over
//     Kafka with --broker-id; other mutations are not fenced.
//
//   - Errors (errors.go): a failed call's BrokerError has the kind of the
//     rlmm sentinel and rlmm's message:
//
//     ErrInvalidArgument   INVALID_ARGUMENT
//     ErrInvalidTransition INVALID_TRANSITION
//     ErrUnknownSegment    UNKNOWN_SEGMENT
//     ErrNotReady          NOT_READY
//     ErrNotLeader         NOT_LEADER
//     ErrNotAssigned       NOT_ASSIGNED
//     ErrClosed            CLOSED
//     ErrCorrupt           CORRUPT
//     ErrTimeout           TIMEOUT
//     context canceled     TIMEOUT
//     anything else        INTERNAL
//
//     may_be_recorded (mutations only) is topicbased.MayBeRecorded: true
//     for an error after the event was handed to the log (a publish that
//     failed or timed out, a close, an unassignment or a timeout while the
//     pump had not applied it), false for everything refused before
//     publishing and for the state machine's verdicts, and false when the
//     server refused the call before reaching the manager (still starting,
//     a malformed request, a request read after its caller's deadline).
//
//   - Who may call (listen.go, auth.go, lock.go): by default only a Unix
//     socket, created with mode 0600 (under a umask, so there is no window
//     with a wider mode). A socket file already there is probed: a live
//     server makes ListenUnix fail with an *InUseError naming its pid (from
//     its answer to a broker hello); a dead one's file is removed. The data
//     (snapshot) directory is held with an flock on rlmm-serve.lock holding
//     the pid, so a second server on it is refused naming the holder; the
//     lock is held on a read-only descriptor, so it also works on a
//     directory remounted read-only (the server serves, and writes
//     snapshots once it is writable). TCP only when asked, on loopback
//     unless allowed otherwise, and then with TLS (client certificates
//     verified) and/or a token every hello must carry; `rlmm serve` refuses
//     plaintext TCP without a token, and a token without TLS off loopback.
//
//   - Operations (ops.go, metrics.go): Metrics implements every method of
//     topicbased.Metrics with Prometheus families (rlmm_events_*_total,
//     rlmm_partition_* gauges per metadata partition, the mutation latency
//     histogram rlmm_mutation_duration_seconds{op,result},
//     rlmm_snapshot_*, rlmm_history_lost_{events,gaps}_total per metadata
//     partition for events deleted before they were applied), and from the
//     manager's Stats at each scrape (StatsCollector) rlmm_hosted_partitions,
//     rlmm_cached_partitions, rlmm_cached_segments, rlmm_events_skipped_total,
//     rlmm_rebuild_passes_total, rlmm_rebuilt_partitions_total,
//     rlmm_tombstones_total; rlmm serve adds the leader fence's
//     rlmm_leader_fence_refusals_total and
//     rlmm_leader_fence_unanswered_rounds_total; /healthz is 200 until the manager is closed;
//     /readyz is 200 once the manager is up and every metadata partition
//     assigned so far is caught up, else 503 with a line saying which is not.
//
// Libraries: google.golang.org/protobuf (the frames' messages; the plugin's
// protobuf-java reads the same .proto), github.com/prometheus/client_golang
// (the Prometheus exposition format and its registry), the standard library
// for the rest (net, crypto/tls). One framed protocol serves every call,
// as Kafka's own brokers talk one framed protocol.
//
// # rlmm serve's command line (cmd/rlmm/serve.go)
//
// The metadata log (one of):
//
//	--kafka HOST:PORT[,...]     the cluster's __remote_log_metadata (created if missing)
//	  --kafka-topic NAME        (default __remote_log_metadata)
//	  --kafka-partitions N      remote.log.metadata.topic.num.partitions (default 50)
//	  --tls --tls-ca --tls-cert --tls-key --tls-insecure-skip-verify
//	  --sasl-mechanism --sasl-user --sasl-password   the Kafka client's security
//	--dir DIR                   the embedded log (created if missing; 50 partitions unless --kafka-partitions)
//	--properties FILE           key=value lines: remote.log.metadata.topic.{num.partitions,
//	                            replication.factor,min.isr,retention.ms}, remote.log.metadata.consume.wait.ms,
//	                            and the client keys bootstrap.servers, security.protocol, sasl.*, ssl.*
//	                            (ssl stores as PEM), client.id, each optionally prefixed by
//	                            remote.log.metadata.common.client. (kafkalog.ParseProperties);
//	                            any other key is refused, naming it. Flags override the file.
//
// State and identity:
//
//	--snapshot-dir DIR          snapshot directory, locked (default <--log-dir>.rlmm/snapshots; one of the two is required)
//	--log-dir DIR               the broker's log.dir
//	--snapshot-interval D       periodic snapshot (default 1m; negative: only at shutdown)
//	--broker-id N               reported by ServerInfo; a hello naming another broker is refused (default -1)
//	--consume-wait D            bound of a mutation's waits (default: consume.wait.ms of --properties, or 2m)
//
// Callers:
//
//	--socket PATH               Unix socket of the frames, mode 0600 (default <snapshot-dir>/rlmm.sock;
//	                            at most 107 bytes)
//	--listen-tcp ADDR           also the same frames over TCP (loopback unless --allow-remote): the
//	                            connect mode; needs --token-file and/or TLS with --listen-tls-client-ca
//	--listen-tls-cert FILE --listen-tls-key FILE --listen-tls-client-ca FILE
//	--token-file FILE           the token every TCP hello must carry (BrokerHello.token)
//	--allow-remote              allow non-loopback --listen-tcp / --metrics-listen (TCP then needs TLS)
//
// Operations:
//
//	--metrics-listen ADDR       HTTP /metrics /healthz /readyz (default off; loopback unless --allow-remote)
//	--log-format text|json      logs on stderr (default text)
//	--log-level debug|info|warn|error   (default info)
//	--ready-file PATH           written atomically once the socket accepts calls, removed at exit:
//	                            lines pid=N, socket=PATH, tcp=ADDR, metrics=ADDR
//	--shutdown-timeout D        bound of the endpoints' stop and of the final snapshot (default 10s)
//	--exit-with-stdin           also stop as on SIGTERM when stdin reaches EOF (give the child a pipe:
//	                            the server then stops when its parent dies, even by kill -9)
//	--serving-procs N           Go processors once the snapshot's state is built (default 1; 0 keeps
//	                            GOMAXPROCS; GOMAXPROCS in the environment wins)
//
// Nothing is printed on stdout. SIGTERM or SIGINT: the endpoints stop
// (every connection closed, a waiting mutation cancelled), the manager
// writes a final snapshot (within --shutdown-timeout), exit 0. Exit 3
// (settings refused): a flag or setting is refused (the message names it:
// bad flags, a --properties key or value, a file a setting names that
// cannot be read, a setting the cluster refuses such as a partition count
// other than the topic's); the same settings fail again, so the broker plugin stops at this code rather than restart the
// child. Exit 2: could not run for another reason, which may pass (a socket
// or snapshot directory held by another server, naming its pid, an
// unreachable cluster, a final snapshot that failed, with the reason); exit
// 1 is not used.
//
// # API version
//
// The hello carries the frames' version (brokerframe.Version, which is
// APIVersion, apiversion.go), raised when a change would make a client of
// the previous version misread an answer; ServerInfo states it as
// api_version. A server refuses a hello of another version naming both,
// and the broker plugin refuses a server of another (and fails the broker,
// as when a child's settings are refused). ServerInfo also answers started_unix_ms, with pid
// what tells a reconnecting client that the server is a new process.
package server

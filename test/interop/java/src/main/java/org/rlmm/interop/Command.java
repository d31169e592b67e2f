package org.rlmm.interop;

import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.utils.internals.Exit;
import org.apache.kafka.server.log.remote.metadata.storage.TopicBasedRemoteLogMetadataManager;
import org.apache.kafka.server.log.remote.metadata.storage.TopicBasedRemoteLogMetadataManagerConfig;
import org.apache.kafka.server.log.remote.storage.RemoteLogMetadata;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadata;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadataUpdate;
import org.apache.kafka.server.log.remote.storage.RemotePartitionDeleteMetadata;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

/**
 * What every subcommand of {@link KafkaRlmmDriver} shares: its --name value options, the JSON result
 * skeleton, Kafka's manager configured as a broker configures it, readiness polling, and the metadata
 * topic's admin helpers. One subclass per subcommand implements {@link #run()}.
 */
abstract class Command {
    static final String METADATA_TOPIC = TopicBasedRemoteLogMetadataManagerConfig.REMOTE_LOG_METADATA_TOPIC_NAME;
    /** Set by the exit procedure KafkaRlmmDriver installs when Kafka calls Exit.exit or Exit.halt. */
    static final AtomicReference<String> EXIT_CALLED = new AtomicReference<>();

    final Map<String, String> opts;

    Command(Map<String, String> opts) {
        this.opts = opts;
    }

    /** Runs the subcommand and returns its JSON result (with an "error" field on failure). */
    abstract ObjectNode run() throws Exception;

    String str(String name) {
        String v = opts.get(name);
        if (v == null) {
            throw new UsageException("missing --" + name);
        }
        return v;
    }

    String str(String name, String def) {
        return opts.getOrDefault(name, def);
    }

    long num(String name, long def) {
        String v = opts.get(name);
        if (v == null) {
            return def;
        }
        try {
            return Long.parseLong(v);
        } catch (NumberFormatException e) {
            throw new UsageException("--" + name + " " + v + " is not an integer");
        }
    }

    int metadataPartitions() {
        return (int) num("metadata-partitions", 50);
    }

    long timeoutMs() {
        return num("timeout-ms", 120_000);
    }

    static ObjectNode result(String command) {
        ObjectNode n = EventJson.MAPPER.createObjectNode();
        n.put("command", command);
        n.put("kafkaVersion", org.apache.kafka.common.utils.internals.AppInfoParser.getVersion());
        return n;
    }

    TopicBasedRemoteLogMetadataManager configure() throws IOException {
        String logDir = opts.get("log-dir");
        if (logDir == null) {
            Path tmp = Files.createTempDirectory("rlmm-interop-logdir");
            tmp.toFile().deleteOnExit();
            logDir = tmp.toString();
        }
        Map<String, Object> cfg = new HashMap<>();
        cfg.put(TopicBasedRemoteLogMetadataManagerConfig.REMOTE_LOG_METADATA_COMMON_CLIENT_PREFIX
                + "bootstrap.servers", str("bootstrap"));
        // 4.4 reads node.id (broker.id is deprecated and only warns); it names the clients.
        cfg.put(TopicBasedRemoteLogMetadataManagerConfig.NODE_ID, str("broker-id", "0"));
        cfg.put(TopicBasedRemoteLogMetadataManagerConfig.LOG_DIR, logDir);
        cfg.put(TopicBasedRemoteLogMetadataManagerConfig.REMOTE_LOG_METADATA_TOPIC_PARTITIONS_PROP,
                String.valueOf(metadataPartitions()));
        cfg.put(TopicBasedRemoteLogMetadataManagerConfig.REMOTE_LOG_METADATA_TOPIC_REPLICATION_FACTOR_PROP, "1");
        cfg.put(TopicBasedRemoteLogMetadataManagerConfig.REMOTE_LOG_METADATA_TOPIC_MIN_ISR_PROP, "1");
        cfg.put(TopicBasedRemoteLogMetadataManagerConfig.REMOTE_LOG_METADATA_INITIALIZATION_RETRY_MAX_TIMEOUT_MS_PROP,
                String.valueOf(timeoutMs()));
        TopicBasedRemoteLogMetadataManager m = new TopicBasedRemoteLogMetadataManager();
        m.configure(cfg);
        m.onBrokerReady(); // 4.2+: configure only prepares; this starts the initialization thread
        return m;
    }

    /** Polls isReady for every partition until all are ready; fails on timeout or an intercepted Exit. */
    void awaitReady(TopicBasedRemoteLogMetadataManager m, Set<TopicIdPartition> tps, long pollNanos) {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs());
        Set<TopicIdPartition> pending = new LinkedHashSet<>(tps);
        while (!pending.isEmpty()) {
            pending.removeIf(tp -> {
                try {
                    return m.isReady(tp);
                } catch (RuntimeException e) {
                    return false;
                }
            });
            if (pending.isEmpty()) {
                return;
            }
            String exit = EXIT_CALLED.get();
            if (exit != null) {
                throw new IllegalStateException("Kafka's manager failed: " + exit);
            }
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("not ready after " + timeoutMs() + " ms: " + pending.size()
                        + " partition(s), e.g. " + pending.iterator().next());
            }
            try {
                TimeUnit.NANOSECONDS.sleep(pollNanos);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while waiting for readiness", e);
            }
        }
    }

    static void closeQuietly(TopicBasedRemoteLogMetadataManager m) {
        try {
            m.close();
        } catch (Exception e) {
            System.err.println("KafkaRlmmDriver: close: " + e);
        }
    }

    /** Parses "topicId:topic-partition" (the TopicIdPartition text form); the topic may contain '-'. */
    static TopicIdPartition parseTp(String s) {
        int colon = s.indexOf(':');
        int dash = s.lastIndexOf('-');
        if (colon <= 0 || dash <= colon + 1) {
            throw new UsageException("partition " + s + " is not topicId:topic-partition");
        }
        try {
            return new TopicIdPartition(Uuid.fromString(s.substring(0, colon)), Integer.parseInt(s.substring(dash + 1)),
                    s.substring(colon + 1, dash));
        } catch (IllegalArgumentException e) {
            throw new UsageException("partition " + s + ": " + e.getMessage());
        }
    }

    Map<String, Object> clientProps() {
        Map<String, Object> p = new HashMap<>();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, str("bootstrap"));
        return p;
    }

    /** Creates the metadata topic as Kafka's manager would (or checks the existing one's partition count). */
    void ensureMetadataTopic(Admin admin) throws Exception {
        int want = metadataPartitions();
        try {
            NewTopic nt = new NewTopic(METADATA_TOPIC, want, (short) 1).configs(Map.of(
                    "retention.ms", "-1", "cleanup.policy", "delete", "min.insync.replicas", "1"));
            admin.createTopics(List.of(nt)).all().get(timeoutMs(), TimeUnit.MILLISECONDS);
            System.err.println("KafkaRlmmDriver: created " + METADATA_TOPIC + " with " + want + " partitions");
        } catch (java.util.concurrent.ExecutionException e) {
            if (!(e.getCause() instanceof TopicExistsException)) {
                throw e;
            }
        }
        // Wait until every partition has a leader before producing (fewer NOT_LEADER_OR_FOLLOWER retries).
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs());
        while (true) {
            TopicDescription d = admin.describeTopics(List.of(METADATA_TOPIC)).allTopicNames()
                    .get(timeoutMs(), TimeUnit.MILLISECONDS).get(METADATA_TOPIC);
            if (d.partitions().size() != want) {
                throw new IllegalStateException(METADATA_TOPIC + " has " + d.partitions().size()
                        + " partitions, --metadata-partitions says " + want);
            }
            long leaderless = d.partitions().stream().filter(p -> p.leader() == null || p.leader().id() < 0).count();
            if (leaderless == 0) {
                return;
            }
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException(leaderless + " partition(s) of " + METADATA_TOPIC + " have no leader after "
                        + timeoutMs() + " ms");
            }
            TimeUnit.MILLISECONDS.sleep(100);
        }
    }

    /** Publishes one event through Kafka's manager and waits for its future (bounded by --timeout-ms). */
    void apply(TopicBasedRemoteLogMetadataManager m, RemoteLogMetadata e) throws Exception {
        CompletableFuture<Void> f;
        if (e instanceof RemoteLogSegmentMetadata s) {
            f = m.addRemoteLogSegmentMetadata(s);
        } else if (e instanceof RemoteLogSegmentMetadataUpdate u) {
            f = m.updateRemoteLogSegmentMetadata(u);
        } else {
            f = m.putRemotePartitionDeleteMetadata((RemotePartitionDeleteMetadata) e);
        }
        f.get(timeoutMs(), TimeUnit.MILLISECONDS);
    }
}

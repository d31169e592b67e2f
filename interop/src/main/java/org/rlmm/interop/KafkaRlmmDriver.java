package org.rlmm.interop;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.utils.internals.Exit;
import org.apache.kafka.server.log.remote.metadata.storage.RemoteLogMetadataCache;
import org.apache.kafka.server.log.remote.metadata.storage.RemoteLogMetadataTopicPartitioner;
import org.apache.kafka.server.log.remote.metadata.storage.RlmmInteropAccess;
import org.apache.kafka.server.log.remote.metadata.storage.TopicBasedRemoteLogMetadataManager;
import org.apache.kafka.server.log.remote.metadata.storage.TopicBasedRemoteLogMetadataManagerConfig;
import org.apache.kafka.server.log.remote.metadata.storage.serialization.RemoteLogMetadataSerde;
import org.apache.kafka.server.log.remote.storage.RemoteLogMetadata;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentId;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadata;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadataUpdate;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentState;
import org.apache.kafka.server.log.remote.storage.RemotePartitionDeleteMetadata;
import org.apache.kafka.server.log.remote.storage.RemoteResourceNotFoundException;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryMXBean;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Drives Apache Kafka 4.4.0's own TopicBasedRemoteLogMetadataManager (and its cache) for rlmm's
 * interoperability tests and side-by-side benchmarks. Every subcommand prints exactly one JSON object on
 * stdout; logs go to stderr. Exit status: 0 success, 1 failure (the JSON then has an "error" field), 2 usage.
 *
 * <pre>
 * workload        --bootstrap B --topic-id ID --topic T --partitions N --spec FILE
 * dump            --bootstrap B --partitions ID:TOPIC-P[,ID:TOPIC-P...]
 * bench-mutations --bootstrap B --callers C --count N [--warmup W]
 * fill            --bootstrap B --events N [--topic-id ID] [--topic T] [--user-partitions P]
 * bench-coldstart --bootstrap B (--events N | --topic-id ID --topic T --user-partitions P)
 * bench-lookup    --segments S [--rounds R] [--ops O]
 * bench-heap      --segments S [--partitions P]
 * serve           --bootstrap B   (JSON-line requests on stdin, one JSON response line each; see README)
 * common:         --metadata-partitions M (50) --broker-id ID (0) --timeout-ms T (120000) --log-dir DIR (temp)
 * </pre>
 */
public final class KafkaRlmmDriver {
    static final String METADATA_TOPIC = TopicBasedRemoteLogMetadataManagerConfig.REMOTE_LOG_METADATA_TOPIC_NAME;
    private static final AtomicReference<String> EXIT_CALLED = new AtomicReference<>();

    private final Map<String, String> opts;

    private KafkaRlmmDriver(Map<String, String> opts) {
        this.opts = opts;
    }

    /** Entry point; see the class comment for the subcommands. */
    public static void main(String[] args) {
        if (System.getProperty("org.slf4j.simpleLogger.defaultLogLevel") == null) {
            System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn");
        }
        System.setProperty("org.slf4j.simpleLogger.logFile", "System.err");
        if (args.length < 1) {
            usage("missing subcommand");
        }
        Map<String, String> opts = new LinkedHashMap<>();
        for (int i = 1; i < args.length; i++) {
            if (!args[i].startsWith("--") || i + 1 >= args.length) {
                usage("bad argument " + args[i] + " (want --name value pairs)");
            }
            opts.put(args[i].substring(2), args[++i]);
        }
        // Kafka's manager calls Exit.exit(1) when its initialization fails; record it instead of dying,
        // so the waiting code can report why.
        Exit.setExitProcedure((code, msg) -> {
            EXIT_CALLED.compareAndSet(null, "Kafka called Exit.exit(" + code + "): " + msg);
            System.err.println("KafkaRlmmDriver: intercepted Exit.exit(" + code + "): " + msg);
        });
        Exit.setHaltProcedure((code, msg) -> {
            EXIT_CALLED.compareAndSet(null, "Kafka called Exit.halt(" + code + "): " + msg);
            System.err.println("KafkaRlmmDriver: intercepted Exit.halt(" + code + "): " + msg);
        });
        KafkaRlmmDriver d = new KafkaRlmmDriver(opts);
        ObjectNode out;
        int status = 0;
        try {
            out = switch (args[0]) {
                case "workload" -> d.workload();
                case "dump" -> d.dump();
                case "bench-mutations" -> d.benchMutations();
                case "fill" -> d.fill();
                case "bench-coldstart" -> d.benchColdstart();
                case "bench-lookup" -> d.benchLookup();
                case "bench-heap" -> d.benchHeap();
                case "serve" -> d.serve();
                default -> {
                    usage("unknown subcommand " + args[0]);
                    yield null;
                }
            };
            if (out.has("error")) {
                status = 1;
            }
        } catch (UsageException e) {
            usage(e.getMessage());
            return;
        } catch (Exception e) {
            e.printStackTrace(System.err);
            out = EventJson.MAPPER.createObjectNode();
            out.put("command", args[0]);
            out.put("error", String.valueOf(e));
            status = 1;
        }
        try {
            System.out.println(EventJson.MAPPER.writeValueAsString(out));
        } catch (IOException e) {
            e.printStackTrace(System.err);
            status = 1;
        }
        System.out.flush();
        // Kafka's client threads are not daemons; leave no matter what is still running.
        Runtime.getRuntime().halt(status);
    }

    private static void usage(String why) {
        System.err.println("KafkaRlmmDriver: " + why);
        System.err.println("usage: KafkaRlmmDriver <workload|dump|serve|bench-mutations|fill|bench-coldstart|bench-lookup|bench-heap> "
                + "[--name value ...] (see interop/README.md)");
        System.exit(2);
    }

    /** A bad or missing option. */
    static final class UsageException extends RuntimeException {
        UsageException(String msg) {
            super(msg);
        }
    }

    // ---- options ----

    private String str(String name) {
        String v = opts.get(name);
        if (v == null) {
            throw new UsageException("missing --" + name);
        }
        return v;
    }

    private String str(String name, String def) {
        return opts.getOrDefault(name, def);
    }

    private long num(String name, long def) {
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

    private int metadataPartitions() {
        return (int) num("metadata-partitions", 50);
    }

    private long timeoutMs() {
        return num("timeout-ms", 120_000);
    }

    private static ObjectNode result(String command) {
        ObjectNode n = EventJson.MAPPER.createObjectNode();
        n.put("command", command);
        n.put("kafkaVersion", org.apache.kafka.common.utils.internals.AppInfoParser.getVersion());
        return n;
    }

    // ---- the manager, configured as a broker configures it ----

    private TopicBasedRemoteLogMetadataManager configure() throws IOException {
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
    private void awaitReady(TopicBasedRemoteLogMetadataManager m, Set<TopicIdPartition> tps, long pollNanos) {
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

    private static void closeQuietly(TopicBasedRemoteLogMetadataManager m) {
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

    // ---- workload ----

    private ObjectNode workload() throws Exception {
        Uuid topicId = Uuid.fromString(str("topic-id"));
        String topic = str("topic");
        int n = (int) num("partitions", 1);
        JsonNode spec = EventJson.MAPPER.readTree(Path.of(str("spec")).toFile());
        if (spec.isObject() && spec.has("events")) {
            spec = spec.get("events");
        }
        if (!spec.isArray()) {
            throw new UsageException("--spec must hold a JSON array of events");
        }
        List<RemoteLogMetadata> events = new ArrayList<>();
        for (JsonNode e : spec) {
            events.add(EventJson.fromJson(e));
        }
        Set<TopicIdPartition> leaders = new LinkedHashSet<>();
        for (int p = 0; p < n; p++) {
            leaders.add(new TopicIdPartition(topicId, p, topic));
        }
        for (RemoteLogMetadata e : events) {
            leaders.add(e.topicIdPartition());
        }
        ObjectNode out = result("workload");
        TopicBasedRemoteLogMetadataManager m = configure();
        try {
            m.onPartitionLeadershipChanges(leaders, Set.of());
            awaitReady(m, leaders, TimeUnit.MILLISECONDS.toNanos(5));
            long t0 = System.nanoTime();
            ArrayNode errors = out.putArray("errors");
            int applied = 0;
            for (int i = 0; i < events.size(); i++) {
                RemoteLogMetadata e = events.get(i);
                try {
                    CompletableFuture<Void> f;
                    if (e instanceof RemoteLogSegmentMetadata s) {
                        f = m.addRemoteLogSegmentMetadata(s);
                    } else if (e instanceof RemoteLogSegmentMetadataUpdate u) {
                        f = m.updateRemoteLogSegmentMetadata(u);
                    } else {
                        f = m.putRemotePartitionDeleteMetadata((RemotePartitionDeleteMetadata) e);
                    }
                    f.get(timeoutMs(), TimeUnit.MILLISECONDS);
                    applied++;
                } catch (Exception ex) {
                    ObjectNode err = errors.addObject();
                    err.put("index", i);
                    err.put("type", e.getClass().getSimpleName());
                    err.put("error", String.valueOf(ex));
                }
            }
            out.put("events", events.size());
            out.put("applied", applied);
            out.put("elapsedMs", (System.nanoTime() - t0) / 1e6);
            if (!errors.isEmpty()) {
                out.put("error", errors.size() + " event(s) failed");
            }
        } finally {
            closeQuietly(m);
        }
        return out;
    }

    // ---- dump ----

    private ObjectNode dump() throws Exception {
        Set<TopicIdPartition> tps = new LinkedHashSet<>();
        for (String s : str("partitions").split(",")) {
            if (!s.isBlank()) {
                tps.add(parseTp(s.trim()));
            }
        }
        if (tps.isEmpty()) {
            throw new UsageException("--partitions is empty");
        }
        ObjectNode out = result("dump");
        TopicBasedRemoteLogMetadataManager m = configure();
        try {
            // A follower assignment: the manager consumes the metadata partitions but this driver writes nothing.
            m.onPartitionLeadershipChanges(Set.of(), tps);
            awaitReady(m, tps, TimeUnit.MILLISECONDS.toNanos(5));
            out.set("partitions", dumpPartitions(m, tps));
        } finally {
            closeQuietly(m);
        }
        return out;
    }

    /** The manager's view of each partition: its listed segments (sorted) and highest offset per epoch. */
    static ArrayNode dumpPartitions(TopicBasedRemoteLogMetadataManager m, Iterable<TopicIdPartition> tps) throws Exception {
        ArrayNode parts = EventJson.MAPPER.createArrayNode();
        for (TopicIdPartition tp : tps) {
            ObjectNode p = parts.addObject();
            p.set("topicIdPartition", EventJson.topicIdPartition(tp));
            List<RemoteLogSegmentMetadata> segs = new ArrayList<>();
            try {
                Iterator<RemoteLogSegmentMetadata> it = m.listRemoteLogSegments(tp);
                it.forEachRemaining(segs::add);
                p.put("found", true);
            } catch (RemoteResourceNotFoundException e) {
                // Kafka knows nothing of the partition (never written, or its delete finished).
                p.put("found", false);
            }
            segs.sort(EventJson.SEGMENT_ORDER);
            ArrayNode sa = p.putArray("segments");
            TreeSet<Integer> epochs = new TreeSet<>();
            for (RemoteLogSegmentMetadata seg : segs) {
                sa.add(EventJson.toJson(seg));
                epochs.addAll(seg.segmentLeaderEpochs().keySet());
            }
            ArrayNode ha = p.putArray("highestOffsetForEpoch");
            for (int epoch : epochs) {
                ObjectNode h = ha.addObject();
                h.put("epoch", epoch);
                Optional<Long> off = m.highestOffsetForEpoch(tp, epoch);
                if (off.isPresent()) {
                    h.put("offset", off.get());
                } else {
                    h.putNull("offset");
                }
            }
        }
        return parts;
    }

    // ---- serve: a long-lived manager driven by JSON lines on stdin ----

    /** Parses a partition given as {"topicId","topic","partition"} or as "topicId:topic-partition". */
    static TopicIdPartition tpOf(JsonNode n) {
        return n.isTextual() ? parseTp(n.asText()) : EventJson.parseTopicIdPartition(n);
    }

    static Set<TopicIdPartition> tpsOf(JsonNode req, String field) {
        Set<TopicIdPartition> out = new LinkedHashSet<>();
        JsonNode a = req.path(field);
        if (!a.isMissingNode() && !a.isArray()) {
            throw new IllegalArgumentException(field + " is not an array");
        }
        for (JsonNode n : a) {
            out.add(tpOf(n));
        }
        return out;
    }

    private ObjectNode serve() throws Exception {
        TopicBasedRemoteLogMetadataManager m = configure();
        java.io.BufferedReader in = new java.io.BufferedReader(
                new java.io.InputStreamReader(System.in, java.nio.charset.StandardCharsets.UTF_8));
        ObjectNode hello = result("serve");
        hello.put("ok", true);
        hello.put("op", "started");
        System.out.println(EventJson.MAPPER.writeValueAsString(hello));
        System.out.flush();
        int requests = 0;
        try {
            String line;
            while ((line = in.readLine()) != null) {
                if (line.isBlank()) {
                    continue;
                }
                requests++;
                ObjectNode resp = EventJson.MAPPER.createObjectNode();
                String op = "?";
                boolean close = false;
                try {
                    JsonNode req = EventJson.MAPPER.readTree(line);
                    op = req.path("op").asText("?");
                    resp.put("op", op);
                    switch (op) {
                        case "leadership" -> m.onPartitionLeadershipChanges(tpsOf(req, "leaders"), tpsOf(req, "followers"));
                        case "stopPartitions" -> m.onStopPartitions(tpsOf(req, "partitions"));
                        case "awaitReady" -> awaitReady(m, tpsOf(req, "partitions"), TimeUnit.MILLISECONDS.toNanos(2));
                        case "isReady" -> {
                            ArrayNode r = resp.putArray("ready");
                            for (TopicIdPartition tp : tpsOf(req, "partitions")) {
                                r.add(m.isReady(tp));
                            }
                        }
                        case "apply" -> {
                            RemoteLogMetadata e = EventJson.fromJson(req.path("event"));
                            CompletableFuture<Void> f;
                            if (e instanceof RemoteLogSegmentMetadata sm) {
                                f = m.addRemoteLogSegmentMetadata(sm);
                            } else if (e instanceof RemoteLogSegmentMetadataUpdate u) {
                                f = m.updateRemoteLogSegmentMetadata(u);
                            } else {
                                f = m.putRemotePartitionDeleteMetadata((RemotePartitionDeleteMetadata) e);
                            }
                            f.get(timeoutMs(), TimeUnit.MILLISECONDS);
                        }
                        case "dump" -> resp.set("partitions", dumpPartitions(m, tpsOf(req, "partitions")));
                        case "lookup" -> {
                            Optional<RemoteLogSegmentMetadata> r = m.remoteLogSegmentMetadata(tpOf(req.path("topicIdPartition")),
                                    req.path("epoch").asInt(), req.path("offset").asLong());
                            if (r.isPresent()) {
                                resp.set("segment", EventJson.toJson(r.get()));
                            } else {
                                resp.putNull("segment");
                            }
                        }
                        case "close" -> close = true;
                        default -> throw new IllegalArgumentException("unknown op " + op);
                    }
                    resp.put("ok", true);
                } catch (Exception e) {
                    resp.put("op", op);
                    resp.put("ok", false);
                    resp.put("error", String.valueOf(e instanceof java.util.concurrent.ExecutionException && e.getCause() != null
                            ? e.getCause() : e));
                }
                System.out.println(EventJson.MAPPER.writeValueAsString(resp));
                System.out.flush();
                if (close) {
                    break;
                }
            }
        } finally {
            closeQuietly(m);
        }
        ObjectNode out = result("serve");
        out.put("op", "closed");
        out.put("ok", true);
        out.put("requests", requests);
        return out;
    }

    // ---- bench-mutations ----

    static ObjectNode latencyJson(long[] nanos) {
        long[] s = nanos.clone();
        Arrays.sort(s);
        ObjectNode n = EventJson.MAPPER.createObjectNode();
        n.put("count", s.length);
        if (s.length == 0) {
            return n;
        }
        double sum = 0;
        for (long v : s) {
            sum += v;
        }
        n.put("p50", s[(int) Math.min(s.length - 1, Math.floor(0.50 * s.length))] / 1e3);
        n.put("p90", s[(int) Math.min(s.length - 1, Math.floor(0.90 * s.length))] / 1e3);
        n.put("p99", s[(int) Math.min(s.length - 1, Math.floor(0.99 * s.length))] / 1e3);
        n.put("max", s[s.length - 1] / 1e3);
        n.put("mean", sum / s.length / 1e3);
        return n;
    }

    private ObjectNode benchMutations() throws Exception {
        int callers = (int) num("callers", 1);
        int count = (int) num("count", 1000);
        int warmup = (int) num("warmup", 50);
        if (callers < 1 || count < callers) {
            throw new UsageException("want --callers >= 1 and --count >= --callers");
        }
        Uuid topicId = Uuid.randomUuid();
        String topic = "rlmm-bench-mutations";
        List<TopicIdPartition> tps = new ArrayList<>();
        for (int p = 0; p < callers; p++) {
            tps.add(new TopicIdPartition(topicId, p, topic));
        }
        ObjectNode out = result("bench-mutations");
        TopicBasedRemoteLogMetadataManager m = configure();
        try {
            m.onPartitionLeadershipChanges(new LinkedHashSet<>(tps), Set.of());
            awaitReady(m, new LinkedHashSet<>(tps), TimeUnit.MILLISECONDS.toNanos(5));
            int brokerId = Integer.parseInt(str("broker-id", "0"));
            // Warm-up on partition 0 (JIT, connections), not measured.
            long[] offsets = new long[callers];
            long[] scratch = new long[2];
            for (int i = 0; i < warmup; i++) {
                copySegment(m, tps.get(0), offsets, 0, brokerId, scratch);
            }
            int perCaller = count / callers;
            long[][] addLat = new long[callers][perCaller];
            long[][] updLat = new long[callers][perCaller];
            AtomicReference<Throwable> failure = new AtomicReference<>();
            Thread[] threads = new Thread[callers];
            long t0 = System.nanoTime();
            for (int c = 0; c < callers; c++) {
                final int caller = c;
                threads[c] = new Thread(() -> {
                    long[] lat = new long[2];
                    try {
                        for (int i = 0; i < perCaller; i++) {
                            copySegment(m, tps.get(caller), offsets, caller, brokerId, lat);
                            addLat[caller][i] = lat[0];
                            updLat[caller][i] = lat[1];
                        }
                    } catch (Throwable t) {
                        failure.compareAndSet(null, t);
                    }
                }, "bench-caller-" + c);
                threads[c].start();
            }
            for (Thread t : threads) {
                t.join();
            }
            long elapsed = System.nanoTime() - t0;
            if (failure.get() != null) {
                throw new IllegalStateException("a caller failed: " + failure.get(), failure.get());
            }
            long[] adds = Arrays.stream(addLat).flatMapToLong(Arrays::stream).toArray();
            long[] upds = Arrays.stream(updLat).flatMapToLong(Arrays::stream).toArray();
            long[] all = new long[adds.length + upds.length];
            System.arraycopy(adds, 0, all, 0, adds.length);
            System.arraycopy(upds, 0, all, adds.length, upds.length);
            out.put("callers", callers);
            out.put("segments", (long) perCaller * callers);
            out.put("mutations", all.length);
            out.put("elapsedMs", elapsed / 1e6);
            out.put("mutationsPerSec", all.length / (elapsed / 1e9));
            out.set("latencyUs", latencyJson(all));
            out.set("addLatencyUs", latencyJson(adds));
            out.set("updateLatencyUs", latencyJson(upds));
        } finally {
            closeQuietly(m);
        }
        return out;
    }

    /** One copied segment as a broker records it: add (STARTED), then update to FINISHED; lat gets both latencies. */
    private void copySegment(TopicBasedRemoteLogMetadataManager m, TopicIdPartition tp, long[] offsets, int slot, int brokerId,
                             long[] lat) throws Exception {
        long start = offsets[slot];
        offsets[slot] = start + 100;
        RemoteLogSegmentId id = new RemoteLogSegmentId(tp, Uuid.randomUuid());
        long now = System.currentTimeMillis();
        RemoteLogSegmentMetadata md = new RemoteLogSegmentMetadata(id, start, start + 99, now, brokerId, now, 1 << 20,
                Optional.empty(), RemoteLogSegmentState.COPY_SEGMENT_STARTED, Map.of(0, start));
        long t0 = System.nanoTime();
        m.addRemoteLogSegmentMetadata(md).get(timeoutMs(), TimeUnit.MILLISECONDS);
        long t1 = System.nanoTime();
        m.updateRemoteLogSegmentMetadata(new RemoteLogSegmentMetadataUpdate(id, System.currentTimeMillis(), Optional.empty(),
                RemoteLogSegmentState.COPY_SEGMENT_FINISHED, brokerId)).get(timeoutMs(), TimeUnit.MILLISECONDS);
        long t2 = System.nanoTime();
        lat[0] = t1 - t0;
        lat[1] = t2 - t1;
    }

    // ---- fill and bench-coldstart ----

    private Map<String, Object> clientProps() {
        Map<String, Object> p = new HashMap<>();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, str("bootstrap"));
        return p;
    }

    /** Creates the metadata topic as Kafka's manager would (or checks the existing one's partition count). */
    private void ensureMetadataTopic(Admin admin) throws Exception {
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

    private ObjectNode fill() throws Exception {
        long events = num("events", 100_000);
        Uuid topicId = opts.containsKey("topic-id") ? Uuid.fromString(str("topic-id")) : Uuid.randomUuid();
        String topic = str("topic", "rlmm-coldstart");
        int userPartitions = (int) num("user-partitions", 50);
        return doFill(events, topicId, topic, userPartitions);
    }

    private ObjectNode doFill(long events, Uuid topicId, String topic, int userPartitions) throws Exception {
        try (Admin admin = Admin.create(clientProps())) {
            ensureMetadataTopic(admin);
        }
        Map<String, Object> pp = clientProps();
        pp.put(ProducerConfig.ACKS_CONFIG, "all");
        // Not idempotent: right after topic creation 4.4.0 answered NOT_LEADER_OR_FOLLOWER and the idempotent
        // producer then looped on OUT_OF_ORDER_SEQUENCE_NUMBER for good. One request in flight keeps order.
        pp.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "false");
        pp.put(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, "1");
        pp.put(ProducerConfig.LINGER_MS_CONFIG, "10");
        pp.put(ProducerConfig.BATCH_SIZE_CONFIG, String.valueOf(512 * 1024));
        pp.put(ProducerConfig.BUFFER_MEMORY_CONFIG, String.valueOf(256L * 1024 * 1024));
        RemoteLogMetadataSerde serde = new RemoteLogMetadataSerde();
        RemoteLogMetadataTopicPartitioner partitioner = new RemoteLogMetadataTopicPartitioner(metadataPartitions());
        TopicIdPartition[] tps = new TopicIdPartition[userPartitions];
        int[] mp = new int[userPartitions];
        long[] next = new long[userPartitions];
        for (int p = 0; p < userPartitions; p++) {
            tps[p] = new TopicIdPartition(topicId, p, topic);
            mp[p] = partitioner.metadataPartition(tps[p]);
        }
        int brokerId = Integer.parseInt(str("broker-id", "0"));
        AtomicReference<Exception> sendError = new AtomicReference<>();
        long t0 = System.nanoTime();
        long segments = 0;
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(pp, new ByteArraySerializer(), new ByteArraySerializer())) {
            long written = 0;
            Random rnd = new Random(7);
            while (written < events) {
                int p = (int) (segments % userPartitions);
                long start = next[p];
                next[p] = start + 100;
                RemoteLogSegmentId id = new RemoteLogSegmentId(tps[p], new Uuid(rnd.nextLong(), rnd.nextLong()));
                long now = System.currentTimeMillis();
                RemoteLogSegmentMetadata md = new RemoteLogSegmentMetadata(id, start, start + 99, now, brokerId, now, 1 << 20,
                        Optional.empty(), RemoteLogSegmentState.COPY_SEGMENT_STARTED, Map.of(0, start));
                producer.send(new ProducerRecord<>(METADATA_TOPIC, mp[p], null, serde.serialize(md)), (r, e) -> {
                    if (e != null) {
                        sendError.compareAndSet(null, e);
                    }
                });
                written++;
                segments++;
                if (written < events) {
                    RemoteLogSegmentMetadataUpdate u = new RemoteLogSegmentMetadataUpdate(id, now, Optional.empty(),
                            RemoteLogSegmentState.COPY_SEGMENT_FINISHED, brokerId);
                    producer.send(new ProducerRecord<>(METADATA_TOPIC, mp[p], null, serde.serialize(u)), (r, e) -> {
                        if (e != null) {
                            sendError.compareAndSet(null, e);
                        }
                    });
                    written++;
                }
                if (sendError.get() != null) {
                    throw sendError.get();
                }
            }
            producer.flush();
        }
        if (sendError.get() != null) {
            throw sendError.get();
        }
        long elapsed = System.nanoTime() - t0;
        ObjectNode out = result("fill");
        out.put("topicId", topicId.toString());
        out.put("topic", topic);
        out.put("userPartitions", userPartitions);
        out.put("events", events);
        out.put("segments", segments);
        out.put("elapsedMs", elapsed / 1e6);
        out.put("eventsPerSec", events / (elapsed / 1e9));
        return out;
    }

    private ObjectNode benchColdstart() throws Exception {
        ObjectNode out = result("bench-coldstart");
        Uuid topicId;
        String topic;
        int userPartitions;
        if (opts.containsKey("topic-id")) {
            topicId = Uuid.fromString(str("topic-id"));
            topic = str("topic", "rlmm-coldstart");
            userPartitions = (int) num("user-partitions", 50);
        } else {
            long events = num("events", -1);
            if (events < 1) {
                throw new UsageException("want --events N (fill first) or --topic-id of an earlier fill");
            }
            topicId = Uuid.randomUuid();
            topic = "rlmm-coldstart";
            userPartitions = (int) num("user-partitions", 50);
            out.set("fill", doFill(events, topicId, topic, userPartitions));
        }
        Set<TopicIdPartition> tps = new LinkedHashSet<>();
        RemoteLogMetadataTopicPartitioner partitioner = new RemoteLogMetadataTopicPartitioner(metadataPartitions());
        Set<Integer> mps = new TreeSet<>();
        for (int p = 0; p < userPartitions; p++) {
            TopicIdPartition tp = new TopicIdPartition(topicId, p, topic);
            tps.add(tp);
            mps.add(partitioner.metadataPartition(tp));
        }
        long eventsInAssigned = 0;
        Map<String, Object> cp = clientProps();
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(cp, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            List<TopicPartition> tpl = mps.stream().map(i -> new TopicPartition(METADATA_TOPIC, i)).toList();
            for (long v : c.endOffsets(tpl).values()) {
                eventsInAssigned += v;
            }
        }
        long t0 = System.nanoTime();
        TopicBasedRemoteLogMetadataManager m = configure();
        try {
            m.onPartitionLeadershipChanges(tps, Set.of());
            long deadline = t0 + TimeUnit.MILLISECONDS.toNanos(timeoutMs());
            while (!RlmmInteropAccess.isInitialized(m) && EXIT_CALLED.get() == null && System.nanoTime() < deadline) {
                Thread.onSpinWait();
                TimeUnit.MICROSECONDS.sleep(200);
            }
            long tInit = System.nanoTime();
            awaitReady(m, tps, TimeUnit.MICROSECONDS.toNanos(200));
            long tReady = System.nanoTime();
            long loaded = 0;
            for (TopicIdPartition tp : tps) {
                Iterator<RemoteLogSegmentMetadata> it = m.listRemoteLogSegments(tp);
                while (it.hasNext()) {
                    it.next();
                    loaded++;
                }
            }
            out.put("segmentsLoaded", loaded);
            out.put("topicId", topicId.toString());
            out.put("userPartitions", userPartitions);
            out.put("metadataPartitionsAssigned", mps.size());
            out.put("eventsInAssignedMetadataPartitions", eventsInAssigned);
            out.put("initMs", (tInit - t0) / 1e6);
            out.put("configureToReadyMs", (tReady - t0) / 1e6);
            out.put("replayEventsPerSec", eventsInAssigned / ((tReady - tInit) / 1e9));
        } finally {
            closeQuietly(m);
        }
        return out;
    }

    // ---- bench-lookup and bench-heap: Kafka's RemoteLogMetadataCache directly ----

    /** Adds a finished single-epoch segment [start, start+99] to a cache the way Kafka's consumer applies events. */
    private static void addFinished(RemoteLogMetadataCache cache, TopicIdPartition tp, Uuid id, long start) throws Exception {
        RemoteLogSegmentId sid = new RemoteLogSegmentId(tp, id);
        RlmmInteropAccess.addCopyInProgress(cache, new RemoteLogSegmentMetadata(sid, start, start + 99, 1_700_000_000_000L + start,
                1, 1_700_000_000_000L, 1 << 20, Optional.empty(), RemoteLogSegmentState.COPY_SEGMENT_STARTED, Map.of(0, start)));
        RlmmInteropAccess.update(cache, new RemoteLogSegmentMetadataUpdate(sid, 1_700_000_000_001L, Optional.empty(),
                RemoteLogSegmentState.COPY_SEGMENT_FINISHED, 1));
    }

    private ObjectNode benchLookup() throws Exception {
        int segments = (int) num("segments", 10_000);
        int rounds = (int) num("rounds", 10);
        long ops = num("ops", 5_000_000);
        TopicIdPartition tp = new TopicIdPartition(new Uuid(11, 12), 0, "rlmm-bench-lookup");
        RemoteLogMetadataCache cache = RlmmInteropAccess.newCache();
        Random rnd = new Random(1);
        for (int i = 0; i < segments; i++) {
            addFinished(cache, tp, new Uuid(rnd.nextLong(), rnd.nextLong()), i * 100L);
        }
        long[] targets = new long[1 << 16];
        for (int i = 0; i < targets.length; i++) {
            targets[i] = (long) (rnd.nextDouble() * segments * 100L);
        }
        long checksum = 0;
        // Warm-up: let the JIT compile the lookup path before timing.
        for (int r = 0; r < 3; r++) {
            checksum += lookupLoop(cache, targets, ops);
        }
        double[] nsPerOp = new double[rounds];
        for (int r = 0; r < rounds; r++) {
            long t0 = System.nanoTime();
            checksum += lookupLoop(cache, targets, ops);
            nsPerOp[r] = (System.nanoTime() - t0) / (double) ops;
        }
        double[] sorted = nsPerOp.clone();
        Arrays.sort(sorted);
        ObjectNode out = result("bench-lookup");
        out.put("segments", segments);
        out.put("rounds", rounds);
        out.put("opsPerRound", ops);
        ObjectNode ns = out.putObject("nsPerOp");
        ns.put("median", sorted[rounds / 2]);
        ns.put("min", sorted[0]);
        ns.put("max", sorted[rounds - 1]);
        ArrayNode all = out.putArray("roundsNsPerOp");
        for (double v : nsPerOp) {
            all.add(v);
        }
        out.put("checksum", checksum);
        return out;
    }

    private static long lookupLoop(RemoteLogMetadataCache cache, long[] targets, long ops) {
        long sum = 0;
        int mask = targets.length - 1;
        for (long i = 0; i < ops; i++) {
            Optional<RemoteLogSegmentMetadata> r = RlmmInteropAccess.lookup(cache, 0, targets[(int) (i & mask)]);
            if (r.isPresent()) {
                sum += r.get().endOffset();
            } else {
                sum--;
            }
        }
        return sum;
    }

    private static long usedHeapAfterGc() throws InterruptedException {
        MemoryMXBean mem = ManagementFactory.getMemoryMXBean();
        long used = Long.MAX_VALUE;
        for (int i = 0; i < 4; i++) {
            System.gc();
            Thread.sleep(100);
            used = Math.min(used, mem.getHeapMemoryUsage().getUsed());
        }
        return used;
    }

    private ObjectNode benchHeap() throws Exception {
        int segments = (int) num("segments", 1_000_000);
        int partitions = (int) num("partitions", 100);
        if (partitions < 1 || segments < partitions) {
            throw new UsageException("want --partitions >= 1 and --segments >= --partitions");
        }
        Random rnd = new Random(3);
        // The baseline is taken before any segment exists: ids, metadata objects and Kafka's epoch indexes all count.
        long before = usedHeapAfterGc();
        long t0 = System.nanoTime();
        Map<TopicIdPartition, RemoteLogMetadataCache> caches = new HashMap<>();
        Uuid topicId = new Uuid(21, 22);
        for (int p = 0; p < partitions; p++) {
            TopicIdPartition tp = new TopicIdPartition(topicId, p, "rlmm-bench-heap");
            RemoteLogMetadataCache cache = RlmmInteropAccess.newCache();
            caches.put(tp, cache);
            int n = segments / partitions + (p < segments % partitions ? 1 : 0);
            for (int i = 0; i < n; i++) {
                addFinished(cache, tp, new Uuid(rnd.nextLong(), rnd.nextLong()), i * 100L);
            }
        }
        long populateNs = System.nanoTime() - t0;
        long after = usedHeapAfterGc();
        ObjectNode out = result("bench-heap");
        out.put("segments", segments);
        out.put("partitions", partitions);
        out.put("heapBeforeBytes", before);
        out.put("heapAfterBytes", after);
        out.put("bytesPerSegment", (after - before) / (double) segments);
        out.put("populateMs", populateNs / 1e6);
        out.put("maxHeapBytes", Runtime.getRuntime().maxMemory());
        out.put("gc", String.join(",", ManagementFactory.getGarbageCollectorMXBeans().stream()
                .map(java.lang.management.GarbageCollectorMXBean::getName).toList()));
        out.put("jvmArgs", String.join(" ", ManagementFactory.getRuntimeMXBean().getInputArguments()));
        // Keep the caches reachable until after the measurement.
        out.put("cachesRetained", caches.size());
        java.lang.ref.Reference.reachabilityFence(caches);
        return out;
    }
}

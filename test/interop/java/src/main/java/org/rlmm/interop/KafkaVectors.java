package org.rlmm.interop;

import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.server.log.remote.metadata.storage.RemoteLogMetadataTopicPartitioner;
import org.apache.kafka.server.log.remote.metadata.storage.RemoteLogSegmentMetadataSnapshot;
import org.apache.kafka.server.log.remote.metadata.storage.serialization.RemoteLogMetadataSerde;
import org.apache.kafka.server.log.remote.storage.RemoteLogMetadata;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentId;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadata;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadata.CustomMetadata;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadataUpdate;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentState;
import org.apache.kafka.server.log.remote.storage.RemotePartitionDeleteMetadata;
import org.apache.kafka.server.log.remote.storage.RemotePartitionDeleteState;

import java.io.IOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.TreeMap;

/**
 * Writes testdata/kafka-vectors.json: record values produced by Kafka 4.4.0's own RemoteLogMetadataSerde from
 * model objects built here, each with the event JSON of the same Java values, and metadata partitions computed
 * by Kafka's own RemoteLogMetadataTopicPartitioner. Usage: KafkaVectors OUTPUT.json
 */
public final class KafkaVectors {
    private static final HexFormat HEX = HexFormat.of();
    private static final RemoteLogMetadataSerde SERDE = new RemoteLogMetadataSerde();

    /** Worked example of kafka-rlmm.md section 6.6 (bytes verified independently of this program). */
    static final String WORKED_6_6 = "01000004666f6f00000000000000010000000000000002000000030000000000000000030000000000000004"
            + "000000000000000000000000000000006300000001" + "00000000000003e800000000000007d0020000000000000000000000000000000400000000";

    /** Section 6.7 vectors, keyed by the record name used below. */
    static final Map<String, String> DOC_VECTORS = Map.of(
            "segment-basic", WORKED_6_6,
            "segment-two-epochs-custom",
            WORKED_6_6.substring(0, WORKED_6_6.indexOf("07d0") + 4) + "03" + "00000000" + "0000000000000000" + "00"
                    + "00000001" + "0000000000000032" + "00" + "00000400" + "030a0b" + "00" + "00",
            "update-finished",
            "01010004666f6f0000000000000001000000000000000200000003000000000000000003000000000000000400"
                    + "000000020000000000000bb8000100",
            "partition-delete-marked",
            "01020004666f6f000000000000000100000000000000020000000300000000050000000000000fa00000",
            "snapshot-finished",
            "010300" + "00000000000000030000000000000004" + "00000000000000000000000000000063" + "00000001"
                    + "00000000000003e800000000000007d0" + "02" + "00000000" + "0000000000000000" + "00" + "00000400" + "00" + "01" + "00");

    private final List<ObjectNode> records = new ArrayList<>();
    private final Map<String, String> hexByName = new LinkedHashMap<>();
    private int failures;

    private KafkaVectors() {
    }

    /** Entry point: writes the vectors file given as the only argument. */
    public static void main(String[] args) throws IOException {
        if (args.length != 1) {
            System.err.println("usage: KafkaVectors OUTPUT.json");
            System.exit(2);
        }
        KafkaVectors v = new KafkaVectors();
        v.buildRecords();
        List<ObjectNode> partitioner = buildPartitioner(v);
        v.checkDocVectors();
        if (v.failures > 0) {
            System.err.println("KafkaVectors: " + v.failures + " sanity check(s) failed; not writing " + args[0]);
            System.exit(1);
        }
        write(Path.of(args[0]), v.records, partitioner);
        System.err.println("KafkaVectors: wrote " + v.records.size() + " records and " + partitioner.size()
                + " partitioner rows to " + args[0]);
    }

    private void fail(String msg) {
        failures++;
        System.err.println("SANITY FAIL: " + msg);
    }

    // ---- record vectors ----

    private void add(String name, RemoteLogMetadata md) {
        if (hexByName.containsKey(name)) {
            throw new IllegalStateException("duplicate vector name " + name);
        }
        byte[] bytes = SERDE.serialize(md);
        // Round trip through Kafka's own decoder: a vector Kafka itself cannot read back would be useless.
        RemoteLogMetadata back = SERDE.deserialize(bytes);
        if (!back.equals(md)) {
            fail(name + ": Kafka's deserialize(serialize(x)) != x: " + back + " vs " + md);
        }
        String hex = HEX.formatHex(bytes);
        ObjectNode r = EventJson.MAPPER.createObjectNode();
        r.put("name", name);
        r.put("apiKey", EventJson.apiKey(md));
        r.put("hex", hex);
        r.set("event", EventJson.toJson(md));
        records.add(r);
        hexByName.put(name, hex);
    }

    private void checkDocVectors() {
        for (Map.Entry<String, String> e : DOC_VECTORS.entrySet()) {
            String got = hexByName.get(e.getKey());
            if (!e.getValue().equals(got)) {
                fail("vector " + e.getKey() + " differs from kafka-rlmm.md:\n  doc:   " + e.getValue() + "\n  kafka: " + got);
            } else {
                System.err.println("sanity: " + e.getKey() + " equals the kafka-rlmm.md bytes ("
                        + e.getValue().length() / 2 + " bytes)");
            }
        }
        String txn = hexByName.get("segment-txn-idx-empty");
        String want = WORKED_6_6.substring(0, WORKED_6_6.length() - 2) + "01000101";
        if (!want.equals(txn)) {
            fail("segment-txn-idx-empty: want " + want + " got " + txn);
        } else {
            System.err.println("sanity: segment-txn-idx-empty is 6.6 with the tag section 01000101");
        }
        String longName = hexByName.get("partition-delete-topic-200");
        if (longName == null || !longName.startsWith("010200c90174747474")) {
            fail("partition-delete-topic-200 does not start with 010200c901: " + longName);
        }
    }

    static Uuid uuid(long msb, long lsb) {
        return new Uuid(msb, lsb);
    }

    static TopicIdPartition tp(Uuid id, String topic, int partition) {
        return new TopicIdPartition(id, partition, topic);
    }

    static Map<Integer, Long> epochs(long... pairs) {
        Map<Integer, Long> m = new TreeMap<>();
        for (int i = 0; i < pairs.length; i += 2) {
            m.put((int) pairs[i], pairs[i + 1]);
        }
        return m;
    }

    static Optional<CustomMetadata> custom(byte[] b) {
        return b == null ? Optional.empty() : Optional.of(new CustomMetadata(b));
    }

    static byte[] pattern(int n) {
        byte[] b = new byte[n];
        for (int i = 0; i < n; i++) {
            b[i] = (byte) (i * 7 + 1);
        }
        return b;
    }

    static RemoteLogSegmentMetadata seg(RemoteLogSegmentId id, long start, long end, long maxTs, int broker, long eventTs,
                                        int size, byte[] cm, RemoteLogSegmentState state, Map<Integer, Long> ep,
                                        boolean txnIdxEmpty) {
        return new RemoteLogSegmentMetadata(id, start, end, maxTs, broker, eventTs, size, custom(cm), state, ep, txnIdxEmpty);
    }

    private void buildRecords() {
        Uuid topicId = uuid(1, 2);
        TopicIdPartition foo3 = tp(topicId, "foo", 3);
        RemoteLogSegmentId seg34 = new RemoteLogSegmentId(foo3, uuid(3, 4));
        String t200 = "t".repeat(200);
        String t249 = "x".repeat(120) + "-" + "y.".repeat(64);
        TopicIdPartition long200 = tp(uuid(0x1111111111111111L, 0x2222222222222222L), t200, 0);
        TopicIdPartition long249 = tp(uuid(-1, -2), t249, 7);
        TopicIdPartition utf8 = tp(uuid(5, 6), "t\u00f3pico-\u00fc-\u65e5\u672c", 1);

        // apiKey 0: segment metadata
        add("segment-basic", seg(seg34, 0, 99, 1000, 1, 2000, 1024, null, RemoteLogSegmentState.COPY_SEGMENT_STARTED,
                epochs(0, 0), false));
        add("segment-two-epochs-custom", seg(seg34, 0, 99, 1000, 1, 2000, 1024, new byte[]{0x0a, 0x0b},
                RemoteLogSegmentState.COPY_SEGMENT_STARTED, epochs(0, 0, 1, 50), false));
        add("segment-txn-idx-empty", seg(seg34, 0, 99, 1000, 1, 2000, 1024, null, RemoteLogSegmentState.COPY_SEGMENT_STARTED,
                epochs(0, 0), true));
        add("segment-custom-empty", seg(seg34, 0, 99, 1000, 1, 2000, 1024, new byte[0],
                RemoteLogSegmentState.COPY_SEGMENT_STARTED, epochs(0, 0), false));
        add("segment-custom-empty-txn-idx-empty", seg(seg34, 0, 99, 1000, 1, 2000, 1024, new byte[0],
                RemoteLogSegmentState.COPY_SEGMENT_STARTED, epochs(0, 0), true));
        add("segment-custom-128", seg(seg34, 100, 199, 5000, 2, 6000, 4096, pattern(128),
                RemoteLogSegmentState.COPY_SEGMENT_STARTED, epochs(1, 100), false));
        add("segment-custom-300", seg(seg34, 100, 199, 5000, 2, 6000, 4096, pattern(300),
                RemoteLogSegmentState.COPY_SEGMENT_STARTED, epochs(1, 100), true));
        add("segment-epochs-3-finished", seg(new RemoteLogSegmentId(foo3, uuid(10, 11)), 1000, 1999, 1700000000000L, 3,
                1700000001000L, 1048576, null, RemoteLogSegmentState.COPY_SEGMENT_FINISHED, epochs(4, 1000, 5, 1300, 7, 1800), false));
        add("segment-epochs-4-delete-started", seg(new RemoteLogSegmentId(foo3, uuid(12, 13)), 2000, 2999, 1700000002000L, 3,
                1700000003000L, 2097152, new byte[]{1, 2, 3}, RemoteLogSegmentState.DELETE_SEGMENT_STARTED,
                epochs(7, 2000, 8, 2001, 9, 2500, 12, 2999), true));
        add("segment-epochs-5-delete-finished", seg(new RemoteLogSegmentId(foo3, uuid(14, 15)), 3000, 3999, 1700000004000L, 4,
                1700000005000L, 4194304, new byte[0], RemoteLogSegmentState.DELETE_SEGMENT_FINISHED,
                epochs(12, 3000, 13, 3100, 20, 3200, 300, 3300, 65536, 3400), false));
        add("segment-one-offset", seg(new RemoteLogSegmentId(foo3, uuid(16, 17)), 42, 42, 0, 0, 0, 0, null,
                RemoteLogSegmentState.COPY_SEGMENT_STARTED, epochs(0, 42), false));
        add("segment-topic-200", seg(new RemoteLogSegmentId(long200, uuid(20, 21)), 0, 9, 10, 1, 11, 100, null,
                RemoteLogSegmentState.COPY_SEGMENT_STARTED, epochs(0, 0), false));
        add("segment-topic-249-epochs-3", seg(new RemoteLogSegmentId(long249, uuid(22, 23)), 500, 900, 10, 1, 11, 100,
                pattern(5), RemoteLogSegmentState.COPY_SEGMENT_FINISHED, epochs(1, 500, 2, 600, 3, 700), true));
        add("segment-topic-utf8", seg(new RemoteLogSegmentId(utf8, uuid(24, 25)), 0, 9, 10, 1, 11, 100, null,
                RemoteLogSegmentState.COPY_SEGMENT_STARTED, epochs(0, 0), false));
        add("segment-max-values", seg(new RemoteLogSegmentId(tp(uuid(Long.MAX_VALUE, Long.MAX_VALUE), "max", Integer.MAX_VALUE),
                        uuid(Long.MAX_VALUE, -1)), Long.MAX_VALUE - 1, Long.MAX_VALUE, Long.MAX_VALUE, Integer.MAX_VALUE,
                Long.MAX_VALUE, Integer.MAX_VALUE, pattern(2), RemoteLogSegmentState.COPY_SEGMENT_FINISHED,
                epochs(Integer.MAX_VALUE - 1, Long.MAX_VALUE - 1, Integer.MAX_VALUE, Long.MAX_VALUE), true));
        add("segment-negative-values", seg(new RemoteLogSegmentId(tp(uuid(Long.MIN_VALUE, Long.MIN_VALUE), "neg", -1),
                        uuid(-3, -4)), 0, 0, -1, Integer.MIN_VALUE, Long.MIN_VALUE, Integer.MIN_VALUE, null,
                RemoteLogSegmentState.COPY_SEGMENT_STARTED, epochs(Integer.MIN_VALUE, Long.MIN_VALUE, -1, -1, 0, 0), false));
        add("segment-negative-broker-size", seg(new RemoteLogSegmentId(foo3, uuid(26, 27)), 10, 20, -1, -1, -1, -1, new byte[]{(byte) 0xff},
                RemoteLogSegmentState.COPY_SEGMENT_STARTED, epochs(0, 10, 1, 5), false));
        add("segment-epoch-offsets-outside-range", seg(new RemoteLogSegmentId(foo3, uuid(28, 29)), 100, 200, 1, 1, 1, 1, null,
                RemoteLogSegmentState.COPY_SEGMENT_STARTED, epochs(3, 50, 4, 250), false));

        // apiKey 1: updates, every state, custom metadata absent/empty/present
        add("update-finished", new RemoteLogSegmentMetadataUpdate(seg34, 3000, Optional.empty(),
                RemoteLogSegmentState.COPY_SEGMENT_FINISHED, 2));
        add("update-delete-started-custom-empty", new RemoteLogSegmentMetadataUpdate(seg34, 3000, custom(new byte[0]),
                RemoteLogSegmentState.DELETE_SEGMENT_STARTED, 2));
        add("update-delete-finished-custom", new RemoteLogSegmentMetadataUpdate(seg34, 3001, custom(pattern(16)),
                RemoteLogSegmentState.DELETE_SEGMENT_FINISHED, 2));
        add("update-copy-started", new RemoteLogSegmentMetadataUpdate(seg34, 3002, Optional.empty(),
                RemoteLogSegmentState.COPY_SEGMENT_STARTED, 2));
        add("update-finished-custom-200", new RemoteLogSegmentMetadataUpdate(seg34, 3003, custom(pattern(200)),
                RemoteLogSegmentState.COPY_SEGMENT_FINISHED, 0));
        add("update-topic-200", new RemoteLogSegmentMetadataUpdate(new RemoteLogSegmentId(long200, uuid(20, 21)), 12,
                Optional.empty(), RemoteLogSegmentState.COPY_SEGMENT_FINISHED, 1));
        add("update-max-values", new RemoteLogSegmentMetadataUpdate(new RemoteLogSegmentId(
                tp(uuid(Long.MAX_VALUE, Long.MAX_VALUE), "max", Integer.MAX_VALUE), uuid(Long.MAX_VALUE, -1)),
                Long.MAX_VALUE, Optional.empty(), RemoteLogSegmentState.DELETE_SEGMENT_STARTED, Integer.MAX_VALUE));
        add("update-negative-values", new RemoteLogSegmentMetadataUpdate(new RemoteLogSegmentId(
                tp(uuid(Long.MIN_VALUE, Long.MIN_VALUE), "neg", Integer.MIN_VALUE), uuid(-3, -4)),
                Long.MIN_VALUE, custom(new byte[0]), RemoteLogSegmentState.COPY_SEGMENT_FINISHED, Integer.MIN_VALUE));

        // apiKey 2: partition deletes, every state
        add("partition-delete-marked", new RemotePartitionDeleteMetadata(foo3, RemotePartitionDeleteState.DELETE_PARTITION_MARKED, 4000, 5));
        add("partition-delete-started", new RemotePartitionDeleteMetadata(foo3, RemotePartitionDeleteState.DELETE_PARTITION_STARTED, 4001, 5));
        add("partition-delete-finished", new RemotePartitionDeleteMetadata(foo3, RemotePartitionDeleteState.DELETE_PARTITION_FINISHED, 4002, 6));
        add("partition-delete-topic-200", new RemotePartitionDeleteMetadata(long200, RemotePartitionDeleteState.DELETE_PARTITION_MARKED, 4000, 5));
        add("partition-delete-topic-249", new RemotePartitionDeleteMetadata(long249, RemotePartitionDeleteState.DELETE_PARTITION_FINISHED, 1, 0));
        add("partition-delete-negative", new RemotePartitionDeleteMetadata(tp(uuid(-1, -1), "neg", Integer.MIN_VALUE),
                RemotePartitionDeleteState.DELETE_PARTITION_STARTED, Long.MIN_VALUE, Integer.MIN_VALUE));
        add("partition-delete-max", new RemotePartitionDeleteMetadata(tp(uuid(Long.MAX_VALUE, 1), "max", Integer.MAX_VALUE),
                RemotePartitionDeleteState.DELETE_PARTITION_MARKED, Long.MAX_VALUE, Integer.MAX_VALUE));

        // apiKey 3: snapshots, every state
        add("snapshot-finished", new RemoteLogSegmentMetadataSnapshot(uuid(3, 4), 0, 99, 1000, 1, 2000, 1024,
                Optional.empty(), RemoteLogSegmentState.COPY_SEGMENT_FINISHED, epochs(0, 0), false));
        add("snapshot-started-custom-empty", new RemoteLogSegmentMetadataSnapshot(uuid(30, 31), 100, 199, 1001, 2, 2001, 2048,
                custom(new byte[0]), RemoteLogSegmentState.COPY_SEGMENT_STARTED, epochs(1, 100), false));
        add("snapshot-delete-started-epochs-4-custom", new RemoteLogSegmentMetadataSnapshot(uuid(32, 33), 200, 999, 1002, 3, 2002,
                4096, custom(pattern(40)), RemoteLogSegmentState.DELETE_SEGMENT_STARTED, epochs(1, 200, 2, 300, 5, 600, 6, 900), false));
        add("snapshot-delete-finished-txn-idx-empty", new RemoteLogSegmentMetadataSnapshot(uuid(34, 35), 0, 9, 1, 4, 2, 3,
                Optional.empty(), RemoteLogSegmentState.DELETE_SEGMENT_FINISHED, epochs(0, 0), true));
        add("snapshot-extremes", new RemoteLogSegmentMetadataSnapshot(uuid(Long.MIN_VALUE, Long.MAX_VALUE), 0, Long.MAX_VALUE,
                Long.MAX_VALUE, Integer.MIN_VALUE, Long.MIN_VALUE, Integer.MIN_VALUE, custom(pattern(130)),
                RemoteLogSegmentState.COPY_SEGMENT_FINISHED, epochs(Integer.MIN_VALUE, 0, Integer.MAX_VALUE, Long.MAX_VALUE), true));

        addRandom(new Random(20260405L), 40);
    }

    /** Deterministic random events (fixed seed) that mix every field, for breadth beyond the hand-picked cases. */
    private void addRandom(Random rnd, int count) {
        RemoteLogSegmentState[] states = RemoteLogSegmentState.values();
        RemotePartitionDeleteState[] dstates = RemotePartitionDeleteState.values();
        for (int i = 0; i < count; i++) {
            Uuid topicId = new Uuid(rnd.nextLong(), rnd.nextLong());
            String topic = "topic-" + Integer.toHexString(rnd.nextInt()) + "_" + "r".repeat(rnd.nextInt(140));
            TopicIdPartition tp = tp(topicId, topic, rnd.nextInt(2000));
            RemoteLogSegmentId id = new RemoteLogSegmentId(tp, new Uuid(rnd.nextLong(), rnd.nextLong()));
            byte[] cm = switch (rnd.nextInt(3)) {
                case 0 -> null;
                case 1 -> new byte[0];
                default -> {
                    byte[] b = new byte[1 + rnd.nextInt(160)];
                    rnd.nextBytes(b);
                    yield b;
                }
            };
            long start = rnd.nextLong() >>> (1 + rnd.nextInt(40));
            long end = start + (rnd.nextLong() >>> 40);
            int nEpochs = 1 + rnd.nextInt(5);
            Map<Integer, Long> ep = new TreeMap<>();
            int epoch = rnd.nextInt(1000);
            for (int e = 0; e < nEpochs; e++) {
                ep.put(epoch, start + (end - start) * e / nEpochs);
                epoch += 1 + rnd.nextInt(50);
            }
            String name = String.format("random-%02d-", i);
            switch (i % 4) {
                case 0 -> add(name + "segment", seg(id, start, end, rnd.nextLong(), rnd.nextInt(), rnd.nextLong(), rnd.nextInt(),
                        cm, states[rnd.nextInt(states.length)], ep, rnd.nextBoolean()));
                case 1 -> add(name + "update", new RemoteLogSegmentMetadataUpdate(id, rnd.nextLong(), custom(cm),
                        states[rnd.nextInt(states.length)], rnd.nextInt()));
                case 2 -> add(name + "partition-delete", new RemotePartitionDeleteMetadata(tp, dstates[rnd.nextInt(dstates.length)],
                        rnd.nextLong(), rnd.nextInt()));
                default -> add(name + "snapshot", new RemoteLogSegmentMetadataSnapshot(id.id(), start, end, rnd.nextLong(),
                        rnd.nextInt(), rnd.nextLong(), rnd.nextInt(), custom(cm), states[rnd.nextInt(states.length)], ep,
                        rnd.nextBoolean()));
            }
        }
    }

    // ---- partitioner vectors ----

    private static ObjectNode partRow(TopicIdPartition tp, int n) {
        ObjectNode r = EventJson.MAPPER.createObjectNode();
        r.put("topicId", tp.topicId().toString());
        r.put("partition", tp.partition());
        r.put("numPartitions", n);
        r.put("metadataPartition", new RemoteLogMetadataTopicPartitioner(n).metadataPartition(tp));
        return r;
    }

    private static List<ObjectNode> buildPartitioner(KafkaVectors v) {
        List<ObjectNode> rows = new ArrayList<>();
        // Section 7.4 vectors, checked against the document as a sanity check.
        Uuid bp9 = Uuid.fromString("Bp9TDduJRGa9Q5rlvCJOxg");
        Object[][] doc = {
                {uuid(1, 2), 3, 50, 15}, {uuid(1, 2), 3, 5, 0}, {uuid(1, 2), 3, 3, 2}, {uuid(1, 2), 5, 50, 41},
                {uuid(-1, -2), 7, 50, 46},
                {bp9, 0, 50, 47}, {bp9, 1, 50, 37}, {bp9, 2, 50, 12}, {bp9, 3, 50, 24},
                {bp9, 0, 5, 2}, {bp9, 1, 5, 2}, {bp9, 2, 5, 2}, {bp9, 3, 5, 4},
        };
        if (bp9.getMostSignificantBits() != 477191404507448422L || bp9.getLeastSignificantBits() != -4808829665607004474L) {
            v.fail("Bp9TDduJRGa9Q5rlvCJOxg does not parse to the doc's MSB/LSB");
        }
        for (Object[] d : doc) {
            ObjectNode r = partRow(tp((Uuid) d[0], "foo", (Integer) d[1]), (Integer) d[2]);
            if (r.get("metadataPartition").asInt() != (Integer) d[3]) {
                v.fail("partitioner " + r + ": kafka-rlmm.md 7.4 says " + d[3]);
            }
            rows.add(r);
        }
        System.err.println("sanity: " + doc.length + " partitioner vectors of kafka-rlmm.md 7.4 checked");
        int[] counts = {1, 3, 5, 50, 64, 1000};
        Random rnd = new Random(4242L);
        long[] edge = {0, 1, -1, Long.MIN_VALUE, Long.MAX_VALUE, 0x80000000L, 0xffffffffL};
        int[] edgePartitions = {0, 1, Integer.MAX_VALUE, -1, Integer.MIN_VALUE, 65535};
        for (int n : counts) {
            for (int i = 0; i < 40; i++) {
                Uuid id = i < 7 ? uuid(edge[i], edge[(i + 3) % edge.length]) : new Uuid(rnd.nextLong(), rnd.nextLong());
                int p = i < edgePartitions.length ? edgePartitions[i] : rnd.nextInt(i % 2 == 0 ? 100 : 100000);
                rows.add(partRow(tp(id, "t", p), n));
            }
        }
        // One topic across many partitions, as a broker sees it.
        Uuid one = new Uuid(rnd.nextLong(), rnd.nextLong());
        for (int p = 0; p < 64; p++) {
            rows.add(partRow(tp(one, "t", p), 50));
        }
        return rows;
    }

    // ---- output: one record per line, so diffs stay readable ----

    private static void write(Path out, List<ObjectNode> records, List<ObjectNode> partitioner) throws IOException {
        Path parent = out.toAbsolutePath().getParent();
        if (parent != null) {
            Files.createDirectories(parent);
        }
        Path tmp = out.resolveSibling(out.getFileName() + ".tmp");
        try (Writer w = Files.newBufferedWriter(tmp, StandardCharsets.UTF_8)) {
            w.write("{\n  \"generator\": \"test/interop/java KafkaVectors, org.apache.kafka:kafka-storage 4.4.0\",\n");
            w.write("  \"records\": [\n");
            writeLines(w, records);
            w.write("  ],\n  \"partitioner\": [\n");
            writeLines(w, partitioner);
            w.write("  ]\n}\n");
        }
        Files.move(tmp, out, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
    }

    private static void writeLines(Writer w, List<ObjectNode> rows) throws IOException {
        for (int i = 0; i < rows.size(); i++) {
            w.write("    ");
            w.write(EventJson.MAPPER.writeValueAsString(rows.get(i)));
            w.write(i + 1 < rows.size() ? ",\n" : "\n");
        }
    }
}

package org.rlmm.interop;

import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.kafka.common.utils.internals.Exit;
import org.apache.kafka.server.log.remote.metadata.storage.TopicBasedRemoteLogMetadataManager;

import java.io.IOException;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Drives Apache Kafka 4.4.0's own TopicBasedRemoteLogMetadataManager (and its cache) for rlmm's
 * interoperability tests and side-by-side benchmarks. Every subcommand prints exactly one JSON object on
 * stdout; logs go to stderr. Exit status: 0 success, 1 failure (the JSON then has an "error" field), 2 usage.
 * This class only dispatches: each subcommand is a {@link Command} of its own (WorkloadCommand, DumpCommand,
 * ServeCommand, BenchMutationsCommand, FillCommand, BenchColdstartCommand, BenchLookupCommand,
 * BenchHeapCommand).
 *
 * <pre>
 * workload        --bootstrap B --topic-id ID --topic T --partitions N --spec FILE
 * dump            --bootstrap B --partitions ID:TOPIC-P[,ID:TOPIC-P...]
 * bench-mutations --bootstrap B --callers C --count N [--warmup W] [--warmup-seconds S]
 * fill            --bootstrap B --events N [--topic-id ID] [--topic T] [--user-partitions P]
 * bench-coldstart --bootstrap B (--events N | --topic-id ID --topic T --user-partitions P)
 * bench-lookup    --segments S [--rounds R] [--ops O]
 * bench-heap      --segments S [--partitions P]
 * serve           --bootstrap B   (JSON-line requests on stdin, one JSON response line each; see README)
 * common:         --metadata-partitions M (50) --broker-id ID (0) --timeout-ms T (120000) --log-dir DIR (temp)
 * </pre>
 */
public final class KafkaRlmmDriver {
    private KafkaRlmmDriver() {
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
            Command.EXIT_CALLED.compareAndSet(null, "Kafka called Exit.exit(" + code + "): " + msg);
            System.err.println("KafkaRlmmDriver: intercepted Exit.exit(" + code + "): " + msg);
        });
        Exit.setHaltProcedure((code, msg) -> {
            Command.EXIT_CALLED.compareAndSet(null, "Kafka called Exit.halt(" + code + "): " + msg);
            System.err.println("KafkaRlmmDriver: intercepted Exit.halt(" + code + "): " + msg);
        });
        ObjectNode out;
        int status = 0;
        try {
            Command c = switch (args[0]) {
                case "workload" -> new WorkloadCommand(opts);
                case "dump" -> new DumpCommand(opts);
                case "bench-mutations" -> new BenchMutationsCommand(opts);
                case "fill" -> new FillCommand(opts);
                case "bench-coldstart" -> new BenchColdstartCommand(opts);
                case "bench-lookup" -> new BenchLookupCommand(opts);
                case "bench-heap" -> new BenchHeapCommand(opts);
                case "serve" -> new ServeCommand(opts);
                default -> {
                    usage("unknown subcommand " + args[0]);
                    yield null;
                }
            };
            out = c.run();
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
                + "[--name value ...] (see test/interop/java/README.md)");
        System.exit(2);
    }
}

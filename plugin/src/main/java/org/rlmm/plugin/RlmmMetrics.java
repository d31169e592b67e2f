package org.rlmm.plugin;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.metrics.Gauge;
import org.apache.kafka.common.metrics.JmxReporter;
import org.apache.kafka.common.metrics.KafkaMetricsContext;
import org.apache.kafka.common.metrics.MetricConfig;
import org.apache.kafka.common.metrics.Metrics;
import org.apache.kafka.common.metrics.Sensor;
import org.apache.kafka.common.metrics.stats.Avg;
import org.apache.kafka.common.metrics.stats.CumulativeCount;
import org.apache.kafka.common.metrics.stats.Max;
import org.apache.kafka.common.utils.Time;
import org.slf4j.Logger;

/**
 * The plugin's metrics (plugin/README.md, "Metrics") in the broker's JMX through Kafka's own
 * metrics library, under {@code kafka.server:type=rlmm-plugin,broker-id=N[,rpc=KIND]}. A failed
 * registration is logged and the plugin runs with its metrics kept in memory only. Not KIP-877's
 * {@code Monitorable}: Kafka wraps a manager loaded through its own class path in a class that does
 * not implement it, and such a class does not load on 4.0.
 */
final class RlmmMetrics implements AutoCloseable {
    static final String DOMAIN = "kafka.server";
    static final String GROUP = "rlmm-plugin";
    static final List<String> RPCS = List.of("lookup", "highest-offset", "list", "remote-log-size", "next-txn-index",
            "add", "update", "partition-delete", "leadership", "stop");

    private final AtomicLong starts = new AtomicLong();
    private final AtomicLong lastErrorMs = new AtomicLong();
    private volatile boolean failed;
    private final Metrics metrics;
    private final Map<String, Sensor> latency = new LinkedHashMap<>();
    private final Map<String, Sensor> errors = new LinkedHashMap<>();

    private RlmmMetrics(Metrics metrics, int brokerId, LongSupplier up, LongSupplier ready, LongSupplier notReady) {
        this.metrics = metrics;
        Map<String, String> tags = new LinkedHashMap<>();
        tags.put("broker-id", Integer.toString(brokerId));
        gauge("child-up", "1 while calls reach an rlmm serve that answered the hello (see hosted-partitions-ready), else 0", tags, up);
        gauge("child-restarts-total", "rlmm serve children started after the first", tags, () -> Math.max(0, starts.get() - 1));
        gauge("last-error-timestamp-ms", "when rlmm serve last died, failed to start or was refused (0: never)", tags,
                lastErrorMs::get);
        gauge("failed", "1 once the plugin gave up (refused setting or API version, init timeout)", tags, () -> failed ? 1 : 0);
        gauge("hosted-partitions-ready", "hosted partitions rlmm serve last said are ready", tags, ready);
        gauge("hosted-partitions-not-ready", "hosted partitions rlmm serve last said are not ready", tags, notReady);
        for (String rpc : RPCS) {
            Map<String, String> t = new LinkedHashMap<>(tags);
            t.put("rpc", rpc);
            Sensor s = metrics.sensor(GROUP + "." + brokerId + "." + rpc + ".latency");
            s.add(metrics.metricName("calls-total", GROUP, "calls of this kind", t), new CumulativeCount());
            s.add(metrics.metricName("latency-avg-ms", GROUP, "average latency of a call of this kind", t), new Avg());
            s.add(metrics.metricName("latency-max-ms", GROUP, "longest latency of a call of this kind", t), new Max());
            Sensor e = metrics.sensor(GROUP + "." + brokerId + "." + rpc + ".errors");
            e.add(metrics.metricName("errors-total", GROUP, "calls of this kind that failed", t), new CumulativeCount());
            latency.put(rpc, s);
            errors.put(rpc, e);
        }
    }

    /** Registers the plugin's metrics in JMX; when Kafka's metrics refuse them (logged), keeps them in memory only. */
    static RlmmMetrics register(int brokerId, Logger log, LongSupplier up, LongSupplier ready, LongSupplier notReady) {
        Metrics m = null;
        try {
            JmxReporter jmx = new JmxReporter();
            // Not Kafka's own kafka-metrics-count MBean, which a Metrics adds: the broker has
            // one under the same name, which the reporter would replace (and remove at close).
            jmx.configure(Map.of("metrics.jmx.exclude", ".*type=kafka-metrics-count.*"));
            m = new Metrics(new MetricConfig(), List.of(jmx), Time.SYSTEM, new KafkaMetricsContext(DOMAIN));
            return new RlmmMetrics(m, brokerId, up, ready, notReady);
        } catch (RuntimeException e) {
            log.warn("rlmm plugin: the plugin's metrics are not registered in JMX ({}): {}", DOMAIN + ":type=" + GROUP
                    + ",broker-id=" + brokerId, e.toString());
            if (m != null) {
                m.close();
            }
            return new RlmmMetrics(new Metrics(), brokerId, up, ready, notReady);
        }
    }

    private void gauge(String name, String doc, Map<String, String> tags, LongSupplier value) {
        MetricName n = metrics.metricName(name, GROUP, doc, tags);
        metrics.addMetric(n, (Gauge<Long>) (config, now) -> value.getAsLong());
    }

    /** One call of kind rpc took nanos, and failed or not. */
    void call(String rpc, long nanos, boolean failed) {
        latency.get(rpc).record(nanos / (double) TimeUnit.MILLISECONDS.toNanos(1));
        if (failed) {
            errors.get(rpc).record();
        }
    }

    /** A child process was started. */
    void started() {
        starts.incrementAndGet();
    }

    /** Something went wrong with the server (logged at ERROR). */
    void error() {
        lastErrorMs.set(System.currentTimeMillis());
    }

    /** The plugin gave up (and stopped the broker). */
    void failed() {
        failed = true;
        error();
    }

    /** Unregisters every metric from JMX. */
    @Override
    public void close() {
        metrics.close();
    }
}

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
 * registration is logged and the plugin runs without metrics. Not KIP-877's {@code Monitorable}:
 * Kafka wraps a manager loaded through its own class path in a class that does not implement it,
 * and such a class does not load on 4.0.
 */
final class RlmmMetrics implements AutoCloseable, Supervisor.Listener {
    static final String DOMAIN = "kafka.server";
    static final String GROUP = "rlmm-plugin";
    static final List<String> RPCS = List.of("lookup", "highest-offset", "list", "remote-log-size", "next-txn-index",
            "add", "update", "partition-delete", "leadership", "stop");

    final AtomicLong starts = new AtomicLong();
    final AtomicLong lastErrorMs = new AtomicLong();
    volatile boolean failed;

    private final Metrics metrics;
    private final Map<String, Sensor> latency = new LinkedHashMap<>();
    private final Map<String, Sensor> errors = new LinkedHashMap<>();

    private RlmmMetrics(Metrics metrics) {
        this.metrics = metrics;
    }

    /** Registers the plugin's metrics; null (logged) when Kafka's metrics refuse them. */
    static RlmmMetrics register(int brokerId, Logger log, LongSupplier up, LongSupplier ready, LongSupplier notReady) {
        Metrics m = null;
        try {
            JmxReporter jmx = new JmxReporter();
            // Not Kafka's own kafka-metrics-count MBean, which a Metrics adds: the broker has
            // one under the same name, which the reporter would replace (and remove at close).
            jmx.configure(Map.of("metrics.jmx.exclude", ".*type=kafka-metrics-count.*"));
            m = new Metrics(new MetricConfig(), List.of(jmx), Time.SYSTEM, new KafkaMetricsContext(DOMAIN));
            RlmmMetrics p = new RlmmMetrics(m);
            Map<String, String> tags = new LinkedHashMap<>();
            tags.put("broker-id", Integer.toString(brokerId));
            p.gauge("child-up", "1 while rlmm serve answers and holds this broker's partitions, else 0", tags,
                    up);
            p.gauge("child-restarts-total", "rlmm serve children started after the first", tags,
                    () -> Math.max(0, p.starts.get() - 1));
            p.gauge("last-error-timestamp-ms", "when rlmm serve last died, failed to start or was refused (0: never)",
                    tags, p.lastErrorMs::get);
            p.gauge("failed", "1 once the plugin gave up (refused setting or API version, init timeout)", tags,
                    () -> p.failed ? 1 : 0);
            p.gauge("hosted-partitions-ready", "hosted partitions rlmm serve last said are ready", tags, ready);
            p.gauge("hosted-partitions-not-ready", "hosted partitions rlmm serve last said are not ready", tags,
                    notReady);
            for (String rpc : RPCS) {
                Map<String, String> t = new LinkedHashMap<>(tags);
                t.put("rpc", rpc);
                Sensor s = m.sensor(GROUP + "." + brokerId + "." + rpc + ".latency");
                s.add(m.metricName("calls-total", GROUP, "calls of this kind", t), new CumulativeCount());
                s.add(m.metricName("latency-avg-ms", GROUP, "average latency of a call of this kind", t), new Avg());
                s.add(m.metricName("latency-max-ms", GROUP, "longest latency of a call of this kind", t), new Max());
                Sensor e = m.sensor(GROUP + "." + brokerId + "." + rpc + ".errors");
                e.add(m.metricName("errors-total", GROUP, "calls of this kind that failed", t), new CumulativeCount());
                p.latency.put(rpc, s);
                p.errors.put(rpc, e);
            }
            return p;
        } catch (RuntimeException e) {
            log.warn("rlmm plugin: the plugin's metrics are not registered in JMX ({}): {}", DOMAIN + ":type=" + GROUP
                    + ",broker-id=" + brokerId, e.toString());
            if (m != null) {
                m.close();
            }
            return null;
        }
    }

    private void gauge(String name, String doc, Map<String, String> tags, LongSupplier value) {
        MetricName n = metrics.metricName(name, GROUP, doc, tags);
        metrics.addMetric(n, (Gauge<Long>) (config, now) -> value.getAsLong());
    }

    @Override
    public void call(String rpc, long nanos, boolean failed) {
        Sensor s = latency.get(rpc);
        if (s == null) {
            return;
        }
        s.record(nanos / (double) TimeUnit.MILLISECONDS.toNanos(1));
        if (failed) {
            errors.get(rpc).record();
        }
    }

    @Override
    public void started() {
        starts.incrementAndGet();
    }

    /** When something last went wrong with the server (logged at ERROR). */
    @Override
    public void error() {
        lastErrorMs.set(System.currentTimeMillis());
    }

    /** The plugin gave up (and stopped the broker). */
    @Override
    public void failed() {
        failed = true;
        error();
    }

    /** Unregisters every metric from JMX. */
    @Override
    public void close() {
        metrics.close();
    }
}

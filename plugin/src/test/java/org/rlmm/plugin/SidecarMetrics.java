package org.rlmm.plugin;

import java.io.IOException;
import java.io.InputStream;
import java.net.HttpURLConnection;
import java.net.ServerSocket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;

/**
 * The benchmark's view of {@code rlmm serve}'s own clock: its /metrics histograms of a mutation
 * ({@code rlmm_mutation_duration_seconds} by op, and {@code rlmm_mutation_phase_seconds} by phase:
 * ready, encode, publish, fetch, apply, wake) read before and after a timed loop, so the loop's
 * mutations alone are counted. With the plugin's own timing of the same calls this splits an add +
 * finish into the child's part and the rest (the JVM, gRPC, the socket, the wake-ups between).
 */
final class SidecarMetrics {
    /** One histogram series: its bucket bounds and cumulative counts, its sum and count. */
    record Histogram(double[] bounds, double[] cumulative, double sum, double count) {
        /** The difference of two reads of the same series (this one the later). */
        Histogram minus(Histogram earlier) {
            if (earlier == null) {
                return this;
            }
            double[] c = new double[cumulative.length];
            for (int i = 0; i < c.length; i++) {
                c[i] = cumulative[i] - earlier.cumulative[i];
            }
            return new Histogram(bounds, c, sum - earlier.sum, count - earlier.count);
        }

        /** The p-quantile, interpolated inside its bucket as Prometheus's histogram_quantile does. */
        double quantile(double p) {
            if (count <= 0) {
                return Double.NaN;
            }
            double rank = p * count;
            double lower = 0;
            double below = 0;
            for (int i = 0; i < bounds.length; i++) {
                if (cumulative[i] >= rank) {
                    if (Double.isInfinite(bounds[i])) {
                        return lower;
                    }
                    double in = cumulative[i] - below;
                    return in <= 0 ? bounds[i] : lower + (bounds[i] - lower) * (rank - below) / in;
                }
                lower = bounds[i];
                below = cumulative[i];
            }
            return lower;
        }

        double mean() {
            return count <= 0 ? Double.NaN : sum / count;
        }
    }

    private final int port;

    private SidecarMetrics(int port) {
        this.port = port;
    }

    /** A free loopback port for the child's --metrics-listen (taken back at once; a race a benchmark can afford). */
    static SidecarMetrics onFreePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            return new SidecarMetrics(s.getLocalPort());
        }
    }

    /** The flag for rlmm.serve.args. */
    String listenFlag() {
        return "--metrics-listen 127.0.0.1:" + port;
    }

    /** The histograms of every series whose name starts with one of the given ones, by name and labels. */
    Map<String, Histogram> read(String... families) throws IOException {
        HttpURLConnection c = (HttpURLConnection) URI.create("http://127.0.0.1:" + port + "/metrics").toURL().openConnection();
        c.setConnectTimeout(5_000);
        c.setReadTimeout(10_000);
        String text;
        try (InputStream in = c.getInputStream()) {
            text = new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } finally {
            c.disconnect();
        }
        Map<String, TreeMap<Double, Double>> buckets = new LinkedHashMap<>();
        Map<String, double[]> sumCount = new LinkedHashMap<>();
        for (String line : text.split("\n")) {
            if (line.startsWith("#") || line.isBlank()) {
                continue;
            }
            String family = null;
            for (String f : families) {
                if (line.startsWith(f + "_")) {
                    family = f;
                }
            }
            if (family == null) {
                continue;
            }
            int sp = line.lastIndexOf(' ');
            double value = Double.parseDouble(line.substring(sp + 1));
            String series = line.substring(0, sp);
            String name = series.contains("{") ? series.substring(0, series.indexOf('{')) : series;
            String labels = series.contains("{") ? series.substring(series.indexOf('{') + 1, series.lastIndexOf('}')) : "";
            if (name.equals(family + "_bucket")) {
                String le = null;
                List<String> rest = new ArrayList<>();
                for (String l : labels.split(",")) {
                    if (l.startsWith("le=")) {
                        le = l.substring(4, l.length() - 1);
                    } else {
                        rest.add(l);
                    }
                }
                String key = family + "{" + String.join(",", rest) + "}";
                buckets.computeIfAbsent(key, k -> new TreeMap<>())
                        .put(le.equals("+Inf") ? Double.POSITIVE_INFINITY : Double.parseDouble(le), value);
            } else if (name.equals(family + "_sum") || name.equals(family + "_count")) {
                String key = family + "{" + labels + "}";
                sumCount.computeIfAbsent(key, k -> new double[2])[name.endsWith("_sum") ? 0 : 1] = value;
            }
        }
        Map<String, Histogram> out = new LinkedHashMap<>();
        for (Map.Entry<String, TreeMap<Double, Double>> e : buckets.entrySet()) {
            double[] b = new double[e.getValue().size()];
            double[] cum = new double[b.length];
            int i = 0;
            for (Map.Entry<Double, Double> x : e.getValue().entrySet()) {
                b[i] = x.getKey();
                cum[i++] = x.getValue();
            }
            double[] sc = sumCount.getOrDefault(e.getKey(), new double[2]);
            out.put(e.getKey(), new Histogram(b, cum, sc[0], sc[1]));
        }
        return out;
    }

    /** Prints each series of after that had observations since before: count, p50, mean. */
    static void report(Map<String, Histogram> before, Map<String, Histogram> after) {
        for (Map.Entry<String, Histogram> e : after.entrySet()) {
            Histogram d = e.getValue().minus(before.get(e.getKey()));
            if (d.count() <= 0) {
                continue;
            }
            System.out.printf(Locale.ROOT, "  rlmm serve %s: n=%.0f p50=%.1f µs mean=%.1f µs%n", e.getKey(), d.count(),
                    d.quantile(0.5) * 1e6, d.mean() * 1e6);
        }
    }
}

package org.rlmm.plugin;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.kafka.common.config.ConfigException;

/**
 * The settings {@link RlmmRemoteLogMetadataManager#configure} reads from the map a broker passes:
 * the broker's own keys ({@code broker.id}, {@code log.dir}, {@code cluster.id}), Kafka's
 * {@code remote.log.metadata.*} settings (forwarded to {@code rlmm serve}), and the plugin's own
 * {@code rlmm.serve.*} settings (every key arrives with the broker's {@code rlmm.config.} prefix
 * already removed). A missing or wrong setting is a {@link ConfigException} naming it.
 */
final class PluginConfig {
    /**
     * Path of the rlmm binary to start as the child; default: the jar's own binary for the host,
     * extracted into the work directory ({@link BinaryExtractor}).
     */
    static final String BINARY = "rlmm.serve.binary";
    /** Connect to an already running server on this Unix socket instead of starting one. */
    static final String SOCKET = "rlmm.serve.socket";
    /** Connect to an already running server at host:port over TCP instead of starting one. */
    static final String ADDRESS = "rlmm.serve.address";
    /** PEM CA file that verifies a TCP server's certificate (turns TLS on). */
    static final String TLS_CA = "rlmm.serve.tls.ca";
    /** PEM client certificate for a TCP server that asks for one (needs the key). */
    static final String TLS_CERT = "rlmm.serve.tls.cert";
    /** PEM client key (PKCS#8) that goes with the certificate. */
    static final String TLS_KEY = "rlmm.serve.tls.key";
    /** File whose content is the bearer token a TCP server asks for. */
    static final String TOKEN_FILE = "rlmm.serve.token.file";
    /** The child's private directory (properties file, socket, pid file, default snapshots). */
    static final String WORK_DIR = "rlmm.serve.work.dir";
    /** The child's snapshot directory. */
    static final String SNAPSHOT_DIR = "rlmm.serve.snapshot.dir";
    /** Run the child over rlmm's embedded log in this directory instead of the Kafka topic. */
    static final String EMBEDDED_DIR = "rlmm.serve.embedded.dir";
    /** Extra command-line arguments for the child, separated by spaces. */
    static final String EXTRA_ARGS = "rlmm.serve.args";
    /** Deadline of a read (lookup, list, size, isReady) and of an assignment change. */
    static final String CALL_TIMEOUT = "rlmm.serve.call.timeout.ms";
    /** Deadline of a mutation (add, update, partition delete). */
    static final String MUTATION_TIMEOUT = "rlmm.serve.mutation.timeout.ms";
    /** How long the child may take to answer after it is started (or restarted). */
    static final String START_TIMEOUT = "rlmm.serve.start.timeout.ms";
    /**
     * How long the plugin waits, from configure, for its first server to answer (and to pass the
     * API version check) before it stops the broker as Kafka's own manager does when it cannot
     * initialize. Default: Kafka's {@link #KAFKA_INIT_TIMEOUT} when set, else its default.
     */
    static final String INIT_TIMEOUT = "rlmm.serve.init.timeout.ms";
    /** Kafka's own manager's initialization bound (TopicBasedRemoteLogMetadataManagerConfig). */
    static final String KAFKA_INIT_TIMEOUT = "remote.log.metadata.initialization.retry.max.timeout.ms";
    /** {@link #KAFKA_INIT_TIMEOUT}'s default in Kafka 4.x. */
    static final long KAFKA_INIT_TIMEOUT_DEFAULT_MS = 120_000;
    /** How long close() waits after SIGTERM before it kills the child. */
    static final String STOP_TIMEOUT = "rlmm.serve.stop.timeout.ms";
    /** First wait before restarting a child that died; doubles up to the maximum. */
    static final String RESTART_BACKOFF = "rlmm.serve.restart.backoff.ms";
    /** Longest wait before restarting a child that died. */
    static final String RESTART_BACKOFF_MAX = "rlmm.serve.restart.backoff.max.ms";

    static final String BROKER_ID = "broker.id";
    static final String LOG_DIR = "log.dir";
    static final String CLUSTER_ID = "cluster.id";
    static final String KAFKA_PREFIX = "remote.log.metadata.";
    static final String CLIENT_PREFIX = "remote.log.metadata.common.client.";
    static final String BOOTSTRAP = CLIENT_PREFIX + "bootstrap.servers";
    static final String CONSUME_WAIT = "remote.log.metadata.consume.wait.ms";

    /** Every plugin setting with its default (null: none), in the order the README lists them. */
    static final Map<String, String> DEFAULTS;

    static {
        Map<String, String> d = new TreeMap<>();
        d.put(BINARY, null);
        d.put(SOCKET, null);
        d.put(ADDRESS, null);
        d.put(TLS_CA, null);
        d.put(TLS_CERT, null);
        d.put(TLS_KEY, null);
        d.put(TOKEN_FILE, null);
        d.put(WORK_DIR, null);
        d.put(SNAPSHOT_DIR, null);
        d.put(EMBEDDED_DIR, null);
        d.put(EXTRA_ARGS, "");
        d.put(CALL_TIMEOUT, "10000");
        d.put(MUTATION_TIMEOUT, null);
        d.put(START_TIMEOUT, "60000");
        d.put(INIT_TIMEOUT, null);
        d.put(STOP_TIMEOUT, "30000");
        d.put(RESTART_BACKOFF, "100");
        d.put(RESTART_BACKOFF_MAX, "10000");
        DEFAULTS = Collections.unmodifiableMap(d);
    }

    /** How the plugin reaches its server. */
    enum Mode {
        /** Start and supervise an {@code rlmm serve} child on a Unix socket. */
        SPAWN,
        /** Connect to a running server's Unix socket. */
        SOCKET,
        /** Connect to a running server over TCP. */
        TCP
    }

    final Mode mode;
    final int brokerId;
    final String clusterId;
    final Path logDir;
    final Path binary;
    /** The jar's binary that {@link #binary} is extracted from; null when {@link #BINARY} names one. */
    final BinaryExtractor.Bundled bundledBinary;
    final Path socket;
    final String address;
    final Path tlsCa;
    final Path tlsCert;
    final Path tlsKey;
    final Path tokenFile;
    final Path workDir;
    final Path snapshotDir;
    final Path embeddedDir;
    final List<String> extraArgs;
    final Duration callTimeout;
    final Duration mutationTimeout;
    final Duration startTimeout;
    /** {@link #INIT_TIMEOUT}. */
    final Duration initTimeout;
    final Duration stopTimeout;
    final Duration restartBackoff;
    final Duration restartBackoffMax;
    /** Kafka's remote.log.metadata.* settings, forwarded to the child as a properties file. */
    final Map<String, String> kafkaSettings;
    /** Kafka's remote.log.metadata.* settings rlmm does not use (producer/consumer tuning and the like). */
    final List<String> ignoredSettings;

    /**
     * The client settings (after remote.log.metadata.common.client.) rlmm serve reads. The
     * passwords among them reach the child only through its properties file (mode 0600 in the
     * private work directory, removed at close), never its command line.
     */
    private static final List<String> CLIENT_KEYS = List.of("bootstrap.servers", "security.protocol", "sasl.mechanism",
            "sasl.jaas.config", "sasl.kerberos.service.name", "ssl.truststore.location", "ssl.truststore.type",
            "ssl.truststore.password", "ssl.keystore.location", "ssl.keystore.type", "ssl.keystore.password",
            "ssl.key.password", "client.id");
    /**
     * The broker JVM's Kerberos configuration file (a system property, as Kafka's clients read it),
     * forwarded to the child as a setting of that name when the SASL mechanism is GSSAPI.
     */
    static final String KRB5_CONF = "java.security.krb5.conf";
    /** Flags of rlmm serve that carry a secret: refused in {@link #EXTRA_ARGS}. */
    private static final List<String> SECRET_FLAGS = List.of("--sasl-password");
    /** The remote.log.metadata.* settings of Kafka's manager rlmm serve reads. */
    private static final List<String> MANAGER_KEYS = List.of("remote.log.metadata.topic.num.partitions",
            "remote.log.metadata.topic.replication.factor", "remote.log.metadata.topic.min.isr",
            "remote.log.metadata.topic.retention.ms", CONSUME_WAIT);

    /** Whether rlmm serve reads this Kafka setting (its properties reader refuses others). */
    static boolean forwarded(String key) {
        if (key.startsWith(CLIENT_PREFIX)) {
            return CLIENT_KEYS.contains(key.substring(CLIENT_PREFIX.length()));
        }
        return MANAGER_KEYS.contains(key);
    }

    private PluginConfig(Map<String, ?> configs) {
        if (configs == null) {
            throw new ConfigException("configs can not be null");
        }
        brokerId = brokerId(configs.get(BROKER_ID));
        clusterId = string(configs, CLUSTER_ID);
        Map<String, String> kafka = new TreeMap<>();
        List<String> ignored = new ArrayList<>();
        for (Map.Entry<String, ?> e : configs.entrySet()) {
            String key = e.getKey();
            if (!key.startsWith(KAFKA_PREFIX) || e.getValue() == null) {
                continue;
            }
            if (!forwarded(key)) {
                ignored.add(key);
                continue;
            }
            Object raw = e.getValue();
            // A password-typed setting may arrive as Kafka's Password, whose toString hides it.
            String v = (raw instanceof org.apache.kafka.common.config.types.Password
                    ? ((org.apache.kafka.common.config.types.Password) raw).value()
                    : String.valueOf(raw)).trim();
            if (v.indexOf('\n') >= 0 || v.indexOf('\r') >= 0 || v.endsWith("\\")) {
                throw new ConfigException(key, "(not shown)", "a line break or a trailing backslash cannot be passed to rlmm serve");
            }
            kafka.put(key, v);
        }
        String krb5 = System.getProperty(KRB5_CONF);
        if (krb5 != null && !krb5.isBlank() && "GSSAPI".equalsIgnoreCase(kafka.getOrDefault(CLIENT_PREFIX + "sasl.mechanism", ""))) {
            if (krb5.indexOf('\n') >= 0 || krb5.indexOf('\r') >= 0 || krb5.endsWith("\\")) {
                throw new ConfigException(KRB5_CONF, krb5, "a line break or a trailing backslash cannot be passed to rlmm serve");
            }
            kafka.put(KRB5_CONF, krb5.trim());
        }
        kafkaSettings = Collections.unmodifiableMap(kafka);
        ignoredSettings = Collections.unmodifiableList(ignored);

        String socketSetting = string(configs, SOCKET);
        address = string(configs, ADDRESS);
        if (socketSetting != null && address != null) {
            throw new ConfigException(SOCKET, socketSetting, "give " + SOCKET + " or " + ADDRESS + ", not both");
        }
        tlsCa = readableFile(configs, TLS_CA);
        tlsCert = readableFile(configs, TLS_CERT);
        tlsKey = readableFile(configs, TLS_KEY);
        tokenFile = readableFile(configs, TOKEN_FILE);
        if ((tlsCert == null) != (tlsKey == null)) {
            String missing = tlsCert == null ? TLS_CERT : TLS_KEY;
            throw new ConfigException(missing, null, TLS_CERT + " and " + TLS_KEY + " go together");
        }
        if (address == null && (tlsCa != null || tlsCert != null || tokenFile != null)) {
            String given = tlsCa != null ? TLS_CA : tlsCert != null ? TLS_CERT : TOKEN_FILE;
            throw new ConfigException(given, configs.get(given), "only used with " + ADDRESS + " (a TCP server)");
        }
        if (address != null) {
            mode = Mode.TCP;
            hostPort(address);
        } else if (socketSetting != null) {
            mode = Mode.SOCKET;
        } else {
            mode = Mode.SPAWN;
        }

        String logDirSetting = string(configs, LOG_DIR);
        logDir = logDirSetting == null ? null : Paths.get(logDirSetting).toAbsolutePath();
        String work = string(configs, WORK_DIR);
        callTimeout = millis(configs, CALL_TIMEOUT, 1);
        startTimeout = millis(configs, START_TIMEOUT, 1);
        if (configs.get(INIT_TIMEOUT) != null) {
            initTimeout = millis(configs, INIT_TIMEOUT, 1);
        } else if (configs.get(KAFKA_INIT_TIMEOUT) != null) {
            initTimeout = millis(configs, KAFKA_INIT_TIMEOUT, 1);
        } else {
            initTimeout = Duration.ofMillis(KAFKA_INIT_TIMEOUT_DEFAULT_MS);
        }
        stopTimeout = millis(configs, STOP_TIMEOUT, 1);
        restartBackoff = millis(configs, RESTART_BACKOFF, 1);
        restartBackoffMax = millis(configs, RESTART_BACKOFF_MAX, 1);
        if (restartBackoffMax.compareTo(restartBackoff) < 0) {
            throw new ConfigException(RESTART_BACKOFF_MAX, configs.get(RESTART_BACKOFF_MAX),
                    "must not be below " + RESTART_BACKOFF + " (" + restartBackoff.toMillis() + ")");
        }
        if (configs.get(MUTATION_TIMEOUT) != null) {
            mutationTimeout = millis(configs, MUTATION_TIMEOUT, 1);
        } else {
            // The server waits up to consume.wait.ms (Kafka's default 2 minutes) for its own
            // read-back; the plugin's deadline leaves it that long and a call timeout more.
            Duration consumeWait = kafka.containsKey(CONSUME_WAIT)
                    ? millis(configs, CONSUME_WAIT, 1)
                    : Duration.ofMinutes(2);
            mutationTimeout = consumeWait.plus(callTimeout);
        }

        if (mode == Mode.SPAWN) {
            String embedded = string(configs, EMBEDDED_DIR);
            embeddedDir = embedded == null ? null : Paths.get(embedded).toAbsolutePath();
            if (embeddedDir == null && kafka.get(BOOTSTRAP) == null) {
                throw new ConfigException(BOOTSTRAP, null,
                        "missing: the broker passes it when remote.log.metadata.manager.listener.name is set "
                                + "(or set " + EMBEDDED_DIR + " to run over rlmm's embedded log)");
            }
            if (work != null) {
                workDir = Paths.get(work).toAbsolutePath();
            } else if (logDir != null) {
                workDir = defaultWorkDir(logDir);
            } else {
                throw new ConfigException(LOG_DIR, null, "missing: the broker passes it (or set " + WORK_DIR + ")");
            }
            String snap = string(configs, SNAPSHOT_DIR);
            snapshotDir = snap == null ? workDir.resolve("snapshots") : Paths.get(snap).toAbsolutePath();
            String binarySetting = string(configs, BINARY);
            bundledBinary = binarySetting == null ? BinaryExtractor.forHost() : null;
            binary = bundledBinary == null ? binary(binarySetting) : bundledBinary.target(workDir);
            socket = SocketPath.choose(workDir.resolve("serve.sock"));
            String extra = string(configs, EXTRA_ARGS);
            List<String> args = new ArrayList<>();
            if (extra != null) {
                for (String a : extra.trim().split("\\s+")) {
                    if (!a.isEmpty()) {
                        for (String secret : SECRET_FLAGS) {
                            if (a.equals(secret) || a.startsWith(secret + "=")) {
                                throw new ConfigException(EXTRA_ARGS, "(not shown)", secret + " would put a secret on the child's"
                                        + " command line, which every local user can read: give the password as a"
                                        + " remote.log.metadata.common.client.* setting (it goes to a 0600 properties file)");
                            }
                        }
                        args.add(a);
                    }
                }
            }
            extraArgs = Collections.unmodifiableList(args);
        } else {
            for (String spawnOnly : List.of(BINARY, WORK_DIR, SNAPSHOT_DIR, EMBEDDED_DIR, EXTRA_ARGS)) {
                if (configs.get(spawnOnly) != null) {
                    throw new ConfigException(spawnOnly, configs.get(spawnOnly),
                            "only used when the plugin starts its own server (without " + SOCKET + " or " + ADDRESS + ")");
                }
            }
            workDir = null;
            snapshotDir = null;
            embeddedDir = null;
            binary = null;
            bundledBinary = null;
            extraArgs = List.of();
            socket = mode == Mode.SOCKET ? Paths.get(socketSetting).toAbsolutePath() : null;
            if (socket != null && socket.toString().getBytes(java.nio.charset.StandardCharsets.UTF_8).length
                    > SocketPath.MAX_BYTES) {
                throw new ConfigException(SOCKET, socketSetting,
                        "longer than a Unix socket path may be (" + SocketPath.MAX_BYTES + " bytes)");
            }
        }
    }

    /** Parses the map a broker passes to configure. */
    static PluginConfig parse(Map<String, ?> configs) {
        return new PluginConfig(configs);
    }

    /** Where the server is, for error messages: the socket path or host:port. */
    String target() {
        return mode == Mode.TCP ? address : "unix:" + socket;
    }

    /**
     * The default private directory: next to the log directory, never inside it. A broker takes
     * every directory inside log.dir for a partition's log and refuses to start on one whose
     * name is not topic-partition, so the plugin keeps out of it.
     */
    static Path defaultWorkDir(Path logDir) {
        Path name = logDir.getFileName();
        Path parent = logDir.getParent();
        String dir = (name == null ? "kafka" : name.toString()) + ".rlmm";
        return parent == null ? Paths.get("/" + dir) : parent.resolve(dir);
    }

    private static int brokerId(Object v) {
        if (v == null) {
            throw new ConfigException(BROKER_ID, null, "missing: the broker passes it");
        }
        if (v instanceof Number) {
            return ((Number) v).intValue();
        }
        try {
            return Integer.parseInt(String.valueOf(v).trim());
        } catch (NumberFormatException e) {
            throw new ConfigException(BROKER_ID, v, "not an integer");
        }
    }

    private static String string(Map<String, ?> configs, String key) {
        Object v = configs.get(key);
        if (v == null) {
            return null;
        }
        String s = String.valueOf(v).trim();
        return s.isEmpty() ? null : s;
    }

    private static Duration millis(Map<String, ?> configs, String key, long min) {
        Object v = configs.get(key);
        String s = v == null ? DEFAULTS.get(key) : String.valueOf(v).trim();
        long n;
        try {
            n = Long.parseLong(s);
        } catch (NumberFormatException e) {
            throw new ConfigException(key, v, "not a number of milliseconds");
        }
        if (n < min) {
            throw new ConfigException(key, v, "must be at least " + min + " ms");
        }
        return Duration.ofMillis(n);
    }

    private static Path readableFile(Map<String, ?> configs, String key) {
        String s = string(configs, key);
        if (s == null) {
            return null;
        }
        Path p = Paths.get(s).toAbsolutePath();
        if (!Files.isRegularFile(p) || !Files.isReadable(p)) {
            throw new ConfigException(key, s, "no readable file " + p);
        }
        return p;
    }

    private static void hostPort(String address) {
        int colon = address.lastIndexOf(':');
        if (colon <= 0 || colon == address.length() - 1) {
            throw new ConfigException(ADDRESS, address, "want host:port");
        }
        try {
            int port = Integer.parseInt(address.substring(colon + 1));
            if (port < 1 || port > 65535) {
                throw new ConfigException(ADDRESS, address, "port out of range");
            }
        } catch (NumberFormatException e) {
            throw new ConfigException(ADDRESS, address, "want host:port");
        }
    }

    static String host(String address) {
        String h = address.substring(0, address.lastIndexOf(':'));
        return h.startsWith("[") && h.endsWith("]") ? h.substring(1, h.length() - 1) : h;
    }

    static int port(String address) {
        return Integer.parseInt(address.substring(address.lastIndexOf(':') + 1));
    }

    private static Path binary(String setting) {
        Path p = Paths.get(setting).toAbsolutePath();
        if (!Files.isRegularFile(p) || !Files.isExecutable(p)) {
            throw new ConfigException(BINARY, setting, "no executable file " + p);
        }
        return p;
    }
}

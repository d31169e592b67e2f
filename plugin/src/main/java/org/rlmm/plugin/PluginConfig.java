package org.rlmm.plugin;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigDef.Importance;
import org.apache.kafka.common.config.ConfigDef.Type;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.config.types.Password;

/**
 * The settings {@link RlmmRemoteLogMetadataManager#configure} reads from the map a broker passes
 * (every key arrives with the broker's {@code rlmm.config.} prefix already removed), declared on
 * Kafka's own {@link ConfigDef} with their types, defaults and documentation ({@link #DEF}; the
 * table of plugin/README.md is {@link #markdownTable}): the broker's own keys ({@code broker.id},
 * {@code log.dir}, {@code cluster.id}) and the plugin's {@code rlmm.serve.*} settings. A missing or
 * wrong one is a {@link ConfigException} naming it.
 *
 * <p>Kafka's {@code remote.log.metadata.*} settings are not declared here: they belong to
 * {@code rlmm serve}, which alone judges them. Every one the broker passes is forwarded as it is,
 * through the child's properties file (mode 0600, never its command line, since passwords are
 * among them); the server refuses what it cannot take (exit code 3, which stops the broker naming
 * the setting) and ignores, naming them in its log, the producer and consumer tuning of Kafka's
 * own manager that it has no use for. The plugin checks only that a value can be written to the
 * file (no line break, no trailing backslash).
 */
final class PluginConfig {
    /** Path of the rlmm binary to start as the child. */
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
    /** How long the plugin waits, from configure, for its first server before it stops the broker. */
    static final String INIT_TIMEOUT = "rlmm.serve.init.timeout.ms";
    /** Kafka's own manager's initialization bound: the default of {@link #INIT_TIMEOUT}. */
    static final String KAFKA_INIT_TIMEOUT = "remote.log.metadata.initialization.retry.max.timeout.ms";
    /** {@link #KAFKA_INIT_TIMEOUT}'s default in Kafka 4.x. */
    static final long KAFKA_INIT_TIMEOUT_DEFAULT_MS = 120_000;
    /** How long close() waits after SIGTERM before it kills the child. */
    static final String STOP_TIMEOUT = "rlmm.serve.stop.timeout.ms";
    /** First wait before a retry (restarting the child, re-sending a change); doubles up to the maximum. */
    static final String RESTART_BACKOFF = "rlmm.serve.restart.backoff.ms";
    /** Longest wait before a retry. */
    static final String RESTART_BACKOFF_MAX = "rlmm.serve.restart.backoff.max.ms";

    static final String BROKER_ID = "broker.id";
    static final String LOG_DIR = "log.dir";
    static final String CLUSTER_ID = "cluster.id";
    /** The prefix of the settings forwarded to rlmm serve. */
    static final String KAFKA_PREFIX = "remote.log.metadata.";
    static final String CLIENT_PREFIX = "remote.log.metadata.common.client.";
    static final String BOOTSTRAP = CLIENT_PREFIX + "bootstrap.servers";
    static final String CONSUME_WAIT = "remote.log.metadata.consume.wait.ms";
    /** Kafka's default of {@link #CONSUME_WAIT}. */
    static final Duration CONSUME_WAIT_DEFAULT = Duration.ofMinutes(2);
    /**
     * The broker JVM's Kerberos configuration file (a system property, as Kafka's clients read it),
     * forwarded to the child as a setting of that name when the SASL mechanism is GSSAPI.
     */
    static final String KRB5_CONF = "java.security.krb5.conf";
    /** Flags of rlmm serve that carry a secret: refused in {@link #EXTRA_ARGS}. */
    private static final List<String> SECRET_FLAGS = List.of("--sasl-password");
    /** The settings only the spawn mode uses. */
    private static final List<String> SPAWN_ONLY = List.of(BINARY, WORK_DIR, SNAPSHOT_DIR, EMBEDDED_DIR, EXTRA_ARGS);

    /** Every setting the plugin reads, with its type, default and documentation. */
    static final ConfigDef DEF = new ConfigDef()
            .define(BROKER_ID, Type.INT, ConfigDef.NO_DEFAULT_VALUE, Importance.HIGH,
                    "Passed by the broker: its node id, the child's --broker-id.")
            .define(LOG_DIR, Type.STRING, null, Importance.LOW,
                    "Passed by the broker: its first log directory; the default work directory is beside it.")
            .define(CLUSTER_ID, Type.STRING, null, Importance.LOW, "Passed by the broker: its cluster id.")
            .define(BINARY, Type.STRING, null, Importance.MEDIUM,
                    "The rlmm binary to start as the child, used as it is. Default: the jar's own binary for the host,"
                            + " extracted to <work dir>/rlmm and checked against its SHA-256.")
            .define(SOCKET, Type.STRING, null, Importance.MEDIUM,
                    "Connect to an already running rlmm serve on this Unix socket; no child.")
            .define(ADDRESS, Type.STRING, null, Importance.MEDIUM,
                    "Connect to an already running rlmm serve --listen-tcp at host:port; no child.")
            .define(TLS_CA, Type.STRING, null, Importance.LOW,
                    "With " + ADDRESS + ": PEM CA file that verifies the server's certificate (turns TLS on).")
            .define(TLS_CERT, Type.STRING, null, Importance.LOW,
                    "With " + ADDRESS + ": PEM client certificate, for a server that asks for one (with " + TLS_KEY + ").")
            .define(TLS_KEY, Type.STRING, null, Importance.LOW,
                    "With " + ADDRESS + ": PEM (PKCS#8) key of " + TLS_CERT + ".")
            .define(TOKEN_FILE, Type.STRING, null, Importance.LOW,
                    "With " + ADDRESS + ": file whose content is the bearer token the server asks for.")
            .define(WORK_DIR, Type.STRING, null, Importance.MEDIUM,
                    "The child's private directory (mode 0700: properties file, pid file, socket, snapshots)."
                            + " Default: <log.dir>.rlmm, beside the log directory, never inside it.")
            .define(SNAPSHOT_DIR, Type.STRING, null, Importance.LOW,
                    "The child's snapshot directory (--snapshot-dir). Default: <work dir>/snapshots.")
            .define(EMBEDDED_DIR, Type.STRING, null, Importance.LOW,
                    "Run the child over rlmm's embedded log in this directory instead of the Kafka topic (single"
                            + " broker, tests).")
            .define(EXTRA_ARGS, Type.STRING, "", Importance.LOW,
                    "More flags for the child, space-separated (e.g. --metrics-listen 127.0.0.1:9464); no secrets: "
                            + String.join(", ", SECRET_FLAGS) + " is refused.")
            .define(CALL_TIMEOUT, Type.LONG, 10_000L, atLeast(1), Importance.MEDIUM,
                    "Bound of a read (lookup, list, size, isReady) and of each try of an assignment change, the wait"
                            + " for a restarting child included.")
            .define(MUTATION_TIMEOUT, Type.LONG, null, atLeast(1), Importance.MEDIUM,
                    "Bound of a mutation (add, update, partition delete). Default: " + CONSUME_WAIT
                            + " (2 minutes unless set) plus the call timeout.")
            .define(START_TIMEOUT, Type.LONG, 60_000L, atLeast(1), Importance.LOW,
                    "How long a (re)started child may take to answer before it is stopped and started again (in the"
                            + " background: configure does not wait for it).")
            .define(INIT_TIMEOUT, Type.LONG, null, atLeast(1), Importance.MEDIUM,
                    "How long the first server may take to answer (and pass the version check) before the plugin"
                            + " stops the broker, as Kafka's own manager does. Default: " + KAFKA_INIT_TIMEOUT
                            + " when set, else " + KAFKA_INIT_TIMEOUT_DEFAULT_MS + ".")
            .define(STOP_TIMEOUT, Type.LONG, 30_000L, atLeast(1), Importance.LOW,
                    "close(): SIGTERM, then SIGKILL after this.")
            .define(RESTART_BACKOFF, Type.LONG, 100L, atLeast(1), Importance.LOW,
                    "First pause of every retry (restarting the child, re-sending an assignment change,"
                            + " re-opening the readiness watch); doubles after each failure.")
            .define(RESTART_BACKOFF_MAX, Type.LONG, 10_000L, atLeast(1), Importance.LOW,
                    "Longest pause of a retry (not below " + RESTART_BACKOFF + ").");

    /** A bound of at least min that lets an absent value (null: the setting's own default rule) through. */
    private static ConfigDef.Validator atLeast(long min) {
        return new ConfigDef.Validator() {
            @Override
            public void ensureValid(String name, Object value) {
                if (value != null && (Long) value < min) {
                    throw new ConfigException(name, value, "must be at least " + min + " ms");
                }
            }

            @Override
            public String toString() {
                return "at least " + min;
            }
        };
    }

    /**
     * The settings table of plugin/README.md: every documented setting of {@link #DEF} (the broker's
     * own keys and the internal test setting left out), in the order they are declared.
     */
    static String markdownTable() {
        StringBuilder b = new StringBuilder("| setting | default | meaning |\n|---|---|---|\n");
        for (ConfigDef.ConfigKey k : DEF.configKeys().values()) {
            if (k.internalConfig || !k.name.startsWith("rlmm.serve.")) {
                continue;
            }
            String dflt = k.defaultValue != null && !"".equals(k.defaultValue) ? "`" + k.defaultValue + "`"
                    : k.documentation.contains("Default:") ? "(see meaning)" : "(none)";
            b.append("| `").append(k.name).append("` | ").append(dflt).append(" | ")
                    .append(k.documentation.replace("<", "&lt;").replace(">", "&gt;")).append(" |\n");
        }
        return b.toString();
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
    /** Kafka's remote.log.metadata.* settings (and the Kerberos file), forwarded to the child as they are. */
    final Map<String, String> kafkaSettings;

    private PluginConfig(Map<String, ?> configs) {
        if (configs == null) {
            throw new ConfigException("configs can not be null");
        }
        Map<String, Object> declared = new java.util.HashMap<>();
        for (Map.Entry<String, ?> e : configs.entrySet()) {
            ConfigDef.ConfigKey k = DEF.configKeys().get(e.getKey());
            if (k == null || e.getValue() == null) {
                continue;
            }
            Object v = e.getValue();
            // The broker passes its settings as strings; a blank one is as good as absent.
            if (v instanceof String str && str.isBlank() && k.type != Type.STRING) {
                continue;
            }
            declared.put(e.getKey(), k.type == Type.STRING ? String.valueOf(v).trim() : v);
        }
        Map<String, Object> values = DEF.parse(declared);
        brokerId = (Integer) values.get(BROKER_ID);
        clusterId = blankToNull(values.get(CLUSTER_ID));
        Map<String, String> kafka = new TreeMap<>();
        for (Map.Entry<String, ?> e : configs.entrySet()) {
            String key = e.getKey();
            if (!key.startsWith(KAFKA_PREFIX) || e.getValue() == null) {
                continue;
            }
            Object raw = e.getValue();
            // A password-typed setting may arrive as Kafka's Password, whose toString hides it.
            String v = (raw instanceof Password pw ? pw.value() : String.valueOf(raw)).trim();
            kafka.put(key, writable(key, v, "(not shown)"));
        }
        String krb5 = System.getProperty(KRB5_CONF);
        if (krb5 != null && !krb5.isBlank() && "GSSAPI".equalsIgnoreCase(kafka.getOrDefault(CLIENT_PREFIX + "sasl.mechanism", ""))) {
            kafka.put(KRB5_CONF, writable(KRB5_CONF, krb5.trim(), krb5));
        }
        kafkaSettings = Collections.unmodifiableMap(kafka);

        String socketSetting = string(values, SOCKET);
        address = string(values, ADDRESS);
        if (socketSetting != null && address != null) {
            throw new ConfigException(SOCKET, socketSetting, "give " + SOCKET + " or " + ADDRESS + ", not both");
        }
        tlsCa = readableFile(values, TLS_CA);
        tlsCert = readableFile(values, TLS_CERT);
        tlsKey = readableFile(values, TLS_KEY);
        tokenFile = readableFile(values, TOKEN_FILE);
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

        String logDirSetting = string(values, LOG_DIR);
        logDir = logDirSetting == null ? null : Paths.get(logDirSetting).toAbsolutePath();
        String work = string(values, WORK_DIR);
        callTimeout = millis(values, CALL_TIMEOUT);
        startTimeout = millis(values, START_TIMEOUT);
        if (values.get(INIT_TIMEOUT) != null) {
            initTimeout = millis(values, INIT_TIMEOUT);
        } else if (configs.get(KAFKA_INIT_TIMEOUT) != null) {
            initTimeout = kafkaMillis(configs, KAFKA_INIT_TIMEOUT);
        } else {
            initTimeout = Duration.ofMillis(KAFKA_INIT_TIMEOUT_DEFAULT_MS);
        }
        stopTimeout = millis(values, STOP_TIMEOUT);
        restartBackoff = millis(values, RESTART_BACKOFF);
        restartBackoffMax = millis(values, RESTART_BACKOFF_MAX);
        if (restartBackoffMax.compareTo(restartBackoff) < 0) {
            throw new ConfigException(RESTART_BACKOFF_MAX, configs.get(RESTART_BACKOFF_MAX),
                    "must not be below " + RESTART_BACKOFF + " (" + restartBackoff.toMillis() + ")");
        }
        if (values.get(MUTATION_TIMEOUT) != null) {
            mutationTimeout = millis(values, MUTATION_TIMEOUT);
        } else {
            // The server waits up to consume.wait.ms (Kafka's default 2 minutes) for its own
            // read-back; the plugin's deadline leaves it that long and a call timeout more. The
            // server judges the setting: one it refuses stops the broker before any mutation.
            mutationTimeout = positiveMillis(kafka.get(CONSUME_WAIT)).orElse(CONSUME_WAIT_DEFAULT).plus(callTimeout);
        }

        if (mode == Mode.SPAWN) {
            String embedded = string(values, EMBEDDED_DIR);
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
            String snap = string(values, SNAPSHOT_DIR);
            snapshotDir = snap == null ? workDir.resolve("snapshots") : Paths.get(snap).toAbsolutePath();
            String binarySetting = string(values, BINARY);
            bundledBinary = binarySetting == null ? BinaryExtractor.forHost() : null;
            binary = bundledBinary == null ? binary(binarySetting) : bundledBinary.target(workDir);
            socket = SocketPath.choose(workDir.resolve("serve.sock"));
            String extra = string(values, EXTRA_ARGS);
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
            for (String spawnOnly : SPAWN_ONLY) {
                if (string(values, spawnOnly) != null) {
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

    private static String string(Map<String, ?> values, String key) {
        return blankToNull(values.get(key));
    }

    private static String blankToNull(Object v) {
        if (v == null) {
            return null;
        }
        String s = String.valueOf(v).trim();
        return s.isEmpty() ? null : s;
    }

    /** A LONG setting of {@link #DEF} (already checked against its bound) as a Duration; null when absent. */
    private static Duration millis(Map<String, ?> values, String key) {
        Object v = values.get(key);
        return v == null ? null : Duration.ofMillis((Long) v);
    }

    /** A Kafka setting the plugin itself reads as milliseconds (at least 1). */
    private static Duration kafkaMillis(Map<String, ?> configs, String key) {
        Object v = configs.get(key);
        return positiveMillis(String.valueOf(v).trim())
                .orElseThrow(() -> new ConfigException(key, v, "not a number of milliseconds (at least 1)"));
    }

    /** s as a positive number of milliseconds; empty when it is not one. */
    private static Optional<Duration> positiveMillis(String s) {
        if (s == null) {
            return Optional.empty();
        }
        try {
            long n = Long.parseLong(s.trim());
            return n >= 1 ? Optional.of(Duration.ofMillis(n)) : Optional.empty();
        } catch (NumberFormatException e) {
            return Optional.empty();
        }
    }

    /**
     * v, when it can be a line of the child's properties file: a line break or a trailing
     * backslash would change what the file says, so it is refused here (shown: what the message
     * shows of the value; passwords are not shown).
     */
    private static String writable(String key, String v, String shown) {
        if (v.indexOf('\n') >= 0 || v.indexOf('\r') >= 0 || v.endsWith("\\")) {
            throw new ConfigException(key, shown, "a line break or a trailing backslash cannot be passed to rlmm serve");
        }
        return v;
    }

    private static Path readableFile(Map<String, ?> values, String key) {
        String s = string(values, key);
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

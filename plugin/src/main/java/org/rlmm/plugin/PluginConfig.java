package org.rlmm.plugin;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;
import java.util.function.Predicate;
import org.apache.kafka.common.config.AbstractConfig;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigDef.Importance;
import org.apache.kafka.common.config.ConfigDef.Type;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.config.types.Password;
import org.apache.kafka.common.utils.Utils;

/**
 * The plugin's settings, on Kafka's {@link AbstractConfig}: {@link #DEF} declares each (the table of
 * plugin/README.md is made of it). Kafka's {@code remote.log.metadata.*} settings are
 * judged by {@code rlmm serve} alone: forwarded as they are through the child's 0600 properties
 * file, never its command line (passwords are among them).
 */
final class PluginConfig extends AbstractConfig {
    static final String BINARY = "rlmm.serve.binary";
    static final String SOCKET = "rlmm.serve.socket";
    static final String ADDRESS = "rlmm.serve.address";
    static final String TLS_CA = "rlmm.serve.tls.ca";
    static final String TOKEN_FILE = "rlmm.serve.token.file";
    static final String WORK_DIR = "rlmm.serve.work.dir";
    static final String SNAPSHOT_DIR = "rlmm.serve.snapshot.dir";
    static final String EMBEDDED_DIR = "rlmm.serve.embedded.dir";
    static final String EXTRA_ARGS = "rlmm.serve.args";
    static final String CALL_TIMEOUT = "rlmm.serve.call.timeout.ms";
    static final String MUTATION_TIMEOUT = "rlmm.serve.mutation.timeout.ms";
    static final String INIT_TIMEOUT = "rlmm.serve.init.timeout.ms";
    static final String STOP_TIMEOUT = "rlmm.serve.stop.timeout.ms";
    static final String RESTART_BACKOFF = "rlmm.serve.restart.backoff.ms";
    static final String RESTART_BACKOFF_MAX = "rlmm.serve.restart.backoff.max.ms";
    static final String BROKER_ID = "broker.id";
    static final String LOG_DIR = "log.dir";
    /** The prefix of the settings forwarded to rlmm serve. */
    static final String KAFKA_PREFIX = "remote.log.metadata.";
    static final String CLIENT_PREFIX = KAFKA_PREFIX + "common.client.";
    static final String BOOTSTRAP = CLIENT_PREFIX + "bootstrap.servers";
    static final String CONSUME_WAIT = KAFKA_PREFIX + "consume.wait.ms";
    /** Kafka's own manager's initialization bound: the default of {@link #INIT_TIMEOUT}. */
    static final String KAFKA_INIT_TIMEOUT = KAFKA_PREFIX + "initialization.retry.max.timeout.ms";
    /** The broker JVM's Kerberos file (a system property), forwarded to the child under GSSAPI. */
    static final String KRB5_CONF = "java.security.krb5.conf";
    /** Flags of rlmm serve that carry a secret: refused in {@link #EXTRA_ARGS}. */
    private static final String SECRET_FLAG = "--sasl-password";
    private static final List<String> SPAWN_ONLY = List.of(BINARY, WORK_DIR, SNAPSHOT_DIR, EMBEDDED_DIR, EXTRA_ARGS);
    private static final List<String> TCP_ONLY = List.of(TLS_CA, TOKEN_FILE);

    /** Every setting the plugin reads, with its type, default, check and documentation. */
    static final ConfigDef DEF = new ConfigDef()
            .define(BROKER_ID, Type.INT, ConfigDef.NO_DEFAULT_VALUE, Importance.HIGH, "Passed by the broker: the child's --broker-id.")
            .define(LOG_DIR, Type.STRING, null, Importance.LOW, "Passed by the broker: the default work directory is beside it.")
            .define(BINARY, Type.STRING, null, file(Files::isExecutable, "executable"), Importance.MEDIUM,
                    "The rlmm binary to start as the child, used as it is. Default: the jar's own binary for the host,"
                            + " extracted to <work dir>/rlmm and checked against its SHA-256.")
            .define(SOCKET, Type.STRING, null, Importance.MEDIUM,
                    "Connect to an already running rlmm serve on this Unix socket; no child.")
            .define(ADDRESS, Type.STRING, null, hostPort(), Importance.MEDIUM,
                    "Connect to an already running rlmm serve --listen-tcp at host:port; no child.")
            .define(TLS_CA, Type.STRING, null, file(Files::isReadable, "readable"), Importance.LOW,
                    "With " + ADDRESS + ": PEM CA file that verifies the server's certificate (turns TLS on).")
            .define(TOKEN_FILE, Type.STRING, null, file(Files::isReadable, "readable"), Importance.LOW,
                    "With " + ADDRESS + ": file whose content is the bearer token the server asks for.")
            .define(WORK_DIR, Type.STRING, null, Importance.MEDIUM,
                    "The child's private directory (mode 0700: properties file, socket, snapshots)."
                            + " Default: <log.dir>.rlmm, beside the log directory, never inside it.")
            .define(SNAPSHOT_DIR, Type.STRING, null, Importance.LOW,
                    "The child's snapshot directory (--snapshot-dir). Default: <work dir>/snapshots.")
            .define(EMBEDDED_DIR, Type.STRING, null, Importance.LOW,
                    "Run the child over rlmm's embedded log in this directory instead of the Kafka topic (single"
                            + " broker, tests).")
            .define(EXTRA_ARGS, Type.STRING, "", noSecret(), Importance.LOW,
                    "More flags for the child, space-separated (e.g. --metrics-listen 127.0.0.1:9464); no secrets: "
                            + SECRET_FLAG + " is refused.")
            .define(CALL_TIMEOUT, Type.LONG, 10_000L, atLeast(1), Importance.MEDIUM,
                    "Bound of a read (lookup, list, size, isReady) and of each try of an assignment change, the wait"
                            + " for a restarting child included.")
            .define(MUTATION_TIMEOUT, Type.LONG, null, atLeast(1), Importance.MEDIUM,
                    "Bound of a mutation (add, update, partition delete). Default: " + CONSUME_WAIT
                            + " (2 minutes unless set) plus the call timeout.")
            .define(INIT_TIMEOUT, Type.LONG, null, atLeast(1), Importance.MEDIUM,
                    "How long the first server may take to answer (and pass the version check) before the plugin"
                            + " stops the broker, as Kafka's own manager does; a restarted child not answering within it is"
                            + " stopped and started again. Default: " + KAFKA_INIT_TIMEOUT + " when set, else 120000.")
            .define(STOP_TIMEOUT, Type.LONG, 30_000L, atLeast(1), Importance.LOW,
                    "close(): SIGTERM, then SIGKILL after this.")
            .define(RESTART_BACKOFF, Type.LONG, 100L, atLeast(1), Importance.LOW,
                    "First pause of every retry (finding the server again, restarting the child, re-sending an"
                            + " assignment change); doubles after each failure.")
            .define(RESTART_BACKOFF_MAX, Type.LONG, 10_000L, atLeast(1), Importance.LOW,
                    "Longest pause of a retry (not below " + RESTART_BACKOFF + ").");

    /** How the plugin reaches its server. */
    enum Mode { SPAWN, SOCKET, TCP }

    final Mode mode;
    /** The child's private directory (spawn mode), else null. */
    final Path workDir;
    /** The Unix socket of the server (spawn and socket modes), else null. */
    final Path socket;
    /** The binary the child runs (spawn mode), else null. */
    final Path binary;
    /** Kafka's remote.log.metadata.* settings (and the Kerberos file), forwarded to the child as they are. */
    final Map<String, String> kafkaSettings;

    private PluginConfig(Map<?, ?> originals) {
        super(DEF, originals, false);
        Map<String, String> kafka = new TreeMap<>();
        originals().forEach((k, raw) -> {
            if (k.startsWith(KAFKA_PREFIX) && raw != null) {
                // A password-typed setting may arrive as Kafka's Password, whose toString hides it.
                kafka.put(k, writable(k, (raw instanceof Password pw ? pw.value() : String.valueOf(raw)).trim(), "(not shown)"));
            }
        });
        String krb5 = System.getProperty(KRB5_CONF);
        if (krb5 != null && !krb5.isBlank() && "GSSAPI".equalsIgnoreCase(kafka.getOrDefault(CLIENT_PREFIX + "sasl.mechanism", ""))) {
            kafka.put(KRB5_CONF, writable(KRB5_CONF, krb5.trim(), krb5));
        }
        kafkaSettings = Map.copyOf(kafka);
        mode = string(ADDRESS) != null ? Mode.TCP : string(SOCKET) != null ? Mode.SOCKET : Mode.SPAWN;
        if (mode == Mode.TCP && string(SOCKET) != null) {
            throw new ConfigException(SOCKET, string(SOCKET), "give " + SOCKET + " or " + ADDRESS + ", not both");
        }
        refuseOutside(mode != Mode.TCP, TCP_ONLY, "only used with " + ADDRESS + " (a TCP server)");
        refuseOutside(mode != Mode.SPAWN, SPAWN_ONLY, "only used when the plugin starts its own server (without "
                + SOCKET + " or " + ADDRESS + ")");
        if (ms(RESTART_BACKOFF_MAX).compareTo(ms(RESTART_BACKOFF)) < 0) {
            throw new ConfigException(RESTART_BACKOFF_MAX, ms(RESTART_BACKOFF_MAX).toMillis(), "must not be below " + RESTART_BACKOFF);
        }
        initTimeout(); // checks Kafka's setting when it is the default
        if (mode == Mode.SPAWN) {
            if (path(EMBEDDED_DIR) == null && kafka.get(BOOTSTRAP) == null) {
                throw new ConfigException(BOOTSTRAP, null, "missing: the broker passes it when"
                        + " remote.log.metadata.manager.listener.name is set (or set " + EMBEDDED_DIR
                        + " to run over rlmm's embedded log)");
            }
            if (string(WORK_DIR) != null) {
                workDir = Paths.get(string(WORK_DIR)).toAbsolutePath();
            } else if (string(LOG_DIR) != null) {
                workDir = defaultWorkDir(Paths.get(string(LOG_DIR)).toAbsolutePath());
            } else {
                throw new ConfigException(LOG_DIR, null, "missing: the broker passes it (or set " + WORK_DIR + ")");
            }
            binary = string(BINARY) != null ? Paths.get(string(BINARY)).toAbsolutePath() : workDir.resolve("rlmm");
            socket = SocketPath.choose(workDir.resolve("serve.sock"));
        } else {
            workDir = null;
            binary = null;
            socket = mode == Mode.SOCKET ? Paths.get(string(SOCKET)).toAbsolutePath() : null;
            if (socket != null && !SocketPath.fits(socket)) {
                throw new ConfigException(SOCKET, socket.toString(), "longer than a Unix socket path may be ("
                        + SocketPath.MAX_BYTES + " bytes)");
            }
        }
    }

    /** Parses the map a broker passes to configure. */
    static PluginConfig parse(Map<String, ?> configs) {
        return new PluginConfig(Objects.requireNonNull(configs, "configs can not be null")); // as Kafka's manager checks it
    }

    int brokerId() {
        return getInt(BROKER_ID);
    }

    /** Whether the child runs the jar's own binary (extracted into the work directory). */
    boolean bundledBinary() {
        return mode == Mode.SPAWN && string(BINARY) == null;
    }

    Path snapshotDir() {
        return string(SNAPSHOT_DIR) != null ? path(SNAPSHOT_DIR) : workDir.resolve("snapshots");
    }

    List<String> extraArgs() {
        return Arrays.stream(getString(EXTRA_ARGS).trim().split("\\s+")).filter(a -> !a.isEmpty()).toList();
    }

    /** {@link #MUTATION_TIMEOUT}, else the server's wait for its own event (consume.wait.ms) plus a call timeout. */
    Duration mutationTimeout() {
        // The server judges consume.wait.ms: one it refuses stops the broker before any mutation.
        Long wait = kafkaMs(kafkaSettings.get(CONSUME_WAIT));
        return getLong(MUTATION_TIMEOUT) != null ? ms(MUTATION_TIMEOUT)
                : Duration.ofMillis(wait != null ? wait : 120_000).plus(ms(CALL_TIMEOUT));
    }

    /** {@link #INIT_TIMEOUT}, else Kafka's {@link #KAFKA_INIT_TIMEOUT}, else its default 120000. */
    Duration initTimeout() {
        Object kafka = originals().get(KAFKA_INIT_TIMEOUT);
        if (getLong(INIT_TIMEOUT) != null || kafka == null) {
            return getLong(INIT_TIMEOUT) != null ? ms(INIT_TIMEOUT) : Duration.ofMillis(120_000);
        }
        Long n = kafkaMs(kafka);
        if (n == null) {
            throw new ConfigException(KAFKA_INIT_TIMEOUT, kafka, "not a number of milliseconds (at least 1)");
        }
        return Duration.ofMillis(n);
    }

    /** A Kafka setting's value in milliseconds; null when absent or not a number of at least 1. */
    private static Long kafkaMs(Object v) {
        try {
            long n = Long.parseLong(String.valueOf(v).trim());
            return n >= 1 ? n : null;
        } catch (NumberFormatException e) {
            return null;
        }
    }

    /** Where the server is, for messages: the socket path or host:port. */
    String target() {
        return mode == Mode.TCP ? string(ADDRESS) : "unix:" + socket;
    }

    /**
     * The default private directory: next to the log directory, never inside it (a broker takes
     * every directory inside log.dir for a partition's log and refuses to start on another name).
     */
    static Path defaultWorkDir(Path logDir) {
        Path name = logDir.getFileName();
        Path parent = logDir.getParent();
        String dir = (name == null ? "kafka" : name.toString()) + ".rlmm";
        return parent == null ? Paths.get("/" + dir) : parent.resolve(dir);
    }

    /** The setting key as a trimmed string; null when unset or blank. */
    String string(String key) {
        String s = getString(key);
        return s == null || s.isBlank() ? null : s.trim();
    }

    /** The setting key as an absolute path; null when unset. */
    Path path(String key) {
        String s = string(key);
        return s == null ? null : Paths.get(s).toAbsolutePath();
    }

    /** The setting key, in milliseconds. */
    Duration ms(String key) {
        return Duration.ofMillis(getLong(key));
    }

    private void refuseOutside(boolean outside, List<String> keys, String why) {
        for (String k : keys) {
            if (outside && string(k) != null) {
                throw new ConfigException(k, originals().get(k), why);
            }
        }
    }

    /**
     * v, when it can be a line of the child's properties file: a line break or a trailing backslash
     * would change what the file says (shown: what the message shows of the value).
     */
    private static String writable(String key, String v, String shown) {
        if (v.indexOf('\n') >= 0 || v.indexOf('\r') >= 0 || v.endsWith("\\")) {
            throw new ConfigException(key, shown, "a line break or a trailing backslash cannot be passed to rlmm serve");
        }
        return v;
    }

    /** At least min, or absent (null: the setting's own default rule). */
    private static ConfigDef.Validator atLeast(long min) {
        return ConfigDef.LambdaValidator.with((name, v) -> {
            if (v != null && (Long) v < min) {
                throw new ConfigException(name, v, "must be at least " + min + " ms");
            }
        }, () -> "at least " + min);
    }

    /** A file the test holds for, or absent. */
    private static ConfigDef.Validator file(Predicate<Path> test, String what) {
        return ConfigDef.LambdaValidator.with((name, v) -> {
            Path p = v == null || ((String) v).isBlank() ? null : Paths.get(((String) v).trim()).toAbsolutePath();
            if (p != null && !(Files.isRegularFile(p) && test.test(p))) {
                throw new ConfigException(name, v, "no " + what + " file " + p);
            }
        }, () -> what + " file");
    }

    /** host:port as Kafka's clients parse it ([v6]:port too), or absent. */
    private static ConfigDef.Validator hostPort() {
        return ConfigDef.LambdaValidator.with((name, v) -> {
            String s = v == null ? "" : ((String) v).trim();
            Integer port;
            try {
                port = Utils.getPort(s);
            } catch (NumberFormatException e) {
                port = null; // digits beyond an int
            }
            if (!s.isEmpty() && (Utils.getHost(s) == null || Utils.getHost(s).isEmpty() || port == null || port < 1 || port > 65535)) {
                throw new ConfigException(name, v, "want host:port");
            }
        }, () -> "host:port");
    }

    /** rlmm.serve.args may not carry a secret: the child's command line is readable by every local user. */
    private static ConfigDef.Validator noSecret() {
        return ConfigDef.LambdaValidator.with((name, v) -> {
            for (String f : String.valueOf(v).trim().split("\\s+")) {
                if (f.equals(SECRET_FLAG) || f.startsWith(SECRET_FLAG + "=")) {
                    throw new ConfigException(name, "(not shown)", SECRET_FLAG + " would put a secret on the child's"
                            + " command line, which every local user can read: give the password as a " + CLIENT_PREFIX
                            + "* setting (it goes to a 0600 properties file)");
                }
            }
        }, () -> "no " + SECRET_FLAG);
    }
}

package kafkalog

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/rlmm-go/rlmm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// Defaults, Kafka's where Kafka has one.
const (
	// DefaultTopic is Kafka's metadata topic name.
	DefaultTopic = "__remote_log_metadata"
	// DefaultNumPartitions is remote.log.metadata.topic.num.partitions' default.
	DefaultNumPartitions int32 = 50
	// DefaultRetentionMs is remote.log.metadata.topic.retention.ms' default
	// (keep forever).
	DefaultRetentionMs int64 = -1
	// DefaultConsumeWait is remote.log.metadata.consume.wait.ms' default.
	DefaultConsumeWait = 2 * time.Minute
	// DefaultConnectTimeout bounds Open's first contact with the cluster and
	// the topic creation when the caller's context has no earlier deadline.
	DefaultConnectTimeout = 10 * time.Second
	// DefaultClientID is the client.id the clients announce.
	DefaultClientID = "rlmm"
)

// SASL mechanism names, as Kafka's sasl.mechanism spells them.
const (
	SASLPlain       = "PLAIN"
	SASLScramSHA256 = "SCRAM-SHA-256"
	SASLScramSHA512 = "SCRAM-SHA-512"
)

// Config configures Open. The zero value of every field but BootstrapServers
// means "Kafka's default"; each field names the Kafka setting it mirrors.
type Config struct {
	// BootstrapServers are host:port addresses of some brokers of the
	// cluster (Kafka: bootstrap.servers). Required.
	BootstrapServers []string

	// Topic is the metadata topic (Kafka's name is fixed:
	// __remote_log_metadata, the default). Tests use other names.
	Topic string

	// NumPartitions is remote.log.metadata.topic.num.partitions. 0 means:
	// create with Kafka's default 50, or accept an existing topic's count.
	// A non-zero value that differs from an existing topic's count makes
	// Open fail, because it decides which metadata partition holds each
	// user partition.
	NumPartitions int32

	// ReplicationFactor is remote.log.metadata.topic.replication.factor,
	// used only when creating the topic. 0 means min(3, live brokers).
	ReplicationFactor int16

	// MinInSyncReplicas is remote.log.metadata.topic.min.isr (Kafka 4.3+),
	// set as min.insync.replicas on a created topic. 0 means
	// min(2, replication factor).
	MinInSyncReplicas int16

	// RetentionMs is remote.log.metadata.topic.retention.ms, set as
	// retention.ms on a created topic. 0 means Kafka's default -1 (forever);
	// otherwise it must be -1 or positive, as Kafka requires.
	RetentionMs int64

	// ConsumeWait is remote.log.metadata.consume.wait.ms: how long a
	// mutation may wait for its event to be consumed back. The log itself
	// does not use it; the topic-based manager reads it from here. 0 means
	// 2 minutes.
	ConsumeWait time.Duration

	// SkipTopicCreation makes Open fail with ErrTopicNotFound instead of
	// creating a missing topic: for read-only tools (rlmm inspect --kafka).
	// Kafka's manager always creates the topic.
	SkipTopicCreation bool

	// TLS, when non-nil, is used as is for every connection (Kafka:
	// security.protocol=SSL or SASL_SSL). When nil, TLS is on if any of the
	// TLS* fields below is set.
	TLS *tls.Config
	// TLSEnable turns TLS on with the system's root CAs when no other TLS
	// field is set.
	TLSEnable bool
	// TLSCAFile is a PEM file of CA certificates that verify the brokers
	// (Kafka: ssl.truststore.location with ssl.truststore.type=PEM).
	TLSCAFile string
	// TLSCertFile and TLSKeyFile are the PEM client certificate and key for
	// mutual TLS (Kafka: ssl.keystore.location with ssl.keystore.type=PEM).
	TLSCertFile, TLSKeyFile string
	// TLSInsecureSkipVerify disables verification of the brokers'
	// certificates (Kafka: ssl.endpoint.identification.algorithm= plus a
	// trust-all store). For tests only.
	TLSInsecureSkipVerify bool

	// TLSKeyStoreLocation is a JKS or PKCS12 key store holding the client
	// certificate(s) for mutual TLS (Kafka: ssl.keystore.location with
	// ssl.keystore.type JKS or PKCS12; the file's content tells the two
	// apart, as Java's keystore.type.compat does). Every private key entry
	// is offered, each with its certificate chain. TLSKeyStorePassword is
	// ssl.keystore.password (required: it checks the store's integrity) and
	// TLSKeyPassword is ssl.key.password (default: the store password; a
	// PKCS12 key must be under the store password). Exclusive with
	// TLSCertFile/TLSKeyFile.
	TLSKeyStoreLocation, TLSKeyStorePassword, TLSKeyPassword string
	// TLSTrustStoreLocation is a JKS or PKCS12 trust store whose trusted
	// certificate entries verify the brokers (Kafka: ssl.truststore.location
	// with ssl.truststore.type JKS or PKCS12), TLSTrustStorePassword its
	// ssl.truststore.password (required). Exclusive with TLSCAFile.
	TLSTrustStoreLocation, TLSTrustStorePassword string

	// SASLMechanism is sasl.mechanism: "" (none), PLAIN, SCRAM-SHA-256,
	// SCRAM-SHA-512 or GSSAPI (Kafka: security.protocol=SASL_PLAINTEXT or
	// SASL_SSL).
	SASLMechanism string
	// SASLUser and SASLPassword are the credentials of PLAIN and SCRAM
	// (Kafka: the username and password of sasl.jaas.config).
	SASLUser, SASLPassword string

	// GSSAPI (Kerberos), logged in from a keytab. SASLKerberosServiceName
	// is sasl.kerberos.service.name (required: the broker's principal is
	// <service>/<broker host>@<realm>, the host as the bootstrap and
	// advertised addresses spell it). SASLKerberosPrincipal and
	// SASLKerberosKeyTab are the principal and keyTab options of
	// sasl.jaas.config's Krb5LoginModule (name@REALM; without @REALM, the
	// krb5.conf's default_realm). SASLKerberosConfig is the krb5.conf (the
	// JVM's java.security.krb5.conf); empty means $KRB5_CONFIG, else
	// /etc/krb5.conf.
	SASLKerberosServiceName, SASLKerberosPrincipal, SASLKerberosKeyTab, SASLKerberosConfig string

	// ClientID is client.id. Empty means "rlmm".
	ClientID string

	// ConnectTimeout bounds Open: reaching a broker, describing and
	// creating the topic, waiting for its partitions to have leaders. It
	// applies unless ctx has an earlier deadline. 0 means 10 seconds.
	ConnectTimeout time.Duration

	// Logger receives the log's and franz-go's messages (franz-go's info
	// level is logged at debug). nil discards them.
	Logger *slog.Logger
}

// withDefaults returns a copy of c with zero fields set to their defaults
// (except the ones that depend on the cluster), or an ErrInvalidArgument
// naming the bad field.
func (c Config) withDefaults() (Config, error) {
	bad := func(format string, args ...any) (Config, error) {
		return Config{}, fmt.Errorf("kafkalog: %w: %s", rlmm.ErrInvalidArgument, fmt.Sprintf(format, args...))
	}
	var servers []string
	for _, s := range c.BootstrapServers {
		for part := range strings.SplitSeq(s, ",") {
			if part = strings.TrimSpace(part); part != "" {
				servers = append(servers, part)
			}
		}
	}
	if len(servers) == 0 {
		return bad("bootstrap servers (bootstrap.servers) are required")
	}
	c.BootstrapServers = servers
	if c.Topic == "" {
		c.Topic = DefaultTopic
	}
	if c.NumPartitions < 0 {
		return bad("remote.log.metadata.topic.num.partitions is %d, must be at least 1", c.NumPartitions)
	}
	if c.ReplicationFactor < 0 {
		return bad("remote.log.metadata.topic.replication.factor is %d, must be at least 1", c.ReplicationFactor)
	}
	if c.MinInSyncReplicas < 0 {
		return bad("remote.log.metadata.topic.min.isr is %d, must be at least 1", c.MinInSyncReplicas)
	}
	switch {
	case c.RetentionMs == 0:
		c.RetentionMs = DefaultRetentionMs
	case c.RetentionMs < -1:
		return bad("remote.log.metadata.topic.retention.ms is %d, must be -1 or positive", c.RetentionMs)
	}
	switch {
	case c.ConsumeWait == 0:
		c.ConsumeWait = DefaultConsumeWait
	case c.ConsumeWait < 0:
		return bad("remote.log.metadata.consume.wait.ms is %s, must not be negative", c.ConsumeWait)
	}
	if c.ConnectTimeout <= 0 {
		c.ConnectTimeout = DefaultConnectTimeout
	}
	if c.ClientID == "" {
		c.ClientID = DefaultClientID
	}
	if (c.TLSCertFile == "") != (c.TLSKeyFile == "") {
		return bad("a TLS client certificate needs both the certificate and the key file (got cert %q, key %q)", c.TLSCertFile, c.TLSKeyFile)
	}
	if c.TLSKeyStoreLocation != "" && c.TLSCertFile != "" {
		return bad("ssl.keystore.location %s and a PEM client certificate %s: give one", c.TLSKeyStoreLocation, c.TLSCertFile)
	}
	if c.TLSKeyStoreLocation == "" && (c.TLSKeyStorePassword != "" || c.TLSKeyPassword != "") {
		return bad("ssl.keystore.password or ssl.key.password without a JKS or PKCS12 ssl.keystore.location")
	}
	if c.TLSTrustStoreLocation != "" && c.TLSCAFile != "" {
		return bad("ssl.truststore.location %s and a PEM CA file %s: give one", c.TLSTrustStoreLocation, c.TLSCAFile)
	}
	if c.TLSTrustStoreLocation == "" && c.TLSTrustStorePassword != "" {
		return bad("ssl.truststore.password without a JKS or PKCS12 ssl.truststore.location")
	}
	kerberosSet := c.SASLKerberosServiceName != "" || c.SASLKerberosPrincipal != "" || c.SASLKerberosKeyTab != "" || c.SASLKerberosConfig != ""
	switch strings.ToUpper(c.SASLMechanism) {
	case "":
		if c.SASLUser != "" || c.SASLPassword != "" || kerberosSet {
			return bad("SASL credentials given without a SASL mechanism (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, GSSAPI)")
		}
	case SASLPlain, SASLScramSHA256, SASLScramSHA512:
		c.SASLMechanism = strings.ToUpper(c.SASLMechanism)
		if c.SASLUser == "" {
			return bad("SASL mechanism %s needs a user", c.SASLMechanism)
		}
		if kerberosSet {
			return bad("Kerberos settings (sasl.kerberos.service.name, Krb5LoginModule) with SASL mechanism %s", c.SASLMechanism)
		}
	case SASLGSSAPI:
		c.SASLMechanism = SASLGSSAPI
		switch {
		case c.SASLUser != "" || c.SASLPassword != "":
			return bad("SASL mechanism GSSAPI takes a principal and keytab, not a user name and password")
		case c.SASLKerberosServiceName == "":
			return bad("SASL mechanism GSSAPI needs sasl.kerberos.service.name (the first part of the brokers' principal, e.g. kafka)")
		case c.SASLKerberosPrincipal == "":
			return bad("SASL mechanism GSSAPI needs the client's principal (sasl.jaas.config: principal=\"name@REALM\")")
		case c.SASLKerberosKeyTab == "":
			return bad("SASL mechanism GSSAPI needs the client's keytab (sasl.jaas.config: useKeyTab=true keyTab=\"<file>\")")
		}
	default:
		return bad("sasl.mechanism %q is not supported: want PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or GSSAPI (not OAUTHBEARER: see docs/operations.md)", c.SASLMechanism)
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c, nil
}

// tlsConfig builds the TLS configuration, or nil for plaintext.
func (c Config) tlsConfig() (*tls.Config, error) {
	if c.TLS != nil {
		return c.TLS.Clone(), nil
	}
	if !c.TLSEnable && c.TLSCAFile == "" && c.TLSCertFile == "" && !c.TLSInsecureSkipVerify &&
		c.TLSKeyStoreLocation == "" && c.TLSTrustStoreLocation == "" {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: c.TLSInsecureSkipVerify} //nolint:gosec // opt-in, documented as test-only
	if c.TLSCAFile != "" {
		pem, err := os.ReadFile(c.TLSCAFile)
		if err != nil {
			return nil, fmt.Errorf("kafkalog: %w: reading TLS CA file: %w", rlmm.ErrInvalidArgument, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("kafkalog: %w: TLS CA file %s holds no PEM certificate", rlmm.ErrInvalidArgument, c.TLSCAFile)
		}
		cfg.RootCAs = pool
	}
	if c.TLSCertFile != "" {
		cert, err := tls.LoadX509KeyPair(c.TLSCertFile, c.TLSKeyFile)
		if err != nil {
			return nil, fmt.Errorf("kafkalog: %w: loading TLS client certificate %s / key %s: %w", rlmm.ErrInvalidArgument, c.TLSCertFile, c.TLSKeyFile, err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	if c.TLSTrustStoreLocation != "" {
		pool, err := trustStorePool(c.TLSTrustStoreLocation, c.TLSTrustStorePassword)
		if err != nil {
			return nil, err
		}
		cfg.RootCAs = pool
	}
	if c.TLSKeyStoreLocation != "" {
		certs, err := keyStoreCertificates(c.TLSKeyStoreLocation, c.TLSKeyStorePassword, c.TLSKeyPassword)
		if err != nil {
			return nil, err
		}
		cfg.Certificates = certs
	}
	return cfg, nil
}

// saslMechanism builds the SASL mechanism, or nil for none. A GSSAPI
// mechanism is made anew for every client: closing the client destroys it.
func (c Config) saslMechanism() (sasl.Mechanism, error) {
	switch c.SASLMechanism {
	case SASLPlain:
		return plain.Auth{User: c.SASLUser, Pass: c.SASLPassword}.AsMechanism(), nil
	case SASLScramSHA256:
		return scram.Auth{User: c.SASLUser, Pass: c.SASLPassword}.AsSha256Mechanism(), nil
	case SASLScramSHA512:
		return scram.Auth{User: c.SASLUser, Pass: c.SASLPassword}.AsSha512Mechanism(), nil
	case SASLGSSAPI:
		return c.kerberosMechanism()
	}
	return nil, nil
}

// clientOpts are the options every kgo client of a log shares.
func (c Config) clientOpts(role string) ([]kgo.Opt, error) {
	tlsCfg, err := c.tlsConfig()
	if err != nil {
		return nil, err
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(c.BootstrapServers...),
		kgo.ClientID(c.ClientID + "-" + role),
		kgo.DialTimeout(c.ConnectTimeout),
		kgo.WithLogger(slogAdapter{c.Logger.With("client", role)}),
		// After a broker restart or a leader move, let the clients refresh
		// leadership sooner than kgo's default of 5 s between refreshes.
		kgo.MetadataMinAge(250 * time.Millisecond),
		// Retries (a broker not listening yet, a leader moving) back off
		// 50, 100, 200, then 250 ms, not up to kgo's 1 s: a sidecar
		// started by its broker's RLMM plugin before the broker's listener
		// opens connects within 250 ms of it, not up to a second later.
		kgo.RetryBackoffFn(retryBackoff),
	}
	if tlsCfg != nil {
		opts = append(opts, kgo.DialTLSConfig(tlsCfg))
	}
	m, err := c.saslMechanism()
	if err != nil {
		return nil, err
	}
	if m != nil {
		opts = append(opts, kgo.SASL(m))
	}
	return opts, nil
}

// retryBackoff is the wait before retry number tries (from 1): 50 ms
// doubling, at most 250 ms.
func retryBackoff(tries int) time.Duration {
	return min(25*time.Millisecond<<min(max(tries, 1), 4), 250*time.Millisecond)
}

// slogAdapter routes franz-go's logging to a *slog.Logger. franz-go's info
// level describes every request and assignment, so it becomes debug.
type slogAdapter struct{ l *slog.Logger }

// Level reports the most verbose kgo level the slog handler wants.
func (a slogAdapter) Level() kgo.LogLevel {
	ctx := context.Background()
	switch {
	case a.l.Enabled(ctx, slog.LevelDebug):
		return kgo.LogLevelInfo
	case a.l.Enabled(ctx, slog.LevelWarn):
		return kgo.LogLevelWarn
	case a.l.Enabled(ctx, slog.LevelError):
		return kgo.LogLevelError
	}
	return kgo.LogLevelNone
}

// Log forwards one kgo message.
func (a slogAdapter) Log(level kgo.LogLevel, msg string, keyvals ...any) {
	var l slog.Level
	switch level {
	case kgo.LogLevelError:
		l = slog.LevelError
	case kgo.LogLevelWarn:
		l = slog.LevelWarn
	default:
		l = slog.LevelDebug
	}
	a.l.Log(context.Background(), l, "franz-go: "+msg, keyvals...)
}

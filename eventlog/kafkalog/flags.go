package kafkalog

import (
	"fmt"
	"os"
	"strings"

	"github.com/rlmm-go/rlmm"
	"github.com/spf13/pflag"
)

// MaxFlagPartitions bounds --kafka-partitions: 200 times Kafka's default
// of 50 metadata partitions, far more than a cluster needs.
const MaxFlagPartitions = 10_000

// PasswordEnv is the environment variable --sasl-password falls back to, so
// a password need not appear in the process list.
const PasswordEnv = "RLMM_KAFKA_SASL_PASSWORD"

// FlagValues holds the values of the flags RegisterFlags defines.
type FlagValues struct {
	Bootstrap          string
	Topic              string
	Partitions         int32
	TLS                bool
	TLSCA              string
	TLSCert            string
	TLSKey             string
	InsecureSkipVerify bool
	SASLMechanism      string
	SASLUser           string
	SASLPassword       string
}

// RegisterFlags defines the Kafka connection flags on fs (--kafka, --kafka-topic,
// --kafka-partitions, --tls, --tls-ca, --tls-cert, --tls-key,
// --tls-insecure-skip-verify, --sasl-mechanism, --sasl-user,
// --sasl-password) and returns where their values land.
func RegisterFlags(fs *pflag.FlagSet) *FlagValues {
	v := &FlagValues{}
	fs.StringVar(&v.Bootstrap, "kafka", "", "Kafka bootstrap servers, host:port[,host:port...] (bootstrap.servers)")
	fs.StringVar(&v.Topic, "kafka-topic", DefaultTopic, "metadata topic")
	fs.Int32Var(&v.Partitions, "kafka-partitions", 0, fmt.Sprintf("expected partition count of the metadata topic, or the count to create it with, 0 to %d (remote.log.metadata.topic.num.partitions; 0: the existing topic's, or 50)", MaxFlagPartitions))
	fs.BoolVar(&v.TLS, "tls", false, "connect with TLS, trusting the system's CAs (implied by the other --tls-* flags)")
	fs.StringVar(&v.TLSCA, "tls-ca", "", "PEM file of CA certificates that verify the brokers")
	fs.StringVar(&v.TLSCert, "tls-cert", "", "PEM client certificate for mutual TLS (needs --tls-key)")
	fs.StringVar(&v.TLSKey, "tls-key", "", "PEM client key for mutual TLS (needs --tls-cert)")
	fs.BoolVar(&v.InsecureSkipVerify, "tls-insecure-skip-verify", false, "do not verify the brokers' certificates (testing only)")
	fs.StringVar(&v.SASLMechanism, "sasl-mechanism", "", "SASL mechanism: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (sasl.mechanism)")
	fs.StringVar(&v.SASLUser, "sasl-user", "", "SASL user name")
	fs.StringVar(&v.SASLPassword, "sasl-password", "", "SASL password (default: $"+PasswordEnv+")")
	return v
}

// Enabled reports whether --kafka was given.
func (v *FlagValues) Enabled() bool { return strings.TrimSpace(v.Bootstrap) != "" }

// Config turns the flag values into a Config (Logger and the other
// non-flag fields left at their defaults), or an error wrapping
// rlmm.ErrInvalidArgument that names the bad flag.
func (v *FlagValues) Config() (Config, error) {
	bad := func(format string, args ...any) (Config, error) {
		return Config{}, fmt.Errorf("%w: %s", rlmm.ErrInvalidArgument, fmt.Sprintf(format, args...))
	}
	if !v.Enabled() {
		return bad("--kafka is required (host:port of one or more brokers)")
	}
	if v.Partitions < 0 || v.Partitions > MaxFlagPartitions {
		return bad("--kafka-partitions is %d, must be between 0 and %d", v.Partitions, MaxFlagPartitions)
	}
	if (v.TLSCert == "") != (v.TLSKey == "") {
		return bad("--tls-cert and --tls-key go together")
	}
	password := v.SASLPassword
	if password == "" {
		password = os.Getenv(PasswordEnv)
	}
	if strings.EqualFold(v.SASLMechanism, SASLGSSAPI) {
		return bad("--sasl-mechanism GSSAPI: the Kerberos settings (sasl.kerberos.service.name, sasl.jaas.config with Krb5LoginModule) go in a --properties file (rlmm serve)")
	}
	if v.SASLMechanism == "" && (v.SASLUser != "" || v.SASLPassword != "") {
		return bad("--sasl-user/--sasl-password need --sasl-mechanism (PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512)")
	}
	cfg := Config{
		BootstrapServers:      strings.Split(v.Bootstrap, ","),
		Topic:                 v.Topic,
		NumPartitions:         v.Partitions,
		TLSEnable:             v.TLS,
		TLSCAFile:             v.TLSCA,
		TLSCertFile:           v.TLSCert,
		TLSKeyFile:            v.TLSKey,
		TLSInsecureSkipVerify: v.InsecureSkipVerify,
		SASLMechanism:         v.SASLMechanism,
		SASLUser:              v.SASLUser,
		SASLPassword:          password,
	}
	if _, err := cfg.withDefaults(); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

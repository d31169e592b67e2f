package kafkalog

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rlmm-go/rlmm"
	"github.com/spf13/pflag"
)

func TestFlags(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		env     string
		wantErr string // substring of the error; "" for success
		check   func(t *testing.T, c Config)
	}{
		{
			name: "bootstrap only",
			args: []string{"--kafka", "a:9092,b:9092"},
			check: func(t *testing.T, c Config) {
				if strings.Join(c.BootstrapServers, " ") != "a:9092 b:9092" || c.Topic != DefaultTopic || c.NumPartitions != 0 {
					t.Errorf("got servers %v topic %q partitions %d", c.BootstrapServers, c.Topic, c.NumPartitions)
				}
			},
		},
		{
			name: "tls and scram",
			args: []string{"--kafka", "a:1", "--kafka-topic", "t", "--kafka-partitions", "8", "--tls-ca", "ca.pem", "--tls-cert", "c.pem", "--tls-key", "k.pem",
				"--sasl-mechanism", "SCRAM-SHA-256", "--sasl-user", "u", "--sasl-password", "p"},
			check: func(t *testing.T, c Config) {
				if c.Topic != "t" || c.NumPartitions != 8 || c.TLSCAFile != "ca.pem" || c.TLSCertFile != "c.pem" || c.TLSKeyFile != "k.pem" ||
					c.SASLMechanism != SASLScramSHA256 || c.SASLUser != "u" || c.SASLPassword != "p" {
					t.Errorf("got %+v", c)
				}
			},
		},
		{
			name: "password from the environment",
			args: []string{"--kafka", "a:1", "--sasl-mechanism", "PLAIN", "--sasl-user", "u"},
			env:  "secret",
			check: func(t *testing.T, c Config) {
				if c.SASLPassword != "secret" {
					t.Errorf("password %q, want the one from $%s", c.SASLPassword, PasswordEnv)
				}
			},
		},
		{name: "no --kafka", args: nil, wantErr: "--kafka is required"},
		{name: "cert without key", args: []string{"--kafka", "a:1", "--tls-cert", "c.pem"}, wantErr: "--tls-cert and --tls-key"},
		{name: "user without mechanism", args: []string{"--kafka", "a:1", "--sasl-user", "u"}, wantErr: "--sasl-mechanism"},
		{name: "GSSAPI by flags", args: []string{"--kafka", "a:1", "--sasl-mechanism", "GSSAPI", "--sasl-user", "u"}, wantErr: "--properties"},
		{name: "unknown mechanism", args: []string{"--kafka", "a:1", "--sasl-mechanism", "OAUTHBEARER", "--sasl-user", "u"}, wantErr: "OAUTHBEARER"},
		{name: "negative partitions", args: []string{"--kafka", "a:1", "--kafka-partitions", "-3"}, wantErr: "--kafka-partitions"},
		{name: "too many partitions", args: []string{"--kafka", "a:1", "--kafka-partitions", "10001"}, wantErr: "between 0 and 10000"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(PasswordEnv, tc.env)
			fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
			v := RegisterFlags(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatalf("parse %v: %v", tc.args, err)
			}
			c, err := v.Config()
			if tc.wantErr != "" {
				if err == nil || !errors.Is(err, rlmm.ErrInvalidArgument) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Config(): %v; want rlmm.ErrInvalidArgument mentioning %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Config(): %v", err)
			}
			tc.check(t, c)
		})
	}
}

func TestParseProperties(t *testing.T) {
	tests := []struct {
		name    string
		props   map[string]string
		wantErr string
		check   func(t *testing.T, c Config)
	}{
		{
			name: "remote.log.metadata settings",
			props: map[string]string{
				"remote.log.metadata.common.client.bootstrap.servers": "a:9092,b:9092",
				"remote.log.metadata.topic.num.partitions":            "10",
				"remote.log.metadata.topic.replication.factor":        "2",
				"remote.log.metadata.topic.min.isr":                   "1",
				"remote.log.metadata.topic.retention.ms":              "-1",
				"remote.log.metadata.consume.wait.ms":                 "30000",
			},
			check: func(t *testing.T, c Config) {
				if c.BootstrapServers[0] != "a:9092,b:9092" || c.NumPartitions != 10 || c.ReplicationFactor != 2 ||
					c.MinInSyncReplicas != 1 || c.RetentionMs != -1 || c.ConsumeWait != 30*time.Second || c.TLSEnable {
					t.Errorf("got %+v", c)
				}
			},
		},
		{
			name: "SASL_SSL with SCRAM and PEM stores",
			props: map[string]string{
				"bootstrap.servers":       "a:9093",
				"security.protocol":       "SASL_SSL",
				"sasl.mechanism":          "SCRAM-SHA-512",
				"sasl.jaas.config":        `org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" password="p\"w";`,
				"ssl.truststore.location": "/etc/ca.pem",
				"ssl.truststore.type":     "PEM",
				"ssl.keystore.location":   "/etc/client.pem",
				"ssl.keystore.type":       "pem",
			},
			check: func(t *testing.T, c Config) {
				if !c.TLSEnable || c.SASLMechanism != "SCRAM-SHA-512" || c.SASLUser != "alice" || c.SASLPassword != `p"w` ||
					c.TLSCAFile != "/etc/ca.pem" || c.TLSCertFile != "/etc/client.pem" || c.TLSKeyFile != "/etc/client.pem" {
					t.Errorf("got %+v", c)
				}
			},
		},
		{
			name:  "SASL_PLAINTEXT defaults to PLAIN",
			props: map[string]string{"bootstrap.servers": "a:1", "security.protocol": "SASL_PLAINTEXT", "sasl.jaas.config": `x required username="u" password="p";`},
			check: func(t *testing.T, c Config) {
				if c.SASLMechanism != SASLPlain || c.TLSEnable {
					t.Errorf("got %+v", c)
				}
			},
		},
		{name: "unknown key", props: map[string]string{"bootstrap.servers": "a:1", "remote.log.metadata.topic.num.partition": "3"}, wantErr: "num.partition"},
		{name: "unknown client setting", props: map[string]string{"bootstrap.servers": "a:1", "acks": "all"}, wantErr: "acks"},
		{
			name: "Kafka's manager's settings rlmm does not use are ignored",
			props: map[string]string{
				"remote.log.metadata.common.client.bootstrap.servers":     "a:1",
				"remote.log.metadata.producer.acks":                       "all",
				"remote.log.metadata.consumer.max.poll.records":           "5",
				"remote.log.metadata.admin.request.timeout.ms":            "9",
				"remote.log.metadata.common.client.retry.backoff.ms":      "7",
				"remote.log.metadata.initialization.retry.interval.ms":    "100",
				"remote.log.metadata.initialization.retry.max.timeout.ms": "1000",
				"remote.log.metadata.manager.listener.name":               "PLAINTEXT",
				"remote.log.metadata.topic.num.partitions":                "3",
			},
			check: func(t *testing.T, c Config) {
				if len(c.BootstrapServers) != 1 || c.BootstrapServers[0] != "a:1" || c.NumPartitions != 3 {
					t.Errorf("got %+v", c)
				}
			},
		},
		{name: "zero partitions", props: map[string]string{"bootstrap.servers": "a:1", "remote.log.metadata.topic.num.partitions": "0"}, wantErr: "num.partitions"},
		{name: "retention 0", props: map[string]string{"bootstrap.servers": "a:1", "remote.log.metadata.topic.retention.ms": "0"}, wantErr: "retention.ms"},
		{name: "consume wait not a number", props: map[string]string{"bootstrap.servers": "a:1", "remote.log.metadata.consume.wait.ms": "2m"}, wantErr: "consume.wait.ms"},
		{name: "JKS truststore without its password", props: map[string]string{"bootstrap.servers": "a:1", "security.protocol": "SSL", "ssl.truststore.location": "/x.jks"}, wantErr: "ssl.truststore.password"},
		{name: "JCEKS truststore", props: map[string]string{"bootstrap.servers": "a:1", "security.protocol": "SSL", "ssl.truststore.location": "/x.jks", "ssl.truststore.type": "JCEKS"}, wantErr: "ssl.truststore.type"},
		{name: "ssl settings on plaintext", props: map[string]string{"bootstrap.servers": "a:1", "ssl.truststore.location": "/x.pem", "ssl.truststore.type": "PEM"}, wantErr: "security.protocol"},
		{name: "sasl without credentials", props: map[string]string{"bootstrap.servers": "a:1", "security.protocol": "SASL_SSL"}, wantErr: "username"},
		{name: "bad protocol", props: map[string]string{"bootstrap.servers": "a:1", "security.protocol": "TLS"}, wantErr: "security.protocol"},
		{name: "no servers", props: map[string]string{}, wantErr: "bootstrap"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ParseProperties(tc.props)
			if tc.wantErr != "" {
				if err == nil || !errors.Is(err, rlmm.ErrInvalidArgument) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ParseProperties: %v; want rlmm.ErrInvalidArgument mentioning %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseProperties: %v", err)
			}
			tc.check(t, c)
		})
	}
}

func TestIgnoredPropertiesNamesWhatParsePropertiesSkips(t *testing.T) {
	props := map[string]string{
		"remote.log.metadata.common.client.bootstrap.servers":  "a:1",
		"remote.log.metadata.common.client.security.protocol":  "PLAINTEXT",
		"remote.log.metadata.producer.acks":                    "all",
		"remote.log.metadata.admin.retries":                    "3",
		"remote.log.metadata.initialization.retry.interval.ms": "100",
		"remote.log.metadata.topic.num.partitions":             "3",
	}
	if _, err := ParseProperties(props); err != nil {
		t.Fatalf("ParseProperties: %v", err)
	}
	got := IgnoredProperties(props)
	want := []string{"remote.log.metadata.admin.retries", "remote.log.metadata.initialization.retry.interval.ms", "remote.log.metadata.producer.acks"}
	if !slices.Equal(got, want) {
		t.Errorf("IgnoredProperties = %v, want %v", got, want)
	}
}

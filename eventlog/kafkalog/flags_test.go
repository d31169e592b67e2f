package kafkalog

import (
	"errors"
	"strings"
	"testing"

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
		{name: "unknown mechanism", args: []string{"--kafka", "a:1", "--sasl-mechanism", "GSSAPI", "--sasl-user", "u"}, wantErr: "GSSAPI"},
		{name: "negative partitions", args: []string{"--kafka", "a:1", "--kafka-partitions", "-3"}, wantErr: "--kafka-partitions"},
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

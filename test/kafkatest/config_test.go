package kafkatest

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestConfigDefaults(t *testing.T) {
	t.Setenv(EnvVersion, "")
	tests := []struct {
		name string
		in   Config
		want Config
	}{
		{"zero", Config{}, Config{Version: DefaultVersion, Nodes: 1, Controllers: 1, Security: Plaintext, RLMM: RLMMKafka,
			Heap: "512m", StartTimeout: 90 * time.Second, StopTimeout: 30 * time.Second}},
		{"three nodes get three voters", Config{Nodes: 3}, Config{Version: DefaultVersion, Nodes: 3, Controllers: 3, Security: Plaintext,
			RLMM: RLMMKafka, Heap: "512m", StartTimeout: 90 * time.Second, StopTimeout: 30 * time.Second}},
		{"tiered 4.3.1 gets LocalTieredStorage", Config{Version: "4.3.1", Tiered: true}, Config{Version: "4.3.1", Nodes: 1, Controllers: 1,
			Security: Plaintext, Tiered: true, RSM: RSMLocal, RLMM: RLMMKafka, Heap: "512m", StartTimeout: 90 * time.Second, StopTimeout: 30 * time.Second}},
		{"tiered 4.4.0 gets the fixture", Config{Tiered: true, RLMM: RLMMPlugin, Heap: "1g"}, Config{Version: DefaultVersion, Nodes: 1, Controllers: 1,
			Security: Plaintext, Tiered: true, RSM: RSMFixture, RLMM: RLMMPlugin, Heap: "1g", StartTimeout: 90 * time.Second, StopTimeout: 30 * time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.in.withDefaults()
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("withDefaults() = %+v, want %+v", got, tt.want)
			}
			if err := got.validate(); err != nil {
				t.Fatalf("a defaulted config is invalid: %v", err)
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	t.Setenv(EnvVersion, "")
	tests := []struct {
		name string
		in   Config
		want string // a part of the error
	}{
		{"version 3.x", Config{Version: "3.9.0"}, "Kafka 4.x release"},
		{"version junk", Config{Version: "4.4"}, "Kafka 4.x release"},
		{"ten nodes", Config{Nodes: 10}, "nodes must be 1..9"},
		{"more voters than nodes", Config{Nodes: 2, Controllers: 3}, "controllers must be 1..nodes (2)"},
		{"unknown security", Config{Security: "tls"}, "security must be one of"},
		{"gssapi without a KDC", Config{Security: GSSAPI}, "KerberosDir"},
		{"unknown RSM", Config{Tiered: true, RSM: "s4"}, `the RSM must be one of [fixture local], got "s4"`},
		{"unknown RLMM", Config{RLMM: "zk"}, `the RLMM must be "kafka" or "rlmm"`},
		{"heap without a unit", Config{Heap: "512"}, "JVM size"},
		{"negative timeout", Config{StopTimeout: -time.Second}, "must not be negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.in.withDefaults().validate()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("validate() = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestEnvVersion(t *testing.T) {
	t.Setenv(EnvVersion, "4.3.1")
	if got := (Config{}).withDefaults(); got.Version != "4.3.1" || got.RSM != "" {
		t.Fatalf("with %s=4.3.1: version %s", EnvVersion, got.Version)
	}
	if got := (Config{Version: "4.0.1", Tiered: true}).withDefaults(); got.Version != "4.0.1" || got.RSM != RSMLocal {
		t.Fatalf("a Config's version is overridden by %s: %s", EnvVersion, got.Version)
	}
}

func TestDefaultRSM(t *testing.T) {
	for v, want := range map[string]string{"4.0.1": RSMLocal, "4.3.1": RSMLocal, "4.4.0": RSMFixture, "4.10.0": RSMFixture} {
		if got := DefaultRSM(v); got != want {
			t.Errorf("DefaultRSM(%s) = %s, want %s", v, got, want)
		}
	}
}

func TestRegisterRSM(t *testing.T) {
	RegisterRSM("test-s3", resolveFixtureRSM)
	t.Cleanup(func() {
		rsmMu.Lock()
		delete(rsmResolvers, "test-s3")
		rsmMu.Unlock()
	})
	if err := (Config{Tiered: true, RSM: "test-s3"}).withDefaults().validate(); err != nil {
		t.Fatalf("a registered RSM is refused: %v", err)
	}
	if got := strings.Join(rsmNames(), ","); got != "fixture,local,test-s3" {
		t.Fatalf("rsmNames() = %s", got)
	}
}

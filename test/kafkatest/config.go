package kafkatest

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"time"
)

// DefaultVersion is the Kafka version of a cluster whose Config names none
// when RLMM_KAFKA_VERSION is unset.
const DefaultVersion = "4.4.0"

// EnvVersion names the Kafka version of every cluster whose Config names
// none (DefaultVersion when unset): the one switch that runs a test tree
// against another Kafka.
const EnvVersion = "RLMM_KAFKA_VERSION"

// Security is what a cluster's secure listener (named SECURE in
// server.properties, beside the PLAINTEXT one every node keeps for brokers,
// controllers and the RLMM's own client) asks of its clients.
type Security string

const (
	// Plaintext: no secure listener.
	Plaintext Security = "plaintext"
	// SSL: an SSL listener that asks for a client certificate from the
	// cluster's CA (ssl.client.auth=required); no authorizer.
	SSL Security = "ssl"
	// SASLPlain: a SASL_SSL listener taking PLAIN; users in the listener's
	// JAAS entry; the StandardAuthorizer (see Users).
	SASLPlain Security = "sasl_plain"
	// SASLSCRAM: a SASL_SSL listener taking SCRAM-SHA-512; users created at
	// format time; the StandardAuthorizer (see Users).
	SASLSCRAM Security = "sasl_scram"
	// GSSAPI: a SASL_SSL listener taking Kerberos against the KDC of
	// Config.KerberosDir (scripts/kdc.sh start); client certificates from
	// the cluster's CA are required; no authorizer.
	GSSAPI Security = "gssapi"
)

// Securities lists every Security, for flags and their help.
var Securities = []Security{Plaintext, SSL, SASLPlain, SASLSCRAM, GSSAPI}

// secure reports whether s adds a listener beside PLAINTEXT.
func (s Security) secure() bool { return s != Plaintext && s != "" }

// sasl reports whether s is a SASL_SSL listener.
func (s Security) sasl() bool { return s == SASLPlain || s == SASLSCRAM || s == GSSAPI }

// protocol is the listener's security protocol in server.properties.
func (s Security) protocol() string {
	if s == SSL {
		return "SSL"
	}
	return "SASL_SSL"
}

// mechanism is the listener's SASL mechanism ("" for none).
func (s Security) mechanism() string {
	switch s {
	case SASLPlain:
		return "PLAIN"
	case SASLSCRAM:
		return "SCRAM-SHA-512"
	case GSSAPI:
		return "GSSAPI"
	}
	return ""
}

// RLMM names a cluster's remote log metadata manager.
type RLMM string

const (
	// RLMMKafka is Kafka's own TopicBasedRemoteLogMetadataManager.
	RLMMKafka RLMM = "kafka"
	// RLMMPlugin is rlmm's broker plugin (plugin/), whose sidecar is
	// `rlmm serve`.
	RLMMPlugin RLMM = "rlmm"
)

// The RLMM classes.
const (
	kafkaRLMMClass  = "org.apache.kafka.server.log.remote.metadata.storage.TopicBasedRemoteLogMetadataManager"
	pluginRLMMClass = "org.rlmm.plugin.RlmmRemoteLogMetadataManager"
)

// Config is what a cluster is. The zero value (with defaults filled by
// Start) is one Kafka DefaultVersion node, PLAINTEXT, no tiered storage.
type Config struct {
	// Version is the Kafka version (any 4.x); when empty, $RLMM_KAFKA_VERSION,
	// else DefaultVersion.
	Version string `json:"version"`
	// Nodes is the number of nodes (1..9); 1 when zero.
	Nodes int `json:"nodes"`
	// Controllers is how many of the nodes, the first ones, are combined
	// broker+controller voters of a static quorum; the others are
	// broker-only. Zero means 1 below 3 nodes, else 3 (a quorum that
	// survives the loss of any one node).
	Controllers int `json:"controllers"`
	// Security is the secure listener; Plaintext when empty.
	Security Security `json:"security"`
	// KerberosDir is, for GSSAPI, a directory of scripts/kdc.sh start
	// (krb5.conf, broker.keytab, realm).
	KerberosDir string `json:"kerberos_dir,omitempty"`
	// Tiered turns tiered storage on (remote.log.storage.system.enable),
	// with the RSM of RSM and the RLMM of RLMM.
	Tiered bool `json:"tiered"`
	// RSM names the remote storage manager of a tiered cluster: "local"
	// (Kafka's LocalTieredStorage, served for 4.0 to 4.3), "fixture" (the
	// project's file-system RSM, test/broker/fixture-rsm), or a name given
	// to RegisterRSM. Empty: DefaultRSM(Version).
	RSM string `json:"rsm"`
	// RLMM is the RLMM of a tiered cluster; RLMMKafka when empty. Restart
	// can change it (WithRLMM): each node keeps its data.
	RLMM RLMM `json:"rlmm"`
	// PluginJar is rlmm's broker plugin jar (RLMMPlugin); empty: built by
	// scripts/plugin.sh build.
	PluginJar string `json:"plugin_jar,omitempty"`
	// RLMMBinary is the sidecar's rlmm binary (RLMMPlugin); empty: built
	// from ./cmd/rlmm into the cluster's bin/.
	RLMMBinary string `json:"rlmm_binary,omitempty"`
	// Heap is every broker JVM's -Xms and -Xmx; "512m" when empty.
	Heap string `json:"heap"`
	// Extra holds server.properties lines appended to every node's file
	// (the last of a key wins, as in java.util.Properties).
	Extra string `json:"extra,omitempty"`
	// NodeExtra, when set, gives server.properties lines for one node,
	// appended after Extra (a node's own snapshot directory or metrics
	// port, say). Not kept in the cluster's record.
	NodeExtra func(node int) string `json:"-"`
	// StartTimeout bounds the wait for a started node to answer; 90 s when
	// zero.
	StartTimeout time.Duration `json:"start_timeout"`
	// StopTimeout is how long a node has after SIGTERM before SIGKILL;
	// 30 s when zero.
	StopTimeout time.Duration `json:"stop_timeout"`
	// Detached makes the brokers outlive this process (the command's
	// start): their own session, no death signal. Tests leave it false:
	// then every broker gets SIGKILL when this process dies, however it
	// dies.
	Detached bool `json:"detached"`
	// NoReadyWait makes Start, StartNode and Restart launch the nodes and
	// return without waiting for them to answer: for a test of a broker
	// that is to stop by itself, which waits for it with Node.Wait. Not
	// kept in the cluster's record.
	NoReadyWait bool `json:"-"`
	// Proxy, when set, is asked once per listener of each node at the
	// cluster's first start for the address clients (and the other nodes)
	// are to use instead of the listener's own: the fault tests put a
	// proxy there (see Proxy). Not kept in the cluster's record.
	Proxy Proxy `json:"-"`
}

// Proxy returns the address to advertise for node's listener (PLAINTEXT,
// CONTROLLER or SECURE) that binds upstream ("127.0.0.1:port"). The
// returned address must forward to upstream for as long as the cluster
// lives, across restarts; the harness never closes it.
type Proxy func(node int, listener, upstream string) (advertised string, err error)

var (
	versionPattern = regexp.MustCompile(`^4\.[0-9]+\.[0-9]+$`)
	heapPattern    = regexp.MustCompile(`^[1-9][0-9]*[kmgKMG]$`)
)

// withDefaults returns c with every empty field at its default.
func (c Config) withDefaults() Config {
	if c.Version == "" {
		c.Version = os.Getenv(EnvVersion)
	}
	if c.Version == "" {
		c.Version = DefaultVersion
	}
	if c.Nodes == 0 {
		c.Nodes = 1
	}
	if c.Controllers == 0 {
		c.Controllers = 1
		if c.Nodes >= 3 {
			c.Controllers = 3
		}
	}
	if c.Security == "" {
		c.Security = Plaintext
	}
	if c.Tiered && c.RSM == "" {
		c.RSM = DefaultRSM(c.Version)
	}
	if c.RLMM == "" {
		c.RLMM = RLMMKafka
	}
	if c.Heap == "" {
		c.Heap = "512m"
	}
	if c.StartTimeout == 0 {
		c.StartTimeout = 90 * time.Second
	}
	if c.StopTimeout == 0 {
		c.StopTimeout = 30 * time.Second
	}
	return c
}

// validate reports the first wrong field of a defaulted Config.
func (c Config) validate() error {
	var errs []error
	if !versionPattern.MatchString(c.Version) {
		errs = append(errs, fmt.Errorf("the version must be a Kafka 4.x release (like 4.4.0), got %q", c.Version))
	}
	if c.Nodes < 1 || c.Nodes > 9 {
		errs = append(errs, fmt.Errorf("nodes must be 1..9, got %d", c.Nodes))
	}
	if c.Controllers < 1 || c.Controllers > c.Nodes {
		errs = append(errs, fmt.Errorf("controllers must be 1..nodes (%d), got %d", c.Nodes, c.Controllers))
	}
	switch c.Security {
	case Plaintext, SSL, SASLPlain, SASLSCRAM:
	case GSSAPI:
		if c.KerberosDir == "" {
			errs = append(errs, errors.New("security gssapi needs KerberosDir, a directory of scripts/kdc.sh start (krb5.conf, broker.keytab, realm)"))
		}
	default:
		errs = append(errs, fmt.Errorf("security must be one of %v, got %q", Securities, c.Security))
	}
	if c.Tiered {
		if _, ok := lookupRSM(c.RSM); !ok {
			errs = append(errs, fmt.Errorf("the RSM must be one of %v, got %q", rsmNames(), c.RSM))
		}
	}
	if c.RLMM != RLMMKafka && c.RLMM != RLMMPlugin {
		errs = append(errs, fmt.Errorf("the RLMM must be %q or %q, got %q", RLMMKafka, RLMMPlugin, c.RLMM))
	}
	if !heapPattern.MatchString(c.Heap) {
		errs = append(errs, fmt.Errorf("the heap must be a JVM size like 512m, got %q", c.Heap))
	}
	if c.StartTimeout < 0 || c.StopTimeout < 0 {
		errs = append(errs, errors.New("the start and stop timeouts must not be negative"))
	}
	return errors.Join(errs...)
}

package kafkatest

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// The listeners of a node. PLAINTEXT carries the brokers' traffic, the
// RLMM's own client and the harness's probes; CONTROLLER the quorum's;
// SECURE (only with a Security other than Plaintext) is for clients.
const (
	ListenerPlaintext  = "PLAINTEXT"
	ListenerController = "CONTROLLER"
	ListenerSecure     = "SECURE"
)

// Address is where a listener binds and what it advertises (the same
// address unless a Proxy stands in front of it).
type Address struct {
	Bind       string `json:"bind"`
	Advertised string `json:"advertised"`
}

// nodeLayout is what a node is: its id, directory, roles and listeners.
type nodeLayout struct {
	ID         int                `json:"id"`
	Dir        string             `json:"dir"`
	Controller bool               `json:"controller"`
	Listeners  map[string]Address `json:"listeners"`
}

// propsInput is everything a node's server.properties depends on.
type propsInput struct {
	cfg      Config
	node     nodeLayout
	voters   []nodeLayout // the controller nodes
	security *SecurityFiles
	realm    string // GSSAPI's Kerberos realm
	rsm      *RSMSettings
	rlmm     rlmmSettings
}

// rlmmSettings are a tiered cluster's RLMM lines.
type rlmmSettings struct {
	class     string
	classPath string
	binary    string // the plugin's rlmm.serve.binary ("" for the jar's own)
}

// prop is one line of server.properties.
type prop struct{ key, value string }

// serverProperties renders a node's server.properties.
func serverProperties(in propsInput) string {
	cfg, n := in.cfg, in.node
	var voters []string
	for _, v := range in.voters {
		voters = append(voters, fmt.Sprintf("%d@%s", v.ID, v.Listeners[ListenerController].Advertised))
	}
	names := []string{ListenerPlaintext}
	if n.Controller {
		names = append(names, ListenerController)
	}
	protocols := []string{"CONTROLLER:PLAINTEXT", "PLAINTEXT:PLAINTEXT"}
	advertised := []string{ListenerPlaintext + "://" + n.Listeners[ListenerPlaintext].Advertised}
	if cfg.Security.secure() {
		names = append(names, ListenerSecure)
		protocols = append(protocols, ListenerSecure+":"+cfg.Security.protocol())
		advertised = append(advertised, ListenerSecure+"://"+n.Listeners[ListenerSecure].Advertised)
	}
	var listeners []string
	for _, name := range names {
		listeners = append(listeners, name+"://"+n.Listeners[name].Bind)
	}
	roles := "broker"
	if n.Controller {
		roles = "broker,controller"
	}
	ps := []prop{
		{"process.roles", roles},
		{"node.id", strconv.Itoa(n.ID)},
		{"controller.quorum.voters", strings.Join(voters, ",")},
		{"listeners", strings.Join(listeners, ",")},
		{"advertised.listeners", strings.Join(advertised, ",")},
		{"controller.listener.names", ListenerController},
		{"inter.broker.listener.name", ListenerPlaintext},
		{"listener.security.protocol.map", strings.Join(protocols, ",")},
		{"log.dirs", filepath.Join(n.Dir, "data")},
		{"num.partitions", "1"},
		{"offsets.topic.replication.factor", "1"},
		{"offsets.topic.num.partitions", "1"},
		{"transaction.state.log.replication.factor", "1"},
		{"transaction.state.log.min.isr", "1"},
		{"share.coordinator.state.topic.replication.factor", "1"},
		{"share.coordinator.state.topic.min.isr", "1"},
		{"min.insync.replicas", "1"},
		{"group.initial.rebalance.delay.ms", "0"},
		{"num.network.threads", "2"},
		{"num.io.threads", "2"},
		{"log.cleaner.dedupe.buffer.size", "33554432"},
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Node %d of %d of a KRaft cluster of Kafka %s (written by test/kafkatest at each start).\n", n.ID, cfg.Nodes, cfg.Version)
	writeProps(&b, ps)
	if cfg.Security.secure() {
		b.WriteString("# The secure listener: " + string(cfg.Security) + "\n")
		writeProps(&b, securityProps(in))
	}
	if cfg.Tiered && in.rsm != nil {
		b.WriteString("# Tiered storage: " + in.rsm.Class + ", RLMM " + string(cfg.RLMM) + "\n")
		writeProps(&b, tieredProps(in))
	}
	if extra := strings.TrimSpace(cfg.Extra); extra != "" {
		b.WriteString("# Config.Extra\n" + extra + "\n")
	}
	if cfg.NodeExtra != nil {
		if extra := strings.TrimSpace(cfg.NodeExtra(n.ID)); extra != "" {
			b.WriteString("# Config.NodeExtra\n" + extra + "\n")
		}
	}
	return b.String()
}

func writeProps(b *strings.Builder, ps []prop) {
	for _, p := range ps {
		b.WriteString(p.key + "=" + p.value + "\n")
	}
}

// securityProps are the secure listener's lines.
func securityProps(in propsInput) []prop {
	s, sec := in.cfg.Security, in.security
	l := "listener.name." + strings.ToLower(ListenerSecure) + "."
	ps := []prop{
		{l + "ssl.keystore.type", "PKCS12"},
		{l + "ssl.keystore.location", sec.BrokerKeystore},
		{l + "ssl.keystore.password", sec.KeystorePassword},
	}
	if s == SSL || s == GSSAPI {
		ps = append(ps,
			prop{l + "ssl.truststore.type", "PEM"},
			prop{l + "ssl.truststore.location", sec.CAFile},
			prop{l + "ssl.client.auth", "required"})
	}
	if s.sasl() {
		ps = append(ps, prop{"sasl.enabled.mechanisms", s.mechanism()})
	}
	mech := l + strings.ToLower(s.mechanism()) + ".sasl.jaas.config"
	switch s {
	case SASLSCRAM:
		ps = append(ps, prop{mech, "org.apache.kafka.common.security.scram.ScramLoginModule required;"})
	case SASLPlain:
		jaas := fmt.Sprintf(`org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="%s"`, sec.Users["admin"])
		for _, u := range slices.Sorted(maps.Keys(sec.Users)) {
			jaas += fmt.Sprintf(` user_%s="%s"`, u, sec.Users[u])
		}
		ps = append(ps, prop{mech, jaas + ";"})
	case GSSAPI:
		keytab := filepath.Join(in.cfg.KerberosDir, "broker.keytab")
		ps = append(ps, prop{"sasl.kerberos.service.name", "kafka"},
			prop{mech, fmt.Sprintf(`com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true storeKey=true keyTab="%s" principal="kafka/127.0.0.1@%s";`, keytab, in.realm)})
	}
	if s == SASLPlain || s == SASLSCRAM {
		// The brokers and controllers talk over PLAINTEXT, whose principal
		// is User:ANONYMOUS: a super user beside admin. Every other
		// principal needs ACLs.
		ps = append(ps,
			prop{"authorizer.class.name", "org.apache.kafka.metadata.authorizer.StandardAuthorizer"},
			prop{"super.users", "User:admin;User:ANONYMOUS"},
			prop{"allow.everyone.if.no.acl.found", "false"})
	}
	return ps
}

// tieredProps are the tiered-storage lines: the RSM, the RLMM, and short
// task intervals so tests see segments tiered and deleted in seconds.
func tieredProps(in propsInput) []prop {
	rf := min(in.cfg.Nodes, 3)
	ps := []prop{
		{"remote.log.storage.system.enable", "true"},
		{"remote.log.storage.manager.class.name", in.rsm.Class},
		{"remote.log.storage.manager.class.path", strings.Join(in.rsm.ClassPath, ":")},
	}
	for _, k := range slices.Sorted(maps.Keys(in.rsm.Props)) {
		ps = append(ps, prop{k, in.rsm.Props[k]})
	}
	ps = append(ps,
		prop{"remote.log.metadata.manager.listener.name", ListenerPlaintext},
		prop{"rlmm.config.remote.log.metadata.topic.replication.factor", strconv.Itoa(rf)},
		prop{"rlmm.config.remote.log.metadata.topic.min.isr", "1"},
		prop{"remote.log.manager.task.interval.ms", "100"},
		prop{"log.retention.check.interval.ms", "100"},
		prop{"log.initial.task.delay.ms", "100"},
		prop{"remote.log.metadata.manager.class.name", in.rlmm.class})
	if in.rlmm.classPath != "" {
		ps = append(ps, prop{"remote.log.metadata.manager.class.path", in.rlmm.classPath})
	}
	if in.rlmm.binary != "" {
		ps = append(ps, prop{"rlmm.config.rlmm.serve.binary", in.rlmm.binary})
	}
	return ps
}

// log4jProperties is a node's log4j2 configuration: WARN and up, INFO of
// the server's start and stop, of rlmm's plugin, of Kafka's AppInfoParser
// (its "Kafka version: V" lines name the jars a broker runs; the class
// moved to an internals package in 4.4), and of what a broker decides
// about a partition's leadership, log start offset and remote segments
// (kafka.cluster.Partition, UnifiedLog, the RemoteLogManager's tasks: a
// few lines a segment, the history a wrong answer of a fault test is
// traced back through), into broker.log.
func log4jProperties(nodeDir string) string {
	return `appender.file.type=File
appender.file.name=F
appender.file.fileName=` + filepath.Join(nodeDir, "broker.log") + `
appender.file.append=true
appender.file.layout.type=PatternLayout
appender.file.layout.pattern=[%d] %p %m (%c)%n
rootLogger.level=WARN
rootLogger.appenderRef.file.ref=F
logger.server.name=kafka.server.KafkaRaftServer
logger.server.level=INFO
logger.broker.name=kafka.server.BrokerServer
logger.broker.level=INFO
logger.rlmmplugin.name=org.rlmm.plugin
logger.rlmmplugin.level=INFO
logger.appinfo.name=org.apache.kafka.common.utils.AppInfoParser
logger.appinfo.level=INFO
logger.appinfointernals.name=org.apache.kafka.common.utils.internals.AppInfoParser
logger.appinfointernals.level=INFO
logger.partition.name=kafka.cluster.Partition
logger.partition.level=INFO
logger.unifiedlog.name=org.apache.kafka.storage.internals.log.UnifiedLog
logger.unifiedlog.level=INFO
logger.remotestorage.name=org.apache.kafka.server.log.remote.storage
logger.remotestorage.level=INFO
`
}

// scramArgs are StorageTool format's --add-scram arguments for the users
// (they hold the passwords: they go to the tool, never to a log).
func scramArgs(users map[string]string) []string {
	var args []string
	for _, u := range slices.Sorted(maps.Keys(users)) {
		args = append(args, "--add-scram", fmt.Sprintf("SCRAM-SHA-512=[name=%s,password=%s]", u, users[u]))
	}
	return args
}

package kafkatest

import (
	"bufio"
	"fmt"
	"net"
	"strings"
	"testing"
)

// parseProps reads server.properties as java.util.Properties would for
// these files: key=value lines, # comments, the last of a key wins.
func parseProps(t *testing.T, s string) map[string]string {
	t.Helper()
	out := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			t.Fatalf("line %q is not key=value", line)
		}
		out[k] = v
	}
	return out
}

// testLayout is the layout of cfg in /c, failing t on an error.
func testLayout(t *testing.T, cfg Config) []nodeLayout {
	t.Helper()
	nodes, err := layout(cfg, "/c")
	if err != nil {
		t.Fatal(err)
	}
	return nodes
}

func testInput(cfg Config, nodes []nodeLayout, id int) propsInput {
	in := propsInput{cfg: cfg, node: nodes[id-1], security: &SecurityFiles{
		CAFile: "/c/security/ca.pem", BrokerKeystore: "/c/security/broker.p12", KeystorePassword: "kspw",
		Users: map[string]string{"admin": "apw", "rlmm": "rpw", "rlmm-noread": "npw", "rlmm-nowrite": "wpw"}},
		realm: "RLMM.TEST", rlmm: rlmmSettings{class: kafkaRLMMClass}}
	for _, n := range nodes {
		if n.Controller {
			in.voters = append(in.voters, n)
		}
	}
	return in
}

func TestServerPropertiesRoles(t *testing.T) {
	cfg := Config{Nodes: 4}.withDefaults()
	nodes := testLayout(t, cfg)
	for _, n := range nodes {
		p := parseProps(t, serverProperties(testInput(cfg, nodes, n.ID)))
		wantRoles, wantListeners := "broker,controller", 2
		if n.ID == 4 {
			wantRoles, wantListeners = "broker", 1
		}
		if p["process.roles"] != wantRoles || p["node.id"] != fmt.Sprint(n.ID) {
			t.Errorf("node %d: roles %q id %q", n.ID, p["process.roles"], p["node.id"])
		}
		if got := len(strings.Split(p["listeners"], ",")); got != wantListeners {
			t.Errorf("node %d: %d listeners (%s), want %d", n.ID, got, p["listeners"], wantListeners)
		}
		if voters := strings.Split(p["controller.quorum.voters"], ","); len(voters) != 3 ||
			voters[0] != "1@"+nodes[0].Listeners[ListenerController].Advertised {
			t.Errorf("node %d: voters %v", n.ID, voters)
		}
		if p["log.dirs"] != fmt.Sprintf("/c/node-%d/data", n.ID) {
			t.Errorf("node %d: log.dirs %s", n.ID, p["log.dirs"])
		}
		if _, ok := p["remote.log.storage.system.enable"]; ok {
			t.Errorf("node %d: tiered storage on in a cluster without it", n.ID)
		}
	}
}

func TestServerPropertiesSecurity(t *testing.T) {
	l := "listener.name.secure."
	tests := []struct {
		sec     Security
		want    map[string]string
		missing []string
	}{
		{SSL, map[string]string{"listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SECURE:SSL",
			l + "ssl.client.auth": "required", l + "ssl.truststore.location": "/c/security/ca.pem", l + "ssl.keystore.password": "kspw"},
			[]string{"sasl.enabled.mechanisms", "authorizer.class.name"}},
		{SASLSCRAM, map[string]string{"listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SECURE:SASL_SSL",
			"sasl.enabled.mechanisms": "SCRAM-SHA-512", l + "scram-sha-512.sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule required;",
			"super.users": "User:admin;User:ANONYMOUS", "allow.everyone.if.no.acl.found": "false"},
			[]string{l + "ssl.client.auth"}},
		{SASLPlain, map[string]string{"sasl.enabled.mechanisms": "PLAIN",
			l + "plain.sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="apw" user_admin="apw" user_rlmm="rpw" user_rlmm-noread="npw" user_rlmm-nowrite="wpw";`,
			"authorizer.class.name":      "org.apache.kafka.metadata.authorizer.StandardAuthorizer"}, nil},
		{GSSAPI, map[string]string{"sasl.enabled.mechanisms": "GSSAPI", "sasl.kerberos.service.name": "kafka", l + "ssl.client.auth": "required",
			l + "gssapi.sasl.jaas.config": `com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true storeKey=true keyTab="/kdc/broker.keytab" principal="kafka/127.0.0.1@RLMM.TEST";`},
			[]string{"authorizer.class.name"}},
	}
	for _, tt := range tests {
		t.Run(string(tt.sec), func(t *testing.T) {
			cfg := Config{Security: tt.sec, KerberosDir: "/kdc"}.withDefaults()
			nodes := testLayout(t, cfg)
			p := parseProps(t, serverProperties(testInput(cfg, nodes, 1)))
			for k, v := range tt.want {
				if p[k] != v {
					t.Errorf("%s = %q, want %q", k, p[k], v)
				}
			}
			for _, k := range tt.missing {
				if _, ok := p[k]; ok {
					t.Errorf("%s is set (%q)", k, p[k])
				}
			}
			secure := nodes[0].Listeners[ListenerSecure]
			if !strings.Contains(p["listeners"], "SECURE://"+secure.Bind) || !strings.Contains(p["advertised.listeners"], "SECURE://"+secure.Advertised) {
				t.Errorf("listeners %q / advertised %q lack SECURE at %v", p["listeners"], p["advertised.listeners"], secure)
			}
		})
	}
}

func TestServerPropertiesTiered(t *testing.T) {
	cfg := Config{Nodes: 2, Tiered: true, Extra: "remote.log.manager.task.interval.ms=5000\nfoo=bar"}.withDefaults()
	nodes := testLayout(t, cfg)
	in := testInput(cfg, nodes, 2)
	in.rsm = &RSMSettings{Class: fixtureRSMClass, ClassPath: []string{"/a.jar", "/b.jar"}, Props: fileRSMProps("/c/tiered")}
	for _, r := range []struct {
		settings rlmmSettings
		want     map[string]string
	}{
		{rlmmSettings{class: kafkaRLMMClass}, map[string]string{"remote.log.metadata.manager.class.name": kafkaRLMMClass}},
		{rlmmSettings{class: pluginRLMMClass, classPath: "/p.jar", binary: "/c/bin/rlmm"}, map[string]string{
			"remote.log.metadata.manager.class.name": pluginRLMMClass, "remote.log.metadata.manager.class.path": "/p.jar",
			"rlmm.config.rlmm.serve.binary": "/c/bin/rlmm"}},
	} {
		in.rlmm = r.settings
		p := parseProps(t, serverProperties(in))
		want := map[string]string{
			"remote.log.storage.system.enable":                         "true",
			"remote.log.storage.manager.class.name":                    fixtureRSMClass,
			"remote.log.storage.manager.class.path":                    "/a.jar:/b.jar",
			"rsm.config.dir":                                           "/c/tiered",
			"remote.log.metadata.manager.listener.name":                "PLAINTEXT",
			"rlmm.config.remote.log.metadata.topic.replication.factor": "2",
			// Config.Extra comes last, so its value wins.
			"remote.log.manager.task.interval.ms": "5000",
			"foo":                                 "bar",
		}
		for k, v := range r.want {
			want[k] = v
		}
		for k, v := range want {
			if p[k] != v {
				t.Errorf("RLMM %s: %s = %q, want %q", r.settings.class, k, p[k], v)
			}
		}
		if r.settings.class == kafkaRLMMClass {
			for _, k := range []string{"remote.log.metadata.manager.class.path", "rlmm.config.rlmm.serve.binary"} {
				if _, ok := p[k]; ok {
					t.Errorf("Kafka's RLMM has %s", k)
				}
			}
		}
	}
}

func TestLayoutPortsAndProxy(t *testing.T) {
	var asked []string
	proxy := func(node int, listener, upstream string) (string, error) {
		asked = append(asked, fmt.Sprintf("%d/%s", node, listener))
		_, port, _ := net.SplitHostPort(upstream)
		return "127.0.0.2:" + port, nil
	}
	cfg := Config{Nodes: 4, Controllers: 2, Security: SASLSCRAM, Proxy: proxy}.withDefaults()
	nodes := testLayout(t, cfg)
	seen := map[string]bool{}
	for _, n := range nodes {
		for name, a := range n.Listeners {
			if seen[a.Bind] {
				t.Errorf("port %s given twice", a.Bind)
			}
			seen[a.Bind] = true
			if !strings.HasPrefix(a.Bind, "127.0.0.1:") || !strings.HasPrefix(a.Advertised, "127.0.0.2:") {
				t.Errorf("node %d %s: %+v", n.ID, name, a)
			}
		}
	}
	// 4 PLAINTEXT, 2 CONTROLLER, 4 SECURE.
	if len(asked) != 10 || len(seen) != 10 {
		t.Fatalf("proxy asked for %v; %d ports", asked, len(seen))
	}
	p := parseProps(t, serverProperties(testInput(cfg, nodes, 3)))
	if !strings.Contains(p["controller.quorum.voters"], "1@127.0.0.2:") || !strings.HasPrefix(p["advertised.listeners"], "PLAINTEXT://127.0.0.2:") ||
		!strings.HasPrefix(p["listeners"], "PLAINTEXT://127.0.0.1:") {
		t.Fatalf("voters %q, advertised %q, listeners %q: want the proxy's addresses advertised, the node's bound", p["controller.quorum.voters"], p["advertised.listeners"], p["listeners"])
	}
	_, err := layout(Config{Nodes: 1, Proxy: func(int, string, string) (string, error) { return "", fmt.Errorf("no proxy") }}.withDefaults(), "/c")
	if err == nil || !strings.Contains(err.Error(), "node 1's PLAINTEXT listener: no proxy") {
		t.Fatalf("a failing proxy: %v", err)
	}
}

func TestScramArgs(t *testing.T) {
	got := strings.Join(scramArgs(map[string]string{"rlmm": "b", "admin": "a"}), " ")
	want := "--add-scram SCRAM-SHA-512=[name=admin,password=a] --add-scram SCRAM-SHA-512=[name=rlmm,password=b]"
	if got != want {
		t.Fatalf("scramArgs = %s, want %s", got, want)
	}
}

func TestClusterID(t *testing.T) {
	for range 100 {
		id := newClusterID()
		if len(id) != 22 || id[0] == '-' {
			t.Fatalf("cluster id %q", id)
		}
	}
}

func TestServerPropertiesNodeExtra(t *testing.T) {
	cfg := Config{Nodes: 2, Extra: "foo=all\nbar=all", NodeExtra: func(node int) string {
		return fmt.Sprintf("foo=node%d", node)
	}}.withDefaults()
	nodes := testLayout(t, cfg)
	for _, id := range []int{1, 2} {
		p := parseProps(t, serverProperties(testInput(cfg, nodes, id)))
		if want := fmt.Sprintf("node%d", id); p["foo"] != want || p["bar"] != "all" {
			t.Errorf("node %d: foo=%q bar=%q, want foo=%q (NodeExtra after Extra) bar=all", id, p["foo"], p["bar"], want)
		}
	}
}

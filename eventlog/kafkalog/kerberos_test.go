package kafkalog

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jcmturner/gokrb5/v8/iana/etypeID"
	"github.com/jcmturner/gokrb5/v8/keytab"
	"github.com/rlmm-go/rlmm"
)

const testKrb5Conf = `[libdefaults]
	default_realm = RLMM.TEST
	udp_preference_limit = 1
[realms]
	RLMM.TEST = {
		kdc = 127.0.0.1:9
	}
`

func krb5Line(opts string) string {
	return Krb5LoginModule + " required " + opts + ";"
}

func TestParseJAAS(t *testing.T) {
	good := []struct {
		line   string
		module string
		opts   map[string]string
	}{
		{`org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="p";`,
			"org.apache.kafka.common.security.plain.PlainLoginModule", map[string]string{"username": "u", "password": "p"}},
		{krb5Line(`useKeyTab=true storeKey=true keyTab="/etc/k t/x.keytab" principal="rlmm/host@R.TEST"`),
			Krb5LoginModule, map[string]string{"useKeyTab": "true", "storeKey": "true", "keyTab": "/etc/k t/x.keytab", "principal": "rlmm/host@R.TEST"}},
		{`m  Required  a = "x\"y\\z" b=bare`, "m", map[string]string{"a": `x"y\z`, "b": "bare"}},
		{`m optional;`, "m", map[string]string{}},
	}
	for _, tc := range good {
		e, err := parseJAAS(tc.line)
		if err != nil {
			t.Errorf("parseJAAS(%s): %v", tc.line, err)
			continue
		}
		if e.module != tc.module || len(e.options) != len(tc.opts) {
			t.Errorf("parseJAAS(%s) = %+v", tc.line, e)
		}
		for k, v := range tc.opts {
			if e.options[k] != v {
				t.Errorf("parseJAAS(%s): option %s = %q, want %q", tc.line, k, e.options[k], v)
			}
		}
	}
	bad := []struct{ line, say string }{
		{``, "want"},
		{`m`, "control flag"},
		{`m mandatory a="b";`, "control flag"},
		{`m required a="b`, "not closed"},
		{`m required a;`, "no =value"},
		{`m required a=;`, "no value"},
		{`m required a="1" a="2";`, "twice"},
		{`m required; n required;`, "more than one login module"},
		{`m required "a"="b";`, "option name"},
	}
	for _, tc := range bad {
		_, err := parseJAAS(tc.line)
		if err == nil || !strings.Contains(err.Error(), tc.say) {
			t.Errorf("parseJAAS(%s): %v, want an error saying %q", tc.line, err, tc.say)
		}
	}
}

func TestParseKrb5Login(t *testing.T) {
	l, err := parseKrb5Login(krb5Line(`useKeyTab=true storeKey=true doNotPrompt=true keyTab="/k" principal="rlmm@R" serviceName="kafka" debug=false`))
	if err != nil {
		t.Fatal(err)
	}
	if l != (kerberosLogin{principal: "rlmm@R", keyTab: "/k", serviceName: "kafka"}) {
		t.Errorf("got %+v", l)
	}
	bad := []struct{ line, say string }{
		{`org.apache.kafka.common.security.plain.PlainLoginModule required username="u";`, "needs the login module"},
		{krb5Line(`useTicketCache=true principal="rlmm@R"`), "useTicketCache is not supported"},
		{krb5Line(`useKeyTab=true keyTab="/k" principal="rlmm@R" clearPass=true`), "option clearPass is not supported"},
		{krb5Line(`keyTab="/k" principal="rlmm@R"`), "useKeyTab=true"},
		{krb5Line(`useKeyTab=yes keyTab="/k" principal="rlmm@R"`), "want true or false"},
		{krb5Line(`useKeyTab=true principal="rlmm@R"`), "keyTab"},
		{krb5Line(`useKeyTab=true keyTab="/k"`), "principal"},
		{krb5Line(`useKeyTab=true keyTab="/k" principal="rlmm@R" isInitiator=false`), "isInitiator"},
	}
	for _, tc := range bad {
		_, err := parseKrb5Login(tc.line)
		if err == nil || !strings.Contains(err.Error(), tc.say) {
			t.Errorf("parseKrb5Login(%s): %v, want an error saying %q", tc.line, err, tc.say)
		}
	}
}

func TestParsePropertiesGSSAPI(t *testing.T) {
	base := func() map[string]string {
		return map[string]string{
			"bootstrap.servers":          "a:1",
			"security.protocol":          "SASL_SSL",
			"sasl.mechanism":             "GSSAPI",
			"sasl.kerberos.service.name": "kafka",
			"sasl.jaas.config":           krb5Line(`useKeyTab=true storeKey=true keyTab="/etc/rlmm.keytab" principal="rlmm@RLMM.TEST"`),
			"java.security.krb5.conf":    "/etc/rlmm-krb5.conf",
		}
	}
	c, err := ParseProperties(base())
	if err != nil {
		t.Fatal(err)
	}
	if c.SASLMechanism != SASLGSSAPI || c.SASLKerberosServiceName != "kafka" || c.SASLKerberosPrincipal != "rlmm@RLMM.TEST" ||
		c.SASLKerberosKeyTab != "/etc/rlmm.keytab" || c.SASLKerberosConfig != "/etc/rlmm-krb5.conf" || !c.TLSEnable {
		t.Errorf("got %+v", c)
	}
	edits := []struct {
		name    string
		edit    func(p map[string]string)
		setting string
		say     string
	}{
		{"serviceName in the JAAS line", func(p map[string]string) {
			delete(p, "sasl.kerberos.service.name")
			p["sasl.jaas.config"] = krb5Line(`useKeyTab=true keyTab="/k" principal="rlmm@R" serviceName="kafka"`)
		}, "", ""},
		{"no service name", func(p map[string]string) { delete(p, "sasl.kerberos.service.name") }, "sasl.jaas.config", "sasl.kerberos.service.name"},
		{"service names that differ", func(p map[string]string) {
			p["sasl.jaas.config"] = krb5Line(`useKeyTab=true keyTab="/k" principal="rlmm@R" serviceName="other"`)
		}, "sasl.jaas.config", "differs"},
		{"no JAAS line", func(p map[string]string) { delete(p, "sasl.jaas.config") }, "sasl.jaas.config", "missing"},
		{"a ticket cache", func(p map[string]string) {
			p["sasl.jaas.config"] = krb5Line(`useTicketCache=true principal="rlmm@R"`)
		}, "sasl.jaas.config", "useTicketCache"},
		{"krb5.conf without GSSAPI", func(p map[string]string) {
			p["sasl.mechanism"] = "PLAIN"
			delete(p, "sasl.kerberos.service.name")
			p["sasl.jaas.config"] = `x required username="u" password="p";`
		}, "sasl.jaas.config", "java.security.krb5.conf"},
		{"OAUTHBEARER", func(p map[string]string) {
			p["sasl.mechanism"] = "OAUTHBEARER"
			delete(p, "sasl.kerberos.service.name")
			delete(p, "java.security.krb5.conf")
			p["sasl.jaas.config"] = `org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required username="u";`
		}, "sasl.mechanism", "OAUTHBEARER\" is not supported"},
		{"GSSAPI over plaintext", func(p map[string]string) { p["security.protocol"] = "PLAINTEXT" }, "security.protocol", "SASL_PLAINTEXT"},
	}
	for _, tc := range edits {
		t.Run(tc.name, func(t *testing.T) {
			p := base()
			tc.edit(p)
			_, err := ParseProperties(p)
			if tc.say == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !errors.Is(err, rlmm.ErrInvalidArgument) || !strings.Contains(err.Error(), tc.setting) || !strings.Contains(err.Error(), tc.say) {
				t.Fatalf("%v: want an ErrInvalidArgument naming %s and saying %q", err, tc.setting, tc.say)
			}
		})
	}
}

// TestKerberosMechanismErrors: a bad krb5.conf, keytab or principal is an
// ErrInvalidArgument naming the setting and the file, before any
// connection; no keytab prefix panics.
func TestKerberosMechanismErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	conf := write("krb5.conf", []byte(testKrb5Conf))
	kt := keytab.New()
	if err := kt.AddEntry("rlmm", "RLMM.TEST", "not a real password", time.Now(), 1, etypeID.AES256_CTS_HMAC_SHA1_96); err != nil {
		t.Fatal(err)
	}
	ktData, err := kt.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	ktFile := write("rlmm.keytab", ktData)
	cfg := func(principal, keyTab, krb5 string) Config {
		return Config{BootstrapServers: []string{"127.0.0.1:9"}, SASLMechanism: SASLGSSAPI, SASLKerberosServiceName: "kafka",
			SASLKerberosPrincipal: principal, SASLKerberosKeyTab: keyTab, SASLKerberosConfig: krb5}
	}
	// The good one builds (it logs in only when a connection authenticates).
	c, err := cfg("rlmm@RLMM.TEST", ktFile, conf).withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.kerberosMechanism(); err != nil {
		t.Fatalf("a good keytab and krb5.conf: %v", err)
	}
	if c, err = cfg("rlmm", ktFile, conf).withDefaults(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.kerberosMechanism(); err != nil {
		t.Fatalf("a principal in krb5.conf's default realm: %v", err)
	}
	tests := []struct {
		name             string
		cfg              Config
		setting, file, s string
	}{
		{"no krb5.conf", cfg("rlmm@RLMM.TEST", ktFile, filepath.Join(dir, "absent.conf")), "java.security.krb5.conf", filepath.Join(dir, "absent.conf"), "could not be opened"},
		{"no keytab", cfg("rlmm@RLMM.TEST", filepath.Join(dir, "absent.keytab"), conf), "keyTab", filepath.Join(dir, "absent.keytab"), "not a readable keytab"},
		{"not a keytab", cfg("rlmm@RLMM.TEST", conf, conf), "keyTab", conf, "not a readable keytab"},
		{"another principal", cfg("ghost@RLMM.TEST", ktFile, conf), "keyTab", ktFile, "no key of principal ghost@RLMM.TEST"},
		{"another realm", cfg("rlmm@OTHER.TEST", ktFile, conf), "keyTab", ktFile, "no key of principal rlmm@OTHER.TEST"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := tc.cfg.withDefaults()
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.kerberosMechanism()
			if err == nil || !errors.Is(err, rlmm.ErrInvalidArgument) {
				t.Fatalf("%v: want an ErrInvalidArgument", err)
			}
			for _, want := range []string{tc.setting, tc.file, tc.s} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("%v: does not say %q", err, want)
				}
			}
		})
	}
	t.Run("every keytab prefix", func(t *testing.T) {
		for n := 0; n < len(ktData); n++ {
			c, err := cfg("rlmm@RLMM.TEST", write("prefix.keytab", ktData[:n]), conf).withDefaults()
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.kerberosMechanism(); err == nil {
				t.Errorf("a keytab prefix of %d of %d bytes was accepted", n, len(ktData))
			} else if !errors.Is(err, rlmm.ErrInvalidArgument) {
				t.Errorf("prefix %d: %v is not an ErrInvalidArgument", n, err)
			}
		}
	})
	t.Run("settings without the mechanism", func(t *testing.T) {
		for _, c := range []Config{
			{BootstrapServers: []string{"a:1"}, SASLKerberosKeyTab: ktFile},
			{BootstrapServers: []string{"a:1"}, SASLMechanism: SASLGSSAPI, SASLKerberosServiceName: "kafka", SASLKerberosPrincipal: "rlmm"},
			{BootstrapServers: []string{"a:1"}, SASLMechanism: SASLGSSAPI, SASLKerberosPrincipal: "rlmm", SASLKerberosKeyTab: ktFile},
			{BootstrapServers: []string{"a:1"}, SASLMechanism: SASLScramSHA512, SASLUser: "u", SASLKerberosKeyTab: ktFile},
		} {
			if _, err := c.withDefaults(); err == nil || !errors.Is(err, rlmm.ErrInvalidArgument) {
				t.Errorf("%+v: %v, want an ErrInvalidArgument", c, err)
			}
		}
	})
}

func TestKrb5ConfigPath(t *testing.T) {
	t.Setenv("KRB5_CONFIG", "/a/krb5.conf:/b/krb5.conf")
	if got := krb5ConfigPath(""); got != "/a/krb5.conf" {
		t.Errorf("from $KRB5_CONFIG: %s", got)
	}
	if got := krb5ConfigPath("/c/krb5.conf"); got != "/c/krb5.conf" {
		t.Errorf("configured: %s", got)
	}
	t.Setenv("KRB5_CONFIG", "")
	if got := krb5ConfigPath(""); got != DefaultKrb5Config {
		t.Errorf("default: %s", got)
	}
}

package kafkalog

import (
	"errors"
	"fmt"
	"os"
	"strings"

	krbclient "github.com/jcmturner/gokrb5/v8/client"
	krbconfig "github.com/jcmturner/gokrb5/v8/config"
	"github.com/jcmturner/gokrb5/v8/keytab"
	"github.com/rlmm-go/rlmm"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/kerberos"
)

// SASLGSSAPI is Kafka's sasl.mechanism for Kerberos.
const SASLGSSAPI = "GSSAPI"

// Krb5LoginModule is the JAAS login module of a Kafka client's Kerberos
// login, the only one sasl.mechanism=GSSAPI accepts here.
const Krb5LoginModule = "com.sun.security.auth.module.Krb5LoginModule"

// DefaultKrb5Config is where the Kerberos configuration is read from when
// neither Config.SASLKerberosConfig (java.security.krb5.conf) nor
// $KRB5_CONFIG names a file: MIT Kerberos' and Java's default on Linux.
const DefaultKrb5Config = "/etc/krb5.conf"

// jaasEntry is one login module of a sasl.jaas.config line.
type jaasEntry struct {
	module  string
	flag    string
	options map[string]string
	order   []string // option names in the order given
}

// parseJAAS parses a sasl.jaas.config value the way Kafka's JaasConfig
// does: one login module, `<class> <flag> [name=value ...];`, a value being
// a bare word or a double-quoted string (backslash escapes the next
// character). Errors never quote the line, which may hold a password.
func parseJAAS(line string) (jaasEntry, error) {
	toks, err := jaasTokens(line)
	if err != nil {
		return jaasEntry{}, err
	}
	var e jaasEntry
	e.options = map[string]string{}
	i := 0
	next := func() (jaasToken, bool) {
		if i >= len(toks) {
			return jaasToken{}, false
		}
		i++
		return toks[i-1], true
	}
	mod, ok := next()
	if !ok || mod.kind != tokWord {
		return jaasEntry{}, errors.New("want `<login module class> required [option=value ...];`")
	}
	e.module = mod.text
	flag, ok := next()
	if !ok || flag.kind != tokWord {
		return jaasEntry{}, fmt.Errorf("login module %s has no control flag (required, requisite, sufficient or optional)", e.module)
	}
	switch strings.ToLower(flag.text) {
	case "required", "requisite", "sufficient", "optional":
		e.flag = strings.ToLower(flag.text)
	default:
		return jaasEntry{}, fmt.Errorf("login module %s: control flag %q is not required, requisite, sufficient or optional", e.module, flag.text)
	}
	for {
		t, ok := next()
		if !ok {
			return e, nil // Kafka wants the ';'; a missing last one is forgiven
		}
		if t.kind == tokSemicolon {
			if i < len(toks) {
				return jaasEntry{}, errors.New("more than one login module: a Kafka client takes exactly one")
			}
			return e, nil
		}
		if t.kind != tokWord {
			return jaasEntry{}, fmt.Errorf("login module %s: want option=value, got a quoted string where an option name belongs", e.module)
		}
		eq, ok := next()
		if !ok || eq.kind != tokEquals {
			return jaasEntry{}, fmt.Errorf("login module %s: option %s has no =value", e.module, t.text)
		}
		v, ok := next()
		if !ok || (v.kind != tokWord && v.kind != tokQuoted) {
			return jaasEntry{}, fmt.Errorf("login module %s: option %s has no value", e.module, t.text)
		}
		if _, dup := e.options[t.text]; dup {
			return jaasEntry{}, fmt.Errorf("login module %s: option %s is given twice", e.module, t.text)
		}
		e.options[t.text] = v.text
		e.order = append(e.order, t.text)
	}
}

type jaasTokenKind int

const (
	tokWord jaasTokenKind = iota
	tokQuoted
	tokEquals
	tokSemicolon
)

type jaasToken struct {
	kind jaasTokenKind
	text string
}

func jaasTokens(s string) ([]jaasToken, error) {
	var toks []jaasToken
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '=':
			toks = append(toks, jaasToken{kind: tokEquals})
			i++
		case c == ';':
			toks = append(toks, jaasToken{kind: tokSemicolon})
			i++
		case c == '"':
			var b strings.Builder
			i++
			closed := false
			for i < len(s) {
				if s[i] == '\\' && i+1 < len(s) {
					b.WriteByte(s[i+1])
					i += 2
					continue
				}
				if s[i] == '"' {
					closed = true
					i++
					break
				}
				b.WriteByte(s[i])
				i++
			}
			if !closed {
				return nil, errors.New("a quoted value is not closed")
			}
			toks = append(toks, jaasToken{kind: tokQuoted, text: b.String()})
		default:
			j := i
			for j < len(s) && !strings.ContainsRune(" \t\r\n=;\"", rune(s[j])) {
				j++
			}
			toks = append(toks, jaasToken{kind: tokWord, text: s[i:j]})
			i = j
		}
	}
	return toks, nil
}

// kerberosLogin is what a Krb5LoginModule entry says about the client's
// login.
type kerberosLogin struct {
	principal, keyTab, serviceName string
}

// krb5Options are the Krb5LoginModule options rlmm reads; any other is
// refused by name.
var krb5Options = map[string]bool{
	"useKeyTab": true, "keyTab": true, "principal": true, "storeKey": true,
	"doNotPrompt": true, "serviceName": true, "debug": true, "isInitiator": true,
	"refreshKrb5Config": true,
}

// parseKrb5Login reads a Krb5LoginModule line: useKeyTab=true, keyTab and
// principal are required (rlmm logs in from a keytab only); storeKey,
// doNotPrompt, debug and refreshKrb5Config are accepted and have no effect
// here; serviceName stands in for sasl.kerberos.service.name.
func parseKrb5Login(line string) (kerberosLogin, error) {
	e, err := parseJAAS(line)
	if err != nil {
		return kerberosLogin{}, err
	}
	if e.module != Krb5LoginModule {
		return kerberosLogin{}, fmt.Errorf("sasl.mechanism GSSAPI needs the login module %s, got %s", Krb5LoginModule, e.module)
	}
	for _, name := range e.order {
		if !krb5Options[name] {
			switch name {
			case "useTicketCache", "ticketCache", "renewTGT":
				return kerberosLogin{}, fmt.Errorf("%s option %s is not supported: rlmm logs in from a keytab only (useKeyTab=true keyTab=... principal=...)", Krb5LoginModule, name)
			}
			return kerberosLogin{}, fmt.Errorf("%s option %s is not supported (rlmm reads useKeyTab, keyTab, principal, storeKey, doNotPrompt, serviceName, debug, isInitiator, refreshKrb5Config)", Krb5LoginModule, name)
		}
	}
	for _, name := range []string{"useKeyTab", "storeKey", "doNotPrompt", "debug", "isInitiator", "refreshKrb5Config"} {
		if v, ok := e.options[name]; ok && v != "true" && v != "false" {
			return kerberosLogin{}, fmt.Errorf("%s option %s is %q, want true or false", Krb5LoginModule, name, v)
		}
	}
	if e.options["useKeyTab"] != "true" {
		return kerberosLogin{}, fmt.Errorf("%s needs useKeyTab=true: rlmm logs in from a keytab only (no ticket cache, no password prompt)", Krb5LoginModule)
	}
	if e.options["isInitiator"] == "false" {
		return kerberosLogin{}, fmt.Errorf("%s option isInitiator=false: a client must initiate", Krb5LoginModule)
	}
	l := kerberosLogin{principal: e.options["principal"], keyTab: e.options["keyTab"], serviceName: e.options["serviceName"]}
	if l.keyTab == "" {
		return kerberosLogin{}, fmt.Errorf("%s needs keyTab=\"<file>\"", Krb5LoginModule)
	}
	if l.principal == "" {
		return kerberosLogin{}, fmt.Errorf("%s needs principal=\"<name>@<REALM>\"", Krb5LoginModule)
	}
	return l, nil
}

// krb5ConfigPath is the krb5.conf to read: the configured one, else the
// first file of $KRB5_CONFIG (a colon-separated list, as MIT Kerberos takes
// it), else DefaultKrb5Config.
func krb5ConfigPath(configured string) string {
	if configured != "" {
		return configured
	}
	if env := os.Getenv("KRB5_CONFIG"); env != "" {
		if first, _, _ := strings.Cut(env, ":"); first != "" {
			return first
		}
	}
	return DefaultKrb5Config
}

// kerberosMechanism builds the GSSAPI mechanism of one kgo client: a gokrb5
// client logged in from the keytab (its ticket is renewed by gokrb5 and the
// client destroyed when the kgo client closes). Every error names the
// setting and the file.
func (c Config) kerberosMechanism() (sasl.Mechanism, error) {
	bad := func(format string, args ...any) (sasl.Mechanism, error) {
		return nil, fmt.Errorf("kafkalog: %w: %s", rlmm.ErrInvalidArgument, fmt.Sprintf(format, args...))
	}
	confPath := krb5ConfigPath(c.SASLKerberosConfig)
	var krbConf *krbconfig.Config
	err := decodeSafely("java.security.krb5.conf", confPath, func() error {
		var err error
		krbConf, err = krbconfig.Load(confPath)
		var unsupported krbconfig.UnsupportedDirective
		if errors.As(err, &unsupported) && krbConf != nil {
			return nil // gokrb5 skips directives it does not know; so does MIT
		}
		return err
	})
	if err != nil {
		return bad("java.security.krb5.conf (or $KRB5_CONFIG) %s: %v", confPath, err)
	}
	var kt *keytab.Keytab
	err = decodeSafely("sasl.jaas.config keyTab", c.SASLKerberosKeyTab, func() error {
		var err error
		kt, err = keytab.Load(c.SASLKerberosKeyTab)
		return err
	})
	if err != nil {
		return bad("sasl.jaas.config keyTab %s: not a readable keytab: %v", c.SASLKerberosKeyTab, err)
	}
	user, realm, hasRealm := strings.Cut(c.SASLKerberosPrincipal, "@")
	if !hasRealm {
		realm = krbConf.LibDefaults.DefaultRealm
	}
	if user == "" || realm == "" {
		return bad("sasl.jaas.config principal %q: want name@REALM (or a default_realm in %s)", c.SASLKerberosPrincipal, confPath)
	}
	found := false
	for _, e := range kt.Entries {
		if e.Principal.Realm == realm && strings.Join(e.Principal.Components, "/") == user {
			found = true
			break
		}
	}
	if !found {
		return bad("sasl.jaas.config keyTab %s holds no key of principal %s@%s", c.SASLKerberosKeyTab, user, realm)
	}
	cl := krbclient.NewWithKeytab(user, realm, kt, krbConf, krbclient.DisablePAFXFAST(true))
	return kerberos.Auth{Client: cl, Service: c.SASLKerberosServiceName}.AsMechanismWithClose(), nil
}

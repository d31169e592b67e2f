package kafkalog

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rlmm-go/rlmm"
)

// clientPrefix is the prefix Kafka's manager accepts before client settings
// (remote.log.metadata.common.client.bootstrap.servers and so on).
const clientPrefix = "remote.log.metadata.common.client."

// ignoredPrefixes are the prefixes of Kafka's manager's settings rlmm takes
// and ignores: its producer's, consumer's and (from Kafka 4.2) admin
// client's own settings, and the client settings of the common prefix that
// ParseProperties does not read. A broker migrating from Kafka's manager
// keeps them in its file, so refusing one would stop the broker.
var ignoredPrefixes = []string{"remote.log.metadata.producer.", "remote.log.metadata.consumer.", "remote.log.metadata.admin.", clientPrefix}

// ignoredKeys are the settings of Kafka's manager (and of the broker, under
// the same prefix) that rlmm takes and ignores: the broker plugin reads the
// initialization bound itself (rlmm.serve.init.timeout.ms's default).
var ignoredKeys = []string{
	"remote.log.metadata.initialization.retry.max.timeout.ms",
	"remote.log.metadata.initialization.retry.interval.ms",
	"remote.log.metadata.custom.metadata.max.bytes",
}

// ignoredProperty reports whether ParseProperties ignores key (it is not one
// of the keys it reads: those are matched first).
func ignoredProperty(key string) bool {
	if slices.Contains(ignoredKeys, key) || strings.HasPrefix(key, "remote.log.metadata.manager.") {
		return true
	}
	for _, p := range ignoredPrefixes {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return false
}

// IgnoredProperties returns, sorted, the keys of props that ParseProperties
// takes without reading them (for a log line naming them).
func IgnoredProperties(props map[string]string) []string {
	var out []string
	for k := range props {
		var scratch propertyReader
		if known, _ := scratch.read(k, ""); !known && ignoredProperty(k) {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// ParseProperties builds a Config from Kafka-style properties, the keys an
// operator already has in a broker's or client's configuration:
//
//	bootstrap.servers                               BootstrapServers
//	remote.log.metadata.topic.num.partitions        NumPartitions
//	remote.log.metadata.topic.replication.factor    ReplicationFactor
//	remote.log.metadata.topic.min.isr               MinInSyncReplicas
//	remote.log.metadata.topic.retention.ms          RetentionMs
//	remote.log.metadata.consume.wait.ms             ConsumeWait
//	security.protocol                               PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL
//	sasl.mechanism                                  SASLMechanism: PLAIN (the default), SCRAM-SHA-256, SCRAM-SHA-512, GSSAPI
//	sasl.jaas.config                                PLAIN, SCRAM: username="..." password="..." (SASLUser, SASLPassword)
//	                                                GSSAPI: com.sun.security.auth.module.Krb5LoginModule required
//	                                                useKeyTab=true keyTab="..." principal="..." [storeKey=true] ...;
//	                                                (SASLKerberosKeyTab, SASLKerberosPrincipal)
//	sasl.kerberos.service.name                      SASLKerberosServiceName (or serviceName= in the JAAS line)
//	java.security.krb5.conf                         SASLKerberosConfig (the broker JVM's system property)
//	ssl.truststore.type                             JKS (the default), PKCS12 or PEM
//	ssl.truststore.location                         TLSTrustStoreLocation (JKS, PKCS12) or TLSCAFile (PEM)
//	ssl.truststore.password                         TLSTrustStorePassword (JKS, PKCS12)
//	ssl.keystore.type                               JKS (the default), PKCS12 or PEM
//	ssl.keystore.location                           TLSKeyStoreLocation (JKS, PKCS12), or TLSCertFile and
//	                                                TLSKeyFile (PEM: one file with the key and the chain)
//	ssl.keystore.password                           TLSKeyStorePassword (JKS, PKCS12)
//	ssl.key.password                                TLSKeyPassword (JKS, PKCS12)
//	client.id                                       ClientID
//
// Client keys may carry Kafka's "remote.log.metadata.common.client." prefix.
// The settings of Kafka's own manager that rlmm has no use for are ignored
// (IgnoredProperties lists them): its producer and consumer tuning, other
// client settings under that prefix, and its initialization retry bounds, so
// the broker plugin can forward every remote.log.metadata.* setting the broker
// passes and leave the judgment to this function. Any other unknown key, or a
// value Kafka would reject, is an error wrapping rlmm.ErrInvalidArgument that
// names the key.
func ParseProperties(props map[string]string) (Config, error) {
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	slices.Sort(keys) // deterministic: the first bad key in order is reported
	r := propertyReader{protocol: "PLAINTEXT", trustType: StoreJKS, keyType: StoreJKS}
	for _, key := range keys {
		known, err := r.read(key, strings.TrimSpace(props[key]))
		if err != nil {
			return Config{}, err
		}
		if !known && !ignoredProperty(key) {
			return Config{}, badProperty(key, "not a setting kafkalog knows")
		}
	}
	c := r.c
	bad := func(key, format string, args ...any) (Config, error) {
		return Config{}, badProperty(key, format, args...)
	}
	protocol, trustType, keyType := r.protocol, r.trustType, r.keyType
	jaas, serviceName := r.jaas, r.serviceName
	trustLocation, trustPassword, keyLocation, keyStorePassword, keyPassword := r.trustLocation, r.trustPassword, r.keyLocation, r.keyStorePassword, r.keyPassword
	// The stores: PEM as the PEM fields, JKS and PKCS12 as the store fields.
	switch trustType {
	case StorePEM:
		if trustPassword != "" {
			return bad("ssl.truststore.password", "not used with ssl.truststore.type=PEM (a PEM trust store has no password): remove it")
		}
		c.TLSCAFile = trustLocation
	case StoreJKS, StorePKCS12:
		c.TLSTrustStoreLocation, c.TLSTrustStorePassword = trustLocation, trustPassword
		if trustLocation != "" && trustPassword == "" {
			return bad("ssl.truststore.password", "missing: rlmm needs the password of a %s trust store (it checks the store's integrity)", trustType)
		}
	default:
		return bad("ssl.truststore.type", "%q is not supported: want JKS, PKCS12 or PEM", trustType)
	}
	switch keyType {
	case StorePEM:
		if keyStorePassword != "" {
			return bad("ssl.keystore.password", "not used with ssl.keystore.type=PEM: remove it")
		}
		if keyPassword != "" {
			return bad("ssl.key.password", "an encrypted PEM key is not supported: give the PEM key unencrypted (mode 0600), or use a JKS or PKCS12 key store")
		}
		c.TLSCertFile, c.TLSKeyFile = keyLocation, keyLocation
	case StoreJKS, StorePKCS12:
		c.TLSKeyStoreLocation, c.TLSKeyStorePassword, c.TLSKeyPassword = keyLocation, keyStorePassword, keyPassword
		if keyLocation != "" && keyStorePassword == "" {
			return bad("ssl.keystore.password", "missing: rlmm needs the password of a %s key store", keyType)
		}
	default:
		return bad("ssl.keystore.type", "%q is not supported: want JKS, PKCS12 or PEM", keyType)
	}
	if keyLocation == "" && (keyStorePassword != "" || keyPassword != "") {
		return bad("ssl.keystore.location", "missing: ssl.keystore.password or ssl.key.password is set without a key store")
	}
	if trustLocation == "" && trustPassword != "" {
		return bad("ssl.truststore.location", "missing: ssl.truststore.password is set without a trust store")
	}
	useTLS := protocol == "SSL" || protocol == "SASL_SSL"
	useSASL := protocol == "SASL_PLAINTEXT" || protocol == "SASL_SSL"
	if !useTLS && (trustLocation != "" || keyLocation != "") {
		return bad("security.protocol", "%s with ssl.* settings: use SSL or SASL_SSL", protocol)
	}
	c.TLSEnable = useTLS
	if useSASL {
		if c.SASLMechanism == "" {
			c.SASLMechanism = SASLPlain // Kafka's default sasl.mechanism
		}
		if err := c.saslFromJAAS(protocol, jaas, serviceName); err != nil {
			return bad("sasl.jaas.config", "%v", err)
		}
	} else if c.SASLMechanism != "" || jaas != "" || serviceName != "" || c.SASLKerberosConfig != "" {
		return bad("security.protocol", "%s with sasl.* settings: use SASL_PLAINTEXT or SASL_SSL", protocol)
	}
	if _, err := c.withDefaults(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// propertyReader is what ParseProperties has read so far.
type propertyReader struct {
	c                                                                        Config
	protocol, trustType, keyType, jaas, serviceName                          string
	trustLocation, trustPassword, keyLocation, keyStorePassword, keyPassword string
}

// read takes one property: known says whether key is one ParseProperties
// reads (with or without the common client prefix), err what is wrong with
// its value. The one list of the keys read, so IgnoredProperties asks it.
func (r *propertyReader) read(key, v string) (known bool, err error) {
	switch strings.TrimPrefix(key, clientPrefix) {
	case "bootstrap.servers":
		r.c.BootstrapServers = []string{v}
	case "remote.log.metadata.topic.num.partitions":
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil || n < 1 {
			return true, badProperty(key, "%q is not a partition count of at least 1", v)
		}
		r.c.NumPartitions = int32(n)
	case "remote.log.metadata.topic.replication.factor":
		n, err := strconv.ParseInt(v, 10, 16)
		if err != nil || n < 1 {
			return true, badProperty(key, "%q is not a replication factor of at least 1", v)
		}
		r.c.ReplicationFactor = int16(n)
	case "remote.log.metadata.topic.min.isr":
		n, err := strconv.ParseInt(v, 10, 16)
		if err != nil || n < 1 {
			return true, badProperty(key, "%q is not a replica count of at least 1", v)
		}
		r.c.MinInSyncReplicas = int16(n)
	case "remote.log.metadata.topic.retention.ms":
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || (n < 1 && n != -1) {
			return true, badProperty(key, "%q must be -1 or a positive number of milliseconds", v)
		}
		r.c.RetentionMs = n
	case "remote.log.metadata.consume.wait.ms":
		n, err := strconv.ParseInt(v, 10, 64)
		// Kafka accepts 0, which fails every mutation at once; Config
		// uses 0 for "the default", so 0 is refused here.
		if err != nil || n < 1 || n > int64(time.Duration(1<<62)/time.Millisecond) {
			return true, badProperty(key, "%q is not a positive number of milliseconds", v)
		}
		r.c.ConsumeWait = time.Duration(n) * time.Millisecond
	case "security.protocol":
		r.protocol = strings.ToUpper(v)
		if !slices.Contains([]string{"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"}, r.protocol) {
			return true, badProperty(key, "%q: want PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL", v)
		}
	case "sasl.mechanism":
		r.c.SASLMechanism = v
	case "sasl.jaas.config":
		r.jaas = v
	case "sasl.kerberos.service.name":
		r.serviceName = v
	case "java.security.krb5.conf":
		r.c.SASLKerberosConfig = v
	case "ssl.truststore.location":
		r.trustLocation = v
	case "ssl.truststore.type":
		r.trustType = strings.ToUpper(v)
	case "ssl.truststore.password":
		r.trustPassword = v
	case "ssl.keystore.location":
		r.keyLocation = v
	case "ssl.keystore.type":
		r.keyType = strings.ToUpper(v)
	case "ssl.keystore.password":
		r.keyStorePassword = v
	case "ssl.key.password":
		r.keyPassword = v
	case "client.id":
		r.c.ClientID = v
	default:
		return false, nil
	}
	return true, nil
}

// badProperty is the error of a refused property.
func badProperty(key, format string, args ...any) error {
	return fmt.Errorf("kafkalog: %w: property %s: %s", rlmm.ErrInvalidArgument, key, fmt.Sprintf(format, args...))
}

// saslFromJAAS fills the SASL credentials from sasl.jaas.config (and, for
// GSSAPI, sasl.kerberos.service.name, which must agree with a serviceName
// option of the JAAS line, as Kafka requires).
func (c *Config) saslFromJAAS(protocol, jaas, serviceName string) error {
	if strings.EqualFold(c.SASLMechanism, SASLGSSAPI) {
		if jaas == "" {
			return fmt.Errorf("missing: sasl.mechanism GSSAPI needs %s required useKeyTab=true keyTab=\"...\" principal=\"...\";", Krb5LoginModule)
		}
		l, err := parseKrb5Login(jaas)
		if err != nil {
			return err
		}
		if l.serviceName != "" && serviceName != "" && l.serviceName != serviceName {
			return fmt.Errorf("serviceName %q differs from sasl.kerberos.service.name %q", l.serviceName, serviceName)
		}
		if serviceName == "" {
			serviceName = l.serviceName
		}
		if serviceName == "" {
			return errors.New("no Kerberos service name: set sasl.kerberos.service.name (e.g. kafka) or serviceName= in the JAAS line")
		}
		c.SASLKerberosPrincipal, c.SASLKerberosKeyTab, c.SASLKerberosServiceName = l.principal, l.keyTab, serviceName
		return nil
	}
	if serviceName != "" || c.SASLKerberosConfig != "" {
		return fmt.Errorf("sasl.kerberos.service.name and java.security.krb5.conf are for sasl.mechanism GSSAPI, not %s", c.SASLMechanism)
	}
	if jaas == "" {
		return fmt.Errorf("missing: security.protocol %s needs username=\"...\" and password=\"...\"", protocol)
	}
	e, err := parseJAAS(jaas)
	if err != nil {
		return err
	}
	c.SASLUser, c.SASLPassword = e.options["username"], e.options["password"]
	if c.SASLUser == "" {
		return fmt.Errorf("security.protocol %s needs username=\"...\" and password=\"...\"", protocol)
	}
	return nil
}

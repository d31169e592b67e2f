package kafkalog

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rlmm-go/rlmm"
)

// clientPrefix is the prefix Kafka's manager accepts before client settings
// (remote.log.metadata.common.client.bootstrap.servers and so on).
const clientPrefix = "remote.log.metadata.common.client."

// jaasOption matches one key="value" option of a sasl.jaas.config line.
var jaasOption = regexp.MustCompile(`(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"`)

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
//	sasl.mechanism                                  SASLMechanism
//	sasl.jaas.config                                username="..." password="..." (SASLUser, SASLPassword)
//	ssl.truststore.location (ssl.truststore.type=PEM)  TLSCAFile
//	ssl.keystore.location (ssl.keystore.type=PEM)      TLSCertFile and TLSKeyFile (one PEM file with both)
//	client.id                                       ClientID
//
// Client keys may carry Kafka's "remote.log.metadata.common.client." prefix.
// An unknown key, or a value Kafka would reject, is an error wrapping
// rlmm.ErrInvalidArgument that names the key.
func ParseProperties(props map[string]string) (Config, error) {
	var c Config
	bad := func(key, format string, args ...any) (Config, error) {
		return Config{}, fmt.Errorf("kafkalog: %w: property %s: %s", rlmm.ErrInvalidArgument, key, fmt.Sprintf(format, args...))
	}
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	slices.Sort(keys) // deterministic: the first bad key in order is reported
	protocol := "PLAINTEXT"
	var trustType, keyType = "JKS", "JKS"
	var jaas string
	for _, key := range keys {
		v := strings.TrimSpace(props[key])
		switch strings.TrimPrefix(key, clientPrefix) {
		case "bootstrap.servers":
			c.BootstrapServers = []string{v}
		case "remote.log.metadata.topic.num.partitions":
			n, err := strconv.ParseInt(v, 10, 32)
			if err != nil || n < 1 {
				return bad(key, "%q is not a partition count of at least 1", v)
			}
			c.NumPartitions = int32(n)
		case "remote.log.metadata.topic.replication.factor":
			n, err := strconv.ParseInt(v, 10, 16)
			if err != nil || n < 1 {
				return bad(key, "%q is not a replication factor of at least 1", v)
			}
			c.ReplicationFactor = int16(n)
		case "remote.log.metadata.topic.min.isr":
			n, err := strconv.ParseInt(v, 10, 16)
			if err != nil || n < 1 {
				return bad(key, "%q is not a replica count of at least 1", v)
			}
			c.MinInSyncReplicas = int16(n)
		case "remote.log.metadata.topic.retention.ms":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || (n < 1 && n != -1) {
				return bad(key, "%q must be -1 or a positive number of milliseconds", v)
			}
			c.RetentionMs = n
		case "remote.log.metadata.consume.wait.ms":
			n, err := strconv.ParseInt(v, 10, 64)
			// Kafka accepts 0, which fails every mutation at once; Config
			// uses 0 for "the default", so 0 is refused here.
			if err != nil || n < 1 || n > int64(time.Duration(1<<62)/time.Millisecond) {
				return bad(key, "%q is not a positive number of milliseconds", v)
			}
			c.ConsumeWait = time.Duration(n) * time.Millisecond
		case "security.protocol":
			protocol = strings.ToUpper(v)
			if !slices.Contains([]string{"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"}, protocol) {
				return bad(key, "%q: want PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL", v)
			}
		case "sasl.mechanism":
			c.SASLMechanism = v
		case "sasl.jaas.config":
			jaas = v
		case "ssl.truststore.location":
			c.TLSCAFile = v
		case "ssl.truststore.type":
			trustType = strings.ToUpper(v)
		case "ssl.keystore.location":
			c.TLSCertFile, c.TLSKeyFile = v, v
		case "ssl.keystore.type":
			keyType = strings.ToUpper(v)
		case "client.id":
			c.ClientID = v
		default:
			return bad(key, "not a setting kafkalog knows")
		}
	}
	if c.TLSCAFile != "" && trustType != "PEM" {
		return bad("ssl.truststore.type", "%s stores are not supported; convert the truststore to PEM and set ssl.truststore.type=PEM", trustType)
	}
	if c.TLSCertFile != "" && keyType != "PEM" {
		return bad("ssl.keystore.type", "%s stores are not supported; convert the keystore to PEM and set ssl.keystore.type=PEM", keyType)
	}
	useTLS := protocol == "SSL" || protocol == "SASL_SSL"
	useSASL := protocol == "SASL_PLAINTEXT" || protocol == "SASL_SSL"
	if !useTLS && (c.TLSCAFile != "" || c.TLSCertFile != "") {
		return bad("security.protocol", "%s with ssl.* settings: use SSL or SASL_SSL", protocol)
	}
	c.TLSEnable = useTLS
	if useSASL {
		if c.SASLMechanism == "" {
			c.SASLMechanism = SASLPlain // Kafka's default sasl.mechanism
		}
		for _, m := range jaasOption.FindAllStringSubmatch(jaas, -1) {
			value := strings.ReplaceAll(strings.ReplaceAll(m[2], `\"`, `"`), `\\`, `\`)
			switch m[1] {
			case "username":
				c.SASLUser = value
			case "password":
				c.SASLPassword = value
			}
		}
		if c.SASLUser == "" {
			return bad("sasl.jaas.config", "security.protocol %s needs username=\"...\" and password=\"...\"", protocol)
		}
	} else if c.SASLMechanism != "" || jaas != "" {
		return bad("security.protocol", "%s with sasl.* settings: use SASL_PLAINTEXT or SASL_SSL", protocol)
	}
	if _, err := c.withDefaults(); err != nil {
		return Config{}, err
	}
	return c, nil
}

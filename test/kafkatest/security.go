package kafkatest

import (
	"bufio"
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"maps"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/pavlo-v-chernykh/keystore-go/v4"
	"software.sslmate.com/src/go-pkcs12"
)

// Users are the SASL users every secure cluster gets, with random
// passwords: admin is a super user; the others have no ACL until a test
// grants them some (rlmm: every ACL a manager needs; rlmm-noread and
// rlmm-nowrite: all but READ, resp. WRITE, of the metadata topic).
var Users = []string{"admin", "rlmm", "rlmm-noread", "rlmm-nowrite"}

// The files of a cluster's security directory (mode 0600, the directory
// 0700).
const (
	caCertFile         = "ca.pem"
	caKeyFile          = "ca.key"
	brokerCertFile     = "broker.pem"
	brokerKeyFile      = "broker.key"
	brokerKeystoreFile = "broker.p12"
	clientCertFile     = "client.pem"
	clientKeyFile      = "client.key"
	clientKeystoreFile = "client.p12"
	truststoreFile     = "truststore.jks"
	passwordFile       = "keystore.password"
	usersFile          = "users.properties"
	securityDone       = ".complete"
)

// SecurityFiles is a cluster's TLS material and SASL users, made with Go's
// crypto: a CA, a broker certificate for 127.0.0.1 and localhost and a
// client certificate (CN rlmm-client), each with its PEM key and a PKCS#12
// keystore, a JKS truststore of the CA, and the users' passwords.
type SecurityFiles struct {
	// Dir holds the files.
	Dir string
	// CAFile is the CA's certificate (PEM): a client's truststore.
	CAFile string
	// CAKeyFile, BrokerKeyFile and ClientKeyFile are the private keys
	// (PKCS#8 PEM).
	CAKeyFile, BrokerKeyFile, ClientKeyFile string
	// BrokerCertFile and ClientCertFile are the certificates (PEM).
	BrokerCertFile, ClientCertFile string
	// BrokerKeystore and ClientKeystore are PKCS#12 keystores of the key,
	// certificate and CA, with KeystorePassword.
	BrokerKeystore, ClientKeystore string
	// Truststore is a JKS truststore of the CA, with KeystorePassword.
	Truststore string
	// KeystorePassword opens every keystore.
	KeystorePassword string
	// Users maps each of Users to its password.
	Users map[string]string
}

// LoadSecurity reads the security directory dir of a cluster (made at its
// first start).
func LoadSecurity(dir string) (*SecurityFiles, error) {
	s := securityPaths(dir)
	if _, err := os.Stat(filepath.Join(dir, securityDone)); err != nil {
		return nil, fmt.Errorf("kafkatest: %s holds no complete security material: %w", dir, err)
	}
	pw, err := os.ReadFile(filepath.Join(dir, passwordFile))
	if err != nil {
		return nil, fmt.Errorf("kafkatest: %w", err)
	}
	s.KeystorePassword = strings.TrimSpace(string(pw))
	users, err := os.ReadFile(filepath.Join(dir, usersFile))
	if err != nil {
		return nil, fmt.Errorf("kafkatest: %w", err)
	}
	if s.Users, err = parseUsers(users); err != nil {
		return nil, fmt.Errorf("kafkatest: %s: %w", filepath.Join(dir, usersFile), err)
	}
	return s, nil
}

func securityPaths(dir string) *SecurityFiles {
	p := func(name string) string { return filepath.Join(dir, name) }
	return &SecurityFiles{Dir: dir, CAFile: p(caCertFile), CAKeyFile: p(caKeyFile),
		BrokerCertFile: p(brokerCertFile), BrokerKeyFile: p(brokerKeyFile), BrokerKeystore: p(brokerKeystoreFile),
		ClientCertFile: p(clientCertFile), ClientKeyFile: p(clientKeyFile), ClientKeystore: p(clientKeystoreFile),
		Truststore: p(truststoreFile)}
}

// parseUsers reads user=password lines.
func parseUsers(b []byte) (map[string]string, error) {
	users := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		user, pass, ok := strings.Cut(line, "=")
		if !ok || user == "" || pass == "" {
			return nil, fmt.Errorf("line %d is not user=password", n)
		}
		users[user] = pass
	}
	for _, u := range Users {
		if users[u] == "" {
			return nil, fmt.Errorf("no password for %s", u)
		}
	}
	return users, sc.Err()
}

// MakeSecurity makes the material in dir unless dir already holds it (a
// restarted cluster keeps its CA, keys and users), and returns it.
func MakeSecurity(dir string) (*SecurityFiles, error) {
	if s, err := LoadSecurity(dir); err == nil {
		return s, nil
	}
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	s := securityPaths(dir)
	if err := s.make(time.Now()); err != nil {
		return nil, fmt.Errorf("kafkatest: making the TLS material and SASL users in %s: %w", dir, err)
	}
	if err := os.WriteFile(filepath.Join(dir, securityDone), nil, 0o600); err != nil {
		return nil, err
	}
	return s, nil
}

// certValidity is how long the certificates are valid (a kept cluster
// directory outlives a test).
const certValidity = 365 * 24 * time.Hour

func (s *SecurityFiles) make(now time.Time) error {
	s.KeystorePassword = randomHex(16)
	s.Users = map[string]string{}
	var users strings.Builder
	for _, u := range Users {
		s.Users[u] = randomHex(16)
		fmt.Fprintf(&users, "%s=%s\n", u, s.Users[u])
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	caTmpl := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: "rlmm test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(certValidity),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return err
	}
	files := map[string][]byte{passwordFile: []byte(s.KeystorePassword + "\n"), usersFile: []byte(users.String())}
	files[caCertFile] = pemCert(caDER)
	if files[caKeyFile], err = pemKey(caKey); err != nil {
		return err
	}
	leaves := []struct {
		cn               string
		usage            []x509.ExtKeyUsage
		cert, key, store string
		ips              []net.IP
		dns              []string
	}{
		{"localhost", []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
			brokerCertFile, brokerKeyFile, brokerKeystoreFile, []net.IP{net.IPv4(127, 0, 0, 1)}, []string{"localhost"}},
		{"rlmm-client", []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
			clientCertFile, clientKeyFile, clientKeystoreFile, nil, nil},
	}
	for _, l := range leaves {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return err
		}
		tmpl := &x509.Certificate{
			SerialNumber: serial(), Subject: pkix.Name{CommonName: l.cn},
			NotBefore: now.Add(-time.Hour), NotAfter: now.Add(certValidity),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: l.usage, IPAddresses: l.ips, DNSNames: l.dns,
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			return err
		}
		cert, err := x509.ParseCertificate(der)
		if err != nil {
			return err
		}
		files[l.cert] = pemCert(der)
		if files[l.key], err = pemKey(key); err != nil {
			return err
		}
		if files[l.store], err = pkcs12.Modern2023.Encode(key, cert, []*x509.Certificate{ca}, s.KeystorePassword); err != nil {
			return err
		}
	}
	if files[truststoreFile], err = jksTruststore(caDER, s.KeystorePassword, now); err != nil {
		return err
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(s.Dir, name), b, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// jksTruststore is a JKS keystore holding the CA as a trusted entry.
func jksTruststore(caDER []byte, password string, now time.Time) ([]byte, error) {
	ks := keystore.New()
	err := ks.SetTrustedCertificateEntry("rlmm-test-ca", keystore.TrustedCertificateEntry{
		CreationTime: now, Certificate: keystore.Certificate{Type: "X509", Content: caDER}})
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := ks.Store(&b, []byte(password)); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func pemCert(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func pemKey(key *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return n.Add(n, big.NewInt(1))
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// TLSConfig is a client's TLS configuration for the cluster's secure
// listener: the cluster's CA as the only root, and the client certificate
// (which SSL and GSSAPI listeners require).
func (s *SecurityFiles) TLSConfig() (*tls.Config, error) {
	caPEM, err := os.ReadFile(s.CAFile)
	if err != nil {
		return nil, fmt.Errorf("kafkatest: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("kafkatest: no certificate in %s", s.CAFile)
	}
	cert, err := tls.LoadX509KeyPair(s.ClientCertFile, s.ClientKeyFile)
	if err != nil {
		return nil, fmt.Errorf("kafkatest: the client certificate: %w", err)
	}
	return &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

// Secrets are the strings no log or output may show: every password and
// the body lines of every private key's PEM.
func (s *SecurityFiles) Secrets() ([]string, error) {
	out := []string{s.KeystorePassword}
	for _, u := range slices.Sorted(maps.Keys(s.Users)) {
		out = append(out, s.Users[u])
	}
	for _, f := range []string{s.CAKeyFile, s.BrokerKeyFile, s.ClientKeyFile} {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("kafkatest: %w", err)
		}
		for line := range strings.SplitSeq(string(b), "\n") {
			if line = strings.TrimSpace(line); len(line) >= 16 && !strings.HasPrefix(line, "-----") {
				out = append(out, line)
			}
		}
	}
	if len(out) < 2 {
		return nil, errors.New("kafkatest: no secrets loaded")
	}
	return out, nil
}

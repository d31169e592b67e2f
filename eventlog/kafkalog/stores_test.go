package kafkalog

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	keystore "github.com/pavlo-v-chernykh/keystore-go/v4"
	"github.com/rlmm-go/rlmm"
	"github.com/twmb/franz-go/pkg/kfake"
	pkcs12 "software.sslmate.com/src/go-pkcs12"
)

// testStores are JKS and PKCS12 key and trust stores made of a testPKI's
// client certificate and CA, with their passwords.
type testStores struct {
	dir                                  string
	jksKey, p12Key, jksTrust, p12Trust   string
	storePass, keyPass, trustPass        string
	jksKeyOwnPass                        string // a JKS key store whose key has its own password (keyPass)
	jksEmpty, p12KeyAsTrust, jksKeyWrong string
}

func readPEM(t *testing.T, file string) []byte {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := pem.Decode(data)
	if b == nil {
		t.Fatalf("%s: no PEM block", file)
	}
	return b.Bytes
}

func newTestStores(t *testing.T, pki testPKI) testStores {
	t.Helper()
	s := testStores{dir: t.TempDir(), storePass: "store-pass", keyPass: "key-pass", trustPass: "trust-pass"}
	caDER := readPEM(t, pki.caFile)
	certDER := readPEM(t, pki.certFile)
	ecKey, err := x509.ParseECPrivateKey(readPEM(t, pki.keyFile))
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(ecKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(certDER)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, data []byte) string {
		path := filepath.Join(s.dir, name)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	jks := func(name string, fill func(ks keystore.KeyStore)) string {
		ks := keystore.New()
		fill(ks)
		var buf bytes.Buffer
		if err := ks.Store(&buf, []byte(s.storePass)); err != nil {
			t.Fatal(err)
		}
		return write(name, buf.Bytes())
	}
	keyEntry := func(key []byte) keystore.PrivateKeyEntry {
		return keystore.PrivateKeyEntry{CreationTime: time.Now(), PrivateKey: key, CertificateChain: []keystore.Certificate{
			{Type: "X.509", Content: certDER}, {Type: "X.509", Content: caDER},
		}}
	}
	s.jksKey = jks("client.jks", func(ks keystore.KeyStore) {
		if err := ks.SetPrivateKeyEntry("client", keyEntry(keyDER), []byte(s.storePass)); err != nil {
			t.Fatal(err)
		}
	})
	s.jksKeyOwnPass = jks("client-keypass.jks", func(ks keystore.KeyStore) {
		if err := ks.SetPrivateKeyEntry("client", keyEntry(keyDER), []byte(s.keyPass)); err != nil {
			t.Fatal(err)
		}
	})
	// A key that is not the certificate's.
	other, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	otherDER, err := x509.MarshalPKCS8PrivateKey(other)
	if err != nil {
		t.Fatal(err)
	}
	s.jksKeyWrong = jks("client-wrongkey.jks", func(ks keystore.KeyStore) {
		if err := ks.SetPrivateKeyEntry("client", keyEntry(otherDER), []byte(s.storePass)); err != nil {
			t.Fatal(err)
		}
	})
	s.jksEmpty = jks("empty.jks", func(keystore.KeyStore) {})
	trust := keystore.New()
	if err := trust.SetTrustedCertificateEntry("ca", keystore.TrustedCertificateEntry{
		CreationTime: time.Now(), Certificate: keystore.Certificate{Type: "X.509", Content: caDER},
	}); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := trust.Store(&buf, []byte(s.trustPass)); err != nil {
		t.Fatal(err)
	}
	s.jksTrust = write("trust.jks", buf.Bytes())
	p12, err := pkcs12.Modern.Encode(ecKey, cert, []*x509.Certificate{ca}, s.storePass)
	if err != nil {
		t.Fatal(err)
	}
	s.p12Key = write("client.p12", p12)
	p12Trust, err := pkcs12.Modern.EncodeTrustStore([]*x509.Certificate{ca}, s.trustPass)
	if err != nil {
		t.Fatal(err)
	}
	s.p12Trust = write("trust.p12", p12Trust)
	p12KeyAsTrust, err := pkcs12.Modern.Encode(ecKey, cert, nil, s.trustPass)
	if err != nil {
		t.Fatal(err)
	}
	s.p12KeyAsTrust = write("key-as-trust.p12", p12KeyAsTrust)
	return s
}

// TestKeyAndTrustStores connects to a broker that requires a client
// certificate, with the certificate and the CA from JKS and PKCS12 stores,
// as ParseProperties reads Kafka's settings.
func TestKeyAndTrustStores(t *testing.T) {
	pki := newTestPKI(t)
	st := newTestStores(t, pki)
	addrs := startCluster(t, kfake.TLS(&tls.Config{
		Certificates: []tls.Certificate{pki.server}, ClientCAs: pki.pool, ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12,
	}))
	tests := []struct {
		name  string
		props map[string]string
	}{
		{"JKS", map[string]string{
			"ssl.keystore.location": st.jksKey, "ssl.keystore.password": st.storePass,
			"ssl.truststore.location": st.jksTrust, "ssl.truststore.password": st.trustPass,
		}},
		{"JKS with ssl.key.password", map[string]string{
			"ssl.keystore.type": "JKS", "ssl.keystore.location": st.jksKeyOwnPass, "ssl.keystore.password": st.storePass,
			"ssl.key.password":    st.keyPass,
			"ssl.truststore.type": "JKS", "ssl.truststore.location": st.jksTrust, "ssl.truststore.password": st.trustPass,
		}},
		{"PKCS12", map[string]string{
			"ssl.keystore.type": "PKCS12", "ssl.keystore.location": st.p12Key, "ssl.keystore.password": st.storePass,
			"ssl.truststore.type": "PKCS12", "ssl.truststore.location": st.p12Trust, "ssl.truststore.password": st.trustPass,
		}},
		{"PKCS12 files typed JKS (Java's keystore.type.compat)", map[string]string{
			"ssl.keystore.location": st.p12Key, "ssl.keystore.password": st.storePass,
			"ssl.truststore.location": st.p12Trust, "ssl.truststore.password": st.trustPass,
		}},
		{"PKCS12 key store, PEM trust store", map[string]string{
			"ssl.keystore.type": "PKCS12", "ssl.keystore.location": st.p12Key, "ssl.keystore.password": st.storePass,
			"ssl.truststore.type": "PEM", "ssl.truststore.location": pki.caFile,
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			props := map[string]string{"bootstrap.servers": strings.Join(addrs, ","), "security.protocol": "SSL"}
			for k, v := range tc.props {
				props[clientPrefix+k] = v
			}
			cfg, err := ParseProperties(props)
			if err != nil {
				t.Fatal(err)
			}
			cfg.Topic, cfg.NumPartitions, cfg.ConnectTimeout = uniqueTopic(t), 1, testTimeout
			roundTrip(t, openLog(t, cfg))
		})
	}
}

// TestStoreErrors: every bad store is an ErrInvalidArgument naming the
// setting and the file, never a panic.
func TestStoreErrors(t *testing.T) {
	pki := newTestPKI(t)
	st := newTestStores(t, pki)
	write := func(name string, data []byte) string {
		path := filepath.Join(st.dir, name)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	prefix := func(file string, n int) string {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		return write("truncated-"+filepath.Base(file), data[:n])
	}
	jceks := write("store.jceks", []byte{0xCE, 0xCE, 0xCE, 0xCE, 0, 0, 0, 2, 0, 0, 0, 0})
	tests := []struct {
		name    string
		cfg     Config
		setting string // the setting the error names
		file    string // the file it names
		say     string // and what it says
	}{
		{"JKS key store, wrong password", Config{TLSKeyStoreLocation: st.jksKey, TLSKeyStorePassword: "nope"}, "ssl.keystore.password", st.jksKey, "wrong password"},
		{"JKS key, wrong key password", Config{TLSKeyStoreLocation: st.jksKeyOwnPass, TLSKeyStorePassword: st.storePass, TLSKeyPassword: "nope"}, "ssl.key.password", st.jksKeyOwnPass, "wrong password"},
		{"JKS key under its own password, none given", Config{TLSKeyStoreLocation: st.jksKeyOwnPass, TLSKeyStorePassword: st.storePass}, "ssl.key.password", st.jksKeyOwnPass, "wrong password"},
		{"JKS key store without a password", Config{TLSKeyStoreLocation: st.jksKey}, "ssl.keystore.password", st.jksKey, "missing"},
		{"PKCS12 key store, wrong password", Config{TLSKeyStoreLocation: st.p12Key, TLSKeyStorePassword: "nope"}, "ssl.keystore.password", st.p12Key, "wrong password"},
		{"PKCS12 key store, another key password", Config{TLSKeyStoreLocation: st.p12Key, TLSKeyStorePassword: st.storePass, TLSKeyPassword: "other"}, "ssl.key.password", st.p12Key, "differs"},
		{"JKS trust store, wrong password", Config{TLSTrustStoreLocation: st.jksTrust, TLSTrustStorePassword: "nope"}, "ssl.truststore.password", st.jksTrust, "wrong password"},
		{"PKCS12 trust store, wrong password", Config{TLSTrustStoreLocation: st.p12Trust, TLSTrustStorePassword: "nope"}, "ssl.truststore.password", st.p12Trust, "wrong password"},
		{"JKS trust store without a certificate", Config{TLSTrustStoreLocation: st.jksEmpty, TLSTrustStorePassword: st.storePass}, "ssl.truststore.location", st.jksEmpty, "no trusted certificate"},
		{"JKS key store as the trust store", Config{TLSTrustStoreLocation: st.jksKey, TLSTrustStorePassword: st.storePass}, "ssl.truststore.location", st.jksKey, "no trusted certificate"},
		{"PKCS12 key store as the trust store", Config{TLSTrustStoreLocation: st.p12KeyAsTrust, TLSTrustStorePassword: st.trustPass}, "ssl.truststore.location", st.p12KeyAsTrust, "not a PKCS12 trust store"},
		{"JKS trust store as the key store", Config{TLSKeyStoreLocation: st.jksTrust, TLSKeyStorePassword: st.trustPass}, "ssl.keystore.location", st.jksTrust, "no private key entry"},
		{"PKCS12 trust store as the key store", Config{TLSKeyStoreLocation: st.p12Trust, TLSKeyStorePassword: st.trustPass}, "ssl.keystore.location", st.p12Trust, "not a PKCS12 key store"},
		{"a key that is not its certificate's", Config{TLSKeyStoreLocation: st.jksKeyWrong, TLSKeyStorePassword: st.storePass}, "ssl.keystore.location", st.jksKeyWrong, "does not match"},
		{"truncated JKS key store", Config{TLSKeyStoreLocation: prefix(st.jksKey, 300), TLSKeyStorePassword: st.storePass}, "ssl.keystore.location", filepath.Join(st.dir, "truncated-client.jks"), "truncated"},
		{"truncated PKCS12 key store", Config{TLSKeyStoreLocation: prefix(st.p12Key, 300), TLSKeyStorePassword: st.storePass}, "ssl.keystore.location", filepath.Join(st.dir, "truncated-client.p12"), "PKCS12"},
		{"truncated JKS trust store", Config{TLSTrustStoreLocation: prefix(st.jksTrust, 100), TLSTrustStorePassword: st.trustPass}, "ssl.truststore.location", filepath.Join(st.dir, "truncated-trust.jks"), "truncated"},
		{"a PEM file as a JKS store", Config{TLSTrustStoreLocation: pki.caFile, TLSTrustStorePassword: "x"}, "ssl.truststore.location", pki.caFile, "neither a JKS nor a PKCS12"},
		{"a JCEKS store", Config{TLSKeyStoreLocation: jceks, TLSKeyStorePassword: "x"}, "ssl.keystore.location", jceks, "JCEKS"},
		{"an empty file", Config{TLSTrustStoreLocation: write("empty", nil), TLSTrustStorePassword: "x"}, "ssl.truststore.location", filepath.Join(st.dir, "empty"), "empty"},
		{"a missing file", Config{TLSKeyStoreLocation: filepath.Join(st.dir, "absent.jks"), TLSKeyStorePassword: "x"}, "ssl.keystore.location", filepath.Join(st.dir, "absent.jks"), "no such file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.BootstrapServers = []string{"127.0.0.1:9"}
			cfg, err := tc.cfg.withDefaults()
			if err == nil {
				_, err = cfg.tlsConfig()
			}
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, rlmm.ErrInvalidArgument) {
				t.Errorf("%v: not an ErrInvalidArgument", err)
			}
			for _, want := range []string{tc.setting, tc.file, tc.say} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("%v: does not say %q", err, want)
				}
			}
			for _, secret := range []string{st.storePass, st.keyPass, st.trustPass} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("%v: quotes a password", err)
				}
			}
		})
	}
}

// TestStorePrefixes decodes every prefix of each kind of store, and the
// whole store with each byte of its first 512 flipped: each is an error
// (or, for a flip the decoder does not check, a store that still loads),
// never a panic.
func TestStorePrefixes(t *testing.T) {
	pki := newTestPKI(t)
	st := newTestStores(t, pki)
	stores := []struct {
		file, pass string
		trust      bool
	}{
		{st.jksKey, st.storePass, false}, {st.p12Key, st.storePass, false},
		{st.jksTrust, st.trustPass, true}, {st.p12Trust, st.trustPass, true},
	}
	dir := t.TempDir()
	for _, s := range stores {
		data, err := os.ReadFile(s.file)
		if err != nil {
			t.Fatal(err)
		}
		load := func(b []byte) error {
			path := filepath.Join(dir, "store")
			if err := os.WriteFile(path, b, 0o600); err != nil {
				t.Fatal(err)
			}
			if s.trust {
				_, err := trustStorePool(path, s.pass)
				return err
			}
			_, err := keyStoreCertificates(path, s.pass, "")
			return err
		}
		if err := load(data); err != nil {
			t.Fatalf("%s: the whole store: %v", s.file, err)
		}
		failures := 0
		for n := 0; n < len(data); n += 1 + n/64 {
			if err := load(data[:n]); err == nil {
				t.Errorf("%s: a prefix of %d of %d bytes loaded", s.file, n, len(data))
			} else if !errors.Is(err, rlmm.ErrInvalidArgument) {
				t.Errorf("%s: prefix %d: %v is not an ErrInvalidArgument", s.file, n, err)
			}
			failures++
		}
		for i := 0; i < min(len(data), 512); i += 3 {
			flipped := bytes.Clone(data)
			flipped[i] ^= 0x5A
			if err := load(flipped); err != nil && !errors.Is(err, rlmm.ErrInvalidArgument) {
				t.Errorf("%s: byte %d flipped: %v is not an ErrInvalidArgument", s.file, i, err)
			}
		}
		t.Logf("%s: %d prefixes refused", filepath.Base(s.file), failures)
	}
}

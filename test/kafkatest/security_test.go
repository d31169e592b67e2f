package kafkatest

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pavlo-v-chernykh/keystore-go/v4"
	"software.sslmate.com/src/go-pkcs12"
)

func TestMakeSecurity(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "security")
	s, err := MakeSecurity(dir)
	if err != nil {
		t.Fatal(err)
	}
	ca := readCert(t, s.CAFile)
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	if !ca.IsCA {
		t.Fatal("the CA certificate is not a CA")
	}
	broker := readCert(t, s.BrokerCertFile)
	if _, err := broker.Verify(x509.VerifyOptions{Roots: roots, DNSName: "127.0.0.1"}); err != nil {
		t.Fatalf("the broker certificate does not verify for 127.0.0.1: %v", err)
	}
	if _, err := broker.Verify(x509.VerifyOptions{Roots: roots, DNSName: "localhost"}); err != nil {
		t.Fatalf("the broker certificate does not verify for localhost: %v", err)
	}
	client := readCert(t, s.ClientCertFile)
	if _, err := client.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Fatalf("the client certificate does not verify for client auth: %v", err)
	}

	// The keystores open with the password and hold key, certificate and CA.
	for _, store := range []struct{ file, cn string }{{s.BrokerKeystore, "localhost"}, {s.ClientKeystore, "rlmm-client"}} {
		b, err := os.ReadFile(store.file)
		if err != nil {
			t.Fatal(err)
		}
		key, cert, cas, err := pkcs12.DecodeChain(b, s.KeystorePassword)
		if err != nil || key == nil || cert.Subject.CommonName != store.cn || len(cas) != 1 || !cas[0].Equal(ca) {
			t.Fatalf("%s: key %v, cert %v, CAs %d, err %v", store.file, key != nil, cert, len(cas), err)
		}
		if _, _, _, err := pkcs12.DecodeChain(b, "wrong"); err == nil {
			t.Fatalf("%s opens with a wrong password", store.file)
		}
	}
	ks := keystore.New()
	f, err := os.Open(s.Truststore)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	if err := ks.Load(f, []byte(s.KeystorePassword)); err != nil {
		t.Fatalf("the JKS truststore: %v", err)
	}
	entry, err := ks.GetTrustedCertificateEntry("rlmm-test-ca")
	if err != nil || !bytes.Equal(entry.Certificate.Content, ca.Raw) {
		t.Fatalf("the JKS truststore's CA entry: %v", err)
	}

	// Every file is the owner's alone.
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		if info.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600", e.Name(), info.Mode().Perm())
		}
	}
	if info, err := os.Stat(dir); err != nil || info.Mode().Perm() != 0o700 {
		t.Errorf("the directory's mode: %v, %v", info.Mode().Perm(), err)
	}

	// A second MakeSecurity (a restarted cluster) keeps the material.
	again, err := MakeSecurity(dir)
	if err != nil {
		t.Fatal(err)
	}
	if again.KeystorePassword != s.KeystorePassword || again.Users["rlmm"] != s.Users["rlmm"] || !readCert(t, again.CAFile).Equal(ca) {
		t.Fatal("MakeSecurity on a made directory made new material")
	}
	for _, u := range Users {
		if len(s.Users[u]) != 32 {
			t.Errorf("user %s has password of %d characters", u, len(s.Users[u]))
		}
	}
}

// TestSecurityTLSHandshake: a TLS server with the broker's certificate that
// requires a client certificate from the CA accepts TLSConfig's client.
func TestSecurityTLSHandshake(t *testing.T) {
	s, err := MakeSecurity(filepath.Join(t.TempDir(), "security"))
	if err != nil {
		t.Fatal(err)
	}
	serverCert, err := tls.LoadX509KeyPair(s.BrokerCertFile, s.BrokerKeyFile)
	if err != nil {
		t.Fatal(err)
	}
	clientCfg, err := s.TLSConfig()
	if err != nil {
		t.Fatal(err)
	}
	l, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{serverCert},
		ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: clientCfg.RootCAs, MinVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	peer := make(chan string, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			peer <- err.Error()
			return
		}
		defer func() { _ = c.Close() }()
		tc := c.(*tls.Conn)
		if err := tc.Handshake(); err != nil {
			peer <- err.Error()
			return
		}
		peer <- tc.ConnectionState().PeerCertificates[0].Subject.CommonName
		_, _ = io.Copy(io.Discard, c)
	}()
	c, err := tls.Dial("tcp", l.Addr().String(), clientCfg)
	if err != nil {
		t.Fatalf("handshake with the broker certificate at 127.0.0.1: %v", err)
	}
	_ = c.Close()
	if got := <-peer; got != "rlmm-client" {
		t.Fatalf("the server saw client %q, want rlmm-client", got)
	}
}

func TestSecuritySecrets(t *testing.T) {
	s, err := MakeSecurity(filepath.Join(t.TempDir(), "security"))
	if err != nil {
		t.Fatal(err)
	}
	secrets, err := s.Secrets()
	if err != nil {
		t.Fatal(err)
	}
	joined := strings.Join(secrets, "\n")
	for _, want := range []string{s.KeystorePassword, s.Users["admin"], s.Users["rlmm-nowrite"]} {
		if !strings.Contains(joined, want) {
			t.Errorf("Secrets lacks a password")
		}
	}
	key, err := os.ReadFile(s.CAKeyFile)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(joined, strings.Split(string(key), "\n")[1]) {
		t.Errorf("Secrets lacks the CA key's first line")
	}
}

func TestLoadSecurityErrors(t *testing.T) {
	if _, err := LoadSecurity(t.TempDir()); err == nil || !strings.Contains(err.Error(), "no complete security material") {
		t.Fatalf("an empty directory: %v", err)
	}
	dir := filepath.Join(t.TempDir(), "security")
	if _, err := MakeSecurity(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, usersFile), []byte("admin=x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadSecurity(dir); err == nil || !strings.Contains(err.Error(), "no password for rlmm") {
		t.Fatalf("users.properties without rlmm: %v", err)
	}
}

func TestParseUsers(t *testing.T) {
	all := "admin=a\nrlmm=b\nrlmm-noread=c\nrlmm-nowrite=d\n"
	tests := []struct {
		name, in, err string
	}{
		{"all", all, ""},
		{"comments and blanks", "# users\n\n" + all, ""},
		{"no equals", all + "junk\n", "line 5 is not user=password"},
		{"empty password", all + "x=\n", "line 5 is not user=password"},
		{"missing user", "admin=a\n", "no password for rlmm"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			users, err := parseUsers([]byte(tt.in))
			if tt.err == "" {
				if err != nil || users["rlmm-nowrite"] != "d" {
					t.Fatalf("parseUsers = %v, %v", users, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("parseUsers error %v, want %q", err, tt.err)
			}
		})
	}
}

func FuzzParseUsers(f *testing.F) {
	f.Add([]byte("admin=a\nrlmm=b\nrlmm-noread=c\nrlmm-nowrite=d\n"))
	f.Add([]byte("=\n=="))
	f.Fuzz(func(t *testing.T, b []byte) {
		users, err := parseUsers(b)
		if err == nil {
			for _, u := range Users {
				if users[u] == "" {
					t.Fatalf("no error, but no password for %s", u)
				}
			}
		}
	})
}

func readCert(t *testing.T, file string) *x509.Certificate {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(b)
	if block == nil {
		t.Fatalf("%s holds no PEM", file)
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

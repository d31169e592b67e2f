package server

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rlmm-go/rlmm/rpc/brokerframe/frametest"
	"github.com/rlmm-go/rlmm/rpc/rlmmpb"
)

// serveTCP serves ep's policy on a fresh loopback listener and returns its
// address.
func serveTCP(t *testing.T, f *fixture, ep Endpoint) string {
	t.Helper()
	l, err := ListenTCP("127.0.0.1:0", false)
	if err != nil {
		t.Fatal(err)
	}
	ep.Listener = l
	if err := f.srv.Serve(ep); err != nil {
		t.Fatal(err)
	}
	return l.Addr().String()
}

// tcpClient is a frame client of addr: over TLS with tc when it is set,
// with token in its hellos.
func tcpClient(t *testing.T, addr string, tc *tls.Config, token []byte) *frametest.Client {
	c := frametest.New(t, frametest.Dialer("tcp", addr, tc), token)
	c.Timeout = testTimeout
	return c
}

// TestTCPToken: the connect mode's TCP endpoint takes a connection whose
// hello carries the token, and refuses one with another, a prefix of it,
// or none, before any call.
func TestTCPToken(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	addr := serveTCP(t, f, Endpoint{Token: []byte("s3cret-token")})
	tests := []struct {
		name  string
		token string
		ok    bool
	}{
		{"right token", "s3cret-token", true},
		{"wrong token", "s3cret-tokem", false},
		{"prefix of the token", "s3cret", false},
		{"no token", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := tcpClient(t, addr, nil, []byte(tc.token))
			info, err := c.ServerInfo(testCtx(t))
			if !tc.ok {
				if err == nil || !strings.Contains(err.Error(), "a valid token is required") {
					t.Fatalf("ServerInfo: %v, want the hello refused for its token", err)
				}
				return
			}
			if err != nil || info.GetBrokerId() != 7 {
				t.Fatalf("ServerInfo: %v %v, want broker 7's server", info, err)
			}
			// Every purpose: a list reaches the manager (which does not
			// host the partition).
			_, err = c.ListSegments(testCtx(t), &rlmmpb.ListSegmentsRequest{TopicIdPartition: tpToProto(f.tpElsewhere(newTP()))})
			if info := errorInfo(t, err); info.Kind != rlmmpb.ErrorKind_NOT_ASSIGNED {
				t.Fatalf("list: %v, want the manager's NOT_ASSIGNED", err)
			}
		})
	}
}

// testPKI is a CA with a server and a client certificate, as PEM files.
type testPKI struct {
	dir                           string
	caFile, serverCert, serverKey string
	clientCert                    tls.Certificate
	otherClient                   tls.Certificate // signed by another CA
	roots                         *x509.CertPool
}

func newTestPKI(t *testing.T) *testPKI {
	t.Helper()
	p := &testPKI{dir: t.TempDir()}
	caCert, caKey := newCert(t, "rlmm test CA", nil, nil, true)
	otherCA, otherKey := newCert(t, "other CA", nil, nil, true)
	srvCert, srvKey := newCert(t, "127.0.0.1", caCert, caKey, false)
	cliCert, cliKey := newCert(t, "broker-1", caCert, caKey, false)
	strCert, strKey := newCert(t, "stranger", otherCA, otherKey, false)
	p.caFile = writePEM(t, p.dir, "ca.pem", "CERTIFICATE", caCert.Raw)
	p.serverCert = writePEM(t, p.dir, "server.pem", "CERTIFICATE", srvCert.Raw)
	p.serverKey = writeKey(t, p.dir, "server-key.pem", srvKey)
	p.clientCert = tls.Certificate{Certificate: [][]byte{cliCert.Raw}, PrivateKey: cliKey}
	p.otherClient = tls.Certificate{Certificate: [][]byte{strCert.Raw}, PrivateKey: strKey}
	p.roots = x509.NewCertPool()
	p.roots.AddCert(caCert)
	return p
}

var serial int64

func newCert(t *testing.T, cn string, parent *x509.Certificate, parentKey *ecdsa.PrivateKey, isCA bool) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial++
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	if isCA {
		tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
		tmpl.KeyUsage |= x509.KeyUsageCertSign
	} else {
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
	}
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return c, key
}

func writePEM(t *testing.T, dir, name, typ string, der []byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func writeKey(t *testing.T, dir, name string, key *ecdsa.PrivateKey) string {
	t.Helper()
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return writePEM(t, dir, name, "EC PRIVATE KEY", der)
}

// TestTCPTLSClientCertificates: the connect mode's TLS endpoint serves the
// frames to a client whose certificate its CA signed, and refuses one
// without a certificate, one of another CA, and plaintext.
func TestTCPTLSClientCertificates(t *testing.T) {
	p := newTestPKI(t)
	f := newFixture(t, fixtureOpts{})
	cfg, err := TLSConfig(p.serverCert, p.serverKey, p.caFile)
	if err != nil {
		t.Fatal(err)
	}
	addr := serveTCP(t, f, Endpoint{TLS: cfg})
	ctx := testCtx(t)
	tests := []struct {
		name  string
		certs []tls.Certificate
		ok    bool
	}{
		{"client certificate of the CA", []tls.Certificate{p.clientCert}, true},
		{"no client certificate", nil, false},
		{"client certificate of another CA", []tls.Certificate{p.otherClient}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := tcpClient(t, addr, &tls.Config{RootCAs: p.roots, Certificates: tc.certs, MinVersion: tls.VersionTLS13}, nil)
			short, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			info, err := c.ServerInfo(short)
			if tc.ok && (err != nil || info.GetBrokerId() != 7) {
				t.Fatalf("refused: %v %v", info, err)
			}
			if !tc.ok && err == nil {
				t.Fatal("served without a certificate of the CA")
			}
		})
	}
	// Plaintext to a TLS endpoint fails too.
	c := tcpClient(t, addr, nil, nil)
	short, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := c.ServerInfo(short); err == nil {
		t.Fatal("a plaintext client was served by the TLS endpoint")
	}
}

func TestTLSConfigRefusals(t *testing.T) {
	p := newTestPKI(t)
	tests := []struct{ name, cert, key, ca string }{
		{"no key", p.serverCert, "", ""},
		{"missing cert file", filepath.Join(p.dir, "nope.pem"), p.serverKey, ""},
		{"CA file not PEM", p.serverCert, p.serverKey, p.serverKey},
		{"missing CA file", p.serverCert, p.serverKey, filepath.Join(p.dir, "nope.pem")},
	}
	for _, tc := range tests {
		if _, err := TLSConfig(tc.cert, tc.key, tc.ca); err == nil {
			t.Errorf("%s: accepted", tc.name)
		}
	}
	dir := t.TempDir()
	for name, content := range map[string]string{"empty": "  \n", "spaces": "a b"} {
		path := filepath.Join(dir, name)
		os.WriteFile(path, []byte(content), 0o600)
		if _, err := ReadToken(path); err == nil {
			t.Errorf("token file %s accepted", name)
		}
	}
}

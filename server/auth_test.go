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
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

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

func tcpClient(t *testing.T, addr string, opts ...grpc.DialOption) rlmmpb.RemoteLogMetadataClient {
	t.Helper()
	conn, err := grpc.NewClient("passthrough:///"+addr, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return rlmmpb.NewRemoteLogMetadataClient(conn)
}

func withToken(ctx context.Context, token string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token)
}

func TestTCPToken(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	addr := serveTCP(t, f, Endpoint{Token: []byte("s3cret-token")})
	c := tcpClient(t, addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	ctx := testCtx(t)
	tests := []struct {
		name string
		ctx  context.Context
		code codes.Code
	}{
		{"right token", withToken(ctx, "s3cret-token"), codes.OK},
		{"wrong token", withToken(ctx, "s3cret-tokem"), codes.Unauthenticated},
		{"prefix of the token", withToken(ctx, "s3cret"), codes.Unauthenticated},
		{"no token", ctx, codes.Unauthenticated},
		{"not a bearer", metadata.AppendToOutgoingContext(ctx, "authorization", "Basic s3cret-token"), codes.Unauthenticated},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.ServerInfo(tc.ctx, &rlmmpb.ServerInfoRequest{})
			if status.Code(err) != tc.code {
				t.Fatalf("unary: %v, want %s", err, tc.code)
			}
			// The stream interceptor checks too.
			stream, err := c.ListSegments(tc.ctx, &rlmmpb.ListSegmentsRequest{TopicIdPartition: tpToProto(newTP())})
			if err == nil {
				_, err = stream.Recv()
			}
			if want := tc.code; want == codes.OK {
				// Let through: the manager answers (the partition is not
				// hosted by the test's server).
				if status.Code(err) != codes.FailedPrecondition {
					t.Fatalf("stream: %v, want the manager's FAILED_PRECONDITION (not hosted)", err)
				}
			} else if status.Code(err) != want {
				t.Fatalf("stream: %v, want %s", err, want)
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
			creds := credentials.NewTLS(&tls.Config{RootCAs: p.roots, Certificates: tc.certs, MinVersion: tls.VersionTLS12})
			c := tcpClient(t, addr, grpc.WithTransportCredentials(creds))
			short, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			_, err := c.ServerInfo(short, &rlmmpb.ServerInfoRequest{})
			if tc.ok && err != nil {
				t.Fatalf("refused: %v", err)
			}
			if !tc.ok && status.Code(err) != codes.Unavailable {
				t.Fatalf("got %v, want the handshake refused (UNAVAILABLE)", err)
			}
		})
	}
	// Plaintext to a TLS endpoint fails too.
	c := tcpClient(t, addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	short, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := c.ServerInfo(short, &rlmmpb.ServerInfoRequest{}); err == nil {
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

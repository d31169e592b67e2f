package kafkalog

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rlmm-go/rlmm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
)

// testPKI is a throwaway CA with a server certificate for 127.0.0.1 and a
// client certificate, written as PEM files.
type testPKI struct {
	caFile, certFile, keyFile string
	server                    tls.Certificate
	pool                      *x509.CertPool
}

func newTestPKI(t *testing.T) testPKI {
	t.Helper()
	dir := t.TempDir()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "rlmm test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	issue := func(serial int64, name string, usage x509.ExtKeyUsage) (certPEM, keyPEM []byte) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
			IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		keyDER, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			t.Fatal(err)
		}
		return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
			pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
	}
	write := func(name string, data []byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	serverCert, serverKey := issue(2, "127.0.0.1", x509.ExtKeyUsageServerAuth)
	clientCert, clientKey := issue(3, "rlmm-client", x509.ExtKeyUsageClientAuth)
	server, err := tls.X509KeyPair(serverCert, serverKey)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	return testPKI{
		caFile:   write("ca.pem", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})),
		certFile: write("client.pem", clientCert),
		keyFile:  write("client-key.pem", clientKey),
		server:   server,
		pool:     pool,
	}
}

// startCluster starts a private kfake cluster with opts, closed when the test ends.
func startCluster(t *testing.T, opts ...kfake.Opt) []string {
	t.Helper()
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c.ListenAddrs()
}

// roundTrip publishes one record through l and reads it back.
func roundTrip(t *testing.T, l *Log) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	off, err := l.Publish(ctx, 0, []byte("secured"))
	if err != nil {
		t.Fatalf("Publish: %v", err)
	}
	sub := subscribeLog(t, l)
	if err := sub.Add(0, off); err != nil {
		t.Fatal(err)
	}
	if got := pollN(t, sub, 1); string(got[0].Value) != "secured" {
		t.Fatalf("read back %q", got[0].Value)
	}
}

func TestSASLMechanisms(t *testing.T) {
	for _, mech := range []string{SASLPlain, SASLScramSHA256, SASLScramSHA512} {
		t.Run(mech, func(t *testing.T) {
			addrs := startCluster(t, kfake.EnableSASL(), kfake.Superuser(mech, "alice", "s3cret"))
			cfg := testConfig(t, addrs, 1)
			cfg.SASLMechanism, cfg.SASLUser, cfg.SASLPassword = mech, "alice", "s3cret"
			roundTrip(t, openLog(t, cfg))

			// A wrong password fails. (Kafka answers SASL_AUTHENTICATION_FAILED,
			// which Open reports at once; kfake hangs up instead, so here it
			// may also end as a timeout whose last error is the hang-up.)
			cfg.SASLPassword = "wrong"
			cfg.ConnectTimeout = 2 * time.Second
			l, err := Open(context.Background(), cfg)
			if err == nil {
				_ = l.Close()
				t.Fatal("Open with a wrong password succeeded")
			}
			t.Logf("wrong password: %v", err)
		})
	}
}

func TestTLS(t *testing.T) {
	pki := newTestPKI(t)
	tests := []struct {
		name       string
		clientAuth tls.ClientAuthType
		cfg        func(c *Config)
		wantErr    bool
	}{
		{"CA file", tls.NoClientCert, func(c *Config) { c.TLSCAFile = pki.caFile }, false},
		{"mutual TLS with cert and key files", tls.RequireAndVerifyClientCert, func(c *Config) {
			c.TLSCAFile, c.TLSCertFile, c.TLSKeyFile = pki.caFile, pki.certFile, pki.keyFile
		}, false},
		{"caller's tls.Config", tls.NoClientCert, func(c *Config) { c.TLS = &tls.Config{RootCAs: pki.pool, MinVersion: tls.VersionTLS12} }, false},
		{"insecure skip verify", tls.NoClientCert, func(c *Config) { c.TLSInsecureSkipVerify = true }, false},
		{"system roots do not trust the test CA", tls.NoClientCert, func(c *Config) { c.TLSEnable = true }, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			addrs := startCluster(t, kfake.TLS(&tls.Config{
				Certificates: []tls.Certificate{pki.server}, ClientCAs: pki.pool, ClientAuth: tc.clientAuth, MinVersion: tls.VersionTLS12,
			}))
			cfg := testConfig(t, addrs, 1)
			tc.cfg(&cfg)
			if !tc.wantErr {
				roundTrip(t, openLog(t, cfg))
				return
			}
			cfg.ConnectTimeout = 30 * time.Second
			l, err := Open(context.Background(), cfg)
			if err == nil {
				_ = l.Close()
				t.Fatal("Open succeeded with a certificate the client must not trust")
			}
			if errors.Is(err, rlmm.ErrTimeout) {
				t.Fatalf("Open: %v; want the certificate error at once, not a timeout", err)
			}
			t.Logf("untrusted certificate: %v", err)
		})
	}
}

func TestIsPermanent(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"sasl authentication failed", fmt.Errorf("auth: %w", kerr.SaslAuthenticationFailed), true},
		{"cluster authorization failed", kerr.ClusterAuthorizationFailed, true},
		{"not leader (retriable)", kerr.NotLeaderForPartition, false},
		{"unknown certificate authority", &tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}, true},
		{"connection refused", &net.OpError{Op: "dial", Err: errors.New("connection refused")}, false},
		{"hang-up", io.EOF, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := isPermanent(tc.err); got != tc.want {
				t.Fatalf("isPermanent(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}

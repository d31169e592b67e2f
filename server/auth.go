package server

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"

	"github.com/rlmm-go/rlmm"
)

// ReadToken reads a bearer token file: its content without surrounding
// white space, which must be non-empty and printable ASCII.
func ReadToken(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: token file: %w", rlmm.ErrInvalidArgument, err)
	}
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return nil, fmt.Errorf("%w: token file %s is empty", rlmm.ErrInvalidArgument, path)
	}
	for _, c := range b {
		if c < 0x21 || c > 0x7e {
			return nil, fmt.Errorf("%w: token file %s: the token must be printable ASCII without spaces", rlmm.ErrInvalidArgument, path)
		}
	}
	return b, nil
}

// TLSConfig is the server side of TLS: the PEM certificate and key, and,
// when clientCA is given, client certificates required and verified against
// that PEM file of CA certificates. TLS 1.2 at least.
func TLSConfig(certFile, keyFile, clientCA string) (*tls.Config, error) {
	if certFile == "" || keyFile == "" {
		return nil, fmt.Errorf("%w: TLS needs both a certificate and a key", rlmm.ErrInvalidArgument)
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("%w: TLS certificate %s / key %s: %w", rlmm.ErrInvalidArgument, certFile, keyFile, err)
	}
	c := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if clientCA != "" {
		pem, err := os.ReadFile(clientCA)
		if err != nil {
			return nil, fmt.Errorf("%w: TLS client CA: %w", rlmm.ErrInvalidArgument, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%w: TLS client CA %s holds no PEM certificate", rlmm.ErrInvalidArgument, clientCA)
		}
		c.ClientCAs = pool
		c.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return c, nil
}

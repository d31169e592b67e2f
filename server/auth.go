package server

import (
	"bytes"
	"context"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/rlmm-go/rlmm"
)

// tokenAuth checks the bearer token of every call of a TCP endpoint.
type tokenAuth struct{ token []byte }

// check accepts a call whose "authorization" metadata is "Bearer <token>",
// comparing in constant time.
func (a tokenAuth) check(ctx context.Context) error {
	md, _ := metadata.FromIncomingContext(ctx)
	for _, v := range md.Get("authorization") {
		got, ok := strings.CutPrefix(v, "Bearer ")
		if ok && subtle.ConstantTimeCompare([]byte(got), a.token) == 1 {
			return nil
		}
	}
	return status.Error(codes.Unauthenticated, "rlmm serve: a valid bearer token is required (metadata authorization: Bearer <token>)")
}

func (a tokenAuth) unary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	if err := a.check(ctx); err != nil {
		return nil, err
	}
	return h(ctx, req)
}

func (a tokenAuth) stream(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	if err := a.check(ss.Context()); err != nil {
		return err
	}
	return h(srv, ss)
}

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

package kafkalog

import (
	"bytes"
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	keystore "github.com/pavlo-v-chernykh/keystore-go/v4"
	"github.com/rlmm-go/rlmm"
	pkcs12 "software.sslmate.com/src/go-pkcs12"
)

// Store types, as Kafka's ssl.keystore.type and ssl.truststore.type spell
// them.
const (
	StoreJKS    = "JKS"
	StorePKCS12 = "PKCS12"
	StorePEM    = "PEM"
)

// maxStoreBytes bounds what is read of a key or trust store: real stores
// are a few kilobytes, and a decoder must not be handed an arbitrary file.
const maxStoreBytes = 4 << 20

// jksMagic and jceksMagic open a Java KeyStore and a JCE KeyStore file.
const (
	jksMagic   = 0xFEEDFEED
	jceksMagic = 0xCECECECE
)

// storeError is the ErrInvalidArgument of a store: it names the setting
// and the file.
func storeError(setting, file, format string, args ...any) error {
	return fmt.Errorf("kafkalog: %w: %s %s: %s", rlmm.ErrInvalidArgument, setting, file, fmt.Sprintf(format, args...))
}

// readStore reads a store file, at most maxStoreBytes of it.
func readStore(setting, file string) ([]byte, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("kafkalog: %w: %s: %w", rlmm.ErrInvalidArgument, setting, err)
	}
	defer func() { _ = f.Close() }()
	data, err := io.ReadAll(io.LimitReader(f, maxStoreBytes+1))
	if err != nil {
		return nil, storeError(setting, file, "reading: %v", err)
	}
	if len(data) > maxStoreBytes {
		return nil, storeError(setting, file, "larger than %d bytes: not a key or trust store", maxStoreBytes)
	}
	if len(data) == 0 {
		return nil, storeError(setting, file, "empty file")
	}
	return data, nil
}

// storeFormat tells JKS from PKCS12 by the file's first bytes, as Java's
// keystore.type.compat does (a JKS-typed store may be a PKCS12 file and
// the other way round): the JKS magic, or a DER SEQUENCE. A JCEKS store
// is refused by name; anything else is reported as not a store of either
// kind.
func storeFormat(setting, file string, data []byte) (string, error) {
	if len(data) >= 4 {
		switch binary.BigEndian.Uint32(data) {
		case jksMagic:
			return StoreJKS, nil
		case jceksMagic:
			return "", storeError(setting, file, "a JCEKS store, which rlmm does not read: convert it to PKCS12 (keytool -importkeystore -deststoretype PKCS12)")
		}
	}
	if len(data) >= 2 && data[0] == 0x30 {
		return StorePKCS12, nil
	}
	return "", storeError(setting, file, "neither a JKS nor a PKCS12 store (a PEM file needs the store type PEM)")
}

// decodeSafely runs a library decoder on bytes read from disk, turning a
// panic of the decoder into an error: a damaged file must never bring the
// process down.
func decodeSafely(setting, file string, decode func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = storeError(setting, file, "damaged store (the decoder failed: %v)", r)
		}
	}()
	return decode()
}

// keyStoreCertificates loads the client certificates of a JKS or PKCS12 key
// store: every private key entry with its certificate chain. Whether the
// store is JKS or PKCS12 is told by its content, not by ssl.keystore.type, as
// in Java. keyPassword is ssl.key.password (empty: the store password).
func keyStoreCertificates(file, storePassword, keyPassword string) ([]tls.Certificate, error) {
	const setting = "ssl.keystore.location"
	data, err := readStore(setting, file)
	if err != nil {
		return nil, err
	}
	format, err := storeFormat(setting, file, data)
	if err != nil {
		return nil, err
	}
	if keyPassword == "" {
		keyPassword = storePassword
	}
	var certs []tls.Certificate
	err = decodeSafely(setting, file, func() error {
		var err error
		if format == StoreJKS {
			certs, err = jksKeys(file, data, storePassword, keyPassword)
		} else {
			certs, err = pkcs12Keys(file, data, storePassword, keyPassword)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if len(certs) == 0 {
		return nil, storeError(setting, file, "%s key store holds no private key entry (a trust store given as ssl.keystore.location?)", format)
	}
	return certs, nil
}

func jksKeys(file string, data []byte, storePassword, keyPassword string) ([]tls.Certificate, error) {
	const setting = "ssl.keystore.location"
	ks := keystore.New(keystore.WithOrderedAliases(), keystore.WithCaseExactAliases())
	if err := loadJKS(ks, "ssl.keystore.password", setting, file, data, storePassword); err != nil {
		return nil, err
	}
	var certs []tls.Certificate
	for _, alias := range ks.Aliases() {
		if !ks.IsPrivateKeyEntry(alias) {
			continue
		}
		entry, err := ks.GetPrivateKeyEntry(alias, []byte(keyPassword))
		if err != nil {
			return nil, storeError("ssl.key.password", file, "cannot decrypt the key of entry %q: wrong password (set ssl.key.password when the key's password differs from ssl.keystore.password): %v", alias, err)
		}
		key, err := x509.ParsePKCS8PrivateKey(entry.PrivateKey)
		if err != nil {
			return nil, storeError(setting, file, "entry %q: the key is not a PKCS#8 private key: %v", alias, err)
		}
		var chain [][]byte
		for _, c := range entry.CertificateChain {
			if c.Type != "X.509" && c.Type != "X509" {
				return nil, storeError(setting, file, "entry %q: a %q certificate, want X.509", alias, c.Type)
			}
			chain = append(chain, c.Content)
		}
		cert, err := pairUp(setting, file, alias, key, chain)
		if err != nil {
			return nil, err
		}
		certs = append(certs, cert)
	}
	return certs, nil
}

// loadJKS loads a JKS store, with a message for the usual failures.
func loadJKS(ks keystore.KeyStore, passwordSetting, setting, file string, data []byte, password string) error {
	if password == "" {
		return storeError(passwordSetting, file, "missing: rlmm checks a JKS store's integrity with its password")
	}
	if err := ks.Load(bytes.NewReader(data), []byte(password)); err != nil {
		switch {
		case strings.Contains(err.Error(), "invalid digest"):
			return storeError(passwordSetting, file, "wrong password for the JKS store (or the file is damaged)")
		case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
			return storeError(setting, file, "truncated JKS store: %v", err)
		}
		return storeError(setting, file, "not a readable JKS store: %v", err)
	}
	return nil
}

func pkcs12Keys(file string, data []byte, storePassword, keyPassword string) ([]tls.Certificate, error) {
	const setting = "ssl.keystore.location"
	if keyPassword != storePassword {
		return nil, storeError("ssl.key.password", file, "differs from ssl.keystore.password: rlmm reads PKCS12 stores whose key is protected by the store password (as keytool writes them)")
	}
	key, leaf, cas, err := pkcs12.DecodeChain(data, storePassword)
	if err != nil {
		if errors.Is(err, pkcs12.ErrIncorrectPassword) || errors.Is(err, pkcs12.ErrDecryption) {
			return nil, storeError("ssl.keystore.password", file, "wrong password for the PKCS12 store")
		}
		return nil, storeError(setting, file, "not a PKCS12 key store with one private key and its certificate: %v", err)
	}
	chain := [][]byte{leaf.Raw}
	for _, c := range cas {
		chain = append(chain, c.Raw)
	}
	cert, err := pairUp(setting, file, "", key, chain)
	if err != nil {
		return nil, err
	}
	return []tls.Certificate{cert}, nil
}

// pairUp makes a TLS certificate of a key and its chain (leaf first), after
// checking that the leaf certifies the key.
func pairUp(setting, file, alias string, key any, chain [][]byte) (tls.Certificate, error) {
	entry := ""
	if alias != "" {
		entry = fmt.Sprintf("entry %q: ", alias)
	}
	if len(chain) == 0 {
		return tls.Certificate{}, storeError(setting, file, "%sa private key without a certificate", entry)
	}
	leaf, err := x509.ParseCertificate(chain[0])
	if err != nil {
		return tls.Certificate{}, storeError(setting, file, "%sunreadable certificate: %v", entry, err)
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return tls.Certificate{}, storeError(setting, file, "%sa %T key cannot sign", entry, key)
	}
	pub, ok := leaf.PublicKey.(interface{ Equal(crypto.PublicKey) bool })
	if !ok || !pub.Equal(signer.Public()) {
		return tls.Certificate{}, storeError(setting, file, "%sthe private key does not match its certificate %q", entry, leaf.Subject.String())
	}
	return tls.Certificate{Certificate: chain, PrivateKey: signer, Leaf: leaf}, nil
}

// trustStorePool loads the trusted certificates of a JKS or PKCS12 trust
// store (its trusted certificate entries, as Java's PKIX trust manager
// uses them).
func trustStorePool(file, password string) (*x509.CertPool, error) {
	const setting = "ssl.truststore.location"
	data, err := readStore(setting, file)
	if err != nil {
		return nil, err
	}
	format, err := storeFormat(setting, file, data)
	if err != nil {
		return nil, err
	}
	var certs []*x509.Certificate
	err = decodeSafely(setting, file, func() error {
		var err error
		if format == StoreJKS {
			certs, err = jksTrusted(file, data, password)
		} else {
			certs, err = pkcs12Trusted(file, data, password)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if len(certs) == 0 {
		return nil, storeError(setting, file, "%s trust store holds no trusted certificate", format)
	}
	pool := x509.NewCertPool()
	for _, c := range certs {
		pool.AddCert(c)
	}
	return pool, nil
}

func jksTrusted(file string, data []byte, password string) ([]*x509.Certificate, error) {
	const setting = "ssl.truststore.location"
	ks := keystore.New(keystore.WithOrderedAliases(), keystore.WithCaseExactAliases())
	if err := loadJKS(ks, "ssl.truststore.password", setting, file, data, password); err != nil {
		return nil, err
	}
	var certs []*x509.Certificate
	for _, alias := range ks.Aliases() {
		if !ks.IsTrustedCertificateEntry(alias) {
			continue
		}
		entry, err := ks.GetTrustedCertificateEntry(alias)
		if err != nil {
			return nil, storeError(setting, file, "entry %q: %v", alias, err)
		}
		c, err := x509.ParseCertificate(entry.Certificate.Content)
		if err != nil {
			return nil, storeError(setting, file, "entry %q: unreadable certificate: %v", alias, err)
		}
		certs = append(certs, c)
	}
	return certs, nil
}

func pkcs12Trusted(file string, data []byte, password string) ([]*x509.Certificate, error) {
	const setting = "ssl.truststore.location"
	certs, err := pkcs12.DecodeTrustStore(data, password)
	if err != nil {
		if errors.Is(err, pkcs12.ErrIncorrectPassword) || errors.Is(err, pkcs12.ErrDecryption) {
			return nil, storeError("ssl.truststore.password", file, "wrong password for the PKCS12 store")
		}
		return nil, storeError(setting, file, "not a PKCS12 trust store of trusted certificates (as keytool -importcert writes): %v", err)
	}
	return certs, nil
}

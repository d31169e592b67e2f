// Package gssapi runs kafkalog against a real Kafka broker over
// SASL_SSL with GSSAPI (Kerberos from an MIT KDC) and JKS and PKCS12 TLS
// stores. It has only tests; scripts/gssapi-test.sh starts the KDC and the
// broker, makes the stores and runs them with -args -gssapi.dir=DIR, the
// directory of those files (make test has a step for it). Without it the
// tests skip, saying why (and fail when CI=true).
package gssapi

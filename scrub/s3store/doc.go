// Package s3store is the S3 store of `rlmm scrub` (a store.Store over an
// S3 bucket or any S3-compatible server).
//
// It uses the AWS SDK for Go v2 (github.com/aws/aws-sdk-go-v2/service/s3):
// the most used and best kept S3 client in Go, which reads the endpoint,
// region and credentials the way every AWS tool does (environment, shared
// config and credentials files, profiles, SSO, instance roles), so scrub
// needs no credential flags of its own. Listing is ListObjectsV2 with its
// paginator: the prefix is first listed with the "/" delimiter, then each
// directory below it (a topic, for Aiven's layout) is listed by its own
// paginator, at most Concurrency at a time; pages are handed to the caller
// one at a time. Deletion is DeleteObjects in batches of 1,000 keys, at most
// Concurrency batches at a time. Every request is bounded by RequestTimeout
// and retried at most three times with a short backoff, so a storage that
// does not answer fails in seconds with the cause named (Check).
//
// Built with -tags rlmm_nos3 (the binary the broker plugin's jar carries,
// scripts/plugin.sh), the package holds no S3 client: New answers
// ErrNotBuilt (wrapping errors.ErrUnsupported) and the AWS SDK is not
// linked, which takes 13 MB off the binary and the 0.7 MB of heap the SDK's
// package initialisation allocates at every start off the sidecar
// (docs/bench/broker.md, its heap against Kafka's RLMM's); Config stays, so the commands' flags are the same.
package s3store

// Package store is the seam between `rlmm scrub` and a remote storage:
// Store lists objects (key, size, modification time) and deletes them. Dir
// is the store of a local directory tree (Kafka's LocalTieredStorage);
// package s3store is the S3 one.
//
// A store never interprets keys (package layout does), and never deletes
// anything it is not given by name. The package uses only the standard
// library.
package store

// Package scrubtest builds the fixtures of the scrub tests: a remote log
// metadata log written with rlmm (package wire, any eventlog.Log) and the
// objects a remote storage manager holds for it, named by a layout exactly
// as that manager writes them (Kafka 4.3.1's LocalTieredStorage, Aiven's
// plugin with its custom metadata), with findings planted on purpose.
//
// It is a test-support package (like eventlogtest): imported by tests only.
package scrubtest

// Package memlog is an in-process eventlog.Log: partitions are slices of
// records in memory, a Publish is "durable" as soon as it returns, and any
// number of subscriptions (for example several simulated brokers sharing one
// log) read them. It is the log of unit tests and of `rlmm simulate`-style
// runs that need no disk.
//
// It uses only the standard library: the whole log is a mutex, per-partition
// slices and a broadcast channel that is closed and replaced on every append,
// which is all a single process needs.
//
// Values are copied on Publish and again on delivery, so neither the
// publisher nor a receiver can change what another party sees.
package memlog

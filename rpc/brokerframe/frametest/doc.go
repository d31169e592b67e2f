// Package frametest is the tests' client of rlmm serve's broker frames
// (rpc/brokerframe): one connection per purpose, as the broker plugin opens
// them, each opened with the broker hello (and the token, when set) on first
// use and again after one fails.
//
// It is an ordinary package, not a _test file, so that the tests of every
// package that serves or starts the frames (server, cmd/rlmm) share one
// client instead of each carrying its own; nothing outside tests imports it.
package frametest

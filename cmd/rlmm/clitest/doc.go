// Package clitest runs the built rlmm command as a user would: it builds
// the binary once (TestMain, `go build` into a temporary directory; or uses
// the binary named by $RLMM_BINARY) and checks simulate, inspect and verify
// end to end: output, JSON reports and exit statuses. It has no non-test
// code; it is a package of its own so that its TestMain does not collide
// with the command's unit tests.
package clitest

package memlog_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that the conformance suite's goroutines (blocked Polls,
// publishers) all end.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

package kafkalog

import (
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"testing"
	"time"
)

// pauseCase is one row of a pause function's table: the pause after try
// number tries.
type pauseCase struct {
	tries int
	want  time.Duration
}

// checkPauses fails t for every row of cases that pause (named name)
// answers differently.
func checkPauses(t *testing.T, name string, pause func(int) time.Duration, cases []pauseCase) {
	t.Helper()
	for _, tc := range cases {
		if got := pause(tc.tries); got != tc.want {
			t.Errorf("%s(%d) = %s, want %s", name, tc.tries, got, tc.want)
		}
	}
}

func TestRetryBackoffStartsAt50msAndStopsAt250ms(t *testing.T) {
	checkPauses(t, "retryBackoff", retryBackoff, []pauseCase{
		{0, 50 * time.Millisecond},
		{1, 50 * time.Millisecond},
		{2, 100 * time.Millisecond},
		{3, 200 * time.Millisecond},
		{4, 250 * time.Millisecond},
		{40, 250 * time.Millisecond},
	})
}

// TestListOffsetsPause: 10 ms for 20 tries (a restarting broker's leaders
// come up any moment), then doubling to the clients' 250 ms.
func TestListOffsetsPause(t *testing.T) {
	checkPauses(t, "listOffsetsPause", listOffsetsPause, []pauseCase{
		{1, 10 * time.Millisecond},
		{20, 10 * time.Millisecond},
		{21, 20 * time.Millisecond},
		{22, 40 * time.Millisecond},
		{24, 160 * time.Millisecond},
		{25, 250 * time.Millisecond},
		{1000, 250 * time.Millisecond},
	})
}

func TestOpenRetriesARefusedConnectionEvery50ms(t *testing.T) {
	refused := fmt.Errorf("unable to dial: %w", &net.OpError{Op: "dial", Net: "tcp",
		Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)})
	other := errors.New("the metadata answer lists no broker")
	for _, tc := range []struct {
		name  string
		tries int
		err   error
		want  time.Duration
	}{
		{"refused, first try", 1, refused, 50 * time.Millisecond},
		{"refused, tenth try", 10, refused, 50 * time.Millisecond},
		{"other error, first try", 1, other, 50 * time.Millisecond},
		{"other error, tenth try", 10, other, 250 * time.Millisecond},
	} {
		if got := openRetryWait(tc.tries, tc.err); got != tc.want {
			t.Errorf("%s: openRetryWait = %s, want %s", tc.name, got, tc.want)
		}
	}
}

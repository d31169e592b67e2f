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

func TestRetryBackoffStartsAt50msAndStopsAt250ms(t *testing.T) {
	for _, tc := range []struct {
		tries int
		want  time.Duration
	}{
		{0, 50 * time.Millisecond},
		{1, 50 * time.Millisecond},
		{2, 100 * time.Millisecond},
		{3, 200 * time.Millisecond},
		{4, 250 * time.Millisecond},
		{40, 250 * time.Millisecond},
	} {
		if got := retryBackoff(tc.tries); got != tc.want {
			t.Errorf("retryBackoff(%d) = %s, want %s", tc.tries, got, tc.want)
		}
	}
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

package kafkalog

import (
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

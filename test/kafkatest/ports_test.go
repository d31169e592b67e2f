package kafkatest

import (
	"net"
	"strconv"
	"strings"
	"testing"
)

// TestFreePorts: n distinct ports, each free to bind; a count out of range
// is refused, naming it.
func TestFreePorts(t *testing.T) {
	ports, err := FreePorts(8)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range ports {
		if p <= 0 || p > 65535 || seen[p] {
			t.Fatalf("FreePorts(8) = %v: want 8 distinct ports", ports)
		}
		seen[p] = true
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			t.Fatalf("port %d of %v is not free: %v", p, ports, err)
		}
		_ = l.Close()
	}
	if len(ports) != 8 {
		t.Fatalf("FreePorts(8) returned %d ports", len(ports))
	}
	for _, n := range []int{0, -1, 101} {
		if _, err := FreePorts(n); err == nil || !strings.Contains(err.Error(), "got "+strconv.Itoa(n)) {
			t.Errorf("FreePorts(%d) = %v, want an error naming %d", n, err, n)
		}
	}
}

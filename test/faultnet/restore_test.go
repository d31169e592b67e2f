package faultnet

import (
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestRestoreOfACutEndsEveryGoroutine restores a cut while bytes keep
// arriving on both sides of its connections, many times, and checks that
// no goroutine of the connections' toxic chains is left after Close. A
// cut's toxic that, removed, closes its stage (toxiproxy's timeout toxic
// does, in Cleanup) leaves the stage before it sending into a channel no
// one reads any more: the next chunk the source gives blocks it for ever,
// and so the connection's source read with it.
func TestRestoreOfACutEndsEveryGoroutine(t *testing.T) {
	before := goleak.IgnoreCurrent()
	ln, served := serveEach(t, chatter)
	n := New(Options{})
	l := Link{Node: 1, Listener: "PLAINTEXT"}
	addr, err := n.Proxy(l.Node, l.Listener, ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	const rounds = 100
	for i := range rounds {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		// The server's first bytes through the proxy: the connection's
		// links run, and Restore knows it.
		giveUp := time.Now().Add(patience)
		_ = c.SetDeadline(giveUp)
		if _, err := io.ReadFull(c, make([]byte, 1)); err != nil {
			t.Fatalf("round %d: the server's first bytes: %v", i, err)
		}
		var talking sync.WaitGroup
		talking.Go(func() { chatter(c) })
		dir := []Direction{Both, ToServer, ToClient}[i%3]
		if err := n.Cut(l, dir); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Millisecond) // bytes reach the cut
		if err := n.Restore(l); err != nil {
			t.Fatal(err)
		}
		talking.Wait() // Restore closed the connection across the cut
		if !time.Now().Before(giveUp) {
			t.Fatalf("round %d: Restore did not close the connection across the cut", i)
		}
	}
	closeLeavingNothing(t, n, ln, served, before)
}

// chatter writes to c and reads from it, both without pause, until either
// fails, then closes c.
func chatter(c net.Conn) {
	var both sync.WaitGroup
	both.Go(func() {
		buf := make([]byte, 32<<10)
		for {
			if _, err := c.Read(buf); err != nil {
				_ = c.Close()
				return
			}
		}
	})
	chunk := make([]byte, 512)
	for {
		if _, err := c.Write(chunk); err != nil {
			break
		}
	}
	_ = c.Close()
	both.Wait()
}

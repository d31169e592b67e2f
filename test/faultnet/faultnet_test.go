package faultnet

import (
	"bufio"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// echoServer echoes every line it reads on 127.0.0.1 and reports each one
// it received on got.
type echoServer struct {
	ln  net.Listener
	got chan string
	wg  sync.WaitGroup
	mu  sync.Mutex
	cs  []net.Conn
}

func startEcho(t *testing.T) *echoServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &echoServer{ln: ln, got: make(chan string, 1024)}
	s.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.cs = append(s.cs, c)
			s.mu.Unlock()
			s.wg.Go(func() {
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					s.got <- line
					if _, err := c.Write([]byte(line)); err != nil {
						return
					}
				}
			})
		}
	})
	t.Cleanup(func() {
		_ = ln.Close()
		s.mu.Lock()
		for _, c := range s.cs {
			_ = c.Close()
		}
		s.mu.Unlock()
		s.wg.Wait()
	})
	return s
}

func (s *echoServer) addr() string { return s.ln.Addr().String() }

// received says whether the server got a line within d.
func (s *echoServer) received(d time.Duration) bool {
	select {
	case <-s.got:
		return true
	case <-time.After(d):
		return false
	}
}

func newNet(t *testing.T) *Net {
	t.Helper()
	n := New(Options{})
	t.Cleanup(func() { _ = n.Close() })
	return n
}

type client struct {
	c net.Conn
	r *bufio.Reader
}

func dial(t *testing.T, addr string) *client {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return &client{c: c, r: bufio.NewReader(c)}
}

// roundTrip sends line and waits at most wait for its echo.
func (c *client) roundTrip(line string, wait time.Duration) (string, error) {
	_ = c.c.SetDeadline(time.Now().Add(wait))
	if _, err := c.c.Write([]byte(line)); err != nil {
		return "", err
	}
	return c.r.ReadString('\n')
}

// A wait long enough for loopback on a loaded machine; the tests use it
// only as the bound of what must happen, never as an upper timing bound of
// what they measure.
const patience = 10 * time.Second

// silence is how long the tests watch for bytes that must not come.
const silence = 500 * time.Millisecond

func TestProxyHasTheHarnessShape(t *testing.T) {
	n := newNet(t)
	var proxy func(node int, listener, upstream string) (string, error) = n.Proxy
	s := startEcho(t)
	addr, err := proxy(1, "PLAINTEXT", s.addr())
	if err != nil {
		t.Fatal(err)
	}
	if addr == s.addr() {
		t.Fatalf("the proxy answered the upstream address %s", addr)
	}
	if got, err := dial(t, addr).roundTrip("hello\n", patience); err != nil || got != "hello\n" {
		t.Fatalf("echo through the proxy: %q, %v", got, err)
	}
}

func TestBadInputIsRefused(t *testing.T) {
	n := newNet(t)
	s := startEcho(t)
	l := Link{1, "PLAINTEXT"}
	if _, err := n.Proxy(l.Node, l.Listener, s.addr()); err != nil {
		t.Fatal(err)
	}
	unknown := Link{2, "PLAINTEXT"}
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"a link proxied twice", func() error { _, err := n.Proxy(1, "PLAINTEXT", s.addr()); return err }()},
		{"an empty upstream", func() error { _, err := n.Proxy(3, "PLAINTEXT", ""); return err }()},
		{"a cut of an unknown link", n.Cut(unknown, Both)},
		{"an unknown direction", n.Cut(l, Direction(7))},
		{"a delay without latency", n.Delay(l, Both, 0, 0)},
		{"a jitter above the latency", n.Delay(l, Both, time.Millisecond, time.Second)},
		{"a loss rate of 1", n.Loss(l, 1)},
		{"a negative loss rate", n.Loss(l, -0.1)},
		{"a partition of a node without links", n.Partition(9)},
		{"a restore of an unknown link", n.Restore(unknown)},
	} {
		if tc.err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Proxy(4, "PLAINTEXT", s.addr()); !errors.Is(err, ErrClosed) {
		t.Errorf("Proxy after Close: %v, want ErrClosed", err)
	}
	if err := n.Cut(l, Both); !errors.Is(err, ErrClosed) {
		t.Errorf("Cut after Close: %v, want ErrClosed", err)
	}
}

// A cut stops the bytes of its direction at once; Restore closes the
// connections that crossed it, and new ones pass.
func TestCutStopsBytesAndRestoreResumes(t *testing.T) {
	for _, tc := range []struct {
		name        string
		dir         Direction
		serverHears bool // the line still reaches the server
	}{
		{"both ways", Both, false},
		{"to the server", ToServer, false},
		{"to the client", ToClient, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := newNet(t)
			s := startEcho(t)
			l := Link{1, "PLAINTEXT"}
			addr, err := n.Proxy(l.Node, l.Listener, s.addr())
			if err != nil {
				t.Fatal(err)
			}
			c := dial(t, addr)
			if _, err := c.roundTrip("before\n", patience); err != nil {
				t.Fatal(err)
			}
			<-s.got
			if err := n.Cut(l, tc.dir); err != nil {
				t.Fatal(err)
			}
			_, err = c.roundTrip("during\n", silence)
			var ne net.Error
			if !errors.As(err, &ne) || !ne.Timeout() {
				t.Fatalf("a round trip across the cut: %v, want a timeout", err)
			}
			if got := s.received(silence); got != tc.serverHears {
				t.Errorf("the server received the line sent across the cut: %v, want %v", got, tc.serverHears)
			}
			// A connection made during the cut is cut too.
			late := dial(t, addr)
			if _, err := late.roundTrip("late\n", silence); err == nil {
				t.Error("a connection made during the cut got its echo")
			}
			if err := n.Restore(l); err != nil {
				t.Fatal(err)
			}
			_ = c.c.SetDeadline(time.Now().Add(patience))
			if _, err := io.ReadAll(c.r); err != nil && !isReset(err) {
				t.Errorf("the connection across the cut after Restore: %v, want it closed", err)
			}
			if got, err := dial(t, addr).roundTrip("after\n", patience); err != nil || got != "after\n" {
				t.Fatalf("a new connection after Restore: %q, %v", got, err)
			}
		})
	}
}

func isReset(err error) bool {
	var ne *net.OpError
	return errors.As(err, &ne) && !ne.Timeout()
}

// A delay is seen in each direction it covers (a lower bound only).
func TestDelayIsSeen(t *testing.T) {
	const latency, jitter = 200 * time.Millisecond, 50 * time.Millisecond
	for _, tc := range []struct {
		name string
		dir  Direction
		min  time.Duration
	}{
		{"both ways", Both, 2 * (latency - jitter)},
		{"to the server", ToServer, latency - jitter},
		{"to the client", ToClient, latency - jitter},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := newNet(t)
			s := startEcho(t)
			l := Link{2, "CONTROLLER"}
			addr, err := n.Proxy(l.Node, l.Listener, s.addr())
			if err != nil {
				t.Fatal(err)
			}
			c := dial(t, addr)
			if err := n.Delay(l, tc.dir, latency, jitter); err != nil {
				t.Fatal(err)
			}
			for i := range 3 {
				start := time.Now()
				got, err := c.roundTrip("ping\n", patience)
				if err != nil || got != "ping\n" {
					t.Fatalf("round trip %d: %q, %v", i, got, err)
				}
				if d := time.Since(start); d < tc.min {
					t.Errorf("round trip %d took %v, want at least %v", i, d, tc.min)
				}
			}
			if err := n.Restore(l); err != nil {
				t.Fatal(err)
			}
			if got, err := c.roundTrip("after\n", patience); err != nil || got != "after\n" {
				t.Fatalf("the same connection after removing the delay: %q, %v", got, err)
			}
		})
	}
}

// Loss delays chunks by retransmission timeouts and loses or reorders
// nothing.
func TestLossDelaysAndLosesNothing(t *testing.T) {
	n := newNet(t)
	s := startEcho(t)
	l := Link{3, "PLAINTEXT"}
	addr, err := n.Proxy(l.Node, l.Listener, s.addr())
	if err != nil {
		t.Fatal(err)
	}
	const rto = 20 * time.Millisecond
	// At rate 0.25 all 2×40 chunks get through unharmed with probability
	// 0.75^80 < 1e-9: the test sees at least one retransmission.
	if err := n.loss(l, 0.25, rto); err != nil {
		t.Fatal(err)
	}
	c := dial(t, addr)
	slowest := time.Duration(0)
	for i := range 40 {
		line := string(rune('a'+i%26)) + "\n"
		start := time.Now()
		got, err := c.roundTrip(line, patience)
		if err != nil || got != line {
			t.Fatalf("round trip %d: %q, %v; want %q", i, got, err, line)
		}
		slowest = max(slowest, time.Since(start))
	}
	if slowest < rto {
		t.Errorf("the slowest round trip took %v, want at least one RTO (%v)", slowest, rto)
	}
}

// Partition cuts every listener of the node and none of the others; Heal
// brings them all back.
func TestPartitionCutsEveryLinkOfTheNode(t *testing.T) {
	n := newNet(t)
	s := startEcho(t)
	addrs := map[Link]string{}
	for node := 1; node <= 2; node++ {
		for _, listener := range []string{"PLAINTEXT", "CONTROLLER"} {
			l := Link{node, listener}
			a, err := n.Proxy(node, listener, s.addr())
			if err != nil {
				t.Fatal(err)
			}
			addrs[l] = a
		}
	}
	if got := len(n.Links()); got != 4 {
		t.Fatalf("%d links, want 4", got)
	}
	if err := n.Partition(1); err != nil {
		t.Fatal(err)
	}
	for l, a := range addrs {
		_, err := dial(t, a).roundTrip("x\n", silence)
		if cut := err != nil; cut != (l.Node == 1) {
			t.Errorf("%s: cut %v (%v), want %v", l, cut, err, l.Node == 1)
		}
	}
	if err := n.Heal(); err != nil {
		t.Fatal(err)
	}
	for l, a := range addrs {
		if got, err := dial(t, a).roundTrip("y\n", patience); err != nil || got != "y\n" {
			t.Errorf("%s after Heal: %q, %v", l, got, err)
		}
	}
}

// The proxy finds a connection's client process from its socket.
func TestPeerPidFindsTheClientProcess(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	pid, err := peerPid(s.RemoteAddr().(*net.TCPAddr), s.LocalAddr().(*net.TCPAddr))
	if err != nil || pid != os.Getpid() {
		t.Fatalf("peerPid: %d, %v; want this process, %d", pid, err, os.Getpid())
	}
}

// With NodeOf, a partition of node 2 also cuts node 2's own connections
// to the other nodes, and leaves its connections to itself and the other
// nodes' connections to each other; CutFrom cuts one client's connections
// to one link only; a hostmate of a partitioned node keeps its links to
// that node and loses those to the others.
func TestFaultsTellTheClientNodesApart(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash (its /dev/tcp is the other node's client) is not installed")
	}
	s := startEcho(t)
	var child atomic.Int64
	n := New(Options{NodeOf: func(pid int) int {
		switch {
		case int64(pid) == child.Load():
			return 2
		case pid == os.Getpid():
			return 1
		}
		return 0
	}})
	t.Cleanup(func() { _ = n.Close() })
	addrs := map[int]string{}
	for node := 1; node <= 3; node++ {
		a, err := n.Proxy(node, "PLAINTEXT", s.addr())
		if err != nil {
			t.Fatal(err)
		}
		addrs[node] = a
	}
	// Node 2's client: bash waits for a line on stdin (its pid is known
	// by then), connects, and prints the echo it gets within silence.
	fromNode2 := func(addr string) bool {
		host, port, _ := net.SplitHostPort(addr)
		cmd := exec.Command("bash", "-c", `read go; exec 3<>/dev/tcp/`+host+`/`+port+`; echo hi >&3; read -t 0.5 line <&3 && echo "$line"`)
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		var out strings.Builder
		cmd.Stdout = &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		child.Store(int64(cmd.Process.Pid))
		_, _ = io.WriteString(stdin, "go\n")
		_ = stdin.Close()
		_ = cmd.Wait()
		return out.String() == "hi\n"
	}
	fromNode1 := func(addr string) bool {
		got, err := dial(t, addr).roundTrip("hi\n", silence)
		return err == nil && got == "hi\n"
	}
	// route is one client's connection to one node, and whether it passes.
	type route struct {
		from   string
		passes func(string) bool
		to     int
		want   bool
	}
	check := func(fault string, routes []route) {
		t.Helper()
		for _, r := range routes {
			if got := r.passes(addrs[r.to]); got != r.want {
				t.Errorf("%s: %s to node %d passes: %v, want %v", fault, r.from, r.to, got, r.want)
			}
		}
	}
	if err := n.Partition(2); err != nil {
		t.Fatal(err)
	}
	check("partition of node 2", []route{
		{"node 1", fromNode1, 1, true},
		{"node 1", fromNode1, 2, false},
		{"node 1", fromNode1, 3, true},
		{"node 2", fromNode2, 1, false},
		{"node 2", fromNode2, 2, true},
		{"node 2", fromNode2, 3, false},
	})
	if err := n.Heal(); err != nil {
		t.Fatal(err)
	}
	for to := 1; to <= 3; to++ {
		if !fromNode2(addrs[to]) {
			t.Errorf("node 2 to node %d after Heal: no echo", to)
		}
	}
	if err := n.CutFrom(Link{3, "PLAINTEXT"}, 2, Both); err != nil {
		t.Fatal(err)
	}
	if fromNode2(addrs[3]) {
		t.Error("node 2 to node 3 passes across CutFrom(node 3, client 2)")
	}
	if !fromNode1(addrs[3]) || !fromNode2(addrs[1]) {
		t.Error("CutFrom(node 3, client 2) cut another client's link or another link")
	}
	if err := n.Heal(); err != nil {
		t.Fatal(err)
	}
	// Node 2's process as a hostmate of node 3 (a sidecar on its host):
	// cut with node 3 from the rest, never from node 3.
	if err := n.Partition(3, 2); err != nil {
		t.Fatal(err)
	}
	check("partition of node 3 with its hostmate", []route{
		{"node 1", fromNode1, 1, true},
		{"node 1", fromNode1, 3, false},
		{"node 3's hostmate", fromNode2, 3, true},
		{"node 3's hostmate", fromNode2, 1, false},
	})
}

// TestCloseEndsHeldTraffic leaves toxiproxy's links with traffic in their
// toxic chains when the destination goes away: a server that sends a lot
// through a delay and a loss and hangs up, a client that hangs up without
// reading, traffic held by a cut. Close must still end every goroutine of
// the links (toxiproxy's own link stops reading its chain at its
// destination's first error, so a chain with chunks in it would block for
// ever without faultnet draining it).
func TestCloseEndsHeldTraffic(t *testing.T) {
	before := goleak.IgnoreCurrent()
	ln, served := serveEach(t, func(c net.Conn) {
		// Much more than the chain holds, then hang up.
		_, _ = c.Write(make([]byte, 4<<20))
		_ = c.Close()
	})
	n, l, addr := proxyDelayThenLoss(t, ln, 50*time.Millisecond, 0.5, 10*time.Millisecond)
	for range 4 {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = c.Write([]byte("hello\n"))
		time.Sleep(100 * time.Millisecond) // the server's bytes enter the chain
		_ = c.Close()                      // gone without reading them
	}
	if err := n.Cut(l, ToServer); err != nil {
		t.Fatal(err)
	}
	held, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	_, _ = held.Write(make([]byte, 1<<20))
	time.Sleep(200 * time.Millisecond)
	closeLeavingNothing(t, n, ln, served, before)
}

// TestCloseLetsGoOfALossWhoseSourceEnded holds a chunk in a loss for what
// would be minutes of retransmissions, behind a delay, and has the chunk's
// source hang up: toxiproxy's removal of the faults then interrupts the
// delay's ended stage in the loss's place, and only the Net's closing
// signal frees the chunk. Close must return all the same.
func TestCloseLetsGoOfALossWhoseSourceEnded(t *testing.T) {
	before := goleak.IgnoreCurrent()
	ln, served := serveEach(t, func(c net.Conn) {
		_, _ = c.Write([]byte("held\n"))
		_ = c.Close()
	})
	// Rate 0.99 and a 1 s RTO: the chunk waits out about a hundred losses.
	n, _, addr := proxyDelayThenLoss(t, ln, time.Millisecond, 0.99, time.Second)
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	time.Sleep(300 * time.Millisecond) // the server's line is in the loss, its end behind it
	closeLeavingNothing(t, n, ln, served, before)
}

// proxyDelayThenLoss proxies node 1's PLAINTEXT listener to ln on a new
// Net, with a delay toward the client and then a loss both ways, and
// returns the Net, the link and the proxy's address.
func proxyDelayThenLoss(t *testing.T, ln net.Listener, delay time.Duration, rate float64, rto time.Duration) (*Net, Link, string) {
	t.Helper()
	n := New(Options{})
	addr, err := n.Proxy(1, "PLAINTEXT", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	l := Link{Node: 1, Listener: "PLAINTEXT"}
	if err := n.Delay(l, ToClient, delay, 0); err != nil {
		t.Fatal(err)
	}
	if err := n.loss(l, rate, rto); err != nil {
		t.Fatal(err)
	}
	return n, l, addr
}

// serveEach listens on 127.0.0.1 and runs handle for each connection it
// accepts, until the listener is closed; the group ends with the handlers.
func serveEach(t *testing.T, handle func(net.Conn)) (net.Listener, *sync.WaitGroup) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := new(sync.WaitGroup)
	served.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			served.Go(func() { handle(c) })
		}
	})
	return ln, served
}

// closeLeavingNothing closes n, failing if that takes over a minute, then
// ln, waits for the test's servers and fails on any goroutine started
// since before that is still running.
func closeLeavingNothing(t *testing.T, n *Net, ln net.Listener, served *sync.WaitGroup, before goleak.Option) {
	t.Helper()
	closed := make(chan error, 1)
	go func() { closed <- n.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatalf("Close: %v", err)
		}
	case <-time.After(time.Minute):
		stacks := make([]byte, 1<<20)
		t.Fatalf("Close did not return within a minute; the goroutines:\n%s", stacks[:runtime.Stack(stacks, true)])
	}
	_ = ln.Close()
	served.Wait()
	if err := goleak.Find(before); err != nil {
		t.Fatalf("goroutines left after Close: %v", err)
	}
}

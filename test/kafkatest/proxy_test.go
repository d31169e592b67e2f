package kafkatest

import (
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// forwarder is a TCP proxy of the test: what Config.Proxy's caller would
// put in front of a listener (the fault tests use toxiproxy). It counts
// the connections it forwarded.
type forwarder struct {
	l        net.Listener
	upstream string
	conns    atomic.Int64
	wg       sync.WaitGroup
	mu       sync.Mutex
	open     []net.Conn
}

func newForwarder(t *testing.T, upstream string) *forwarder {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &forwarder{l: l, upstream: upstream}
	f.wg.Go(f.serve)
	return f
}

func (f *forwarder) serve() {
	for {
		in, err := f.l.Accept()
		if err != nil {
			return
		}
		out, err := net.DialTimeout("tcp", f.upstream, 5*time.Second)
		if err != nil {
			_ = in.Close()
			continue
		}
		f.conns.Add(1)
		f.mu.Lock()
		f.open = append(f.open, in, out)
		f.mu.Unlock()
		f.wg.Go(func() { _, _ = io.Copy(out, in); _ = out.(*net.TCPConn).CloseWrite() })
		f.wg.Go(func() { _, _ = io.Copy(in, out); _ = in.(*net.TCPConn).CloseWrite() })
	}
}

// close stops accepting, closes every forwarded connection and waits for
// the copies to end.
func (f *forwarder) close() {
	_ = f.l.Close()
	f.mu.Lock()
	for _, c := range f.open {
		_ = c.Close()
	}
	f.mu.Unlock()
	f.wg.Wait()
}

// TestProxyInFront: with Config.Proxy, every listener is advertised
// through a proxy: the quorum's voters, the brokers' replication and the
// clients all connect through them, and the cluster works.
func TestProxyInFront(t *testing.T) {
	Require(t)
	var mu sync.Mutex
	proxies := map[string]*forwarder{}
	// Registered before StartT's cleanup, so it runs after the cluster
	// stopped (the brokers' shutdown goes through the proxies).
	t.Cleanup(func() {
		for _, f := range proxies {
			f.close()
		}
	})
	proxy := func(node int, listener, upstream string) (string, error) {
		if listener == "" || node < 1 {
			return "", errors.New("bad listener")
		}
		f := newForwarder(t, upstream)
		mu.Lock()
		proxies[listener+"/"+f.l.Addr().String()] = f
		mu.Unlock()
		return f.l.Addr().String(), nil
	}
	c := StartT(t, Config{Nodes: 3, Heap: "256m", Proxy: proxy}, startTimeout)
	ctx := opCtx(t)
	for _, n := range c.Nodes() {
		for _, name := range []string{ListenerPlaintext, ListenerController} {
			a, _ := n.Address(name)
			f := proxies[name+"/"+a.Advertised]
			if f == nil || f.upstream != a.Bind {
				t.Fatalf("node %d %s: %+v is not advertised through its proxy", n.ID(), name, a)
			}
		}
	}
	brokers, err := kadm.NewClient(client(t, c.Bootstrap())).ListBrokers(ctx)
	if err != nil || len(brokers) != 3 {
		t.Fatalf("brokers through the proxies: %v, %v", brokers.NodeIDs(), err)
	}
	for _, b := range brokers {
		a, _ := c.Node(int(b.NodeID)).Address(ListenerPlaintext)
		if got := net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port))); got != a.Advertised {
			t.Errorf("broker %d's metadata names %s, want its proxy %s", b.NodeID, got, a.Advertised)
		}
	}
	produce(t, ctx, c.Bootstrap(), "proxied", 20, nil)
	consume(t, ctx, c.Bootstrap(), "proxied", 20)
	var quorum int64
	for key, f := range proxies {
		if strings.HasPrefix(key, ListenerController+"/") {
			quorum += f.conns.Load()
		}
	}
	if quorum == 0 {
		t.Fatal("no connection went through the CONTROLLER listeners' proxies")
	}
	t.Logf("%d proxies; %d quorum connections through them; 20 records through the PLAINTEXT ones", len(proxies), quorum)
}

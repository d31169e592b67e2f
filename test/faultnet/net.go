package faultnet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"
)

// ErrClosed is returned by every operation of a closed Net.
var ErrClosed = errors.New("faultnet: closed")

// Link names the traffic into one listener of one node: every connection
// any client makes to the address the proxy advertises for it.
type Link struct {
	Node     int
	Listener string
}

func (l Link) String() string { return fmt.Sprintf("node %d %s", l.Node, l.Listener) }

// Direction says which way of a link a fault applies to.
type Direction int

const (
	// Both ways.
	Both Direction = iota
	// ToServer is the bytes from the clients to the listener.
	ToServer
	// ToClient is the bytes from the listener back to its clients.
	ToClient
)

// streams gives toxiproxy's names of the directions d covers.
func (d Direction) streams() ([]string, error) {
	switch d {
	case Both:
		return []string{"upstream", "downstream"}, nil
	case ToServer:
		return []string{"upstream"}, nil
	case ToClient:
		return []string{"downstream"}, nil
	}
	return nil, fmt.Errorf("faultnet: direction %d is none of Both, ToServer, ToClient", int(d))
}

// Options configure a Net.
type Options struct {
	// NodeOf, when set, says which node the process pid belongs to (0:
	// none, such as the test's own clients). A connection's client process
	// is found from its socket (see peerPid), so the faults can tell apart
	// the clients of one listener: Partition cuts a node's own connections
	// out to the other nodes too. Without it every client is 0.
	NodeOf func(pid int) int
}

// Net is the set of proxies of one test cluster and the faults on them.
// Its methods are safe for concurrent use.
//
// Each link is a front listener (the address advertised) that finds the
// client's node of each connection and hands it to the toxiproxy proxy of
// that (link, client node) pair, made at its first connection with every
// fault that applies to it; the faults are rules over pairs, so a fault
// set before a client's first connection applies to it too.
type Net struct {
	server *toxiproxy.ApiServer
	nodeOf func(pid int) int
	wg     sync.WaitGroup // accept loops and splices

	mu     sync.Mutex
	links  map[Link]*link
	rules  []rule
	nextID int
	closed bool
}

// link is one listener's front, its pairs and the connections through it.
type link struct {
	Link
	upstream string
	front    net.Listener
	pairs    map[int]*pair // by client node
	conns    map[net.Conn]struct{}
}

// pair is the toxiproxy proxy of one client node's connections to a link,
// and whether a cut crossed its open connections.
type pair struct {
	proxy *toxiproxy.Proxy
	cut   bool
}

// New returns a Net without proxies; Proxy adds them.
func New(opts Options) *Net {
	// toxiproxy logs each connection through zerolog; the tests' own logs
	// say what matters.
	return &Net{
		server: toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop()),
		nodeOf: opts.NodeOf,
		links:  map[Link]*link{},
	}
}

// Proxy starts a proxy on 127.0.0.1 (a free port) forwarding to upstream
// and returns its address. It has the shape of kafkatest.Config.Proxy.
// A link already proxied is an error.
func (n *Net) Proxy(node int, listener, upstream string) (string, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return "", ErrClosed
	}
	l := Link{Node: node, Listener: listener}
	if _, ok := n.links[l]; ok {
		return "", fmt.Errorf("faultnet: %s already has a proxy", l)
	}
	if strings.TrimSpace(upstream) == "" {
		return "", fmt.Errorf("faultnet: %s: empty upstream address", l)
	}
	front, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("faultnet: %s: listen: %w", l, err)
	}
	k := &link{Link: l, upstream: upstream, front: front, pairs: map[int]*pair{}, conns: map[net.Conn]struct{}{}}
	n.links[l] = k
	n.wg.Go(func() { n.accept(k) })
	return front.Addr().String(), nil
}

// accept hands each connection to handle until the front closes.
func (n *Net) accept(k *link) {
	for {
		c, err := k.front.Accept()
		if err != nil {
			return
		}
		// Finding the client's process reads /proc: not in the accept loop.
		n.wg.Go(func() { n.handle(k, c) })
	}
}

// handle passes c through the proxy of its client node's pair.
func (n *Net) handle(k *link, c net.Conn) {
	addr, err := n.pairAddr(k, n.clientNode(c))
	if err != nil {
		_ = c.Close()
		return
	}
	up, err := net.Dial("tcp", addr)
	if err != nil {
		_ = c.Close()
		return
	}
	if !n.track(k, c, up) {
		_ = c.Close()
		_ = up.Close()
		return
	}
	n.splice(k, c, up)
}

// clientNode is the node of c's client process (0 when unknown).
func (n *Net) clientNode(c net.Conn) int {
	if n.nodeOf == nil {
		return 0
	}
	client, ok1 := c.RemoteAddr().(*net.TCPAddr)
	server, ok2 := c.LocalAddr().(*net.TCPAddr)
	if !ok1 || !ok2 {
		return 0
	}
	pid, err := peerPid(client, server)
	if err != nil {
		return 0
	}
	return n.nodeOf(pid)
}

// track records a connection pair so Close can end it; false once closed.
func (n *Net) track(k *link, cs ...net.Conn) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return false
	}
	for _, c := range cs {
		k.conns[c] = struct{}{}
	}
	return true
}

// splice copies both ways between c and up; the end of either way ends
// both (a Kafka connection does not half-close).
func (n *Net) splice(k *link, c, up net.Conn) {
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		done <- struct{}{}
	}
	go pipe(up, c)
	go pipe(c, up)
	<-done
	_ = c.Close()
	_ = up.Close()
	<-done
	n.mu.Lock()
	delete(k.conns, c)
	delete(k.conns, up)
	n.mu.Unlock()
}

// pairAddr returns the address of the proxy of client's connections to k,
// starting it with every rule that applies if it is the first.
func (n *Net) pairAddr(k *link, client int) (string, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return "", ErrClosed
	}
	p, ok := k.pairs[client]
	if !ok {
		p = &pair{proxy: toxiproxy.NewProxy(n.server, fmt.Sprintf("%s from %d", k.Link, client), "127.0.0.1:0", k.upstream)}
		if err := p.proxy.Start(); err != nil {
			return "", fmt.Errorf("faultnet: %s: start the proxy of node %d's connections: %w", k.Link, client, err)
		}
		k.pairs[client] = p
		for _, r := range n.rules {
			if r.applies(k.Link, client) {
				if err := r.apply(p); err != nil {
					return "", err
				}
			}
		}
	}
	return listenAddr(p.proxy), nil
}

func listenAddr(p *toxiproxy.Proxy) string {
	p.Lock()
	defer p.Unlock()
	return p.Listen
}

// Links returns the links proxied, by node then listener.
func (n *Net) Links() []Link {
	n.mu.Lock()
	defer n.mu.Unlock()
	ls := make([]Link, 0, len(n.links))
	for l := range n.links {
		ls = append(ls, l)
	}
	slices.SortFunc(ls, func(a, b Link) int {
		if a.Node != b.Node {
			return a.Node - b.Node
		}
		return strings.Compare(a.Listener, b.Listener)
	})
	return ls
}

// Addr returns the address the proxy of l listens on.
func (n *Net) Addr(l Link) (string, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	k, err := n.get(l)
	if err != nil {
		return "", err
	}
	return k.front.Addr().String(), nil
}

// get returns l's link. Caller holds mu.
func (n *Net) get(l Link) (*link, error) {
	if n.closed {
		return nil, ErrClosed
	}
	k, ok := n.links[l]
	if !ok {
		return nil, fmt.Errorf("faultnet: %s has no proxy", l)
	}
	return k, nil
}

// Close stops every proxy, closes every connection through them, and
// waits for its goroutines.
func (n *Net) Close() error {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return nil
	}
	n.closed = true
	for _, k := range n.links {
		_ = k.front.Close()
		for c := range k.conns {
			_ = c.Close()
		}
		for _, p := range k.pairs {
			p.proxy.Toxics.ResetToxics(context.Background())
			p.proxy.Stop()
		}
	}
	n.mu.Unlock()
	n.wg.Wait()
	return nil
}

package faultnet

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/Shopify/toxiproxy/v2/stream"
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
// client's node of each connection, dials the upstream and runs the two
// directions through the toxic chains of the toxiproxy proxy of that (link,
// client node) pair, made at its first connection with every fault that
// applies to it; the faults are rules over pairs, so a fault set before a
// client's first connection applies to it too.
type Net struct {
	server *toxiproxy.ApiServer
	// id names the Net to its loss toxics, and closing, closed by Close,
	// tells them to let go of what they hold (see lossToxic.Net).
	id      uint64
	closing chan struct{}
	nodeOf  func(pid int) int
	// wg counts the accept loops and connection handlers, and each
	// direction of a connection until toxiproxy's link of it has ended.
	wg sync.WaitGroup

	mu       sync.Mutex
	links    map[Link]*link
	rules    []rule
	nextID   int
	nextConn int
	closed   bool
}

// link is one listener's front and its pairs.
type link struct {
	Link
	upstream string
	front    net.Listener
	pairs    map[int]*pair // by client node
}

// pair is the toxiproxy proxy of one client node's connections to a link
// (its toxic chains; it listens nowhere), the ends of the connections
// through it (each direction's destination), and whether a cut crossed
// them.
type pair struct {
	proxy *toxiproxy.Proxy
	ends  map[*end]struct{}
	cut   bool
}

// New returns a Net without proxies; Proxy adds them.
func New(opts Options) *Net {
	// toxiproxy logs each connection through zerolog; the tests' own logs
	// say what matters.
	n := &Net{
		server:  toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop()),
		id:      lastNetID.Add(1),
		closing: make(chan struct{}),
		nodeOf:  opts.NodeOf,
		links:   map[Link]*link{},
	}
	closings.Store(n.id, n.closing)
	return n
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
	k := &link{Link: l, upstream: upstream, front: front, pairs: map[int]*pair{}}
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

// handle dials c's upstream and runs both directions through the toxic
// chains of the pair of c's client node.
func (n *Net) handle(k *link, c net.Conn) {
	p, err := n.pairOf(k, n.clientNode(c))
	if err != nil {
		_ = c.Close()
		return
	}
	up, err := net.Dial("tcp", k.upstream)
	if err != nil {
		_ = c.Close()
		return
	}
	toClient, toServer := n.newEnd(p, c), n.newEnd(p, up)
	id, ok := n.track(p, toClient, toServer)
	if !ok {
		_ = c.Close()
		_ = up.Close()
		return
	}
	name := fmt.Sprintf("conn%d", id)
	p.proxy.Toxics.StartLink(n.server, name+"upstream", c, toServer, stream.Upstream)
	p.proxy.Toxics.StartLink(n.server, name+"downstream", up, toClient, stream.Downstream)
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

// track records the ends of a connection's two directions so Restore and
// Close can end them, and counts the directions in wg; false once closed.
func (n *Net) track(p *pair, toClient, toServer *end) (id int, ok bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return 0, false
	}
	p.ends[toClient] = struct{}{}
	p.ends[toServer] = struct{}{}
	n.nextConn++
	n.wg.Add(2)
	return n.nextConn, true
}

// end is the destination of one direction of a connection, given to
// toxiproxy's link, which closes it when the direction ends. Once a write
// fails (the peer went away, or Restore or Close closed the connection) it
// closes its connection, which ends the other direction's reads, and takes
// every later write without sending it: toxiproxy's link stops reading its
// chain at its destination's first error, leaving every stage behind it
// blocked on a channel send for ever; drained, the chain runs to its end
// once its source is closed. Once told to discard, it takes every write
// without sending it too: Restore and Close let go of what a cut holds
// only to a connection that gets none of it (see cutToxic).
type end struct {
	n       *Net
	p       *pair
	conn    net.Conn
	failed  bool // only the link's writer uses it
	discard atomic.Bool
	once    sync.Once
}

func (n *Net) newEnd(p *pair, c net.Conn) *end { return &end{n: n, p: p, conn: c} }

func (e *end) Write(b []byte) (int, error) {
	if e.failed || e.discard.Load() {
		return len(b), nil
	}
	if _, err := e.conn.Write(b); err != nil {
		e.failed = true
		_ = e.conn.Close()
	}
	return len(b), nil
}

// Close ends the direction: the link has written all its chain gave.
func (e *end) Close() error {
	e.once.Do(func() {
		_ = e.conn.Close()
		e.n.mu.Lock()
		delete(e.p.ends, e)
		e.n.mu.Unlock()
		e.n.wg.Done()
	})
	return nil
}

// pairOf returns the pair of client's connections to k, making it with
// every rule that applies if it is the first.
func (n *Net) pairOf(k *link, client int) (*pair, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return nil, ErrClosed
	}
	p, ok := k.pairs[client]
	if !ok {
		p = &pair{proxy: toxiproxy.NewProxy(n.server, fmt.Sprintf("%s from %d", k.Link, client), "", k.upstream), ends: map[*end]struct{}{}}
		k.pairs[client] = p
		for _, r := range n.rules {
			if r.applies(k.Link, client) {
				if err := r.apply(p); err != nil {
					return nil, err
				}
			}
		}
	}
	return p, nil
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

// Close stops every front, removes every fault (what a fault holds is let
// go at once, and sent nowhere), closes every connection through the
// proxies, and waits for every goroutine: its own and those of
// toxiproxy's links.
func (n *Net) Close() error {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return nil
	}
	n.closed = true
	var pairs []*pair
	var ends []*end
	for _, k := range n.links {
		_ = k.front.Close()
		for _, p := range k.pairs {
			pairs = append(pairs, p)
			for e := range p.ends {
				e.discard.Store(true)
				ends = append(ends, e)
			}
		}
	}
	n.mu.Unlock()
	// A loss lets go of what it holds at once, even in a chain whose
	// source ended before Close (toxiproxy's removal misses it there).
	close(n.closing)
	// The faults leave the chains while their connections are open:
	// toxiproxy takes a stage out of a chain whose source has ended
	// without updating the chain, and the stages after it then let go of
	// what they hold only at their own pace.
	for _, p := range pairs {
		p.proxy.Toxics.ResetToxics(context.Background())
	}
	for _, e := range ends {
		_ = e.conn.Close()
	}
	n.wg.Wait()
	closings.Delete(n.id)
	return nil
}

package faultnet

import (
	"context"
	"errors"
	"fmt"
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

// Net is the set of proxies of one test cluster and the faults on them.
// Its methods are safe for concurrent use.
type Net struct {
	mu     sync.Mutex
	server *toxiproxy.ApiServer
	links  map[Link]*link
	closed bool
}

// link is one proxy and whether a cut crossed its open connections.
type link struct {
	proxy *toxiproxy.Proxy
	cut   bool
}

// New returns a Net without proxies; Proxy adds them.
func New() *Net {
	// toxiproxy logs each connection through zerolog; the tests' own logs
	// say what matters.
	return &Net{
		server: toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop()),
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
	p := toxiproxy.NewProxy(n.server, l.String(), "127.0.0.1:0", upstream)
	if err := p.Start(); err != nil {
		return "", fmt.Errorf("faultnet: %s: start the proxy to %s: %w", l, upstream, err)
	}
	n.links[l] = &link{proxy: p}
	return listenAddr(p), nil
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
	return listenAddr(k.proxy), nil
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

// Close stops every proxy, closing every connection through them.
func (n *Net) Close() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return nil
	}
	n.closed = true
	for _, k := range n.links {
		k.proxy.Toxics.ResetToxics(context.Background())
		k.proxy.Stop()
	}
	return nil
}

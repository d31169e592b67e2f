package faultnet

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// rule is one fault: a toxic on the streams of dir of the pairs of link
// whose client node match accepts.
type rule struct {
	id    int
	link  Link
	match func(client int) bool
	kind  string
	dir   Direction
	attrs any
}

func anyClient(int) bool { return true }

func (r rule) applies(l Link, client int) bool { return r.link == l && r.match(client) }

// toxic is the JSON toxiproxy's ToxicCollection takes.
type toxic struct {
	Name       string  `json:"name"`
	Type       string  `json:"type"`
	Stream     string  `json:"stream"`
	Toxicity   float32 `json:"toxicity"`
	Attributes any     `json:"attributes"`
}

// apply puts r's toxic on p, named after r (each rule its own toxics).
func (r rule) apply(p *pair) error {
	streams, err := r.dir.streams()
	if err != nil {
		return err
	}
	for _, s := range streams {
		b, err := json.Marshal(toxic{Name: fmt.Sprintf("r%d_%s_%s", r.id, r.kind, s), Type: r.kind, Stream: s, Toxicity: 1, Attributes: r.attrs})
		if err != nil {
			return err
		}
		if _, err := p.proxy.Toxics.AddToxicJson(strings.NewReader(string(b))); err != nil {
			return fmt.Errorf("faultnet: %s: add %s to %s: %w", r.link, r.kind, s, err)
		}
	}
	if r.kind == cutToxicName {
		p.cut = true
	}
	return nil
}

// add records a rule and applies it to the pairs there are.
func (n *Net) add(l Link, match func(int) bool, d Direction, kind string, attrs any) error {
	if _, err := d.streams(); err != nil {
		return err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	k, err := n.get(l)
	if err != nil {
		return err
	}
	n.nextID++
	r := rule{id: n.nextID, link: l, match: match, kind: kind, dir: d, attrs: attrs}
	n.rules = append(n.rules, r)
	for client, p := range k.pairs {
		if r.match(client) {
			if err := r.apply(p); err != nil {
				return err
			}
		}
	}
	return nil
}

// Cut drops the bytes of link l in direction d, for every client (see the
// package doc): the connections stay open, nothing crosses, until Restore.
func (n *Net) Cut(l Link, d Direction) error {
	return n.add(l, anyClient, d, cutToxicName, struct{}{})
}

// CutFrom drops the bytes of link l in direction d for the connections of
// client (a node, or any id Options.NodeOf gives, such as one for a
// sidecar apart from its broker) only: a partition between that client
// and the listener, say a sidecar and the metadata topic's leader.
func (n *Net) CutFrom(l Link, client int, d Direction) error {
	return n.add(l, func(c int) bool { return c == client }, d, cutToxicName, struct{}{})
}

// Delay makes every chunk of link l in direction d wait latency ± jitter
// (jitter at most latency).
func (n *Net) Delay(l Link, d Direction, latency, jitter time.Duration) error {
	if latency <= 0 || jitter < 0 || jitter > latency {
		return fmt.Errorf("faultnet: %s: delay %v ± %v: want a latency above 0 and a jitter in [0, latency]", l, latency, jitter)
	}
	return n.add(l, anyClient, d, "latency", map[string]int64{"latency": latency.Milliseconds(), "jitter": jitter.Milliseconds()})
}

// Loss makes link l lose each chunk with probability rate, both ways, as
// TCP sees it: the chunk arrives, in order, after one retransmission
// timeout per loss (see the package doc). rate is in [0, 1).
func (n *Net) Loss(l Link, rate float64) error {
	return n.loss(l, rate, DefaultRTO)
}

// loss is Loss with another RTO (the tests' shorter one).
func (n *Net) loss(l Link, rate float64, rto time.Duration) error {
	if !(rate >= 0 && rate < 1) {
		return fmt.Errorf("faultnet: %s: loss rate %v is not in [0, 1)", l, rate)
	}
	return n.add(l, anyClient, Both, lossToxicName, lossToxic{Rate: rate, RTOMillis: rto.Milliseconds(), Net: n.id})
}

// Partition cuts node off from the other nodes, both ways: every link into
// node from any client but node itself and its hostmates, and, when
// Options.NodeOf tells the clients apart, every link into another node
// from node's processes and its hostmates'. Hostmates are the further
// clients that share node's host (its sidecar): a partition of the host
// cuts them with it and leaves their links to it. Without hostmates it
// models a partition of the broker's process alone (a cut of the
// listeners it uses, not of the host). A node without a link is an error.
func (n *Net) Partition(node int, hostmates ...int) error {
	ls := n.Links()
	if !slices.ContainsFunc(ls, func(l Link) bool { return l.Node == node }) {
		return fmt.Errorf("faultnet: node %d has no link", node)
	}
	onHost := func(client int) bool { return client == node || slices.Contains(hostmates, client) }
	for _, l := range ls {
		match := onHost
		if l.Node == node {
			match = func(client int) bool { return !onHost(client) }
		}
		if err := n.add(l, match, Both, cutToxicName, struct{}{}); err != nil {
			return err
		}
	}
	return nil
}

// Restore removes every fault of link l. If a cut crossed its connections,
// they are all closed, so no stream goes on with bytes missing from its
// middle; what the chains of such a pair hold when the cut leaves them
// is sent nowhere (see cutToxic).
func (n *Net) Restore(l Link) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	k, err := n.get(l)
	if err != nil {
		return err
	}
	n.rules = slices.DeleteFunc(n.rules, func(r rule) bool { return r.link == l })
	for _, p := range k.pairs {
		if p.cut {
			for e := range p.ends {
				e.discard.Store(true)
			}
		}
		p.proxy.Toxics.ResetToxics(context.Background())
		if p.cut {
			for e := range p.ends {
				_ = e.conn.Close()
			}
			p.cut = false
		}
	}
	return nil
}

// Heal restores every link.
func (n *Net) Heal() error {
	for _, l := range n.Links() {
		if err := n.Restore(l); err != nil {
			return err
		}
	}
	return nil
}

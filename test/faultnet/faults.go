package faultnet

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// toxic is the JSON toxiproxy's ToxicCollection takes.
type toxic struct {
	Name       string  `json:"name"`
	Type       string  `json:"type"`
	Stream     string  `json:"stream"`
	Toxicity   float32 `json:"toxicity"`
	Attributes any     `json:"attributes"`
}

// add puts a toxic of kind on every stream of d of link l, named
// kind_stream (one of each kind per stream: adding it again is an error
// naming it).
func (n *Net) add(l Link, d Direction, kind string, attrs any) (*link, error) {
	streams, err := d.streams()
	if err != nil {
		return nil, err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	k, err := n.get(l)
	if err != nil {
		return nil, err
	}
	for _, s := range streams {
		b, err := json.Marshal(toxic{Name: kind + "_" + s, Type: kind, Stream: s, Toxicity: 1, Attributes: attrs})
		if err != nil {
			return nil, err
		}
		if _, err := k.proxy.Toxics.AddToxicJson(strings.NewReader(string(b))); err != nil {
			return nil, fmt.Errorf("faultnet: %s: add %s to %s: %w", l, kind, s, err)
		}
	}
	return k, nil
}

// Cut drops the bytes of link l in direction d (see the package doc):
// the connections stay open, nothing crosses, until Restore.
func (n *Net) Cut(l Link, d Direction) error {
	k, err := n.add(l, d, "timeout", map[string]int64{"timeout": 0})
	if err != nil {
		return err
	}
	n.mu.Lock()
	k.cut = true
	n.mu.Unlock()
	return nil
}

// Delay makes every chunk of link l in direction d wait latency ± jitter
// (jitter at most latency).
func (n *Net) Delay(l Link, d Direction, latency, jitter time.Duration) error {
	if latency <= 0 || jitter < 0 || jitter > latency {
		return fmt.Errorf("faultnet: %s: delay %v ± %v: want a latency above 0 and a jitter in [0, latency]", l, latency, jitter)
	}
	_, err := n.add(l, d, "latency", map[string]int64{"latency": latency.Milliseconds(), "jitter": jitter.Milliseconds()})
	return err
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
	_, err := n.add(l, Both, lossToxicName, lossToxic{Rate: rate, RTOMillis: rto.Milliseconds()})
	return err
}

// Partition cuts every link into node, both ways (see the package doc for
// what it leaves up). A node without a link is an error.
func (n *Net) Partition(node int) error {
	var mine []Link
	for _, l := range n.Links() {
		if l.Node == node {
			mine = append(mine, l)
		}
	}
	if len(mine) == 0 {
		return fmt.Errorf("faultnet: node %d has no link", node)
	}
	for _, l := range mine {
		if err := n.Cut(l, Both); err != nil {
			return err
		}
	}
	return nil
}

// Restore removes every fault of link l. If a cut crossed its connections,
// they are all closed (the proxy stops and starts again on its address),
// so no stream goes on with bytes missing from its middle.
func (n *Net) Restore(l Link) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	k, err := n.get(l)
	if err != nil {
		return err
	}
	k.proxy.Toxics.ResetToxics(context.Background())
	if !k.cut {
		return nil
	}
	k.proxy.Stop()
	if err := k.proxy.Start(); err != nil {
		return fmt.Errorf("faultnet: %s: start the proxy again on %s: %w", l, listenAddr(k.proxy), err)
	}
	k.cut = false
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

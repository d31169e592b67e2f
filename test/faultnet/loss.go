package faultnet

import (
	"math/rand/v2"
	"time"

	"github.com/Shopify/toxiproxy/v2/toxics"
)

// DefaultRTO is the retransmission timeout a loss costs: Linux's minimum
// RTO, what a loopback or LAN connection waits for a lost segment.
const DefaultRTO = 200 * time.Millisecond

// maxRTO is where the doubling stops, as Linux's TCP_RTO_MAX does.
const maxRTO = 120 * time.Second

const lossToxicName = "rlmm_tcp_loss"

func init() {
	toxics.Register(lossToxicName, new(lossToxic))
}

// lossToxic delays each chunk by the retransmissions its losses cost: with
// probability Rate a chunk is lost and waits RTO, lost again waits 2·RTO
// more, and so on (up to maxRTO each); the chunks behind it wait too
// (in-order delivery).
type lossToxic struct {
	Rate      float64 `json:"rate"`
	RTOMillis int64   `json:"rto_ms"`
}

// GetBufferSize lets the chunks behind a lost one queue, as the kernel's
// receive buffer does.
func (t *lossToxic) GetBufferSize() int { return 1024 }

// delay is the time a chunk waits for its retransmissions.
func (t *lossToxic) delay() time.Duration {
	var d time.Duration
	rto := time.Duration(t.RTOMillis) * time.Millisecond
	for rand.Float64() < t.Rate { // #nosec G404 -- fault injection, not security
		d += rto
		rto = min(2*rto, maxRTO)
	}
	return d
}

// Pipe forwards every chunk after its delay; interrupted (the toxic
// removed), it forwards the chunk at once, losing nothing.
func (t *lossToxic) Pipe(stub *toxics.ToxicStub) {
	for {
		select {
		case <-stub.Interrupt:
			return
		case c := <-stub.Input:
			if c == nil {
				stub.Close()
				return
			}
			if d := t.delay(); d > 0 {
				timer := time.NewTimer(d)
				select {
				case <-timer.C:
				case <-stub.Interrupt:
					timer.Stop()
					stub.Output <- c
					return
				}
			}
			stub.Output <- c
		}
	}
}

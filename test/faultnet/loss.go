package faultnet

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/Shopify/toxiproxy/v2/toxics"
)

// DefaultRTO is the retransmission timeout a loss costs: Linux's minimum
// RTO, what a loopback or LAN connection waits for a lost segment.
const DefaultRTO = 200 * time.Millisecond

// maxRTO is where the doubling stops, as Linux's TCP_RTO_MAX does.
const maxRTO = 120 * time.Second

const lossToxicName = "rlmm_tcp_loss"

// closings holds each open Net's closing channel by the Net's id: toxiproxy
// makes a toxic from its JSON, so a loss toxic finds its Net's channel
// here by the id in its attributes.
var (
	closings  sync.Map // uint64 → chan struct{}
	lastNetID atomic.Uint64
)

// closingOf is the closing channel of the Net with id, or nil (never
// ready) when that Net is gone.
func closingOf(id uint64) <-chan struct{} {
	if ch, ok := closings.Load(id); ok {
		return ch.(chan struct{})
	}
	return nil
}

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
	// Net is the id of the Net whose Close lets go of what the toxic
	// holds. Close cannot count on toxiproxy's interrupt: once a stage
	// before this one has ended with its source, toxiproxy's RemoveToxic
	// interrupts that ended stage in this one's place, and a chunk waiting
	// out a run of losses would hold Close for minutes.
	Net uint64 `json:"net"`
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
// removed), it forwards the chunk at once, losing nothing; once its Net
// is closing, it forwards every chunk at once.
func (t *lossToxic) Pipe(stub *toxics.ToxicStub) {
	closing := closingOf(t.Net)
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
				case <-closing:
					timer.Stop()
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

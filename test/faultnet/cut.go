package faultnet

import "github.com/Shopify/toxiproxy/v2/toxics"

const cutToxicName = "rlmm_cut"

func init() {
	toxics.Register(cutToxicName, new(cutToxic))
}

// cutToxic drops every chunk until its source ends or it is removed: what
// toxiproxy's timeout toxic does with no timeout, without the timeout
// toxic's Cleanup. That Cleanup closes the toxic's stage when it is
// removed, and toxiproxy then leaves the stage before it sending into the
// closed stage's input, which no one reads any more: the next chunk the
// connection's source gives blocks that stage, and the source's reader
// behind it, for ever, even once the connection is closed. Removed
// without a Cleanup, the stage is taken out of the chain as any other,
// and what the stage before it was sending is passed on: Restore and
// Close have a cut connection's ends discard before they remove its cut,
// and close the connection after, so none of that reaches the peer and
// no stream goes on with bytes missing from its middle.
type cutToxic struct{}

// Pipe drops every chunk; the end of its input ends it.
func (*cutToxic) Pipe(stub *toxics.ToxicStub) {
	for {
		select {
		case <-stub.Interrupt:
			return
		case c := <-stub.Input:
			if c == nil {
				stub.Close()
				return
			}
		}
	}
}

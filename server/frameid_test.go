package server

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/rlmm-go/rlmm/rpc/rlmmpb"
)

// FuzzFrameID: frameID reads any bytes without panicking, and reads the id
// of a request whose id (encoded first, as proto.Marshal writes it) is
// followed by any bytes, such as some that do not decode.
func FuzzFrameID(f *testing.F) {
	f.Add(uint64(5), uint64(100), []byte{0xff})
	f.Add(uint64(1<<40), uint64(0), []byte{0x10, 0x80})
	f.Add(uint64(0), uint64(7), []byte{})
	f.Fuzz(func(t *testing.T, id, timeout uint64, tail []byte) {
		frameID(tail)
		b, err := proto.Marshal(&rlmmpb.BrokerRequest{Id: id, TimeoutMs: timeout})
		if err != nil {
			t.Fatal(err)
		}
		if id == 0 {
			return // no field 1 encoded: the tail's own would be read
		}
		if got := frameID(append(b, tail...)); got != id {
			t.Fatalf("frameID %d, want the request's id %d", got, id)
		}
	})
}

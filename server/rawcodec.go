package server

import (
	"google.golang.org/grpc/encoding"
	_ "google.golang.org/grpc/encoding/proto" // registers the proto codec wrapped below
	"google.golang.org/grpc/mem"
)

// rawMessage receives a message's bytes undecoded (serverCodec): the lookup
// stream decodes each request itself, so that one that does not decode is
// answered alone instead of ending the stream.
type rawMessage []byte

// serverCodec is grpc's proto codec, except that a *rawMessage receives the
// bytes as they came. Every other message is encoded and decoded by the
// proto codec unchanged.
type serverCodec struct{ proto encoding.CodecV2 }

func newServerCodec() serverCodec { return serverCodec{proto: encoding.GetCodecV2("proto")} }

func (c serverCodec) Marshal(v any) (mem.BufferSlice, error) { return c.proto.Marshal(v) }

func (c serverCodec) Unmarshal(data mem.BufferSlice, v any) error {
	if r, ok := v.(*rawMessage); ok {
		*r = data.Materialize()
		return nil
	}
	return c.proto.Unmarshal(data, v)
}

func (c serverCodec) Name() string { return c.proto.Name() }

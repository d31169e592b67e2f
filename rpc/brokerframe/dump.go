package brokerframe

import (
	"errors"
	"fmt"
	"io"

	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"

	"github.com/rlmm-go/rlmm/rpc/rlmmpb"
)

// Side is which end of a connection wrote a byte stream.
type Side int

// The two sides.
const (
	Client Side = iota
	Server
)

// String names s.
func (s Side) String() string {
	if s == Server {
		return "server"
	}
	return "client"
}

// Dump prints every frame of one side's bytes of a connection to w, one
// line each: the hello or answer first, then requests (Client) or replies
// (Server; on a watch connection, readiness pushes). The purpose of a
// server's stream is not in it: a reply that does not decode as a
// BrokerReply is printed as a ReadinessUpdate when it decodes as one. A
// frame that does not decode is printed as its length and why, and the
// dump goes on; a stream cut inside a frame, or a frame over MaxReply, ends
// it with an error.
func Dump(w io.Writer, r io.Reader, side Side) error {
	var buf []byte
	for n := 0; ; n++ {
		body, err := ReadFrame(r, buf, MaxReply)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("frame %d of the %s: %w", n, side, err)
		}
		buf = body[:0]
		if _, err := fmt.Fprintf(w, "%s %d: %s\n", side, n, describe(body, side, n == 0)); err != nil {
			return err
		}
	}
}

// describe is one frame's line.
func describe(body []byte, side Side, first bool) string {
	text := func(m proto.Message) string { return "{" + prototext.MarshalOptions{}.Format(m) + "}" }
	if first && side == Client {
		h, v, err := ParseHello(body, peekVersion(body))
		if err != nil {
			return fmt.Sprintf("%d bytes, not a hello: %v", len(body), err)
		}
		h.Token = nil // never printed
		return fmt.Sprintf("hello version %d %s", v, text(h))
	}
	if first {
		info, err := ParseAnswer(body, peekVersion(body))
		if err != nil {
			return fmt.Sprintf("answer: %v", err)
		}
		return fmt.Sprintf("answer version %d accepted %s", peekVersion(body), text(info))
	}
	if side == Client {
		var req rlmmpb.BrokerRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			return fmt.Sprintf("%d bytes, not a request: %v", len(body), err)
		}
		return "request " + text(&req)
	}
	var reply rlmmpb.BrokerReply
	if err := proto.Unmarshal(body, &reply); err == nil && reply.GetResult() != nil {
		return "reply " + text(&reply)
	}
	var push rlmmpb.ReadinessUpdate
	if err := proto.Unmarshal(body, &push); err != nil {
		return fmt.Sprintf("%d bytes, not a reply or a readiness push: %v", len(body), err)
	}
	return "readiness " + text(&push)
}

// peekVersion is the version byte after the magic, or 0.
func peekVersion(body []byte) byte {
	if len(body) > len(Magic) {
		return body[len(Magic)]
	}
	return 0
}

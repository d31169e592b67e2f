package lookupframe

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/rlmm-go/rlmm"
)

// Kind is what a connection carries, named by the magic its hello and the
// server's answer open with.
type Kind uint8

// The kinds of connection.
const (
	// Lookups: SegmentForOffsetStreamRequest frames, each answered by a
	// SegmentForOffsetStreamReply.
	Lookups Kind = iota
	// Mutations: MutationFrameRequest frames, each answered by a
	// MutationFrameReply once the mutation is applied or failed.
	Mutations
)

// The magics of the two kinds: the first bytes of the hello and of the
// answer to it.
const (
	MagicLookups   = "RLMMLOOKUP"
	MagicMutations = "RLMMMUTATE"
)

// Version is the version of this format a hello states; a server refuses a
// client of another (naming both).
const Version = 1

const (
	accepted = 0
	refused  = 1
)

// Magic is the magic of k's hello and answer.
func (k Kind) Magic() string {
	if k == Mutations {
		return MagicMutations
	}
	return MagicLookups
}

// String names k in errors and logs.
func (k Kind) String() string {
	if k == Mutations {
		return "mutation"
	}
	return "lookup"
}

// kindOf finds the kind whose magic opens body, and the bytes after it.
func kindOf(body []byte) (Kind, []byte, bool) {
	for _, k := range []Kind{Lookups, Mutations} {
		if rest, ok := bytes.CutPrefix(body, []byte(k.Magic())); ok {
			return k, rest, true
		}
	}
	return 0, nil, false
}

// AppendHello appends the client's hello body (not framed) for a
// connection of kind k to dst.
func AppendHello(dst []byte, k Kind, token []byte) []byte {
	dst = append(dst, k.Magic()...)
	dst = append(dst, Version)
	return append(dst, token...)
}

// ParseHello reads a client's hello body: the kind of connection it opens
// and its token (which aliases body). A body that is not a hello, or a
// hello of another version, is an error wrapping rlmm.ErrInvalidArgument;
// the kind is still the one its magic names (Lookups when none), so the
// refusal is answered in it.
func ParseHello(body []byte) (Kind, []byte, error) {
	k, rest, ok := kindOf(body)
	if !ok || len(rest) < 1 {
		return 0, nil, fmt.Errorf("%w: the first frame of %d bytes is not a lookup or mutation hello (it starts with %q)",
			rlmm.ErrInvalidArgument, len(body), body[:min(len(body), len(MagicLookups)+1)])
	}
	if rest[0] != Version {
		return k, nil, fmt.Errorf("%w: %s hello of version %d; this server speaks version %d",
			rlmm.ErrInvalidArgument, k, rest[0], Version)
	}
	return k, rest[1:], nil
}

// AppendAccept appends the server's answer to an accepted hello of kind k,
// carrying the server's pid.
func AppendAccept(dst []byte, k Kind, pid int64) []byte {
	dst = append(dst, k.Magic()...)
	dst = append(dst, Version, accepted)
	return binary.BigEndian.AppendUint64(dst, uint64(pid))
}

// AppendRefuse appends the server's answer to a refused hello of kind k,
// with why. A hello whose kind the server could not read is refused as a
// lookup hello (the older clients' kind).
func AppendRefuse(dst []byte, k Kind, why string) []byte {
	dst = append(dst, k.Magic()...)
	dst = append(dst, Version, refused)
	return append(dst, why...)
}

// ParseAnswer reads the server's answer to a hello of kind k: the server's
// pid when it accepted; an error wrapping rlmm.ErrInvalidArgument with the
// server's reason when it refused, or when the body is not an answer of
// that kind.
func ParseAnswer(k Kind, body []byte) (pid int64, err error) {
	rest, ok := bytes.CutPrefix(body, []byte(k.Magic()))
	if !ok || len(rest) < 2 {
		return 0, fmt.Errorf("%w: the answer to the %s hello (%d bytes) is not one", rlmm.ErrInvalidArgument, k, len(body))
	}
	if rest[0] != Version {
		return 0, fmt.Errorf("%w: the server answered the %s hello in version %d, not %d", rlmm.ErrInvalidArgument, k, rest[0], Version)
	}
	switch rest[1] {
	case accepted:
		if len(rest) != 2+8 {
			return 0, fmt.Errorf("%w: the %s hello's acceptance is %d bytes, not %d", rlmm.ErrInvalidArgument, k, len(body), len(k.Magic())+10)
		}
		return int64(binary.BigEndian.Uint64(rest[2:])), nil
	case refused:
		return 0, fmt.Errorf("%w: the server refused the %s hello: %s", rlmm.ErrInvalidArgument, k, rest[2:])
	default:
		return 0, fmt.Errorf("%w: the answer to the %s hello has status %d", rlmm.ErrInvalidArgument, k, rest[1])
	}
}

package lookupframe

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/rlmm-go/rlmm"
)

// Magic opens both hello frames.
const Magic = "RLMMLOOKUP"

// Version is the version of this format a hello states; a server refuses a
// client of another (naming both).
const Version = 1

const (
	accepted = 0
	refused  = 1
)

// AppendHello appends the client's hello body (not framed) to dst.
func AppendHello(dst, token []byte) []byte {
	dst = append(dst, Magic...)
	dst = append(dst, Version)
	return append(dst, token...)
}

// ParseHello reads a client's hello body: its version and token (which
// alias body). A body that is not a hello, or a hello of another version,
// is an error wrapping rlmm.ErrInvalidArgument.
func ParseHello(body []byte) (token []byte, err error) {
	rest, ok := bytes.CutPrefix(body, []byte(Magic))
	if !ok || len(rest) < 1 {
		return nil, fmt.Errorf("%w: the first frame of %d bytes is not a lookup hello (it starts with %q)",
			rlmm.ErrInvalidArgument, len(body), body[:min(len(body), len(Magic)+1)])
	}
	if rest[0] != Version {
		return nil, fmt.Errorf("%w: lookup hello of version %d; this server speaks version %d",
			rlmm.ErrInvalidArgument, rest[0], Version)
	}
	return rest[1:], nil
}

// AppendAccept appends the server's answer to an accepted hello, carrying
// the server's pid.
func AppendAccept(dst []byte, pid int64) []byte {
	dst = append(dst, Magic...)
	dst = append(dst, Version, accepted)
	return binary.BigEndian.AppendUint64(dst, uint64(pid))
}

// AppendRefuse appends the server's answer to a refused hello, with why.
func AppendRefuse(dst []byte, why string) []byte {
	dst = append(dst, Magic...)
	dst = append(dst, Version, refused)
	return append(dst, why...)
}

// ParseAnswer reads the server's answer to a hello: the server's pid when
// it accepted; an error wrapping rlmm.ErrInvalidArgument with the server's
// reason when it refused, or when the body is not an answer.
func ParseAnswer(body []byte) (pid int64, err error) {
	rest, ok := bytes.CutPrefix(body, []byte(Magic))
	if !ok || len(rest) < 2 {
		return 0, fmt.Errorf("%w: the answer to the lookup hello (%d bytes) is not one", rlmm.ErrInvalidArgument, len(body))
	}
	if rest[0] != Version {
		return 0, fmt.Errorf("%w: the server answered the lookup hello in version %d, not %d", rlmm.ErrInvalidArgument, rest[0], Version)
	}
	switch rest[1] {
	case accepted:
		if len(rest) != 2+8 {
			return 0, fmt.Errorf("%w: the lookup hello's acceptance is %d bytes, not %d", rlmm.ErrInvalidArgument, len(body), len(Magic)+10)
		}
		return int64(binary.BigEndian.Uint64(rest[2:])), nil
	case refused:
		return 0, fmt.Errorf("%w: the server refused the lookup hello: %s", rlmm.ErrInvalidArgument, rest[2:])
	default:
		return 0, fmt.Errorf("%w: the answer to the lookup hello has status %d", rlmm.ErrInvalidArgument, rest[1])
	}
}

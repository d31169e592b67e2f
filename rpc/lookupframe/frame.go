package lookupframe

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/rlmm-go/rlmm"
)

// HeaderSize is the size of a frame's length prefix.
const HeaderSize = 4

// MaxRequest bounds a request body the server reads: a lookup request is a
// topic name (at most 249 bytes in Kafka), its id and three integers, and a
// hello a token; 64 KiB leaves room for any of them many times over.
const MaxRequest = 64 << 10

// MaxMutation bounds a mutation request body the server reads: a segment
// with its leader epochs and custom metadata, as large as the gRPC server's
// own bound on a received message (4 MiB), which the unary mutations have.
const MaxMutation = 4 << 20

// MaxReply bounds a reply body the client reads: a segment with its custom
// metadata and leader epochs, as large as the gRPC channel's own bound on a
// message (64 MiB).
const MaxReply = 64 << 20

// ReadFrame reads one frame from r into buf (grown when too small) and
// returns its body, which aliases buf. A clean end of r before a frame is
// io.EOF; an end inside one is io.ErrUnexpectedEOF. A body longer than max
// is not read: the error wraps rlmm.ErrInvalidArgument and names both
// sizes (the stream cannot be resynchronized after it).
func ReadFrame(r io.Reader, buf []byte, max int) ([]byte, error) {
	if cap(buf) < HeaderSize {
		buf = make([]byte, 0, 512)
	}
	head := buf[:HeaderSize]
	if _, err := io.ReadFull(r, head); err != nil {
		return nil, err // io.EOF when nothing came, io.ErrUnexpectedEOF inside the header
	}
	n := binary.BigEndian.Uint32(head)
	if uint64(n) > uint64(max) {
		return nil, fmt.Errorf("%w: a frame of %d bytes, more than the %d allowed", rlmm.ErrInvalidArgument, n, max)
	}
	if cap(buf) < int(n) {
		buf = make([]byte, n)
	}
	body := buf[:n]
	if _, err := io.ReadFull(r, body); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("a frame of %d bytes cut short: %w", n, err)
	}
	return body, nil
}

// Begin appends the room of a frame's header to dst; append the body after
// it and call End with the index Begin returned.
func Begin(dst []byte) ([]byte, int) {
	return append(dst, 0, 0, 0, 0), len(dst)
}

// End fills in the header of the frame that Begin started at start, whose
// body runs to the end of frame.
func End(frame []byte, start int) []byte {
	binary.BigEndian.PutUint32(frame[start:], uint32(len(frame)-start-HeaderSize))
	return frame
}

// Append appends body as one frame to dst.
func Append(dst, body []byte) []byte {
	dst, start := Begin(dst)
	return End(append(dst, body...), start)
}

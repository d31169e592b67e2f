package brokerframe

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/rlmm-go/rlmm"
)

// HeaderSize is the size of a frame's length prefix.
const HeaderSize = 4

// MaxHello bounds the first frame the server reads, before the client is
// known: a hello is a token, a purpose and two integers.
const MaxHello = 64 << 10

// MaxRequest bounds a request body the server reads once the hello was
// accepted: a mutation's segment with its leader epochs and custom metadata,
// or an assignment change of every partition a broker hosts (about 40 bytes
// each: 16 MiB is 400,000 of them).
const MaxRequest = 16 << 20

// MaxReply bounds a reply body the client reads: a segment with its custom
// metadata and leader epochs, a batch of a list (ListBatchBytes), or a
// readiness push of every hosted partition.
const MaxReply = 64 << 20

// ListBatchBytes bounds the segments of one reply of a list: a list of a
// partition with a million segments comes as several frames, each a buffer
// the client reads whole.
const ListBatchBytes = 1 << 20

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

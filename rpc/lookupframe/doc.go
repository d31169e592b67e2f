// Package lookupframe is the format of rlmm serve's framed lookup socket:
// the broker plugin's lookup by (epoch, offset) without gRPC, one blocking
// request and reply at a time on a plain Unix-socket connection.
//
// # Why
//
// Over gRPC the lookup as the broker sees it costs about 100 µs, of which
// the lookup itself is 3 µs: the rest is HTTP/2 framing and the hand-over
// between the caller's thread and an I/O thread on the JVM side, and
// grpc-go's transport goroutines on the Go side (docs/BENCHMARKS.md, "Broker
// plugin"). A bare blocking round trip on a Unix socket is 28 µs. This
// format is the least on top of that round trip that still carries the
// same messages: a length, then the protobuf bytes of the gRPC stream's own
// SegmentForOffsetStreamRequest and SegmentForOffsetStreamReply
// (rpc/rlmmpb), so the plugin maps a reply exactly as it maps the stream's.
//
// # Format
//
// Every frame, either way, is a 4-byte big-endian unsigned length n and
// then n bytes of body. A connection is, in order:
//
//	client  hello:    "RLMMLOOKUP" (10 bytes), version (1 byte, Version), token (the rest; empty for none)
//	server  answer:   "RLMMLOOKUP", version, 0, pid (8 bytes, big-endian int64): accepted
//	             or:  "RLMMLOOKUP", version, 1, reason (UTF-8): refused, and the server closes
//	client  request:  SegmentForOffsetStreamRequest
//	server  reply:    SegmentForOffsetStreamReply with the request's id
//	...               one request, then its reply, until either side closes
//
// The hello carries what the gRPC endpoint beside it checks (server.Endpoint):
// the bearer token when that endpoint has one. The server's pid in the
// answer lets a client tie the connection to the server process its gRPC
// handshake checked (a socket file left to another process is refused by
// the client, not trusted).
//
// A body longer than the reader's bound (MaxRequest for the server,
// MaxReply for the client) is not read: ReadFrame returns an error wrapping
// rlmm.ErrInvalidArgument naming both sizes, and the connection cannot be
// resynchronized, so it is closed. A body that does not decode as its
// message is the reader's business: the server answers it with an
// INVALID_ARGUMENT reply and goes on, since the frame boundary still holds.
//
// Library: only the standard library (encoding/binary, io); the bodies are
// google.golang.org/protobuf messages encoded by their callers. Nothing here
// allocates per frame once the caller's buffer is large enough.
package lookupframe

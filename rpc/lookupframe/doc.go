// Package lookupframe is the format of rlmm serve's framed socket: the
// broker plugin's lookup by (epoch, offset) and its mutations without gRPC,
// one blocking request and reply at a time on a plain Unix-socket
// connection.
//
// # Why
//
// Over gRPC the lookup as the broker sees it costs about 100 µs, of which
// the lookup itself is 3 µs: the rest is HTTP/2 framing and the hand-over
// between the caller's thread and an I/O thread on the JVM side, and
// grpc-go's transport goroutines on the Go side (docs/bench/plugin.md).
// A bare blocking round trip on a Unix socket is 28 µs. A
// mutation pays the same gRPC cost on top of its produce and fetch back
// (0.3–0.5 ms per call measured around the server's own mutation time). This
// format is the least on top of that round trip that still carries the
// same messages: a length, then the protobuf bytes of the gRPC stream's own
// SegmentForOffsetStreamRequest and SegmentForOffsetStreamReply, or of
// MutationFrameRequest (the unary call's request with an id and the
// caller's time left) and MutationFrameReply (rpc/rlmmpb), so the plugin
// maps a reply exactly as it maps gRPC's.
//
// # Format
//
// Every frame, either way, is a 4-byte big-endian unsigned length n and
// then n bytes of body. A connection is, in order:
//
//	client  hello:    magic (10 bytes), version (1 byte, Version), token (the rest; empty for none)
//	server  answer:   magic, version, 0, pid (8 bytes, big-endian int64): accepted
//	             or:  magic, version, 1, reason (UTF-8): refused, and the server closes
//	client  request:  a request of the connection's kind
//	server  reply:    its reply, with the request's id
//	...               one request, then its reply, until either side closes
//
// The magic names the connection's kind (Kind): "RLMMLOOKUP" (Lookups)
// carries SegmentForOffsetStreamRequest and SegmentForOffsetStreamReply,
// "RLMMMUTATE" (Mutations) MutationFrameRequest and MutationFrameReply. A
// mutation's reply comes when the unary call would return: the event is in
// the log and applied, or the mutation failed (its status in the reply).
// The server bounds the mutation by the request's timeout_ms; a client that
// gives up closes the connection, and what it sent may still be recorded,
// as with a unary call whose deadline passed.
//
// The hello carries what the gRPC endpoint beside it checks (server.Endpoint):
// the bearer token when that endpoint has one. The server's pid in the
// answer lets a client tie the connection to the server process its gRPC
// handshake checked (a socket file left to another process is refused by
// the client, not trusted).
//
// A body longer than the reader's bound (MaxRequest or MaxMutation for the
// server, MaxReply for the client) is not read: ReadFrame returns an error wrapping
// rlmm.ErrInvalidArgument naming both sizes, and the connection cannot be
// resynchronized, so it is closed. A body that does not decode as its
// message is the reader's business: the server answers it with an
// INVALID_ARGUMENT reply and goes on, since the frame boundary still holds.
//
// Library: only the standard library (encoding/binary, io); the bodies are
// google.golang.org/protobuf messages encoded by their callers. Nothing here
// allocates per frame once the caller's buffer is large enough.
package lookupframe

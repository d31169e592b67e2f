// Package brokerframe is the one protocol between a Kafka broker's rlmm
// plugin (plugin/, Java) and its sidecar `rlmm serve`: every call of Kafka's
// RemoteLogMetadataManager, the handshake, readiness pushes and the server's
// description, as length-prefixed protobuf frames on plain connections to
// the server's framed socket (a Unix socket; the same frames over TCP+TLS in
// the plugin's connect mode).
//
// # Why
//
// Kafka's brokers talk to each other over one framed protocol, each client
// connection carrying requests of one kind. A broker calls its RLMM from
// its own threads and waits for the answer (a fetch for a lookup, the copy
// for an add and its finish, get() on the future at once), so the least a
// call can cost is one write and one read of the calling thread on a
// blocking socket: no I/O thread, no hand-over, no HTTP/2 (over gRPC the
// lookup cost about 100 µs against 12–14 µs framed, an add and its finish
// 2.2 ms against 1.3 ms; docs/BENCHMARKS.md, "Broker plugin").
//
// # Format
//
// Every frame, either way, is a 4-byte big-endian unsigned length n and then
// n bytes of body. A connection is, in order:
//
//	client  hello:    Magic (10 bytes), version (1 byte), BrokerHello (protobuf)
//	server  answer:   Magic, version, BrokerAnswer (protobuf): refused (why; the
//	                  server closes) or accepted with ServerInfoReply (pid,
//	                  api_version, broker_id, started_unix_ms, ...)
//	client  request:  BrokerRequest (id, timeout_ms, one call)
//	server  reply:    BrokerReply with the request's id: a result or one
//	                  BrokerError (ErrorKind, may_be_recorded, the text); a
//	                  list as several replies, every one but the last with more
//	...               one request and its replies at a time, until either side closes
//
// except on a connection opened for PURPOSE_WATCH, where the client sends
// nothing after its hello and the server pushes ReadinessUpdate frames: one
// at once, then one after each change of the hosted partitions or of their
// readiness (changes close together coalesced; never a repeat of the last).
//
// The hello names the connection's purpose (rlmmpb.Purpose): lookup (the
// fetch path), mutate (add, update, partition delete), read (the other
// reads and the server's description), assign (leadership changes and
// stops) or watch. A request of another purpose is answered
// INVALID_ARGUMENT (Allows), so a slow mutation never holds a lookup behind
// it. The hello carries the endpoint's bearer token when it has one, the
// broker's id (a server of another broker refuses it) and the client's pid.
//
// Versions: the magic is the same for every version, and the byte after it
// is the sender's Version. A server refuses a hello of another version and
// a client an answer of another, each naming both (ParseHello, ParseAnswer).
//
// Bounds: the hello is read within MaxHello, a request within MaxRequest, a
// reply within MaxReply. A longer frame is not read: ReadFrame returns an
// error wrapping rlmm.ErrInvalidArgument naming both sizes, and the
// connection is closed (it cannot be resynchronized). A request that does
// not decode, or is not of the connection's purpose, is answered with an
// INVALID_ARGUMENT error and the connection goes on (the frame boundary
// still holds).
//
// Dump prints a side's bytes frame by frame, for a capture of a connection
// (`rlmm frames`).
//
// Library: encoding/binary and io for the frames; the bodies are
// google.golang.org/protobuf messages of rpc/rlmmpb (proto/rlmm/v1/rlmm.proto).
package brokerframe

// Package apply is the one path an event of the metadata log takes into a
// cache: read the record's user partition (wire.PeekPartition, no full
// decode), check that the event is in the metadata partition Kafka's
// partitioner puts it in, ask the caller whether it keeps that user
// partition, and only then decode the event and apply it to a
// memory.Manager. The topic-based manager's pump, `rlmm inspect`/`verify`'s
// view (internal/view) and so `rlmm simulate` all go through Record, so
// what they apply, skip and reject is decided in one place: an event in
// the wrong metadata partition is never applied anywhere (no broker would
// read it), and an event of a user partition the caller does not keep is
// skipped before it is decoded.
//
// The pump reads ahead: Prepare peeks a record, and decodes it when the
// caller guesses it will be kept, on the pump's reading goroutine;
// ApplyPrepared then makes Record's decision, in Record's order, reusing
// that decode (and decoding what the guess left out). Record itself is the
// same decision with nothing read ahead.
//
// A tombstone (a record with a null value, which a compacted metadata
// topic under KIP-1266 holds) is named as one (LogRecord, ReasonTombstone)
// and skipped: nothing to apply, and its callers count it rather than
// report it. A record of version 1 (KIP-1266) is applied exactly as one of
// version 0, and a record's key is not read here (package wire's doc says
// why).
//
// It imports rlmm, eventlog (its Record type), wire and memory only; it
// does no I/O.
package apply

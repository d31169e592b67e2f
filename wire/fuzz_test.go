package wire

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"unicode/utf8"

	"github.com/rlmm-go/rlmm"
)

// fuzzSeeds are the golden vectors, the edited inputs of the decoder table
// and, when present, every record Kafka's serializer wrote.
func fuzzSeeds(f *testing.F) [][]byte {
	f.Helper()
	seeds := [][]byte{
		unhex(f, hex6_6),
		unhex(f, hex6_6[:len(hex6_6)-2]+"01000101"),
		unhex(f, hex6_6[:len(hex6_6)-2]+"010503aabbcc"),
		unhex(f, "01010004666f6f0000000000000001000000000000000200000003000000000000000003000000000000000400000000020000000000000bb8000100"),
		unhex(f, "01020004666f6f00000000000000010000000000000002000000030000000005000000000000"+"0fa00000"),
		unhex(f, "01030000000000000000030000000000000004000000000000000000000000000000630000000100000000000003e800000000000007d0020000000000000000000000000000000400000100"),
	}
	// Record version 1 (KIP-1266), every value of the vector files.
	if files, err := filepath.Glob(filepath.Join(kip1266VectorsDir, "*.json")); err == nil {
		for _, path := range files {
			raw, err := os.ReadFile(path)
			if err != nil {
				continue
			}
			var v kip1266VectorsFile
			if err := json.Unmarshal(raw, &v); err != nil {
				continue
			}
			for _, r := range v.Records {
				if r.Value == nil {
					continue
				}
				if b, err := hex.DecodeString(*r.Value); err == nil {
					seeds = append(seeds, b)
				}
			}
		}
	}
	if raw, err := os.ReadFile(kafkaVectorsPath); err == nil {
		var v vectorsFile
		if err := json.Unmarshal(raw, &v); err == nil {
			for _, r := range v.Records {
				if b, err := hex.DecodeString(r.Hex); err == nil {
					seeds = append(seeds, b)
				}
			}
		}
	}
	return seeds
}

// FuzzDecode: DecodeEvent never panics; what it decodes re-encodes, and
// decode(encode(decode(b))) == decode(b); the re-encoding is canonical
// (encoding it again is byte-identical) and never longer than the input,
// since everything Kafka accepts but does not write (unknown tags, unsorted
// or duplicate epochs, non-minimal varints) only adds bytes.
func FuzzDecode(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	seeds := fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := DecodeEvent(b)
		// Into an Event holding an earlier record (its epochs' memory and
		// topic to reuse), the same result.
		var into Event
		for _, s := range seeds {
			_ = DecodeEventInto(s, &into)
			intoErr := DecodeEventInto(b, &into)
			if (intoErr == nil) != (err == nil) || err == nil && !into.EqualRecord(&e) || err != nil && !into.EqualRecord(&Event{}) {
				t.Fatalf("DecodeEventInto after %x: %v, %s; DecodeEvent: %v, %s", s, intoErr, into.String(), err, e.String())
			}
		}
		if err != nil {
			var de *DecodeError
			if !errors.As(err, &de) || !errors.Is(err, rlmm.ErrCorrupt) {
				t.Fatalf("error %v is not a *DecodeError wrapping ErrCorrupt", err)
			}
			if de.Offset < 0 || de.Offset > len(b) {
				t.Fatalf("error offset %d outside the %d-byte input", de.Offset, len(b))
			}
			return
		}
		enc, err := AppendEvent(nil, &e)
		if err != nil {
			t.Fatalf("decoded %s but cannot encode it: %v", e.String(), err)
		}
		if len(enc) > len(b) {
			t.Fatalf("canonical encoding (%d bytes) longer than the input (%d bytes)\n in %x\nout %x", len(enc), len(b), b, enc)
		}
		e2, err := DecodeEvent(enc)
		if err != nil {
			t.Fatalf("re-encoding %x does not decode: %v", enc, err)
		}
		if !e2.Equal(&e) {
			t.Fatalf("decode(encode(decode(b))) != decode(b)\n got %s\nwant %s", e2.String(), e.String())
		}
		enc2, err := AppendEvent(nil, &e2)
		if err != nil || !bytes.Equal(enc2, enc) {
			t.Fatalf("canonical bytes do not re-encode identically: %v\n%x\n%x", err, enc, enc2)
		}
		// What AppendEvent wrote is record version 0 without the record's
		// version 1 fields or unknown tagged fields.
		if enc[2] != 0 || e2.Version != 0 || e2.UnknownTags != nil || e2.BrokerLeaderEpoch != 0 || e2.EndOffset != 0 {
			t.Fatalf("re-encoding is not a plain version 0 record: %x decodes to %s", enc, e2.String())
		}
		// The text and JSON forms of anything decoded work too, and the
		// JSON reads back to the same record (when its strings survive
		// JSON, which replaces bytes that are not UTF-8).
		_ = AppendText(nil, 0, 0, &e)
		js, err := json.Marshal(e)
		if err != nil {
			t.Fatalf("MarshalJSON of a decoded event: %v", err)
		}
		if tp, ok := e.TopicIDPartition(); !ok || utf8.ValidString(tp.Topic) {
			var back Event
			if err := json.Unmarshal(js, &back); err != nil {
				t.Fatalf("UnmarshalJSON of %s: %v", js, err)
			}
			if !back.EqualRecord(&e) {
				t.Fatalf("JSON round trip\n got %s\nwant %s", back.String(), e.String())
			}
		}
	})
}

// FuzzParseRecordKey: ParseRecordKey never panics, fails only with a
// *DecodeError, and what it parses prints to a key that parses to the same
// RecordKey.
func FuzzParseRecordKey(f *testing.F) {
	for _, s := range []string{
		"AAAAAAAAAAEAAAAAAAAAAg:foo:3:99:7",
		"AAAAAAAAAAEAAAAAAAAAAg:foo:3:99:7:UPDATE",
		"AAAAAAAAAAEAAAAAAAAAAg:foo:3:-1:-1:UPDATE",
		"AAAAAAAAAAEAAAAAAAAAAg:a:b:3:99:7",
		"AAAAAAAAAAEAAAAAAAAAAg:foo:3:99",
		":::::",
		"",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		k, err := ParseRecordKey(b)
		if err != nil {
			var de *DecodeError
			if !errors.As(err, &de) || !errors.Is(err, rlmm.ErrCorrupt) || de.Offset < 0 || de.Offset > len(b) {
				t.Fatalf("error %v is not a *DecodeError wrapping ErrCorrupt inside the input", err)
			}
			return
		}
		back, err := ParseRecordKey([]byte(k.String()))
		if err != nil || back != k {
			t.Fatalf("%q parsed to %+v, printed as %q, which parses to %+v, %v", b, k, k.String(), back, err)
		}
	})
}

// FuzzRoundTrip: an event built from random fields either is refused by
// AppendEvent with ErrInvalidArgument or encodes and decodes back equal.
// Leader epochs come from epochBytes, 12 bytes (epoch, start offset) each.
func FuzzRoundTrip(f *testing.F) {
	f.Add(uint8(0), "foo", int64(1), int64(2), int32(3), int64(3), int64(4), int64(0), int64(99), int64(1000), int64(2000),
		int32(1), int32(1024), []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, []byte(nil), true, int8(0), false)
	f.Add(uint8(1), "foo", int64(1), int64(2), int32(3), int64(3), int64(4), int64(0), int64(0), int64(0), int64(3000),
		int32(2), int32(0), []byte(nil), []byte{}, false, int8(2), false)
	f.Add(uint8(2), "foo", int64(1), int64(2), int32(3), int64(0), int64(0), int64(0), int64(0), int64(0), int64(4000),
		int32(5), int32(0), []byte(nil), []byte(nil), true, int8(0), false)
	f.Add(uint8(3), "", int64(-1), int64(-2), int32(-3), int64(3), int64(4), int64(-7), int64(-9), int64(-1), int64(-1),
		int32(-1), int32(-1), []byte{0x80, 0, 0, 0, 0x80, 0, 0, 0, 0, 0, 0, 0, 0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 1},
		[]byte{1, 2, 3}, false, int8(1), true)
	f.Fuzz(func(t *testing.T, key uint8, topic string, tid1, tid2 int64, partition int32, sid1, sid2 int64,
		start, end, maxTs, eventTs int64, broker, size int32, epochBytes, custom []byte, customNil bool, state int8, txn bool) {
		if customNil {
			custom = nil
		} else if custom == nil {
			custom = []byte{}
		}
		tp := rlmm.TopicIDPartition{TopicID: rlmm.UuidFromBits(tid1, tid2), Topic: topic, Partition: partition}
		id := rlmm.SegmentID{TopicIDPartition: tp, ID: rlmm.UuidFromBits(sid1, sid2)}
		var epochs []rlmm.EpochStart
		for i := 0; i+12 <= len(epochBytes); i += 12 {
			epochs = append(epochs, rlmm.EpochStart{
				Epoch:       int32(binary.BigEndian.Uint32(epochBytes[i:])),
				StartOffset: int64(binary.BigEndian.Uint64(epochBytes[i+4:])),
			})
		}
		m := rlmm.SegmentMetadata{ID: id, StartOffset: start, EndOffset: end, MaxTimestampMs: maxTs, BrokerID: broker,
			EventTimestampMs: eventTs, LeaderEpochs: epochs, SizeInBytes: size, CustomMetadata: custom,
			State: rlmm.SegmentState(state), TxnIndexEmpty: txn}
		var e Event
		switch APIKey(key % 5) {
		case KeySegment:
			e = SegmentEvent(m)
		case KeyUpdate:
			e = UpdateEvent(rlmm.SegmentUpdate{ID: id, EventTimestampMs: eventTs, CustomMetadata: custom, State: rlmm.SegmentState(state), BrokerID: broker})
		case KeyPartitionDelete:
			e = PartitionDeleteEvent(rlmm.PartitionDelete{TopicIDPartition: tp, State: rlmm.PartitionDeleteState(state), EventTimestampMs: eventTs, BrokerID: broker})
		case KeySnapshot:
			m.ID = rlmm.SegmentID{ID: id.ID}
			e = Event{Key: KeySnapshot, Segment: m}
		default:
			e = Event{Key: APIKey(key)}
		}
		b, err := AppendEvent(nil, &e)
		if err != nil {
			if !errors.Is(err, rlmm.ErrInvalidArgument) {
				t.Fatalf("AppendEvent refused with %v, not ErrInvalidArgument", err)
			}
			return
		}
		got, err := DecodeEvent(b)
		if err != nil {
			t.Fatalf("AppendEvent wrote %x for %s, which does not decode: %v", b, e.String(), err)
		}
		if !got.Equal(&e) {
			t.Fatalf("round trip\n got %s\nwant %s", got.String(), e.String())
		}
	})
}

// FuzzPeekPartition checks that PeekPartition never panics, fails only
// with a *DecodeError, and agrees with DecodeEvent on every value that
// decodes: the same api key and user partition.
func FuzzPeekPartition(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		key, k, ok, perr := PeekPartition(b)
		if perr != nil {
			var de *DecodeError
			if !errors.As(perr, &de) || !errors.Is(perr, rlmm.ErrCorrupt) {
				t.Fatalf("peek error %v is not a *DecodeError wrapping ErrCorrupt", perr)
			}
		}
		e, err := DecodeEvent(b)
		if err != nil {
			return
		}
		if perr != nil {
			t.Fatalf("DecodeEvent accepts %x but PeekPartition refuses it: %v", b, perr)
		}
		if key != e.Key {
			t.Fatalf("peeked api key %d, decoded %d", key, e.Key)
		}
		tp, named := e.TopicIDPartition()
		if named != ok || (ok && k != KeyOf(tp)) {
			t.Fatalf("peeked %v (%v), decoded %v (%v)", k, ok, tp, named)
		}
	})
}

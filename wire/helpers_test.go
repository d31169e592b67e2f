package wire

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/rlmm-go/rlmm"
)

// unhex decodes hex written with optional spaces between fields.
func unhex(tb testing.TB, s string) []byte {
	tb.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		tb.Fatalf("bad hex in test: %v", err)
	}
	return b
}

// The Kafka ids of the worked examples of kafka-rlmm.md 6.6 and 6.7.
var (
	fooTP = rlmm.TopicIDPartition{TopicID: rlmm.UuidFromBits(1, 2), Topic: "foo", Partition: 3}
	segID = rlmm.SegmentID{TopicIDPartition: fooTP, ID: rlmm.UuidFromBits(3, 4)}
)

// basicSegment is the segment of the worked example (6.6).
func basicSegment() rlmm.SegmentMetadata {
	return rlmm.SegmentMetadata{
		ID: segID, StartOffset: 0, EndOffset: 99, BrokerID: 1, MaxTimestampMs: 1000, EventTimestampMs: 2000,
		LeaderEpochs: []rlmm.EpochStart{{Epoch: 0, StartOffset: 0}}, SizeInBytes: 1024,
		State: rlmm.CopySegmentStarted,
	}
}

// hex6_6 is the verified 102-byte value of the worked example.
const hex6_6 = "01000004666f6f00000000000000010000000000000002000000030000000000000000030000000000000004000000000000000000000000000000006300000001" +
	"00000000000003e800000000000007d0020000000000000000000000000000000400000000"

// murmur2 is Kafka's Utils.murmur2 over any bytes, written from its
// description (kafka-rlmm.md 7.4), to check MetadataPartition's 4-byte
// special case against.
func murmur2(data []byte) uint32 {
	n := len(data)
	h := uint32(murmurSeed) ^ uint32(n)
	for i := 0; i+4 <= n; i += 4 {
		k := uint32(data[i]) | uint32(data[i+1])<<8 | uint32(data[i+2])<<16 | uint32(data[i+3])<<24
		k *= murmurM
		k ^= k >> murmurR
		k *= murmurM
		h *= murmurM
		h ^= k
	}
	tail := data[n&^3:]
	switch len(tail) {
	case 3:
		h ^= uint32(tail[2]) << 16
		fallthrough
	case 2:
		h ^= uint32(tail[1]) << 8
		fallthrough
	case 1:
		h ^= uint32(tail[0])
		h *= murmurM
	}
	h ^= h >> 13
	h *= murmurM
	h ^= h >> 15
	return h
}

// randomEvent returns a random event that AppendEvent accepts: every key,
// extreme and negative values, absent/empty/present custom metadata, long
// and non-ASCII topic names, several epochs.
func randomEvent(r *rand.Rand) Event {
	pick64 := func() int64 {
		switch r.IntN(5) {
		case 0:
			return 0
		case 1:
			return -1 - r.Int64N(1<<40)
		case 2:
			return 1<<63 - 1 - r.Int64N(3)
		case 3:
			return -1 << 63
		}
		return r.Int64N(1 << 40)
	}
	pick32 := func() int32 {
		switch r.IntN(4) {
		case 0:
			return -1 - r.Int32N(1000)
		case 1:
			return 1<<31 - 1
		}
		return r.Int32N(1 << 20)
	}
	uuid := func() rlmm.Uuid { return rlmm.UuidFromBits(int64(r.Uint64()), int64(r.Uint64())) }
	topic := func() string {
		switch r.IntN(4) {
		case 0:
			return strings.Repeat("t", 1+r.IntN(300)) // two-byte length varints
		case 1:
			return "тема-" + strings.Repeat("é", r.IntN(5))
		case 2:
			return ""
		}
		return "topic-" + string(rune('a'+r.IntN(26)))
	}
	custom := func() []byte {
		switch r.IntN(3) {
		case 0:
			return nil
		case 1:
			return []byte{}
		}
		b := make([]byte, 1+r.IntN(200))
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		return b
	}
	tp := rlmm.TopicIDPartition{TopicID: uuid(), Topic: topic(), Partition: pick32()}
	id := rlmm.SegmentID{TopicIDPartition: tp, ID: uuid()}
	segment := func() rlmm.SegmentMetadata {
		start := r.Int64N(1 << 50)
		if r.IntN(4) == 0 {
			start = 0
		}
		end := start + r.Int64N(1<<20)
		if r.IntN(8) == 0 {
			end = 1<<63 - 1
		}
		n := 1 + r.IntN(6)
		epochs := make([]rlmm.EpochStart, n)
		e := r.Int32N(100)
		if r.IntN(6) == 0 {
			e = -1 << 31 // negative epochs are accepted by Kafka's model
		}
		for i := range epochs {
			epochs[i] = rlmm.EpochStart{Epoch: e, StartOffset: start + int64(i)*r.Int64N(1000)}
			e += 1 + r.Int32N(5)
		}
		return rlmm.SegmentMetadata{
			ID: id, StartOffset: start, EndOffset: end, MaxTimestampMs: pick64(), BrokerID: pick32(),
			EventTimestampMs: pick64(), LeaderEpochs: epochs, SizeInBytes: pick32(), CustomMetadata: custom(),
			State: rlmm.SegmentState(r.IntN(4)), TxnIndexEmpty: r.IntN(2) == 0,
		}
	}
	switch APIKey(r.IntN(4)) {
	case KeySegment:
		return SegmentEvent(segment())
	case KeyUpdate:
		return UpdateEvent(rlmm.SegmentUpdate{ID: id, EventTimestampMs: pick64(), CustomMetadata: custom(),
			State: rlmm.SegmentState(r.IntN(4)), BrokerID: pick32()})
	case KeyPartitionDelete:
		return PartitionDeleteEvent(rlmm.PartitionDelete{TopicIDPartition: tp,
			State: rlmm.PartitionDeleteState(r.IntN(3)), EventTimestampMs: pick64(), BrokerID: pick32()})
	}
	m := segment()
	m.ID = rlmm.SegmentID{ID: m.ID.ID}
	return Event{Key: KeySnapshot, Segment: m}
}

// vectorsFile is the schema of testdata/kafka-vectors.json.
type vectorsFile struct {
	Generator string `json:"generator"`
	Records   []struct {
		Name   string          `json:"name"`
		APIKey int             `json:"apiKey"`
		Hex    string          `json:"hex"`
		Event  json.RawMessage `json:"event"`
	} `json:"records"`
	Partitioner []struct {
		TopicID           string `json:"topicId"`
		Partition         int32  `json:"partition"`
		NumPartitions     int32  `json:"numPartitions"`
		MetadataPartition int32  `json:"metadataPartition"`
	} `json:"partitioner"`
}

// checkVectorsFile checks every record of a vectors file in both directions
// and every partitioner row, and returns how many of each it checked.
func checkVectorsFile(t *testing.T, path string) (records, partitions int) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	var f vectorsFile
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		t.Fatalf("%s: not in the vectors schema: %v", path, err)
	}
	if len(f.Records) == 0 || len(f.Partitioner) == 0 {
		t.Fatalf("%s: %d records and %d partitioner rows; want some of each", path, len(f.Records), len(f.Partitioner))
	}
	for _, v := range f.Records {
		b, err := hex.DecodeString(v.Hex)
		if err != nil {
			t.Errorf("%s: bad hex: %v", v.Name, err)
			continue
		}
		var want Event
		if err := json.Unmarshal(v.Event, &want); err != nil {
			t.Errorf("%s: event JSON: %v", v.Name, err)
			continue
		}
		if int(want.Key) != v.APIKey {
			t.Errorf("%s: apiKey %d but event type is %s", v.Name, v.APIKey, want.Key)
		}
		got, err := DecodeEvent(b)
		if err != nil {
			t.Errorf("%s: DecodeEvent: %v", v.Name, err)
		} else if !got.Equal(&want) {
			t.Errorf("%s: DecodeEvent\n got %s\nwant %s", v.Name, got.String(), want.String())
		}
		enc, err := AppendEvent(nil, &want)
		if err != nil {
			t.Errorf("%s: AppendEvent: %v", v.Name, err)
		} else if hex.EncodeToString(enc) != v.Hex {
			t.Errorf("%s: AppendEvent\n got %x\nwant %s", v.Name, enc, v.Hex)
		}
		// Our JSON of the decoded event is the file's JSON, byte for byte
		// once both are compacted the same way.
		if err == nil {
			mine, err := json.Marshal(got)
			if err != nil {
				t.Errorf("%s: MarshalJSON: %v", v.Name, err)
			} else if !jsonEqual(t, mine, v.Event) {
				t.Errorf("%s: MarshalJSON\n got %s\nwant %s", v.Name, mine, v.Event)
			}
		}
	}
	for _, p := range f.Partitioner {
		id, err := rlmm.ParseUuid(p.TopicID)
		if err != nil {
			t.Errorf("partitioner row %+v: %v", p, err)
			continue
		}
		tp := rlmm.TopicIDPartition{TopicID: id, Topic: "any", Partition: p.Partition}
		if got := MetadataPartition(tp, p.NumPartitions); got != p.MetadataPartition {
			t.Errorf("MetadataPartition(%s, %d) = %d, Kafka says %d", tp, p.NumPartitions, got, p.MetadataPartition)
		}
	}
	return len(f.Records), len(f.Partitioner)
}

// jsonEqual compares two JSON texts as values (field order and spacing
// aside), with numbers compared exactly.
func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	norm := func(x []byte) string {
		d := json.NewDecoder(strings.NewReader(string(x)))
		d.UseNumber()
		var v any
		if err := d.Decode(&v); err != nil {
			t.Fatalf("bad JSON %s: %v", x, err)
		}
		out, _ := json.Marshal(v)
		return string(out)
	}
	return norm(a) == norm(b)
}

func errorsIsInvalid(err error) bool { return err != nil && errors.Is(err, rlmm.ErrInvalidArgument) }

// ev returns a pointer to a copy of e (for tables).
func ev(e Event) *Event { return &e }

// segWith is the worked example's segment event, changed by f.
func segWith(f func(m *rlmm.SegmentMetadata)) Event {
	m := basicSegment()
	f(&m)
	return SegmentEvent(m)
}

// roundTrip encodes e and decodes the bytes, failing the test on either
// error; it returns the decoded event and the encoding.
func roundTrip(t *testing.T, e *Event) (Event, []byte) {
	t.Helper()
	b, err := AppendEvent(nil, e)
	if err != nil {
		t.Fatalf("AppendEvent(%s): %v", e.String(), err)
	}
	got, err := DecodeEvent(b)
	if err != nil {
		t.Fatalf("DecodeEvent(%x): %v", b, err)
	}
	return got, b
}

package wire

import (
	"bytes"
	"encoding/hex"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/rlmm-go/rlmm"
)

// TestGolden checks the verified worked examples of kafka-rlmm.md 6.6 and
// 6.7 both ways: encode equals the bytes, decode of the bytes equals the value.
func TestGolden(t *testing.T) {
	twoEpochs := basicSegment()
	twoEpochs.LeaderEpochs = []rlmm.EpochStart{{Epoch: 0, StartOffset: 0}, {Epoch: 1, StartOffset: 50}}
	twoEpochs.CustomMetadata = []byte{0x0a, 0x0b}
	txn := basicSegment()
	txn.TxnIndexEmpty = true
	snap := basicSegment()
	snap.ID = rlmm.SegmentID{ID: segID.ID}
	snap.State = rlmm.CopySegmentFinished
	const updPrefix = "01010004666f6f0000000000000001000000000000000200000003000000000000000003000000000000000400"

	tests := []struct {
		name  string
		event Event
		hex   string
		size  int
	}{
		{"6.6 segment", SegmentEvent(basicSegment()), hex6_6, 102},
		{"6.6 segment, txnIdxEmpty", SegmentEvent(txn), strings.TrimSuffix(hex6_6, "00") + "01000101", 105},
		{"6.7 segment, two epochs, custom metadata", SegmentEvent(twoEpochs),
			"01000004666f6f0000000000000001000000000000000200000003000000000000000003000000000000000400000000000000000000000000000000630000000100000000000003e800000000000007d0" +
				"03 00000000 0000000000000000 00 00000001 0000000000000032 00 00000400 030a0b 00 00", 117},
		{"6.7 update finished", UpdateEvent(rlmm.SegmentUpdate{ID: segID, EventTimestampMs: 3000, State: rlmm.CopySegmentFinished, BrokerID: 2}),
			updPrefix + "00000002 0000000000000bb8 00 01 00", 60},
		{"6.7 update delete started, custom empty", UpdateEvent(rlmm.SegmentUpdate{ID: segID, EventTimestampMs: 3000, CustomMetadata: []byte{}, State: rlmm.DeleteSegmentStarted, BrokerID: 2}),
			updPrefix + "00000002 0000000000000bb8 01 02 00", 60},
		{"6.7 partition delete marked", PartitionDeleteEvent(rlmm.PartitionDelete{TopicIDPartition: fooTP, State: rlmm.DeletePartitionMarked, EventTimestampMs: 4000, BrokerID: 5}),
			"01020004666f6f000000000000000100000000000000020000000300 00000005 0000000000000fa0 00 00", 42},
		{"6.7 snapshot finished", Event{Key: KeySnapshot, Segment: snap},
			"010300 0000000000000003 0000000000000004 0000000000000000 0000000000000063 00000001 00000000000003e8 00000000000007d0 02 00000000 0000000000000000 00 00000400 00 01 00", 76},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			want := unhex(t, tc.hex)
			if len(want) != tc.size {
				t.Fatalf("test vector is %d bytes, the document says %d", len(want), tc.size)
			}
			got, err := AppendEvent(nil, &tc.event)
			if err != nil {
				t.Fatalf("AppendEvent: %v", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("AppendEvent\n got %x\nwant %x", got, want)
			}
			dec, err := DecodeEvent(want)
			if err != nil {
				t.Fatalf("DecodeEvent: %v", err)
			}
			if !dec.Equal(&tc.event) {
				t.Errorf("DecodeEvent\n got %s\nwant %s", dec.String(), tc.event.String())
			}
		})
	}
}

// TestGoldenLongTopic checks the two-byte length varint of a 200-character
// topic name (6.7: the first 8 bytes of a partition delete record).
func TestGoldenLongTopic(t *testing.T) {
	tp := rlmm.TopicIDPartition{TopicID: fooTP.TopicID, Topic: strings.Repeat("t", 200), Partition: 3}
	e := PartitionDeleteEvent(rlmm.PartitionDelete{TopicIDPartition: tp, State: rlmm.DeletePartitionMarked, EventTimestampMs: 4000, BrokerID: 5})
	b, err := AppendEvent(nil, &e)
	if err != nil {
		t.Fatal(err)
	}
	if got := hex.EncodeToString(b[:8]); got != "01020"+"0c901747474" {
		t.Errorf("first 8 bytes %s, want 010200c901747474", got)
	}
	dec, err := DecodeEvent(b)
	if err != nil || !dec.Equal(&e) {
		t.Errorf("round trip: %v, %s", err, dec.String())
	}
}

// TestAppendEventAppends checks that AppendEvent appends after what dst
// holds and reuses its room.
func TestAppendEventAppends(t *testing.T) {
	e := SegmentEvent(basicSegment())
	buf := make([]byte, 3, 256)
	copy(buf, "abc")
	out, err := AppendEvent(buf, &e)
	if err != nil {
		t.Fatal(err)
	}
	if string(out[:3]) != "abc" || hex.EncodeToString(out[3:]) != hex6_6 {
		t.Errorf("AppendEvent did not append: %x", out)
	}
	if &out[0] != &buf[0] {
		t.Error("AppendEvent reallocated although dst had room")
	}
}

// TestAppendEventRefuses checks that nothing Java could not read is written,
// and that dst comes back unchanged.
func TestAppendEventRefuses(t *testing.T) {
	bad := func(f func(m *rlmm.SegmentMetadata)) rlmm.SegmentMetadata {
		m := basicSegment()
		f(&m)
		return m
	}
	snapshot := func(m rlmm.SegmentMetadata) Event {
		m.ID = rlmm.SegmentID{ID: m.ID.ID}
		return Event{Key: KeySnapshot, Segment: m}
	}
	longTopic := fooTP
	longTopic.Topic = strings.Repeat("x", 32768)
	tests := []struct {
		name  string
		event Event
	}{
		{"unknown key", Event{Key: 4}},
		{"negative key", Event{Key: -1}},
		{"segment with negative start", SegmentEvent(bad(func(m *rlmm.SegmentMetadata) { m.StartOffset = -1 }))},
		{"segment with end before start", SegmentEvent(bad(func(m *rlmm.SegmentMetadata) { m.StartOffset = 100 }))},
		{"segment without epochs", SegmentEvent(bad(func(m *rlmm.SegmentMetadata) { m.LeaderEpochs = nil }))},
		{"segment with unsorted epochs", SegmentEvent(bad(func(m *rlmm.SegmentMetadata) {
			m.LeaderEpochs = []rlmm.EpochStart{{Epoch: 2}, {Epoch: 1}}
		}))},
		{"segment with undefined state", SegmentEvent(bad(func(m *rlmm.SegmentMetadata) { m.State = 4 }))},
		{"segment with a 32768-byte topic", SegmentEvent(bad(func(m *rlmm.SegmentMetadata) { m.ID.TopicIDPartition = longTopic }))},
		{"update with undefined state", UpdateEvent(rlmm.SegmentUpdate{ID: segID, State: -1})},
		{"update with a 32768-byte topic", UpdateEvent(rlmm.SegmentUpdate{ID: rlmm.SegmentID{TopicIDPartition: longTopic}})},
		{"partition delete with undefined state", PartitionDeleteEvent(rlmm.PartitionDelete{TopicIDPartition: fooTP, State: 3})},
		{"snapshot without epochs", snapshot(bad(func(m *rlmm.SegmentMetadata) { m.LeaderEpochs = []rlmm.EpochStart{} }))},
		{"snapshot with duplicate epochs", snapshot(bad(func(m *rlmm.SegmentMetadata) {
			m.LeaderEpochs = []rlmm.EpochStart{{Epoch: 1}, {Epoch: 1}}
		}))},
		{"snapshot with undefined state", snapshot(bad(func(m *rlmm.SegmentMetadata) { m.State = 9 }))},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dst := []byte("keep")
			out, err := AppendEvent(dst, &tc.event)
			if !errorsIsInvalid(err) {
				t.Fatalf("AppendEvent error %v, want one wrapping rlmm.ErrInvalidArgument", err)
			}
			if string(out) != "keep" {
				t.Errorf("dst changed to %q", out)
			}
		})
	}
	// What Kafka's model allows is written, however odd: a snapshot has no
	// offset rules, an update may name COPY_SEGMENT_STARTED.
	ok := []Event{
		snapshot(bad(func(m *rlmm.SegmentMetadata) { m.StartOffset = -5 })),
		UpdateEvent(rlmm.SegmentUpdate{ID: segID, State: rlmm.CopySegmentStarted}),
		SegmentEvent(bad(func(m *rlmm.SegmentMetadata) { m.State = rlmm.DeleteSegmentFinished })),
	}
	for _, e := range ok {
		if _, err := AppendEvent(nil, &e); err != nil {
			t.Errorf("AppendEvent(%s): %v", e.String(), err)
		}
	}
}

// TestRoundTripRandom: random events of every kind (extreme values, long
// and non-ASCII topics, custom metadata absent/empty/present, many epochs)
// encode, decode back equal, and re-encode to the same bytes.
func TestRoundTripRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	buf := make([]byte, 0, 64)
	for i := 0; i < 5000; i++ {
		e := randomEvent(r)
		var err error
		buf, err = AppendEvent(buf[:0], &e)
		if err != nil {
			t.Fatalf("AppendEvent(%s): %v", e.String(), err)
		}
		got, err := DecodeEvent(buf)
		if err != nil {
			t.Fatalf("DecodeEvent(%x) of %s: %v", buf, e.String(), err)
		}
		if !got.Equal(&e) {
			t.Fatalf("round trip\n got %s\nwant %s", got.String(), e.String())
		}
		again, err := AppendEvent(nil, &got)
		if err != nil || !bytes.Equal(again, buf) {
			t.Fatalf("re-encoding differs: %v\n%x\n%x", err, buf, again)
		}
	}
}

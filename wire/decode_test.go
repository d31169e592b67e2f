package wire

import (
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/rlmm-go/rlmm"
)

// TestDecodeBehaviour is kafka-rlmm.md 6.8 (Kafka's deserializer on edited
// copies of the worked example) plus the limits of Kafka 4.4's generated
// readers: what Kafka accepts decodes, what it rejects is a *DecodeError
// naming the field and the byte offset.
func TestDecodeBehaviour(t *testing.T) {
	base := hex6_6
	// Field offsets of the worked example (6.6 table).
	const (
		offState     = 100
		offTags      = 101
		offStart     = 45
		offEnd       = 53
		offEpochsCnt = 81
		offName      = 3
	)
	replace := func(off int, newHex string, oldLen int) string {
		return base[:2*off] + newHex + base[2*(off+oldLen):]
	}
	tests := []struct {
		name string
		hex  string
		// want is the decoded event when Kafka accepts the input.
		want *Event
		// errField and errOff say where the error must point otherwise.
		errField string
		errOff   int
		errText  string
	}{
		{name: "worked example", hex: base, want: ev(SegmentEvent(basicSegment()))},
		{name: "4.0 writer, txnIdxEmpty true", hex: replace(offTags, "01000101", 1),
			want: ev(segWith(func(m *rlmm.SegmentMetadata) { m.TxnIndexEmpty = true }))},
		{name: "unknown tag 5 skipped", hex: replace(offTags, "010503aabbcc", 1), want: ev(SegmentEvent(basicSegment()))},
		{name: "tag 0 with size 2: Kafka reads one byte", hex: replace(offTags, "02000201"+"0100", 1),
			want: ev(segWith(func(m *rlmm.SegmentMetadata) { m.TxnIndexEmpty = true }))},
		{name: "tag 0 value 7 is true", hex: replace(offTags, "01000107", 1),
			want: ev(segWith(func(m *rlmm.SegmentMetadata) { m.TxnIndexEmpty = true }))},
		{name: "unknown tag in a nested struct skipped", hex: replace(27, "01090100", 1), want: ev(SegmentEvent(basicSegment()))},
		{name: "non-minimal varint for the name length", hex: replace(offName, "8480808000", 1), want: ev(SegmentEvent(basicSegment()))},
		{name: "state FINISHED on an add decodes", hex: replace(offState, "01", 1),
			want: ev(segWith(func(m *rlmm.SegmentMetadata) { m.State = rlmm.CopySegmentFinished }))},
		{name: "epochs written unsorted", hex: replace(offEpochsCnt, "03 00000001 0000000000000032 00 00000000 0000000000000000 00", 14),
			want: ev(segWith(func(m *rlmm.SegmentMetadata) {
				m.LeaderEpochs = []rlmm.EpochStart{{Epoch: 0, StartOffset: 0}, {Epoch: 1, StartOffset: 50}}
			}))},
		{name: "duplicate epoch keeps the last value", hex: replace(offEpochsCnt, "04 00000001 0000000000000032 00 00000000 0000000000000000 00 00000001 0000000000000033 00", 14),
			want: ev(segWith(func(m *rlmm.SegmentMetadata) {
				m.LeaderEpochs = []rlmm.EpochStart{{Epoch: 0, StartOffset: 0}, {Epoch: 1, StartOffset: 51}}
			}))},
		{name: "update to COPY_SEGMENT_STARTED decodes",
			hex:  "01010004666f6f0000000000000001000000000000000200000003000000000000000003000000000000000400 00000002 0000000000000bb8 00 00 00",
			want: ev(UpdateEvent(rlmm.SegmentUpdate{ID: segID, EventTimestampMs: 3000, State: rlmm.CopySegmentStarted, BrokerID: 2}))},
		{name: "record version encoded as a 5-byte negative int narrows to 0", hex: "0100" + "8080fcff0f" + base[6:],
			want: ev(SegmentEvent(basicSegment()))},

		{name: "trailing byte", hex: base + "00", errField: "end of record", errOff: 102, errText: "1 byte(s) of garbage"},
		{name: "frame version 0", hex: "00" + base[2:], errField: "frame version", errOff: 0, errText: "frame version 0"},
		{name: "frame version 2", hex: "02" + base[2:], errField: "frame version", errOff: 0, errText: "unknown frame version 2"},
		{name: "frame version too large", hex: "808002" + base[2:], errField: "frame version", errOff: 0, errText: "too large"},
		{name: "api key 4", hex: "0104" + base[4:], errField: "api key", errOff: 1, errText: "unknown metadata id 4"},
		{name: "record version 2", hex: "010002" + base[6:], errField: "record version", errOff: 2, errText: "unsupported record version 2"},
		{name: "record version 300", hex: "0100ac02" + base[6:], errField: "record version", errOff: 2, errText: "unsupported record version 300"},
		{name: "state byte 9", hex: replace(offState, "09", 1), errField: "record", errOff: 102, errText: "undefined state 9"},
		{name: "no epochs", hex: replace(offEpochsCnt, "01", 14), errField: "record", errOff: 89, errText: "leader epochs are empty"},
		{name: "null epochs", hex: replace(offEpochsCnt, "00", 14), errField: "SegmentLeaderEpochs", errOff: offEpochsCnt, errText: "null"},
		{name: "epochs larger than the record", hex: replace(offEpochsCnt, "0a", 1), errField: "SegmentLeaderEpochs", errOff: offEpochsCnt, errText: "cannot fit"},
		{name: "epochs above Kafka's maximum", hex: replace(offEpochsCnt, "c2843d", 1), errField: "SegmentLeaderEpochs", errOff: offEpochsCnt, errText: "maximum"},
		{name: "null topic name", hex: replace(offName, "00", 4), errField: "TopicIdPartition.Name", errOff: offName, errText: "null"},
		{name: "topic name longer than 32767", hex: replace(offName, "818002", 1), errField: "TopicIdPartition.Name", errOff: offName, errText: "exceeds 32767"},
		{name: "start offset -1", hex: replace(offStart, "ffffffffffffffff", 8), errField: "record", errOff: 102, errText: "start offset -1"},
		{name: "start 100 after end 99", hex: replace(offStart, "0000000000000064", 8), errField: "record", errOff: 102, errText: "end offset 99"},
		{name: "end offset truncated", hex: base[:2*offEnd+6], errField: "EndOffset", errOff: offEnd, errText: "need 8 bytes, 3 left"},
		{name: "empty value", hex: "", errField: "frame version", errOff: 0, errText: "truncated"},
		{name: "varint longer than 5 bytes", hex: "01" + "8080808080", errField: "api key", errOff: 1, errText: "longer than 5"},
		{name: "custom metadata longer than the record", hex: replace(99, "ff01", 1), errField: "CustomMetadata", errOff: 99, errText: "need 254 bytes"},
		{name: "negative tagged-field count", hex: replace(offTags, "ffffffff0f", 1), errField: "tagged fields", errOff: offTags, errText: "negative"},
		{name: "more tags than bytes", hex: replace(offTags, "05", 1), errField: "tagged fields", errOff: offTags, errText: "cannot fit"},
		{name: "unknown tag longer than the record", hex: replace(offTags, "010509aa", 1), errField: "tagged fields", errOff: offTags + 1, errText: "tagged field 5 of 9 bytes"},
		{name: "tag 0 without its byte", hex: replace(offTags, "010001", 1), errField: "TxnIndexEmpty", errOff: 104, errText: "truncated"},
		{name: "partition delete state 7",
			hex:      "01020004666f6f000000000000000100000000000000020000000300 00000005 0000000000000fa0 07 00",
			errField: "record", errOff: 42, errText: "undefined partition delete state 7"},
		{name: "update state -1",
			hex:      "01010004666f6f0000000000000001000000000000000200000003000000000000000003000000000000000400 00000002 0000000000000bb8 00 ff 00",
			errField: "record", errOff: 60, errText: "undefined segment state -1"},
		{name: "snapshot without epochs",
			hex:      "010300 0000000000000003 0000000000000004 0000000000000000 0000000000000063 00000001 00000000000003e8 00000000000007d0 01 00000400 00 01 00",
			errField: "record", errOff: 63, errText: "leader epochs are empty"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeEvent(unhex(t, tc.hex))
			if tc.want != nil {
				if err != nil {
					t.Fatalf("DecodeEvent: %v (Kafka accepts this)", err)
				}
				if !got.Equal(tc.want) {
					t.Fatalf("DecodeEvent\n got %s\nwant %s", got.String(), tc.want.String())
				}
				return
			}
			if err == nil {
				t.Fatalf("DecodeEvent accepted it (Kafka rejects it): %s", got.String())
			}
			if !errors.Is(err, rlmm.ErrCorrupt) {
				t.Errorf("error %v does not wrap rlmm.ErrCorrupt", err)
			}
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("error %T is not a *DecodeError", err)
			}
			if de.Field != tc.errField || de.Offset != tc.errOff || !strings.Contains(de.Reason, tc.errText) {
				t.Errorf("error %q: field %q at %d, want field %q at %d with %q", err, de.Field, de.Offset, tc.errField, tc.errOff, tc.errText)
			}
			if !strings.Contains(err.Error(), "at byte") {
				t.Errorf("error %q does not say where", err)
			}
		})
	}
}

// TestDecodeCustomMetadataDoesNotAlias checks that decoded custom metadata
// is a copy: reusing the input buffer cannot change a decoded event.
func TestDecodeCustomMetadataDoesNotAlias(t *testing.T) {
	m := basicSegment()
	m.CustomMetadata = []byte("plugin-data")
	e := SegmentEvent(m)
	got, b := roundTrip(t, &e)
	for i := range b {
		b[i] = 0xff
	}
	if string(got.Segment.CustomMetadata) != "plugin-data" {
		t.Errorf("custom metadata changed with the input buffer: %q", got.Segment.CustomMetadata)
	}
}

// TestDecodeCustomMetadataThreeWays checks absent, empty and present custom
// metadata stay apart through a round trip of every record type that has it.
func TestDecodeCustomMetadataThreeWays(t *testing.T) {
	for _, c := range [][]byte{nil, {}, {0}, []byte("x")} {
		m := basicSegment()
		m.CustomMetadata = c
		snap := m
		snap.ID = rlmm.SegmentID{ID: m.ID.ID}
		for _, e := range []Event{
			SegmentEvent(m),
			Event{Key: KeySnapshot, Segment: snap},
			UpdateEvent(rlmm.SegmentUpdate{ID: segID, CustomMetadata: c, State: rlmm.CopySegmentFinished}),
		} {
			got, _ := roundTrip(t, &e)
			gc := got.customMetadata()
			if (gc == nil) != (c == nil) || string(gc) != string(c) {
				t.Errorf("%s: custom metadata %#v came back as %#v", e.Key, c, gc)
			}
		}
	}
}

// TestDecodeHostileLengths: lengths and counts far beyond the input are
// refused before anything is allocated for them.
func TestDecodeHostileLengths(t *testing.T) {
	const (
		offEpochsCnt = 81
		offCustom    = 99
	)
	tests := []struct {
		name string
		hex  string
	}{
		{"custom metadata of 2 GiB", hex6_6[:2*offCustom] + "ffffffff07" + hex6_6[2*(offCustom+1):]},
		{"999999 epochs", hex6_6[:2*offEpochsCnt] + "c0843d" + hex6_6[2*(offEpochsCnt+1):]},
		{"topic name of 32767 bytes", hex6_6[:6] + "80ff01" + hex6_6[8:]},
		{"9999 tagged fields", hex6_6[:2*101] + "8f4e"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := unhex(t, tc.hex)
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := DecodeEvent(b)
			runtime.ReadMemStats(&after)
			if !errors.Is(err, rlmm.ErrCorrupt) {
				t.Fatalf("DecodeEvent: %v, want a corrupt-data error", err)
			}
			if got := after.TotalAlloc - before.TotalAlloc; got > 16<<10 {
				t.Errorf("decoding %d hostile bytes allocated %d bytes", len(b), got)
			}
		})
	}
}

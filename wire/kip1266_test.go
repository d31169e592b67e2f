package wire

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlmm-go/rlmm"
)

// kip1266VectorsDir holds the vector files of KIP-1266's record version 1:
// spec-vectors.json is written by hand from the schemas of apache/kafka
// PR #22459 (kip-1266.md) and the byte layouts of kafka-rlmm.md 6.4-6.7.
// Vectors captured from Kafka's own serde once the PR ships go beside it
// as another *.json file in the same schema (kip1266VectorsFile); every
// file of the directory is checked, so adding one needs no code change.
const kip1266VectorsDir = "testdata/kip1266"

// kip1266VectorsFile is the schema of a file of kip1266VectorsDir. Each
// record is a Kafka record of __remote_log_metadata: its key and value as
// hex (null for a null key, or a null value: a tombstone), and what they
// must decode to: recordKey (ParseRecordKey of the key), event (DecodeEvent
// of the value, in wire's JSON form with recordVersion, brokerLeaderEpoch,
// endOffset and unknownTaggedFields), or error (a text the key's or the
// value's decoding error must hold).
type kip1266VectorsFile struct {
	Generator string          `json:"generator"`
	Records   []kip1266Vector `json:"records"`
}

type kip1266Vector struct {
	Name      string          `json:"name"`
	Key       *string         `json:"key"`
	Value     *string         `json:"value"`
	RecordKey *jsonRecordKey  `json:"recordKey"`
	Event     json.RawMessage `json:"event"`
	Error     string          `json:"error"`
}

// jsonRecordKey is a RecordKey in the vectors' JSON.
type jsonRecordKey struct {
	TopicID           rlmm.Uuid `json:"topicId"`
	Topic             string    `json:"topic"`
	Partition         int32     `json:"partition"`
	EndOffset         int64     `json:"endOffset"`
	BrokerLeaderEpoch int32     `json:"brokerLeaderEpoch"`
	Update            bool      `json:"update"`
}

func (j *jsonRecordKey) key() RecordKey {
	return RecordKey{TopicIDPartition: rlmm.TopicIDPartition{TopicID: j.TopicID, Topic: j.Topic, Partition: j.Partition},
		EndOffset: j.EndOffset, BrokerLeaderEpoch: j.BrokerLeaderEpoch, Update: j.Update}
}

// TestKIP1266Vectors decodes every record of every file of
// kip1266VectorsDir (see its doc) and checks: the key parses to recordKey
// and prints back to the same bytes; the value decodes to event, fields of
// record version 1 and unknown tagged fields included (EqualRecord), and
// the key agrees with it; a null value is a tombstone with no event; what
// must fail fails saying so. Every decoded value also re-encodes as record
// version 0 (what rlmm writes) to the same model.
func TestKIP1266Vectors(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(kip1266VectorsDir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no vector files in %s: %v", kip1266VectorsDir, err)
	}
	for _, path := range files {
		n := checkKIP1266File(t, path)
		t.Logf("%s: %d records", path, n)
	}
}

func checkKIP1266File(t *testing.T, path string) int {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var f kip1266VectorsFile
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		t.Fatalf("%s: not in the KIP-1266 vectors schema: %v", path, err)
	}
	if len(f.Records) == 0 {
		t.Fatalf("%s: no records", path)
	}
	for _, v := range f.Records {
		t.Run(filepath.Base(path)+"/"+v.Name, func(t *testing.T) { checkKIP1266Vector(t, &v) })
	}
	return len(f.Records)
}

func checkKIP1266Vector(t *testing.T, v *kip1266Vector) {
	var errs []string // the decoding errors, for an expected error
	var key *RecordKey
	if v.Key != nil {
		kb := unhex(t, *v.Key)
		k, err := ParseRecordKey(kb)
		switch {
		case err != nil:
			var de *DecodeError
			if !errors.As(err, &de) || !errors.Is(err, rlmm.ErrCorrupt) {
				t.Errorf("ParseRecordKey error %v is not a *DecodeError wrapping ErrCorrupt", err)
			}
			errs = append(errs, err.Error())
		case v.RecordKey == nil:
			t.Errorf("key %q parsed to %+v; the vector gives no recordKey", kb, k)
		default:
			if want := v.RecordKey.key(); k != want {
				t.Errorf("ParseRecordKey(%q) = %+v, want %+v", kb, k, want)
			}
			if k.String() != string(kb) {
				t.Errorf("key %q prints back as %q", kb, k.String())
			}
			key = &k
		}
	} else if v.RecordKey != nil {
		t.Errorf("recordKey given for a null key")
	}
	if v.Value == nil {
		if len(v.Event) > 0 {
			t.Errorf("an event given for a null value (a tombstone)")
		}
		if v.Key == nil {
			t.Errorf("a tombstone without a key")
		}
	} else {
		b := unhex(t, *v.Value)
		got, err := DecodeEvent(b)
		switch {
		case err != nil:
			var de *DecodeError
			if !errors.As(err, &de) || !errors.Is(err, rlmm.ErrCorrupt) {
				t.Errorf("DecodeEvent error %v is not a *DecodeError wrapping ErrCorrupt", err)
			}
			errs = append(errs, err.Error())
		case len(v.Event) == 0:
			t.Errorf("value decoded to %s; the vector gives no event", got.String())
		default:
			var want Event
			if err := json.Unmarshal(v.Event, &want); err != nil {
				t.Fatalf("event JSON: %v", err)
			}
			if !got.EqualRecord(&want) {
				t.Errorf("DecodeEvent\n got %s\nwant %s", got.String(), want.String())
			}
			mine, err := json.Marshal(got)
			if err != nil {
				t.Errorf("MarshalJSON: %v", err)
			} else if !jsonEqual(t, mine, v.Event) {
				t.Errorf("MarshalJSON\n got %s\nwant %s", mine, v.Event)
			}
			if key != nil {
				if why := got.KeyMismatch(*key); why != "" {
					t.Errorf("key %s disagrees with the record: %s", key, why)
				}
			}
			checkWrittenAsV0(t, &got)
		}
	}
	if v.Error != "" {
		if !strings.Contains(strings.Join(errs, "\n"), v.Error) {
			t.Errorf("errors %q do not say %q", errs, v.Error)
		}
	} else if len(errs) > 0 {
		t.Errorf("unexpected errors: %q", errs)
	}
}

// checkWrittenAsV0 checks that AppendEvent writes a decoded event as record
// version 0, with nothing of version 1 and no unknown tagged field, and
// that it decodes to the same model.
func checkWrittenAsV0(t *testing.T, e *Event) {
	t.Helper()
	b, err := AppendEvent(nil, e)
	if err != nil {
		t.Fatalf("AppendEvent(%s): %v", e.String(), err)
	}
	if b[2] != 0 {
		t.Errorf("AppendEvent wrote record version %d, want 0", b[2])
	}
	back, err := DecodeEvent(b)
	if err != nil {
		t.Fatalf("DecodeEvent of what AppendEvent wrote: %v", err)
	}
	if back.Version != 0 || back.BrokerLeaderEpoch != 0 || back.EndOffset != 0 || back.UnknownTags != nil {
		t.Errorf("what AppendEvent wrote decodes with record fields: %s", back.String())
	}
	if !back.Equal(e) {
		t.Errorf("written as version 0 and read back\n got %s\nwant %s", back.String(), e.String())
	}
}

// TestRecordFieldsText checks the text form of what a record held beyond
// Kafka's model: none for version 0 (Kafka's line exactly), the version 1
// fields and the unknown tagged fields otherwise.
func TestRecordFieldsText(t *testing.T) {
	seg := unhex(t, hex6_6)
	v1 := func(b []byte, tags string) []byte {
		out := append([]byte{}, b[:len(b)-1]...)
		out[2] = 1
		return append(out, unhex(t, tags)...)
	}
	tests := []struct {
		name   string
		value  []byte
		suffix string
	}{
		{"version 0", seg, "txnIdxEmpty=false}"},
		{"version 1 segment", v1(seg, "01 01 04 00000007"), "txnIdxEmpty=false} [recordVersion=1, brokerLeaderEpoch=7]"},
		{"version 1 unknown tags", v1(seg, "02 05 02 aabb 09 00"),
			"txnIdxEmpty=false} [recordVersion=1, brokerLeaderEpoch=0, unknownTaggedFields={5=aabb, 9=}]"},
		{"version 0 unknown tag in an epoch entry",
			append(append(append([]byte{}, seg[:94]...), unhex(t, "01 03 01 ff")...), seg[95:]...),
			"txnIdxEmpty=false} [recordVersion=0, unknownTaggedFields={SegmentLeaderEpochs.0.3=ff}]"},
		{"version 1 update", unhex(t, "01010104666f6f0000000000000001000000000000000200000003000000000000000003000000000000000400"+
			"00000002 0000000000000bb8 00 01 02 00 04 00000007 01 08 0000000000000063"),
			"brokerId=2} [recordVersion=1, brokerLeaderEpoch=7, endOffset=99]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := DecodeEvent(tt.value)
			if err != nil {
				t.Fatal(err)
			}
			if s := e.String(); !strings.HasSuffix(s, tt.suffix) {
				t.Errorf("String() = %s\nwant the suffix %s", s, tt.suffix)
			}
			if line := string(AppendText(nil, 1, 2, &e)); line != "partition: 1, offset: 2, value: "+e.String()+"\n" {
				t.Errorf("AppendText = %q, not the String() line", line)
			}
		})
	}
}

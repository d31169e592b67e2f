package layout

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/rlmm-go/rlmm"
)

// The keys of the fact sheets, as a 4.3.1 broker's LocalTieredStorage and
// Aiven's ObjectKeyFactory documentation write them.
func TestParseKnownKeys(t *testing.T) {
	cases := []struct {
		layout, prefix, key string
		topic               string
		topicID             string
		partition           int32
		start               int64
		segmentID           string
		kind                string
	}{
		{LocalName, "", "tiered-0-j5UfDhHFSA-PjPLNybRTPA/00000000000000008456-j7nRyeJgREuoBNAiVAyTzg.log",
			"tiered", "j5UfDhHFSA-PjPLNybRTPA", 0, 8456, "j7nRyeJgREuoBNAiVAyTzg", "log"},
		{LocalName, "", "my-topic.v2-17-j5UfDhHFSA-PjPLNybRTPA/00000000000000000000-j7nRyeJgREuoBNAiVAyTzg.leader_epoch_checkpoint",
			"my-topic.v2", "j5UfDhHFSA-PjPLNybRTPA", 17, 0, "j7nRyeJgREuoBNAiVAyTzg", "leader_epoch_checkpoint"},
		{AivenName, "someprefix/", "someprefix/topic-MWJ6FHTfRYy67jzwZdeqSQ/7/00000000000000001234-tqimKeZwStOEOwRzT3L5oQ.log",
			"topic", "MWJ6FHTfRYy67jzwZdeqSQ", 7, 1234, "tqimKeZwStOEOwRzT3L5oQ", "log"},
		{AivenName, "p/", "p/a-b-MWJ6FHTfRYy67jzwZdeqSQ/0/00000000000000001234-tqimKeZwStOEOwRzT3L5oQ.rsm-manifest",
			"a-b", "MWJ6FHTfRYy67jzwZdeqSQ", 0, 1234, "tqimKeZwStOEOwRzT3L5oQ", "rsm-manifest"},
		{AivenName, "", "topic-MWJ6FHTfRYy67jzwZdeqSQ/3/00000000000000000005-tqimKeZwStOEOwRzT3L5oQ.indexes",
			"topic", "MWJ6FHTfRYy67jzwZdeqSQ", 3, 5, "tqimKeZwStOEOwRzT3L5oQ", "indexes"},
	}
	for _, c := range cases {
		t.Run(c.key, func(t *testing.T) {
			l := mustNew(t, c.layout, c.prefix)
			r, ok := l.Parse(c.key)
			if !ok {
				t.Fatalf("Parse(%q) failed", c.key)
			}
			if r.Topic != c.topic || r.TopicID.String() != c.topicID || r.Partition != c.partition || r.StartOffset != c.start ||
				r.SegmentID.String() != c.segmentID || l.Kinds()[r.Kind] != c.kind || r.Prefix != c.prefix {
				t.Fatalf("Parse(%q) = %+v", c.key, r)
			}
			tp := r.TopicIDPartition()
			if r.Dir != l.PartitionDir(tp) {
				t.Errorf("Dir %q, PartitionDir %q", r.Dir, l.PartitionDir(tp))
			}
			if got := l.Key(tp, segment(tp, r.SegmentID, r.StartOffset), r.Kind); got != c.key {
				t.Errorf("Key = %q, want %q", got, c.key)
			}
		})
	}
}

func TestParseRejects(t *testing.T) {
	const id, tid = "tqimKeZwStOEOwRzT3L5oQ", "MWJ6FHTfRYy67jzwZdeqSQ"
	cases := []struct{ layout, key, why string }{
		{LocalName, "t-0-" + tid + "/00000000000000000001-" + id + ".indexes", "an Aiven extension"},
		{LocalName, "t-0-" + tid + "/0000000000000000001-" + id + ".log", "19 digits"},
		{LocalName, "t-0-" + tid + "/99999999999999999999-" + id + ".log", "offset beyond int64"},
		{LocalName, "t-0-" + tid + "/00000000000000000001-" + id[:21] + "R.log", "non-canonical id (unused bits set)"},
		{LocalName, "t-0-" + tid + "/00000000000000000001-" + id[:21] + "*.log", "not base64url"},
		{LocalName, "t-00-" + tid + "/00000000000000000001-" + id + ".log", "partition with a leading zero"},
		{LocalName, "t-2147483648-" + tid + "/00000000000000000001-" + id + ".log", "partition beyond int32"},
		{LocalName, "x/t-0-" + tid + "/00000000000000000001-" + id + ".log", "one directory too deep"},
		{LocalName, "00000000000000000001-" + id + ".log", "no partition directory"},
		{LocalName, "-0-" + tid + "/00000000000000000001-" + id + ".log", "empty topic"},
		{AivenName, "t-" + tid + "/x/00000000000000000001-" + id + ".log", "partition not a number"},
		{AivenName, "t" + tid + "/0/00000000000000000001-" + id + ".log", "no dash before the topic id"},
		{AivenName, "t-" + tid + "/0/00000000000000000001-" + id + ".log.tmp", "unknown extension"},
		{AivenName, "README", "no directories"},
	}
	for _, c := range cases {
		t.Run(c.why, func(t *testing.T) {
			if r, ok := mustNew(t, c.layout, "").Parse(c.key); ok {
				t.Fatalf("Parse(%q) = %+v, want rejected (%s)", c.key, r, c.why)
			}
		})
	}
}

// A key under another prefix than the configured one is still read (its
// Prefix then differs), so a custom-prefix object is attributed.
func TestAivenParseOtherPrefix(t *testing.T) {
	l := mustNew(t, AivenName, "new/")
	r, ok := l.Parse("old/deep/t-MWJ6FHTfRYy67jzwZdeqSQ/1/00000000000000000002-tqimKeZwStOEOwRzT3L5oQ.log")
	if !ok || r.Prefix != "old/deep/" || r.Topic != "t" || r.Dir != "t-MWJ6FHTfRYy67jzwZdeqSQ/1" {
		t.Fatalf("Parse = %+v, %v", r, ok)
	}
}

func TestNewUnknown(t *testing.T) {
	_, err := New("hdfs", Options{})
	if !errors.Is(err, rlmm.ErrInvalidArgument) || !strings.Contains(err.Error(), "aiven, local") {
		t.Fatalf("New(hdfs) = %v", err)
	}
	if _, err := New(LocalName, Options{Prefix: "x/"}); !errors.Is(err, rlmm.ErrInvalidArgument) {
		t.Fatalf("local with a prefix = %v", err)
	}
}

// Aiven's custom metadata bytes, written out by hand from Kafka's
// tagged-fields encoding: count 3; tag 0, size 1, zig-zag varlong 1 = 0x02;
// tag 1, size 2, compact string "p" = 0x02 'p'; tag 2, size 2, "k".
func TestAivenCustomMetadataBytes(t *testing.T) {
	want := []byte{3, 0, 1, 2, 1, 2, 2, 'p', 2, 2, 2, 'k'}
	f := AivenFields{RemoteSize: 1, HasRemoteSize: true, ObjectPrefix: "p", HasObjectPrefix: true, ObjectKey: "k", HasObjectKey: true}
	if got := EncodeAivenCustomMetadata(f); !bytes.Equal(got, want) {
		t.Fatalf("encode = %v, want %v", got, want)
	}
	got, err := DecodeAivenCustomMetadata(want)
	if err != nil || got != f {
		t.Fatalf("decode = %+v, %v", got, err)
	}
	big := AivenFields{RemoteSize: 1 << 40, HasRemoteSize: true}
	if got, err := DecodeAivenCustomMetadata(EncodeAivenCustomMetadata(big)); err != nil || got != big {
		t.Fatalf("round trip of %+v = %+v, %v", big, got, err)
	}
	if got := EncodeAivenCustomMetadata(AivenFields{}); len(got) != 0 || got == nil {
		t.Fatalf("empty fields encode to %v, want an empty slice", got)
	}
}

func TestAivenCustomMetadataCorrupt(t *testing.T) {
	for _, b := range [][]byte{
		{1},                        // a field announced, none there
		{1, 0, 5, 2},               // size beyond the end
		{1, 0, 2, 2, 0},            // varlong shorter than its field
		{1, 1, 1, 0},               // null compact string
		{1, 1, 2, 5, 'p'},          // string length beyond its field
		{2, 1, 2, 2, 'p', 0, 1, 2}, // tags out of order
		{1, 0, 1, 2, 9},            // trailing bytes
		{0x80},                     // truncated varint
	} {
		if f, err := DecodeAivenCustomMetadata(b); !errors.Is(err, rlmm.ErrCorrupt) {
			t.Errorf("decode %v = %+v, %v; want ErrCorrupt", b, f, err)
		}
	}
}

// The custom metadata's prefix and key take precedence over the computed
// key; the same values as computed change nothing; the remote size is the
// total to check.
func TestAivenExpect(t *testing.T) {
	l := mustNew(t, AivenName, "cur/")
	tp := rlmm.TopicIDPartition{TopicID: mustID(t, "MWJ6FHTfRYy67jzwZdeqSQ"), Topic: "t", Partition: 2}
	m := segment(tp, mustID(t, "tqimKeZwStOEOwRzT3L5oQ"), 40)
	main := strings.TrimSuffix(strings.TrimPrefix(l.Key(tp, m, AivenLog), "cur/"), ".log")
	cases := []struct {
		name         string
		f            *AivenFields
		stem, prefix string
		total        int64
	}{
		{"no custom metadata", nil, "", "", -1},
		{"size only", &AivenFields{RemoteSize: 99, HasRemoteSize: true}, "", "", 99},
		{"same as computed", &AivenFields{ObjectPrefix: "cur/", HasObjectPrefix: true, ObjectKey: main, HasObjectKey: true}, "", "", -1},
		{"old prefix", &AivenFields{ObjectPrefix: "old/", HasObjectPrefix: true, ObjectKey: main, HasObjectKey: true}, "old/" + main, "old/", -1},
		{"other key", &AivenFields{ObjectKey: "x/y", HasObjectKey: true}, "cur/x/y", "cur/", -1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			mm := *m
			if c.f != nil {
				mm.CustomMetadata = EncodeAivenCustomMetadata(*c.f)
			}
			e, err := l.Expect(tp, &mm)
			if err != nil || e.Stem != c.stem || e.Prefix != c.prefix || e.TotalSize != c.total || e.DataSize != -1 {
				t.Fatalf("Expect = %+v, %v; want stem %q prefix %q total %d", e, err, c.stem, c.prefix, c.total)
			}
		})
	}
	mm := *m
	mm.CustomMetadata = []byte{1}
	if _, err := l.Expect(tp, &mm); !errors.Is(err, rlmm.ErrCorrupt) {
		t.Fatalf("undecodable custom metadata: %v", err)
	}
}

func TestLocalExpect(t *testing.T) {
	l := mustNew(t, LocalName, "")
	tp := rlmm.TopicIDPartition{TopicID: mustID(t, "MWJ6FHTfRYy67jzwZdeqSQ"), Topic: "t", Partition: 2}
	m := segment(tp, mustID(t, "tqimKeZwStOEOwRzT3L5oQ"), 40)
	e, _ := l.Expect(tp, m)
	if e.DataSize != 1234 || e.DataKind != LocalLog || e.Optional.Has(LocalTxnIndex) || !e.Required.Has(LocalLeaderEpoch) || e.Required.Has(LocalTxnIndex) {
		t.Fatalf("Expect = %+v", e)
	}
	m.TxnIndexEmpty = false
	if e, _ := l.Expect(tp, m); !e.Optional.Has(LocalTxnIndex) {
		t.Fatalf("a segment with a transaction index: %+v", e)
	}
}

// Parse allocates nothing: scrub runs it once per listed object.
func TestParseAllocatesNothing(t *testing.T) {
	for _, l := range []Layout{mustNew(t, LocalName, ""), mustNew(t, AivenName, "p/")} {
		tp := rlmm.TopicIDPartition{TopicID: mustID(t, "MWJ6FHTfRYy67jzwZdeqSQ"), Topic: "t", Partition: 2}
		key := l.Key(tp, segment(tp, mustID(t, "tqimKeZwStOEOwRzT3L5oQ"), 40), 0)
		if n := testing.AllocsPerRun(100, func() { l.Parse(key) }); n != 0 {
			t.Errorf("%s: Parse allocates %.0f times", l.Name(), n)
		}
	}
}

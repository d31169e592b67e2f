package layout

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/rlmm-go/rlmm"
)

// realAiven is what Aiven's RSM v1.0.0 wrote for one segment in a broker
// test (testdata/aiven-1.0.0/README): its objects' keys and sizes, and the
// custom metadata it returned.
type realAiven struct {
	keys   []string
	sizes  []int64
	total  int64
	custom []byte
}

func readRealAiven(t *testing.T) realAiven {
	t.Helper()
	var r realAiven
	f, err := os.Open("testdata/aiven-1.0.0/objects.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		key, size, ok := strings.Cut(sc.Text(), " ")
		n, err := strconv.ParseInt(size, 10, 64)
		if !ok || err != nil {
			t.Fatalf("objects.txt: bad line %q", sc.Text())
		}
		r.keys, r.sizes, r.total = append(r.keys, key), append(r.sizes, n), r.total+n
	}
	if err := sc.Err(); err != nil || len(r.keys) != 3 {
		t.Fatalf("objects.txt: %d keys, %v", len(r.keys), err)
	}
	b, err := os.ReadFile("testdata/aiven-1.0.0/custom-metadata.hex")
	if err != nil {
		t.Fatal(err)
	}
	if r.custom, err = hex.DecodeString(strings.TrimSpace(string(b))); err != nil {
		t.Fatal(err)
	}
	return r
}

// TestAivenRealObjects: the layout reads the keys Aiven's RSM v1.0.0 wrote,
// computes the same keys for the segment, decodes the custom metadata it
// returned (the remote size the sum of the three objects' sizes, the prefix
// and the main path of the keys), encodes those fields into the same bytes
// (from the fields as the RSM's custom.metadata.fields.include names them,
// too), and expects the three objects where they are with that total.
func TestAivenRealObjects(t *testing.T) {
	r := readRealAiven(t)
	l := mustNew(t, AivenName, "tiered/")
	tp := rlmm.TopicIDPartition{TopicID: mustID(t, "843uPJWaTee1zEUB86qLpQ"), Topic: "aiven", Partition: 0}
	m := segment(tp, mustID(t, "6bKpZuZdTL2880AI3m4wkQ"), 0)
	const main = "aiven-843uPJWaTee1zEUB86qLpQ/0/00000000000000000000-6bKpZuZdTL2880AI3m4wkQ"
	for i, kind := range []Kind{AivenLog, AivenIndexes, AivenManifest} {
		ref, ok := l.Parse(r.keys[i])
		if !ok || ref.Prefix != "tiered/" || ref.TopicIDPartition() != tp || ref.SegmentID != m.ID.ID || ref.StartOffset != 0 ||
			ref.Kind != kind || ref.Dir != l.PartitionDir(tp) {
			t.Errorf("Parse(%s) = %+v, %v", r.keys[i], ref, ok)
		}
		if got := l.Key(tp, m, kind); got != r.keys[i] {
			t.Errorf("Key(%s) = %s, the RSM wrote %s", aivenKinds[kind], got, r.keys[i])
		}
	}
	f, err := DecodeAivenCustomMetadata(r.custom)
	want := AivenFields{RemoteSize: r.total, HasRemoteSize: true, ObjectPrefix: "tiered/", HasObjectPrefix: true, ObjectKey: main, HasObjectKey: true}
	if err != nil || f != want {
		t.Fatalf("decode %x = %+v, %v\nwant %+v", r.custom, f, err, want)
	}
	if got := EncodeAivenCustomMetadata(f); !bytes.Equal(got, r.custom) {
		t.Errorf("encode = %x, the RSM returned %x", got, r.custom)
	}
	set, err := ParseAivenFieldSet("REMOTE_SIZE,OBJECT_PREFIX,OBJECT_KEY")
	if err != nil {
		t.Fatal(err)
	}
	if got := EncodeAivenCustomMetadata(set.Fields(r.total, "tiered/", main)); !bytes.Equal(got, r.custom) {
		t.Errorf("the field set's custom metadata = %x, the RSM returned %x", got, r.custom)
	}
	m.CustomMetadata = r.custom
	e, err := l.Expect(tp, m)
	if err != nil || e.Stem != "" || e.TotalSize != r.total || e.DataSize != -1 || e.Required != Set(0).With(AivenLog).With(AivenIndexes).With(AivenManifest) {
		t.Errorf("Expect = %+v, %v; want the computed keys, all three required, total %d", e, err, r.total)
	}
}

func TestParseAivenFieldSet(t *testing.T) {
	cases := []struct {
		list string
		want AivenFieldSet
		bad  string
	}{
		{"", AivenFieldSet{}, ""},
		{"REMOTE_SIZE", AivenFieldSet{RemoteSize: true}, ""},
		{" OBJECT_KEY , OBJECT_PREFIX", AivenFieldSet{ObjectPrefix: true, ObjectKey: true}, ""},
		{"REMOTE_SIZE,OBJECT_PREFIX,OBJECT_KEY", AivenFieldSet{true, true, true}, ""},
		{"remote_size", AivenFieldSet{}, `field "remote_size"`},
		{"OBJECT_KEY,OBJECT_KEY", AivenFieldSet{}, `"OBJECT_KEY" given twice`},
		{"REMOTE_SIZE,", AivenFieldSet{}, `field ""`},
	}
	for _, c := range cases {
		got, err := ParseAivenFieldSet(c.list)
		switch {
		case c.bad == "" && (err != nil || got != c.want):
			t.Errorf("ParseAivenFieldSet(%q) = %+v, %v; want %+v", c.list, got, err, c.want)
		case c.bad != "" && (!errors.Is(err, rlmm.ErrInvalidArgument) || !strings.Contains(err.Error(), c.bad)):
			t.Errorf("ParseAivenFieldSet(%q) = %+v, %v; want ErrInvalidArgument saying %s", c.list, got, err, c.bad)
		}
	}
	if (AivenFieldSet{}).Any() || !(AivenFieldSet{ObjectKey: true}).Any() {
		t.Error("Any")
	}
}

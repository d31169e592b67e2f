package rebuild

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/scrub/layout"
	"github.com/rlmm-go/rlmm/scrub/scrubtest"
	"github.com/rlmm-go/rlmm/scrub/store"
)

const realAivenDir = "testdata/aiven-1.0.0/"

// realAivenSegment is the COPY_SEGMENT_STARTED event the broker wrote for
// the segment of testdata/aiven-1.0.0 (its README).
func realAivenSegment(t *testing.T) rlmm.SegmentMetadata {
	t.Helper()
	topicID, err := rlmm.ParseUuid("843uPJWaTee1zEUB86qLpQ")
	if err != nil {
		t.Fatal(err)
	}
	id, err := rlmm.ParseUuid("6bKpZuZdTL2880AI3m4wkQ")
	if err != nil {
		t.Fatal(err)
	}
	return rlmm.SegmentMetadata{ID: rlmm.SegmentID{TopicIDPartition: rlmm.TopicIDPartition{TopicID: topicID, Topic: "aiven"}, ID: id},
		StartOffset: 0, EndOffset: 999, MaxTimestampMs: 1796435600871, BrokerID: 1, EventTimestampMs: 1796435600939,
		LeaderEpochs: []rlmm.EpochStart{{Epoch: 0, StartOffset: 0}}, SizeInBytes: 1023048, TxnIndexEmpty: true}
}

// TestParseRealAivenManifest: the manifest Aiven's RSM v1.0.0 wrote names
// the segment with the metadata the broker had given it.
func TestParseRealAivenManifest(t *testing.T) {
	b, err := os.ReadFile(realAivenDir + "segment.rsm-manifest")
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseAivenManifest(b, "segment.rsm-manifest")
	if err != nil {
		t.Fatal(err)
	}
	m := realAivenSegment(t)
	want := AivenManifest{TP: m.ID.TopicIDPartition, SegmentID: m.ID.ID, StartOffset: m.StartOffset, EndOffset: m.EndOffset,
		MaxTimestampMs: m.MaxTimestampMs, BrokerID: m.BrokerID, EventTimestampMs: m.EventTimestampMs, LeaderEpochs: m.LeaderEpochs,
		OriginalFileSize: int64(m.SizeInBytes), TxnIndexEmpty: m.TxnIndexEmpty}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
}

// TestScanRealAiven: the segment's three objects as the RSM wrote them (the
// manifest itself, the log and indexes of their sizes) rebuild into the
// metadata the broker wrote, and, told the RSM's custom metadata fields,
// into the custom metadata it returned, byte for byte; told none, into
// none (the objects are under the configured prefix).
func TestScanRealAiven(t *testing.T) {
	root := t.TempDir()
	f, err := os.Open(realAivenDir + "objects.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		key, size, _ := strings.Cut(sc.Text(), " ")
		n, err := strconv.ParseInt(size, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		content := scrubtest.Content(n)
		if strings.HasSuffix(key, ".rsm-manifest") {
			if content, err = os.ReadFile(realAivenDir + "segment.rsm-manifest"); err != nil || int64(len(content)) != n {
				t.Fatalf("the manifest: %d bytes, %v; objects.txt says %d", len(content), err, n)
			}
		}
		write(t, root, key, content)
	}
	b, err := os.ReadFile(realAivenDir + "custom-metadata.hex")
	if err != nil {
		t.Fatal(err)
	}
	custom, err := hex.DecodeString(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	l, err := layout.New(layout.AivenName, layout.Options{Prefix: "tiered/"})
	if err != nil {
		t.Fatal(err)
	}
	all, err := layout.ParseAivenFieldSet("REMOTE_SIZE,OBJECT_PREFIX,OBJECT_KEY")
	if err != nil {
		t.Fatal(err)
	}
	d, err := store.NewDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		fields layout.AivenFieldSet
		want   []byte
	}{{"the RSM's fields", all, custom}, {"no fields", layout.AivenFieldSet{}, nil}} {
		t.Run(c.name, func(t *testing.T) {
			found, err := Scan(context.Background(), ScanOptions{Layout: l, Store: d, Opener: DirOpener{Root: root}, AivenFields: c.fields})
			if err != nil || len(found.Segments) != 1 || len(found.Problems) != 0 {
				t.Fatalf("scan: %+v, %v", found, err)
			}
			got := found.Segments[0].Meta
			want := realAivenSegment(t)
			want.BrokerID, want.EventTimestampMs, want.State, want.CustomMetadata = 0, 0, rlmm.CopySegmentFinished, c.want
			if !got.Equal(&want) || !bytes.Equal(got.CustomMetadata, c.want) {
				t.Fatalf("rebuilt %v\n   want %v", got, want)
			}
		})
	}
}

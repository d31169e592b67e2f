package rebuild

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/rebuild/rebuildtest"
)

var aivenManifest = rebuildtest.AivenManifest

func TestParseAivenManifest(t *testing.T) {
	tp := rlmm.TopicIDPartition{TopicID: rlmm.UuidFromBits(0x1234, 0x5678), Topic: "orders", Partition: 7}
	m := rlmm.SegmentMetadata{ID: rlmm.SegmentID{TopicIDPartition: tp, ID: rlmm.UuidFromBits(9, 10)}, StartOffset: 100, EndOffset: 199,
		MaxTimestampMs: 1_700_000_000_123, BrokerID: 2, EventTimestampMs: 1_700_000_000_999,
		LeaderEpochs: []rlmm.EpochStart{ep(3, 100), ep(11, 150)}, TxnIndexEmpty: true}
	got, err := ParseAivenManifest(aivenManifest(&m, 123456), "x.rsm-manifest")
	if err != nil {
		t.Fatal(err)
	}
	want := AivenManifest{TP: tp, SegmentID: m.ID.ID, StartOffset: 100, EndOffset: 199, MaxTimestampMs: m.MaxTimestampMs, BrokerID: 2,
		EventTimestampMs: m.EventTimestampMs, LeaderEpochs: m.LeaderEpochs, OriginalFileSize: 123456, TxnIndexEmpty: true}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	m.TxnIndexEmpty = false
	if got, err := ParseAivenManifest(aivenManifest(&m, 1), "x"); err != nil || got.TxnIndexEmpty {
		t.Fatalf("with a transaction index: %+v, %v", got, err)
	}

	good := string(aivenManifest(&m, 5))
	bad := []struct{ name, doc, says string }{
		{"empty", "", "not a manifest"},
		{"not JSON", "{\"version\":", "not a manifest"},
		{"syntax", "{]", "JSON syntax error at byte"},
		{"two objects", good + good, "bytes after the manifest's JSON object"},
		{"version 2", strings.Replace(good, `"version":"1"`, `"version":"2"`, 1), "manifest version \"2\""},
		{"no chunk index", strings.Replace(good, `"chunkIndex"`, `"chunkIndexX"`, 1), "no chunkIndex.originalFileSize"},
		{"no metadata", strings.Replace(good, `"remoteLogSegmentMetadata"`, `"other"`, 1), "no remoteLogSegmentMetadata"},
		{"no id", strings.Replace(good, `"id":`, `"idX":`, 1), "lacks the topic id"},
		{"bad topic id", strings.Replace(good, tp.TopicID.String(), "nope", 1), "topic id"},
		{"no end offset", strings.Replace(good, `"endOffset"`, `"endOffsetX"`, 1), "lacks startOffset, endOffset or maxTimestampMs"},
		{"end before start", strings.Replace(good, `"endOffset":199`, `"endOffset":50`, 1), "offsets 100..50"},
		{"no epochs", strings.Replace(good, `"segmentLeaderEpochs":{"11":150,"3":100}`, `"segmentLeaderEpochs":{}`, 1), "no segmentLeaderEpochs"},
		{"bad epoch", strings.Replace(good, `"11":150`, `"x":150`, 1), "leader epoch \"x\""},
		{"epoch outside", strings.Replace(good, `"11":150`, `"11":250`, 1), "outside the segment's 100..199"},
		{"epochs out of order", strings.Replace(good, `"11":150`, `"1":150`, 1), "before epoch"},
		{"epoch twice", strings.Replace(good, `"11":150`, `"03":150`, 1), "given twice"},
		{"wrong type", strings.Replace(good, `"startOffset":100`, `"startOffset":"100"`, 1), "not a manifest"},
	}
	for _, c := range bad {
		_, err := ParseAivenManifest([]byte(c.doc), "x.rsm-manifest")
		if err == nil || !errors.Is(err, rlmm.ErrCorrupt) || !strings.Contains(err.Error(), "x.rsm-manifest: ") || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: error %v, want an ErrCorrupt naming the file and %q", c.name, err, c.says)
		}
	}
	if !slices.IsSortedFunc(got.LeaderEpochs, func(a, b rlmm.EpochStart) int { return int(a.Epoch - b.Epoch) }) {
		t.Errorf("epochs not sorted: %v", got.LeaderEpochs)
	}
}

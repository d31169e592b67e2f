package layout

import (
	"testing"

	"github.com/rlmm-go/rlmm"
)

// mustID parses Kafka's text form of an id or fails t.
func mustID(t *testing.T, s string) rlmm.Uuid {
	t.Helper()
	u, err := rlmm.ParseUuid(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// segment returns the metadata of a segment of tp with id and start.
func segment(tp rlmm.TopicIDPartition, id rlmm.Uuid, start int64) *rlmm.SegmentMetadata {
	return &rlmm.SegmentMetadata{ID: rlmm.SegmentID{TopicIDPartition: tp, ID: id}, StartOffset: start, EndOffset: start + 10,
		SizeInBytes: 1234, State: rlmm.CopySegmentFinished, TxnIndexEmpty: true}
}

// mustNew returns the named layout or fails t.
func mustNew(t *testing.T, name, prefix string) Layout {
	t.Helper()
	l, err := New(name, Options{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

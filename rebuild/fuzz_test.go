package rebuild

import (
	"bytes"
	"errors"
	"testing"

	"github.com/rlmm-go/rlmm"
)

// FuzzReadLogSummary: any log file (bytes from remote storage) is summed up
// or refused with ErrCorrupt, never a panic; what is summed up is
// consistent.
func FuzzReadLogSummary(f *testing.F) {
	f.Add(concat(v2Batch(100, 9, 3, 5000, 40), v2Batch(110, 0, 4, 4000, 0)))
	f.Add(concat(v1Message(7, 70, 5), v1Message(8, 60, 0)))
	f.Add(v2Batch(0, 0, 0, 0, 0)[:30])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := ReadLogSummary(bytes.NewReader(b), int64(len(b)), "f.log")
		if err != nil {
			if !errors.Is(err, rlmm.ErrCorrupt) {
				t.Fatalf("error not ErrCorrupt: %v", err)
			}
			return
		}
		if s.Batches < 1 || s.FirstOffset < 0 || s.LastOffset < s.FirstOffset {
			t.Fatalf("summary %+v", s)
		}
		for i := 1; i < len(s.Epochs); i++ {
			if s.Epochs[i].StartOffset <= s.Epochs[i-1].StartOffset {
				t.Fatalf("epochs %v", s.Epochs)
			}
		}
	})
}

// FuzzParseLeaderEpochCheckpoint: any checkpoint parses or fails with
// ErrCorrupt; what parses is a valid lineage that prints back to itself.
func FuzzParseLeaderEpochCheckpoint(f *testing.F) {
	f.Add([]byte("0\n2\n0 0\n3 1250\n"))
	f.Add([]byte("0\n0\n"))
	f.Add([]byte("0\r\n1\r\n7   99"))
	f.Add([]byte("0\n1\n5 6 7\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		es, err := ParseLeaderEpochCheckpoint(b, "f")
		if err != nil {
			if !errors.Is(err, rlmm.ErrCorrupt) {
				t.Fatalf("error not ErrCorrupt: %v", err)
			}
			return
		}
		again, err := ParseLeaderEpochCheckpoint(checkpoint(es), "f")
		if err != nil || len(again) != len(es) {
			t.Fatalf("%v printed back parses as %v, %v", es, again, err)
		}
		for i := range es {
			if again[i] != es[i] || es[i].Epoch < 0 || es[i].StartOffset < 0 || (i > 0 && es[i].Epoch <= es[i-1].Epoch) {
				t.Fatalf("entries %v", es)
			}
		}
	})
}

// FuzzParseAivenManifest: any manifest parses or fails with ErrCorrupt;
// what parses makes valid segment metadata.
func FuzzParseAivenManifest(f *testing.F) {
	tp := rlmm.TopicIDPartition{TopicID: rlmm.UuidFromBits(1, 2), Topic: "t", Partition: 0}
	m := rlmm.SegmentMetadata{ID: rlmm.SegmentID{TopicIDPartition: tp, ID: rlmm.UuidFromBits(3, 4)}, StartOffset: 0, EndOffset: 9,
		LeaderEpochs: []rlmm.EpochStart{ep(0, 0), ep(1, 5)}}
	f.Add(aivenManifest(&m, 100))
	f.Add([]byte(`{"chunkIndex":{"originalFileSize":1}}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		man, err := ParseAivenManifest(b, "f")
		if err != nil {
			if !errors.Is(err, rlmm.ErrCorrupt) {
				t.Fatalf("error not ErrCorrupt: %v", err)
			}
			return
		}
		md := rlmm.SegmentMetadata{ID: rlmm.SegmentID{TopicIDPartition: man.TP, ID: man.SegmentID}, StartOffset: man.StartOffset,
			EndOffset: man.EndOffset, LeaderEpochs: man.LeaderEpochs}
		if err := md.Validate(); err != nil {
			t.Fatalf("parsed manifest %+v makes invalid metadata: %v", man, err)
		}
	})
}

package layout

import (
	"testing"

	"github.com/rlmm-go/rlmm"
)

// FuzzParse: any listed key (bytes from the storage) parses without panic,
// and what parses names the key back exactly.
func FuzzParse(f *testing.F) {
	f.Add("tiered-0-j5UfDhHFSA-PjPLNybRTPA/00000000000000008456-j7nRyeJgREuoBNAiVAyTzg.log")
	f.Add("p/topic-MWJ6FHTfRYy67jzwZdeqSQ/7/00000000000000001234-tqimKeZwStOEOwRzT3L5oQ.indexes")
	f.Add("a/b/c/d")
	f.Add("-/-/-")
	f.Fuzz(func(t *testing.T, key string) {
		for _, l := range []Layout{local{}, aiven{prefix: "p/"}} {
			r, ok := l.Parse(key)
			if !ok {
				continue
			}
			tp := r.TopicIDPartition()
			m := rlmm.SegmentMetadata{ID: rlmm.SegmentID{TopicIDPartition: tp, ID: r.SegmentID}, StartOffset: r.StartOffset}
			if got := r.Prefix + l.Key(tp, &m, r.Kind)[len(l.Prefix()):]; got != key {
				t.Fatalf("%s: Parse(%q) = %+v names %q", l.Name(), key, r, got)
			}
		}
	})
}

// FuzzDecodeAivenCustomMetadata: any custom metadata (bytes from the
// metadata topic) decodes or fails with ErrCorrupt, never panics; what
// decodes encodes back to the same bytes when its tags are the known ones.
func FuzzDecodeAivenCustomMetadata(f *testing.F) {
	f.Add([]byte{3, 0, 1, 2, 1, 2, 2, 'p', 2, 2, 2, 'k'})
	f.Add([]byte{})
	f.Add([]byte{1, 9, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		fields, err := DecodeAivenCustomMetadata(b)
		if err != nil {
			return
		}
		again, err := DecodeAivenCustomMetadata(EncodeAivenCustomMetadata(fields))
		if err != nil || again != fields {
			t.Fatalf("%v decodes to %+v, which round-trips to %+v (%v)", b, fields, again, err)
		}
	})
}

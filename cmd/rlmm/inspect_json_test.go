package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/rlmm-go/rlmm"
)

// TestJSONSegmentCustomMetadata: inspect --json --segments shows a segment's
// custom metadata in hex beside its length, and neither when it has none.
func TestJSONSegmentCustomMetadata(t *testing.T) {
	cases := []struct {
		name   string
		custom []byte
		want   []string
		absent []string
	}{
		{"none", nil, nil, []string{"customMetadata"}},
		{"aiven's", []byte{3, 0, 1, 2, 1, 2, 2, 'p', 2, 2, 2, 'k'}, []string{`"customMetadataBytes":12`, `"customMetadata":"03000102010202700202026b"`}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := rlmm.SegmentMetadata{CustomMetadata: c.custom, State: rlmm.CopySegmentFinished}
			b, err := json.Marshal(toJSONSegment(&m))
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range c.want {
				if !strings.Contains(string(b), w) {
					t.Errorf("%s: no %s", b, w)
				}
			}
			for _, a := range c.absent {
				if strings.Contains(string(b), a) {
					t.Errorf("%s: has %s", b, a)
				}
			}
		})
	}
}

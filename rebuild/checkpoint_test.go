package rebuild

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/rlmm-go/rlmm"
)

func TestParseLeaderEpochCheckpoint(t *testing.T) {
	cases := []struct {
		name, file string
		want       []rlmm.EpochStart
		errAt      string // what the error must say
	}{
		{name: "two entries", file: "0\n2\n0 0\n3 1250\n", want: []rlmm.EpochStart{ep(0, 0), ep(3, 1250)}},
		{name: "no entries", file: "0\n0\n", want: []rlmm.EpochStart{}},
		{name: "CRLF and spaces", file: "0\r\n1\r\n7   99\r\n", want: []rlmm.EpochStart{ep(7, 99)}},
		{name: "no final newline", file: "0\n1\n7 99", want: []rlmm.EpochStart{ep(7, 99)}},
		{name: "empty", file: "", errAt: "empty leader-epoch checkpoint"},
		{name: "version 1", file: "1\n0\n", errAt: "line 1 (byte 0): version"},
		{name: "no count", file: "0\n", errAt: "byte 2: truncated leader-epoch checkpoint (no entry count"},
		{name: "bad count", file: "0\nx\n", errAt: "line 2 (byte 2): entry count"},
		{name: "negative count", file: "0\n-1\n", errAt: "line 2 (byte 2): entry count"},
		{name: "huge count", file: "0\n99999999\n", errAt: "line 2 (byte 2): entry count 99999999 in a file of"},
		{name: "missing entries", file: "0\n3\n0 0\n1 5\n", errAt: "truncated leader-epoch checkpoint: 2 of 3 entries"},
		{name: "one field", file: "0\n1\n5\n", errAt: "line 3 (byte 4): entry \"5\""},
		{name: "three fields", file: "0\n1\n5 6 7\n", errAt: "line 3 (byte 4)"},
		{name: "negative epoch", file: "0\n1\n-1 0\n", errAt: "epoch \"-1\""},
		{name: "epoch beyond int32", file: "0\n1\n2147483648 0\n", errAt: "epoch \"2147483648\""},
		{name: "bad offset", file: "0\n1\n1 x\n", errAt: "start offset \"x\""},
		{name: "epochs not increasing", file: "0\n2\n3 0\n3 10\n", errAt: "line 4 (byte 8): entry epoch 3 at offset 10 after epoch 3"},
		{name: "offsets going back", file: "0\n2\n3 10\n4 9\n", errAt: "line 4 (byte 9)"},
		{name: "more than announced", file: "0\n1\n3 10\n4 11\n", errAt: "line 4 (byte 9): \"4 11\" after the 1 entries"},
		{name: "blank line after", file: "0\n1\n3 10\n\n", errAt: "after the 1 entries"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseLeaderEpochCheckpoint([]byte(c.file), "s.leader_epoch_checkpoint")
			if c.errAt != "" {
				if err == nil || !errors.Is(err, rlmm.ErrCorrupt) || !strings.Contains(err.Error(), "s.leader_epoch_checkpoint: ") ||
					!strings.Contains(err.Error(), c.errAt) {
					t.Fatalf("error %v, want an ErrCorrupt naming the file and %q", err, c.errAt)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, c.want) {
				t.Fatalf("got %v, want %v", got, c.want)
			}
		})
	}
}

func TestEpochsInRange(t *testing.T) {
	lineage := []rlmm.EpochStart{ep(0, 0), ep(2, 500), ep(3, 1000), ep(5, 1500)}
	cases := []struct {
		start, end int64
		want       []rlmm.EpochStart
	}{
		{0, 499, []rlmm.EpochStart{ep(0, 0)}},
		{100, 700, []rlmm.EpochStart{ep(0, 100), ep(2, 500)}},
		{500, 999, []rlmm.EpochStart{ep(2, 500)}},
		{600, 1600, []rlmm.EpochStart{ep(2, 600), ep(3, 1000), ep(5, 1500)}},
		{2000, 2100, []rlmm.EpochStart{ep(5, 2000)}},
	}
	for _, c := range cases {
		if got := EpochsInRange(lineage, c.start, c.end); !slices.Equal(got, c.want) {
			t.Errorf("EpochsInRange(%d, %d) = %v, want %v", c.start, c.end, got, c.want)
		}
	}
	if got := EpochsInRange([]rlmm.EpochStart{ep(4, 50)}, 0, 49); len(got) != 0 {
		t.Errorf("a lineage starting after the segment gave %v", got)
	}
}

func ep(epoch int32, start int64) rlmm.EpochStart {
	return rlmm.EpochStart{Epoch: epoch, StartOffset: start}
}

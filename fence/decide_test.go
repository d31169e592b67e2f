package fence

import (
	"errors"
	"strings"
	"testing"

	"github.com/rlmm-go/rlmm"
)

func TestDecide(t *testing.T) {
	tp := rlmm.TopicIDPartition{TopicID: rlmm.Uuid{1, 2}, Topic: "orders", Partition: 3}
	tests := []struct {
		name    string
		self    int32
		answers []Answer
		refused bool
		names   []string // what the refusal's text must name
	}{
		{"this broker leads", 3, []Answer{{Leader: 3, LeaderEpoch: 5}}, false, nil},
		{"another broker leads", 3, []Answer{{Leader: 1, LeaderEpoch: 6}}, true, []string{"broker 1", "this broker 3", tp.String()}},
		{"no broker id: no fence", -1, []Answer{{Leader: 1, LeaderEpoch: 6}}, false, nil},
		{"no answers: published", 3, nil, false, nil},
		{"no leader (an election) is refused", 3, []Answer{{Leader: -1, LeaderEpoch: 7}}, true, []string{"no broker"}},
		{"the deposed broker's own stale answer loses to a newer epoch", 3,
			[]Answer{{Leader: 3, LeaderEpoch: 5}, {Leader: 1, LeaderEpoch: 6}, {Leader: 1, LeaderEpoch: 6}},
			true, []string{"broker 1", "leader epoch 6"}},
		{"the newest answer names this broker", 3,
			[]Answer{{Leader: 1, LeaderEpoch: 6}, {Leader: 3, LeaderEpoch: 7}}, false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Decide(tp, tt.self, tt.answers)
			if got := errors.Is(err, rlmm.ErrNotLeader); got != tt.refused {
				t.Fatalf("Decide = %v, want refused %v", err, tt.refused)
			}
			if !tt.refused && err != nil {
				t.Fatalf("Decide = %v, want nil", err)
			}
			for _, s := range tt.names {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("refusal %q does not name %q", err, s)
				}
			}
		})
	}
}

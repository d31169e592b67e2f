package fence

import (
	"fmt"

	"github.com/rlmm-go/rlmm"
)

// Answer is one broker's metadata for one user partition.
type Answer struct {
	// Leader is the partition's leader in that answer, -1 for none.
	Leader int32
	// LeaderEpoch is the leader's epoch in that answer, -1 when unknown.
	LeaderEpoch int32
}

// Decide is the fence's rule: nil to publish, or an error wrapping
// rlmm.ErrNotLeader naming tp, the leader the newest answer names and
// self. A negative self (no broker id) and no answers both publish.
func Decide(tp rlmm.TopicIDPartition, self int32, answers []Answer) error {
	if self < 0 || len(answers) == 0 {
		return nil
	}
	newest := answers[0]
	for _, a := range answers[1:] {
		if a.LeaderEpoch > newest.LeaderEpoch {
			newest = a
		}
	}
	if newest.Leader == self {
		return nil
	}
	leader := fmt.Sprintf("broker %d", newest.Leader)
	if newest.Leader < 0 {
		leader = "no broker"
	}
	return fmt.Errorf("%w: the cluster names %s as leader of %s (leader epoch %d), not this broker %d; nothing published",
		rlmm.ErrNotLeader, leader, tp, newest.LeaderEpoch, self)
}

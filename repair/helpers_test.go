package repair

import (
	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/scrub"
)

// report is a scrub report of one partition with missing segments and
// orphans.
func report(tp rlmm.TopicIDPartition, missing []scrub.Missing, orphans ...scrub.Orphan) *scrub.Report {
	return &scrub.Report{Partitions: []scrub.PartitionReport{{TopicIDPartition: tp.String(), Missing: missing, Orphans: orphans}}}
}

// keys maps xs with key.
func keys[T any](xs []T, key func(T) string) []string {
	var out []string
	for _, x := range xs {
		out = append(out, key(x))
	}
	return out
}

// tp0 is the user partition of the tests that need one.
var tp0 = rlmm.TopicIDPartition{TopicID: rlmm.Uuid{9}, Topic: "t", Partition: 0}

package scrub

import (
	"context"
	"log/slog"
	"time"

	"github.com/rlmm-go/rlmm/scrub/store"
)

// Plan returns the orphans of rep that may be deleted: those not protected
// (their id is no live or started segment's, and their key is the layout's)
// and at least olderThan old. A non-positive olderThan selects nothing.
func Plan(rep *Report, olderThan time.Duration) []Orphan {
	if olderThan <= 0 {
		return nil
	}
	var out []Orphan
	for _, pr := range rep.Partitions {
		for _, o := range pr.Orphans {
			if !o.Protected && o.Reason == ReasonNotInMetadata && o.AgeMs >= olderThan.Milliseconds() {
				out = append(out, o)
			}
		}
	}
	return out
}

// DeleteResult counts what Delete did.
type DeleteResult struct {
	Deleted int   `json:"deleted"`
	Bytes   int64 `json:"bytes"`
	Failed  int   `json:"failed"`
}

// Delete removes the planned orphans from st, logging every deletion (and
// every failure) on logger. It stops early only when ctx ends.
func Delete(ctx context.Context, st store.Store, plan []Orphan, logger *slog.Logger) (DeleteResult, error) {
	var res DeleteResult
	keys := make([]string, len(plan))
	byKey := make(map[string]*Orphan, len(plan))
	for i := range plan {
		keys[i] = plan[i].Key
		byKey[plan[i].Key] = &plan[i]
	}
	err := st.Delete(ctx, keys, func(key string, err error) {
		o := byKey[key]
		if err != nil {
			res.Failed++
			logger.Error("orphan not deleted", "store", st.Name(), "key", key, "error", err)
			return
		}
		res.Deleted++
		var size, age int64
		if o != nil {
			size, age = o.Size, o.AgeMs
			res.Bytes += o.Size
		}
		logger.Info("orphan deleted", "store", st.Name(), "key", key, "size", size,
			"age", (time.Duration(age) * time.Millisecond).Round(time.Second).String())
	})
	return res, err
}

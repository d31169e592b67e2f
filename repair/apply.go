package repair

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/eventlog"
	"github.com/rlmm-go/rlmm/rebuild"
	"github.com/rlmm-go/rlmm/scrub"
	"github.com/rlmm-go/rlmm/scrub/store"
)

// Result counts what Apply did.
type Result struct {
	Moved       int   `json:"moved"`
	MovedBytes  int64 `json:"movedBytes"`
	MoveFailed  int   `json:"moveFailed"`
	Purged      int   `json:"purged"`
	PurgedBytes int64 `json:"purgedBytes"`
	PurgeFailed int   `json:"purgeFailed"`
	// Published counts the DELETE events published, Closed the segments
	// both of whose events were.
	Published int `json:"published"`
	Closed    int `json:"closed"`
}

// Failed reports whether an action failed.
func (r Result) Failed() bool { return r.MoveFailed > 0 || r.PurgeFailed > 0 }

// Apply carries out p: it moves the orphans to quarantine (one at a time,
// each logged; a failure is logged and counted, the object stays), deletes
// the purged objects (scrub.Delete, each logged), then publishes the close
// events with rebuild.Apply (each logged with its metadata partition and
// offset), stopping at the first that fails. lg may be nil when p closes
// nothing. The error is for ctx ending or a publication failing.
func Apply(ctx context.Context, st store.Mover, lg eventlog.Log, p *Plan, logger *slog.Logger) (Result, error) {
	var res Result
	for _, m := range p.Quarantine {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		if err := st.Move(ctx, m.Key, m.To); err != nil {
			res.MoveFailed++
			logger.Error("repair: orphan not quarantined", "store", st.Name(), "key", m.Key, "error", err)
			continue
		}
		res.Moved++
		res.MovedBytes += m.Size
		logger.Info("repair: orphan quarantined", "store", st.Name(), "key", m.Key, "to", m.To, "size", m.Size,
			"age", scrubAge(m.AgeMs), "partition", m.TopicIDPartition)
	}
	if len(p.Purge) > 0 {
		orphans := make([]scrub.Orphan, len(p.Purge))
		for i, pg := range p.Purge {
			orphans[i] = scrub.Orphan{Key: pg.Key, Size: pg.Size, AgeMs: p.events.EventTimestampMs - pg.QuarantinedAt.UnixMilli()}
		}
		dr, err := scrub.Delete(ctx, st, orphans, logger.With("step", "repair: quarantine grace over"))
		res.Purged, res.PurgedBytes, res.PurgeFailed = dr.Deleted, dr.Bytes, dr.Failed
		if err != nil {
			return res, fmt.Errorf("deleting from the quarantine of %s: %w", st.Name(), err)
		}
	}
	if len(p.events.Steps) == 0 {
		return res, nil
	}
	if lg == nil {
		return res, fmt.Errorf("repair: %d stuck copies to close and no metadata log to publish to", len(p.events.Steps))
	}
	n, err := rebuild.Apply(ctx, lg, p.events, func(pub rebuild.Published) {
		logger.Info("repair: published", "event", pub.Event, "segment", pub.Step.SegmentID, "partition", pub.Step.TopicIDPartition,
			"offsets", fmt.Sprintf("%d..%d", pub.Step.StartOffset, pub.Step.EndOffset),
			"metadata_partition", pub.MetadataPartition, "offset", pub.Offset)
		if pub.Event == rlmm.DeleteSegmentFinished.String() {
			res.Closed++
		}
	})
	res.Published = n
	if err != nil {
		return res, fmt.Errorf("closing stuck copies: %w (%d of %d events published; run repair again for the rest)", err, n, p.Summary.Events)
	}
	return res, nil
}

func scrubAge(ms int64) string {
	return (time.Duration(ms) * time.Millisecond).Round(time.Second).String()
}

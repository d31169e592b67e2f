package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"time"

	"github.com/rlmm-go/rlmm/eventlog"
	"github.com/rlmm-go/rlmm/internal/view"
	"github.com/rlmm-go/rlmm/wire"
)

// materialize reads the whole log (up to the high-water marks sampled at the
// start) into a view, showing progress on stderr unless quiet. onRecord, if
// set, sees every record with its decoded event or decode error.
func materialize(ctx context.Context, src *source, timeout time.Duration, quiet bool,
	onRecord func(rec eventlog.Record, ev *wire.Event, decodeErr error) error) (*view.Builder, error) {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	b := view.NewBuilder(src.log.Partitions())
	prog := newProgress("reading "+src.name, "records", quiet)
	var total int64
	_, err := view.ReadLog(ctx, src.log, func(p view.Plan) {
		total = p.Total
		b.SetHistory(p.Starts, p.HighWaterMarks)
	}, func(rec eventlog.Record) error {
		ev, derr := b.Apply(rec)
		prog.set(b.Counts().Records, total, "records")
		if onRecord != nil {
			return onRecord(rec, &ev, derr)
		}
		return nil
	})
	prog.finish()
	if err != nil {
		if ctx.Err() == context.DeadlineExceeded {
			return nil, couldNotRun(fmt.Errorf("reading %s took longer than --timeout %s: %w", src.name, timeout, err))
		}
		return nil, couldNotRun(fmt.Errorf("reading %s: %w", src.name, err))
	}
	return b, nil
}

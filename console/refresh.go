package console

import (
	"context"
	"log/slog"
	"time"
)

// Load reads the metadata log (and the storage) once into a snapshot.
type Load func(ctx context.Context) (*Snapshot, error)

// Refresh calls load every interval (after the previous reading ended)
// until ctx ends, and gives srv each new snapshot, or its error: a failed
// reading keeps the snapshot served. It returns when ctx ends (at once for
// interval 0: nothing to refresh); a reading under way is cancelled then.
// It starts no goroutine.
func Refresh(ctx context.Context, srv *Server, interval time.Duration, load Load, logger *slog.Logger) {
	if interval <= 0 {
		return
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	t := time.NewTimer(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		start := time.Now()
		snap, err := load(ctx)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			logger.Warn("console: re-reading the metadata log failed; the page keeps the previous reading", "error", err)
			srv.SetError(err, time.Now())
		default:
			srv.Set(snap)
			logger.Info("console: re-read the metadata log", "took", time.Since(start).Round(time.Millisecond))
		}
		t.Reset(interval)
	}
}

package main

import (
	"context"
	"log/slog"
	"os"
	"runtime"
)

// maxServingProcs bounds --serving-procs.
const maxServingProcs = 1024

// envGOMAXPROCS is the variable with which an operator sets the Go
// processor count himself; --serving-procs then leaves it alone.
const envGOMAXPROCS = "GOMAXPROCS"

// checkServingProcs refuses a --serving-procs outside [0, maxServingProcs].
func checkServingProcs(n int) error {
	if n < 0 || n > maxServingProcs {
		return usageErrorf("--serving-procs %d: must be 0 (leave GOMAXPROCS as it is) to %d", n, maxServingProcs)
	}
	return nil
}

// narrowProcsWhenRestored sets GOMAXPROCS to procs once restored is closed
// (the snapshot's state is built: the one part of the server's life that
// uses every core), unless procs is 0, GOMAXPROCS is set in the
// environment, or ctx ends first. Serving the plugin's calls is a chain of
// hand-offs between goroutines (the connection's reader, a stream worker,
// gRPC's writer); with more than one processor a hand-off may wake another
// OS thread that spins and parks again: 10–20 µs of CPU per lookup
// (docs/bench/plugin.md).
// It returns at once; the wait runs on a goroutine that ends with ctx.
func narrowProcsWhenRestored(ctx context.Context, restored <-chan struct{}, procs int, logger *slog.Logger) {
	if procs == 0 {
		return
	}
	if v, set := os.LookupEnv(envGOMAXPROCS); set {
		logger.Info("serve: GOMAXPROCS is set in the environment; --serving-procs is not applied", "GOMAXPROCS", v)
		return
	}
	go func() {
		select {
		case <-ctx.Done():
		case <-restored:
			before := runtime.GOMAXPROCS(procs)
			logger.Info("serve: snapshot state built; serving on --serving-procs Go processors", "gomaxprocs_before", before, "gomaxprocs", procs)
		}
	}()
}

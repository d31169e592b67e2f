package main

import (
	"context"
	"log/slog"
	"sync/atomic"

	"google.golang.org/grpc/grpclog"

	"github.com/rlmm-go/rlmm/server"
)

// grpcLogs is where gRPC's own log lines go: nowhere until runServe points
// it at the server's logger. gRPC's logger is one per process and must be
// set before any gRPC call, unsynchronized, so main sets it once to a
// handler that forwards through this pointer; runServe (also run several
// times in one test process) only swaps the pointer.
var grpcLogs atomic.Pointer[slog.Logger]

// installGRPCLogger routes gRPC's log lines through grpcLogs. main calls
// it before anything else runs.
func installGRPCLogger() {
	grpclog.SetLoggerV2(server.GRPCLogger(slog.New(forwardHandler{})))
}

// forwardHandler hands each record to grpcLogs' handler, with the
// attributes given to it; without a logger there, it logs nothing.
type forwardHandler struct{ attrs []slog.Attr }

func (h forwardHandler) target() slog.Handler {
	l := grpcLogs.Load()
	if l == nil {
		return nil
	}
	return l.Handler().WithAttrs(h.attrs)
}

// Enabled asks the logger's own handler: attributes do not change the
// answer, so gRPC's frequent level checks (V) allocate nothing.
func (h forwardHandler) Enabled(ctx context.Context, level slog.Level) bool {
	l := grpcLogs.Load()
	return l != nil && l.Enabled(ctx, level)
}

func (h forwardHandler) Handle(ctx context.Context, r slog.Record) error {
	if t := h.target(); t != nil {
		return t.Handle(ctx, r)
	}
	return nil
}

func (h forwardHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return forwardHandler{attrs: append(append([]slog.Attr(nil), h.attrs...), attrs...)}
}

// WithGroup is not used by gRPC's adapter; groups are dropped.
func (h forwardHandler) WithGroup(string) slog.Handler { return h }

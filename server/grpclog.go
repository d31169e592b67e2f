package server

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"google.golang.org/grpc/grpclog"
)

// GRPCLogger returns a grpclog.LoggerV2 that writes gRPC's own log lines
// through logger, so that they come out in the server's format (JSON with
// --log-format json) and level instead of gRPC's default text on stderr.
// Install it with grpclog.SetLoggerV2 before any gRPC call (the setting is
// global and not synchronized). gRPC's INFO lines (connection and transport
// chatter: a client going away is one) are logged at Debug, WARNING at Warn,
// ERROR at Error; FATAL is logged at Error and then exits with status 1, as
// gRPC expects of it. Every line carries component=grpc.
func GRPCLogger(logger *slog.Logger) grpclog.LoggerV2 {
	return &grpcLogger{l: logger.With("component", "grpc")}
}

// grpcLogger adapts slog to gRPC's logger interface.
type grpcLogger struct{ l *slog.Logger }

func (g *grpcLogger) log(level slog.Level, msg string) {
	g.l.Log(context.Background(), level, msg)
}

func (g *grpcLogger) Info(args ...any)   { g.log(slog.LevelDebug, fmt.Sprint(args...)) }
func (g *grpcLogger) Infoln(args ...any) { g.log(slog.LevelDebug, sprintln(args)) }
func (g *grpcLogger) Infof(format string, args ...any) {
	g.log(slog.LevelDebug, fmt.Sprintf(format, args...))
}
func (g *grpcLogger) Warning(args ...any)   { g.log(slog.LevelWarn, fmt.Sprint(args...)) }
func (g *grpcLogger) Warningln(args ...any) { g.log(slog.LevelWarn, sprintln(args)) }
func (g *grpcLogger) Warningf(format string, args ...any) {
	g.log(slog.LevelWarn, fmt.Sprintf(format, args...))
}
func (g *grpcLogger) Error(args ...any)   { g.log(slog.LevelError, fmt.Sprint(args...)) }
func (g *grpcLogger) Errorln(args ...any) { g.log(slog.LevelError, sprintln(args)) }
func (g *grpcLogger) Errorf(format string, args ...any) {
	g.log(slog.LevelError, fmt.Sprintf(format, args...))
}
func (g *grpcLogger) Fatal(args ...any)   { g.fatal(fmt.Sprint(args...)) }
func (g *grpcLogger) Fatalln(args ...any) { g.fatal(sprintln(args)) }
func (g *grpcLogger) Fatalf(format string, args ...any) {
	g.fatal(fmt.Sprintf(format, args...))
}

// V reports whether gRPC's verbose lines of level l are wanted: only when
// the logger logs Debug (they are logged at Debug).
func (g *grpcLogger) V(l int) bool {
	return l <= 0 || g.l.Enabled(context.Background(), slog.LevelDebug)
}

func (g *grpcLogger) fatal(msg string) {
	g.log(slog.LevelError, msg)
	os.Exit(1)
}

// sprintln is fmt.Sprintln without its trailing newline.
func sprintln(args []any) string {
	s := fmt.Sprintln(args...)
	return s[:len(s)-1]
}

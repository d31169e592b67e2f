package server

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
)

// gRPC's log lines come out through slog at the mapped levels, as JSON
// when the handler is JSON, each with component=grpc.
func TestGRPCLoggerMapsLevels(t *testing.T) {
	tests := []struct {
		name      string
		level     slog.Level // the handler's
		wantLines []string   // "LEVEL msg"
		wantV2    bool
	}{
		{name: "info", level: slog.LevelInfo, wantV2: false, wantLines: []string{
			"WARN warned 1", "WARN warned twice", "ERROR failed: 7", "ERROR a b"}},
		{name: "debug", level: slog.LevelDebug, wantV2: true, wantLines: []string{
			"DEBUG chatter", "DEBUG more chatter x", "DEBUG formatted 3",
			"WARN warned 1", "WARN warned twice", "ERROR failed: 7", "ERROR a b"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			g := GRPCLogger(slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: tc.level})))
			g.Info("chatter")
			g.Infoln("more chatter", "x")
			g.Infof("formatted %d", 3)
			g.Warning("warned ", 1)
			g.Warningf("warned %s", "twice")
			g.Errorf("failed: %d", 7)
			g.Errorln("a", "b")
			if !g.V(0) || g.V(2) != tc.wantV2 {
				t.Errorf("V(0) = %v, V(2) = %v; want true, %v", g.V(0), g.V(2), tc.wantV2)
			}
			var got []string
			for line := range strings.Lines(buf.String()) {
				var rec struct {
					Level, Msg, Component string
				}
				if err := json.Unmarshal([]byte(line), &rec); err != nil {
					t.Fatalf("not a JSON line: %q (%v)", line, err)
				}
				if rec.Component != "grpc" {
					t.Errorf("line %q: component %q, want grpc", line, rec.Component)
				}
				got = append(got, rec.Level+" "+rec.Msg)
			}
			if strings.Join(got, "|") != strings.Join(tc.wantLines, "|") {
				t.Errorf("lines\n got %q\nwant %q", got, tc.wantLines)
			}
		})
	}
}

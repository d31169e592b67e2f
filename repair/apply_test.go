package repair

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rlmm-go/rlmm/scrub"
	"github.com/rlmm-go/rlmm/scrub/store"
)

// TestApplyMoveFailureLeavesTheOriginal makes the quarantine impossible to
// create (a file where its directory goes) for one prefix and possible for
// another: the failed moves leave their originals, are logged and counted;
// the others move.
func TestApplyMoveFailureLeavesTheOriginal(t *testing.T) {
	root := t.TempDir()
	write := func(key string) {
		path := filepath.Join(root, filepath.FromSlash(key))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("t-0-x/00000000000000000000-a.log")
	write("blocked") // a file where the quarantine's directory should be
	st, err := store.NewDir(root)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	rep := report(tp0, nil, scrub.Orphan{Key: "t-0-x/00000000000000000000-a.log", Size: 1, AgeMs: time.Hour.Milliseconds(),
		Reason: scrub.ReasonNotInMetadata})
	for _, c := range []struct {
		quarantine string
		moved      bool
	}{{"blocked/", false}, {DefaultQuarantine, true}} {
		p, err := MakePlan(Input{Report: rep}, Options{Now: now, OrphanAge: time.Minute, Grace: time.Hour, StuckAfter: time.Hour, Quarantine: c.quarantine})
		if err != nil {
			t.Fatal(err)
		}
		var log bytes.Buffer
		res, err := Apply(context.Background(), st, nil, p, slog.New(slog.NewTextHandler(&log, nil)))
		if err != nil {
			t.Fatal(err)
		}
		_, origErr := os.Stat(filepath.Join(root, "t-0-x", "00000000000000000000-a.log"))
		_, movedErr := os.Stat(filepath.Join(root, filepath.FromSlash(p.Quarantine[0].To)))
		if c.moved {
			if res.Moved != 1 || res.Failed() || origErr == nil || movedErr != nil || !strings.Contains(log.String(), "orphan quarantined") {
				t.Errorf("quarantine %s: result %+v, original %v, moved %v; log:\n%s", c.quarantine, res, origErr, movedErr, log.String())
			}
			continue
		}
		if res.MoveFailed != 1 || res.Moved != 0 || origErr != nil || !strings.Contains(log.String(), "orphan not quarantined") ||
			!strings.Contains(log.String(), "left in place") {
			t.Errorf("quarantine %s: result %+v, original %v; log:\n%s", c.quarantine, res, origErr, log.String())
		}
	}
}

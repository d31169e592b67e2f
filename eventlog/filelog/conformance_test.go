package filelog

import (
	"path/filepath"
	"testing"

	"github.com/rlmm-go/rlmm/eventlog"
	"github.com/rlmm-go/rlmm/eventlog/eventlogtest"
)

func TestConformance(t *testing.T) {
	eventlogtest.Run(t, func(t *testing.T, partitions int32) eventlog.Log {
		l, err := Open(filepath.Join(t.TempDir(), "log"), Options{Partitions: partitions})
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		return l
	})
}

// TestConformanceSmallFiles runs the suite with tiny segments and journal,
// so rolls and checkpoints happen inside every test.
func TestConformanceSmallFiles(t *testing.T) {
	eventlogtest.Run(t, func(t *testing.T, partitions int32) eventlog.Log {
		l, err := Open(filepath.Join(t.TempDir(), "log"), Options{Partitions: partitions, SegmentBytes: 64, JournalBytes: 256})
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		return l
	})
}

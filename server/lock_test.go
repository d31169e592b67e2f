package server

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/rlmm-go/rlmm/test/faultdisk"
)

// A snapshot directory on a disk remounted read-only is still locked, one
// server at a time, so a restarted server serves; one that never held a
// lock file is refused, naming the cause.
func TestDataDirLockOnReadOnlyDisk(t *testing.T) {
	disk := faultdisk.Mount(t, 64<<10)
	dir := filepath.Join(disk.Dir, "snapshots")
	l, err := LockDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if l.ReadOnly {
		t.Error("the lock of a writable directory says ReadOnly")
	}
	must(t, l.Close())
	never := filepath.Join(disk.Dir, "never-locked")
	must(t, os.Mkdir(never, 0o700))
	must(t, disk.ReadOnly())

	l, err = LockDir(dir)
	if err != nil {
		t.Fatalf("lock on the read-only disk: %v", err)
	}
	if !l.ReadOnly {
		t.Error("the lock of a read-only directory does not say ReadOnly")
	}
	var inUse *InUseError
	if _, err := LockDir(dir); !errors.As(err, &inUse) {
		t.Errorf("a second lock on the read-only disk: %v, want an *InUseError", err)
	}
	must(t, l.Close())
	if _, err := LockDir(never); !errors.Is(err, syscall.EROFS) {
		t.Errorf("lock of a read-only directory without a lock file: %v, want EROFS", err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

package faultdisk

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// Each fault refuses a write with its error, and undoing it lets the
// write through again.
func TestFaultsRefuseWritesUntilUndone(t *testing.T) {
	for _, tc := range []struct {
		name      string
		do, undo  func(*Disk) error
		wantErrno syscall.Errno
	}{
		{"full", (*Disk).Fill, (*Disk).Free, syscall.ENOSPC},
		{"read-only", (*Disk).ReadOnly, (*Disk).ReadWrite, syscall.EROFS},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Mount(t, 256<<10)
			path := filepath.Join(d.Dir, "file")
			data := make([]byte, 8<<10)
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatalf("a write on the fresh disk: %v", err)
			}
			if err := tc.do(d); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path+"2", data, 0o600); !errors.Is(err, tc.wantErrno) {
				t.Errorf("a write on the %s disk: %v, want %v", tc.name, err, tc.wantErrno)
			}
			if got, err := os.ReadFile(path); err != nil || len(got) != len(data) {
				t.Errorf("reading the file written before: %d bytes, %v; want %d", len(got), err, len(data))
			}
			if err := tc.undo(d); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path+"2", data, 0o600); err != nil {
				t.Errorf("a write after undoing the fault: %v", err)
			}
		})
	}
}

func TestFillLeavesWhatItIsAskedAndFreeGivesItBack(t *testing.T) {
	d := Mount(t, 128<<10)
	before, err := d.Available()
	if err != nil {
		t.Fatal(err)
	}
	if before < 64<<10 {
		t.Fatalf("a fresh 128 KiB disk has %d bytes available", before)
	}
	if err := d.Fill(); err != nil {
		t.Fatal(err)
	}
	if got, err := d.Available(); err != nil || got != 0 {
		t.Errorf("available after Fill: %d, %v; want 0", got, err)
	}
	if err := d.Free(); err != nil {
		t.Fatal(err)
	}
	const room = 16 << 10
	if err := d.FillLeaving(room); err != nil {
		t.Fatal(err)
	}
	if got, err := d.Available(); err != nil || got < room {
		t.Errorf("available after FillLeaving(%d): %d, %v; want at least that", room, got, err)
	}
	if err := d.Free(); err != nil {
		t.Fatal(err)
	}
	if got, err := d.Available(); err != nil || got != before {
		t.Errorf("available after Free: %d, %v; want %d", got, err, before)
	}
}

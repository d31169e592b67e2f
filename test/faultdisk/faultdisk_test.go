package faultdisk

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

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

// TestFillKeepsTheDiskFull gives space back on a disk Fill made full, as
// a writer whose rename of a new file over an older one lands just after
// the fill does, and checks that the space is taken again: the writer's
// next file must not fit. Until Free.
func TestFillKeepsTheDiskFull(t *testing.T) {
	d := Mount(t, 256<<10)
	older := filepath.Join(d.Dir, "older")
	if err := os.WriteFile(older, make([]byte, 64<<10), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := d.Fill(); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(older); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(patience)
	for {
		free, err := d.Available()
		if err != nil {
			t.Fatal(err)
		}
		if free == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d bytes free %s after a file on the full disk was removed; want it full again", free, patience)
		}
		time.Sleep(time.Millisecond)
	}
	next := filepath.Join(d.Dir, "next")
	if err := os.WriteFile(next, make([]byte, 4<<10), 0o600); !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("a write on the disk kept full: %v, want %v", err, syscall.ENOSPC)
	}
	if err := d.Free(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(next, make([]byte, 64<<10), 0o600); err != nil {
		t.Errorf("a write after Free: %v", err)
	}
}

// patience bounds what must happen; a loaded machine may be slow.
const patience = 5 * time.Second

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

package faultdisk

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// fillerName is the file Fill grows until the disk is full.
const fillerName = "faultdisk.filler"

// keepEvery is how often a disk Fill made full takes back the space given
// back on it.
const keepEvery = 10 * time.Millisecond

// Disk is a tmpfs mounted for one test.
type Disk struct {
	// Dir is the mount point: the disk's root directory.
	Dir  string
	size int64

	mu       sync.Mutex
	stopKeep chan struct{} // non-nil while Fill keeps the disk full
	kept     chan struct{} // closed when the keeper has ended
	keepErr  error         // the keeper's first error, returned by Free
}

// Mount mounts a tmpfs of size bytes (rounded up to pages by the kernel)
// under t's temporary directory and unmounts it at the end of the test.
// Without the privilege to mount it skips t, saying why; with CI=true it
// fails t instead.
func Mount(t testing.TB, size int64) *Disk {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "disk")
	d, err := MountAt(dir, size)
	switch {
	case errors.Is(err, ErrNoPrivilege):
		why := err.Error()
		if os.Getenv("CI") == "true" {
			t.Fatal(why + " (CI=true: the disk fault tests must run)")
		}
		t.Skip(why)
	case err != nil:
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := d.Unmount(); err != nil {
			t.Errorf("%v", err)
		}
	})
	return d
}

// ErrNoPrivilege is MountAt's error when the process may not mount.
var ErrNoPrivilege = errors.New("faultdisk: mounting a tmpfs needs root (CAP_SYS_ADMIN)")

// MountAt mounts a tmpfs of size bytes on dir (made if missing), for a
// caller without a test, such as a TestMain that shares a cluster between
// tests; Unmount undoes it. Without the privilege to mount it fails with
// an error wrapping ErrNoPrivilege.
func MountAt(dir string, size int64) (*Disk, error) {
	if size <= 0 {
		return nil, fmt.Errorf("faultdisk: size %d, want a positive number of bytes", size)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("faultdisk: %w", err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "size="+strconv.FormatInt(size, 10)); err != nil {
		if errors.Is(err, syscall.EPERM) {
			return nil, fmt.Errorf("%w; running as uid %d: %w", ErrNoPrivilege, os.Getuid(), err)
		}
		return nil, fmt.Errorf("faultdisk: mount a tmpfs on %s: %w", dir, err)
	}
	return &Disk{Dir: dir, size: size}, nil
}

// Unmount unmounts the disk, lazily: a file left open must not fail it.
func (d *Disk) Unmount() error {
	_ = d.stopKeeping()
	if err := syscall.Unmount(d.Dir, syscall.MNT_DETACH); err != nil {
		return fmt.Errorf("faultdisk: unmount %s: %w", d.Dir, err)
	}
	return nil
}

// Fill writes a filler file until the disk has no space left (ENOSPC),
// and keeps the disk full until Free: space given back on it is taken
// again within keepEvery, as a disk filled by another process that goes
// on writing is. Filled only once, a disk under a writer that replaces a
// file by renaming a new one over it has room again as soon as a rename
// lands after the fill (the new file's space was taken before the fill
// ended, the replaced file's is given back after): the writer's next
// file, of about the same size, fits, and so does every one after it.
func (d *Disk) Fill() error {
	if err := d.FillLeaving(0); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stopKeep == nil {
		d.stopKeep, d.kept = make(chan struct{}), make(chan struct{})
		go d.keepFull(d.stopKeep, d.kept)
	}
	return nil
}

// keepFull fills the disk again whenever it has room, until stop.
func (d *Disk) keepFull(stop <-chan struct{}, kept chan<- struct{}) {
	defer close(kept)
	t := time.NewTicker(keepEvery)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		if free, err := d.Available(); err == nil && free == 0 {
			continue
		}
		if err := d.FillLeaving(0); err != nil {
			d.mu.Lock()
			if d.keepErr == nil {
				d.keepErr = err
			}
			d.mu.Unlock()
		}
	}
}

// stopKeeping ends Fill's keeping the disk full, if it does, and returns
// the first error it met.
func (d *Disk) stopKeeping() error {
	d.mu.Lock()
	stop, kept := d.stopKeep, d.kept
	d.stopKeep, d.kept = nil, nil
	d.mu.Unlock()
	if stop == nil {
		return nil
	}
	close(stop)
	<-kept
	d.mu.Lock()
	defer d.mu.Unlock()
	err := d.keepErr
	d.keepErr = nil
	return err
}

// FillLeaving fills the disk and then gives back room bytes (rounded up
// to whole pages, tmpfs's unit), so that a write of more than that runs out
// of space part way.
func (d *Disk) FillLeaving(room int64) error {
	path := filepath.Join(d.Dir, fillerName)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("faultdisk: fill %s: %w", d.Dir, err)
	}
	defer func() { _ = f.Close() }()
	block := make([]byte, 4096)
	for _, n := range []int{4096, 512, 1} {
		for {
			if _, err := f.Write(block[:n]); err != nil {
				if errors.Is(err, syscall.ENOSPC) {
					break
				}
				return fmt.Errorf("faultdisk: fill %s: %w", d.Dir, err)
			}
		}
	}
	if room <= 0 {
		return nil
	}
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("faultdisk: fill %s: %w", d.Dir, err)
	}
	const page = 4096
	room = (room + page - 1) / page * page
	if err := f.Truncate(max(st.Size()-room, 0) / page * page); err != nil {
		return fmt.Errorf("faultdisk: fill %s leaving %d bytes: %w", d.Dir, room, err)
	}
	return nil
}

// Free stops keeping the disk full and removes the filler file, giving
// back what Fill took.
func (d *Disk) Free() error {
	kept := d.stopKeeping()
	if err := os.Remove(filepath.Join(d.Dir, fillerName)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return errors.Join(kept, fmt.Errorf("faultdisk: free %s: %w", d.Dir, err))
	}
	return kept
}

// Available returns the bytes still free on the disk.
func (d *Disk) Available() (int64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(d.Dir, &st); err != nil {
		return 0, fmt.Errorf("faultdisk: statfs %s: %w", d.Dir, err)
	}
	return int64(st.Bavail) * st.Bsize, nil
}

// ReadOnly remounts the disk read-only: every write, create, rename and
// remove on it fails with EROFS; files open for writing stay open.
func (d *Disk) ReadOnly() error {
	return d.remount(syscall.MS_RDONLY)
}

// ReadWrite remounts the disk writable again.
func (d *Disk) ReadWrite() error {
	return d.remount(0)
}

func (d *Disk) remount(flags uintptr) error {
	if err := syscall.Mount("", d.Dir, "", syscall.MS_REMOUNT|syscall.MS_NOSUID|syscall.MS_NODEV|flags, "size="+strconv.FormatInt(d.size, 10)); err != nil {
		return fmt.Errorf("faultdisk: remount %s: %w", d.Dir, err)
	}
	return nil
}

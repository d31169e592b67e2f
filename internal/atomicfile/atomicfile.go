package atomicfile

import (
	"fmt"
	"os"
	"path/filepath"
)

// File is the temporary file that replaces its target on Commit. It embeds
// the *os.File, so it is written (Write, WriteAt) like one.
type File struct {
	*os.File
	path      string
	committed bool
}

// Create creates the temporary file that will replace path, with
// permissions perm (path's directory is created if missing).
func Create(path string, perm os.FileMode) (*File, error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create directory %s: %w", dir, err)
	}
	f, err := os.CreateTemp(dir, base+".*.tmp")
	if err != nil {
		return nil, fmt.Errorf("create temporary file for %s: %w", path, err)
	}
	// CreateTemp always makes the file 0600; the target gets the mode its
	// owner chose (a snapshot stays private, the log's files do not).
	if err := f.Chmod(perm); err != nil {
		_ = f.Close()
		_ = os.Remove(f.Name())
		return nil, fmt.Errorf("create temporary file for %s: %w", path, err)
	}
	return &File{File: f, path: path}, nil
}

// Commit makes the content written so far the content of the target: it
// fsyncs the temporary file, renames it over the target and fsyncs the
// directory. The file stays open (its name is now the target's); the caller
// closes it. After a failed Commit the target is unchanged unless the
// rename happened (then only the directory fsync failed, which the error
// says), and the caller should Abort.
func (f *File) Commit() error {
	if err := f.Sync(); err != nil {
		return fmt.Errorf("fsync %s: %w", f.Name(), err)
	}
	if err := os.Rename(f.Name(), f.path); err != nil {
		return fmt.Errorf("rename %s to %s: %w", f.Name(), f.path, err)
	}
	f.committed = true
	if err := SyncDir(filepath.Dir(f.path)); err != nil {
		return err
	}
	return nil
}

// Abort closes the file and, unless Commit renamed it, removes it. It is
// harmless after Commit and Close (a deferred Abort is the usual pattern).
func (f *File) Abort() {
	_ = f.File.Close()
	if !f.committed {
		_ = os.Remove(f.Name())
	}
}

// WriteFile replaces path's content with data atomically (Create, Write,
// Commit, Close), the file's permissions perm.
func WriteFile(path string, data []byte, perm os.FileMode) error {
	f, err := Create(path, perm)
	if err != nil {
		return err
	}
	defer f.Abort()
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", f.Name(), err)
	}
	if err := f.Commit(); err != nil {
		return err
	}
	if err := f.File.Close(); err != nil {
		return fmt.Errorf("close %s: %w", f.path, err)
	}
	return nil
}

// SyncDir fsyncs a directory, making the names created or renamed in it
// durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open directory %s for fsync: %w", dir, err)
	}
	defer func() { _ = d.Close() }()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("fsync directory %s: %w", dir, err)
	}
	return nil
}

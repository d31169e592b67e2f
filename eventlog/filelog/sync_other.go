//go:build !linux

package filelog

import "os"

// fdatasync falls back to fsync (os.File.Sync) where fdatasync is not
// available; on macOS that is F_FULLFSYNC.
func fdatasync(f *os.File) error { return f.Sync() }

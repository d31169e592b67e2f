//go:build !unix

package filelog

import (
	"fmt"
	"os"
)

// lockDir only creates the lock file where flock is not available: a
// second process is not kept out.
func lockDir(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("filelog: opening lock file: %w", err)
	}
	return f, nil
}

func unlockDir(f *os.File) error { return f.Close() }

package server

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// LockFileName is the lock file LockDir keeps in the data directory.
const LockFileName = "rlmm-serve.lock"

// DirLock is an exclusive hold of a data (snapshot) directory.
type DirLock struct {
	f *os.File
	// ReadOnly says the directory's file system was read-only: the
	// existing lock file is locked, but this process's id could not be
	// written into it.
	ReadOnly bool
}

// LockDir takes an exclusive flock on dir/LockFileName (created with mode
// 0600 if missing, dir too with 0700) and writes this process's id into it.
// A directory another process holds fails with an *InUseError naming its
// pid. The kernel drops the lock when the process dies, so a crash never
// leaves a stale lock.
//
// The lock is held on a descriptor open for reading only (flock needs no
// write access; the id is written through another, closed at once), so a
// holder keeps no file of the directory open for writing, and the lock
// works on a read-only file system (a snapshot disk remounted read-only
// after an error): a server restarted then still serves, replaying what
// its last snapshot lacks, and writes snapshots again once the directory
// is writable (DirLock.ReadOnly says so). Only a read-only directory that
// never held a lock file is refused.
func LockDir(dir string) (*DirLock, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil && !errors.Is(err, syscall.EROFS) {
		return nil, fmt.Errorf("server: data directory: %w", err)
	}
	path := filepath.Join(dir, LockFileName)
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE, 0o600)
	if errors.Is(err, syscall.EROFS) {
		return nil, fmt.Errorf("server: data directory %s is read-only and holds no lock file %s to lock: %w", dir, LockFileName, err)
	}
	if err != nil {
		return nil, fmt.Errorf("server: opening lock file: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			e := &InUseError{What: "data directory " + dir, Detail: "lock file " + path + " is locked"}
			if b, rerr := os.ReadFile(path); rerr == nil {
				e.Pid, _ = strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
			}
			return nil, e
		}
		return nil, fmt.Errorf("server: locking %s: %w", path, err)
	}
	// Written only while holding the lock, so the id in the file is the
	// holder's.
	l := &DirLock{f: f}
	if err := os.WriteFile(path, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o600); errors.Is(err, syscall.EROFS) {
		l.ReadOnly = true
	}
	return l, nil
}

// Close releases the lock (the file stays: removing it would let two
// processes lock two different files of the same name).
func (l *DirLock) Close() error {
	err := syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	return err
}

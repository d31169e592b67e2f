// Package faultdisk gives a test a small disk of its own that it can fill,
// free, and remount read-only and back: a tmpfs mounted under the test's
// temporary directory. The fault tests put a snapshot directory on it to
// check what rlmm does when the disk of its snapshots is full or read-only
// (keep serving, count and log the failed write, never leave a partial
// file, write the next snapshot when the disk is back). A disk Fill made
// full stays full until Free, as one another process keeps writing to
// does: space given back on it (a replaced file's) is taken again at once.
//
// A tmpfs is chosen over a loop device or a FUSE file system because it
// needs nothing but the mount system call, fills exactly at its size, and
// vanishes with its unmount. Mounting needs root (CAP_SYS_ADMIN): without
// it Mount skips the test saying why, and under CI=true (where the tests
// run as root) fails it instead.
package faultdisk

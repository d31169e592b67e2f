//go:build !linux

package memory

// prefault does nothing where the kernel offers no bulk population of
// pages (see prefault_linux.go).
func prefault[T any](s []T) {}

package server

import "fmt"

// InUseError reports a socket or data directory held by another live
// server, naming the holder's process id when it could be learned.
type InUseError struct {
	// What is held: "socket PATH" or "data directory DIR".
	What string
	// Pid is the holder's process id, 0 when unknown.
	Pid int64
	// Detail says how the holder was found.
	Detail string
}

// Error names what is held and by whom.
func (e *InUseError) Error() string {
	holder := "another process"
	if e.Pid > 0 {
		holder = fmt.Sprintf("another rlmm serve (pid %d)", e.Pid)
	}
	return fmt.Sprintf("%s is held by %s: %s; stop it or choose another", e.What, holder, e.Detail)
}

package server

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/rpc/brokerframe"
	"github.com/rlmm-go/rlmm/rpc/rlmmpb"
)

// MaxSocketPath is the longest Unix socket path Linux accepts (sun_path is
// 108 bytes with its terminating NUL).
const MaxSocketPath = 107

// probeTimeout bounds the check of whether a socket file has a live server.
const probeTimeout = 2 * time.Second

// umaskMu serializes the process-wide umask change of ListenUnix.
var umaskMu sync.Mutex

// ListenUnix listens on a Unix socket at path, created with mode 0600 so
// only this user can call. A socket file already there is probed: if a
// server answers, ListenUnix fails with an *InUseError naming it (and its
// pid, from ServerInfo); if nothing answers, the stale file is removed. A
// path that exists and is not a socket is refused.
func ListenUnix(ctx context.Context, path string) (*net.UnixListener, error) {
	if path == "" {
		return nil, fmt.Errorf("%w: the socket path is empty", rlmm.ErrInvalidArgument)
	}
	if len(path) > MaxSocketPath {
		return nil, fmt.Errorf("%w: socket path %s is %d bytes, longer than the %d a Unix socket allows; choose a shorter one",
			rlmm.ErrInvalidArgument, path, len(path), MaxSocketPath)
	}
	if err := removeStale(ctx, path); err != nil {
		return nil, err
	}
	umaskMu.Lock()
	old := syscall.Umask(0o177) // the socket is created 0600, with no window
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	syscall.Umask(old)
	umaskMu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("server: listening on socket %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		l.Close()
		return nil, fmt.Errorf("server: socket %s: %w", path, err)
	}
	return l, nil
}

// removeStale removes a socket file nobody answers on; one that answers is
// an *InUseError.
func removeStale(ctx context.Context, path string) error {
	st, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("server: socket %s: %w", path, err)
	}
	if st.Mode().Type() != fs.ModeSocket {
		return fmt.Errorf("%w: socket path %s exists and is not a socket (%s); remove it or choose another",
			rlmm.ErrInvalidArgument, path, st.Mode().Type())
	}
	d := net.Dialer{Timeout: probeTimeout}
	c, err := d.DialContext(ctx, "unix", path)
	if err == nil {
		c.Close()
		e := &InUseError{What: "socket " + path, Detail: "a server accepts connections on it"}
		e.Pid = probePid(ctx, path)
		return e
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		return fmt.Errorf("server: socket %s exists and cannot be checked (%w); remove it if no server uses it", path, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("server: removing the stale socket %s: %w", path, err)
	}
	return nil
}

// probePid asks the server on path for its pid, with a broker hello (0 if
// it does not say: a server of another version refuses the hello).
func probePid(ctx context.Context, path string) int64 {
	d := net.Dialer{Timeout: probeTimeout}
	c, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return 0
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(probeTimeout))
	hello, err := brokerframe.AppendHello(nil, brokerframe.Version, &rlmmpb.BrokerHello{Purpose: rlmmpb.Purpose_PURPOSE_READ, ClientPid: int64(os.Getpid())})
	if err != nil {
		return 0
	}
	if _, err := c.Write(brokerframe.Append(nil, hello)); err != nil {
		return 0
	}
	answer, err := brokerframe.ReadFrame(c, nil, brokerframe.MaxReply)
	if err != nil {
		return 0
	}
	info, err := brokerframe.ParseAnswer(answer, brokerframe.Version)
	if err != nil {
		return 0
	}
	return info.GetPid()
}

// ListenTCP listens on a TCP address. Unless allowRemote, the host must be
// a loopback address (127.0.0.0/8, ::1, or "localhost"); an empty host is
// refused (it would bind every interface).
func ListenTCP(addr string, allowRemote bool) (net.Listener, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("%w: TCP address %q: %w", rlmm.ErrInvalidArgument, addr, err)
	}
	if !allowRemote && !isLoopback(host) {
		return nil, fmt.Errorf("%w: TCP address %s is not a loopback address; give 127.0.0.1:PORT, or allow remote callers explicitly",
			rlmm.ErrInvalidArgument, addr)
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("server: listening on %s: %w", addr, err)
	}
	return l, nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.IsLoopback()
}

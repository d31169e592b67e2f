package server

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlmm-go/rlmm"
)

func TestSocketMode0600(t *testing.T) {
	f := newFixture(t, fixtureOpts{noManager: true})
	st, err := os.Stat(f.socket)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Type() != os.ModeSocket || st.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode %s, want a socket with 0600", st.Mode())
	}
}

func TestSecondServerOnSocketRefused(t *testing.T) {
	f := newFixture(t, fixtureOpts{noManager: true})
	_, err := ListenUnix(testCtx(t), f.socket)
	var inUse *InUseError
	if !errors.As(err, &inUse) {
		t.Fatalf("second listen: %v, want an *InUseError", err)
	}
	if inUse.Pid != int64(os.Getpid()) || !strings.Contains(err.Error(), f.socket) {
		t.Fatalf("error %q (pid %d) does not name the socket and the holder pid %d", err, inUse.Pid, os.Getpid())
	}
	// The first server still answers.
	if _, err := f.client.ServerInfo(testCtx(t)); err != nil {
		t.Fatal(err)
	}
}

func TestStaleSocketRemoved(t *testing.T) {
	path := filepath.Join(shortDir(t), "stale.sock")
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	l.SetUnlinkOnClose(false)
	l.Close() // the file stays, nobody listens: a crashed server's socket
	if _, err := os.Lstat(path); err != nil {
		t.Fatal(err)
	}
	l2, err := ListenUnix(testCtx(t), path)
	if err != nil {
		t.Fatalf("listen over a stale socket: %v", err)
	}
	l2.Close()
}

func TestSocketPathRefusals(t *testing.T) {
	dir := shortDir(t)
	regular := filepath.Join(dir, "file")
	if err := os.WriteFile(regular, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	long := "/tmp/" + strings.Repeat("x", MaxSocketPath)
	tests := []struct{ name, path, want string }{
		{"not a socket", regular, "is not a socket"},
		{"too long", long, "longer than the 107"},
		{"empty", "", "empty"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ListenUnix(testCtx(t), tc.path)
			if !errors.Is(err, rlmm.ErrInvalidArgument) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.path) {
				t.Fatalf("got %v, want ErrInvalidArgument naming %q and saying %q", err, tc.path, tc.want)
			}
		})
	}
	if _, err := os.ReadFile(regular); err != nil {
		t.Fatalf("the regular file was touched: %v", err)
	}
}

func TestSecondServerOnDataDirRefused(t *testing.T) {
	dir := shortDir(t)
	l, err := LockDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = LockDir(dir)
	var inUse *InUseError
	if !errors.As(err, &inUse) || inUse.Pid != int64(os.Getpid()) || !strings.Contains(err.Error(), dir) {
		t.Fatalf("second lock: %v, want an *InUseError naming %s and pid %d", err, dir, os.Getpid())
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l, err = LockDir(dir)
	if err != nil {
		t.Fatalf("lock after release: %v", err)
	}
	l.Close()
}

func TestListenTCPLoopbackOnly(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "10.1.2.3:0", "[::]:0", "example.com:0"} {
		if _, err := ListenTCP(addr, false); !errors.Is(err, rlmm.ErrInvalidArgument) {
			t.Errorf("%s: %v, want refused", addr, err)
		}
	}
	for _, addr := range []string{"127.0.0.1:0", "localhost:0"} {
		l, err := ListenTCP(addr, false)
		if err != nil {
			t.Fatalf("%s: %v", addr, err)
		}
		l.Close()
	}
}

package faultnet

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// peerPid returns the id of the process that owns the client end of a
// connection accepted on 127.0.0.1: the socket whose local address is
// client and whose peer is server, found in /proc/net/tcp (or tcp6, for a
// JVM's dual-stack socket) and then among the processes' descriptors. It
// is how a proxy tells which node a connection comes from, though every
// node reaches a listener at the same address.
func peerPid(client, server *net.TCPAddr) (int, error) {
	inode, err := socketInode(client, server)
	if err != nil {
		return 0, err
	}
	target := "socket:[" + inode + "]"
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		dir := filepath.Join("/proc", p.Name(), "fd")
		fds, err := os.ReadDir(dir)
		if err != nil {
			continue // gone, or not ours to read
		}
		for _, fd := range fds {
			if l, err := os.Readlink(filepath.Join(dir, fd.Name())); err == nil && l == target {
				return pid, nil
			}
		}
	}
	return 0, fmt.Errorf("faultnet: no process holds the socket %s -> %s (inode %s)", client, server, inode)
}

// socketInode finds the inode of the socket from local to remote.
func socketInode(local, remote *net.TCPAddr) (string, error) {
	for _, table := range []struct {
		path string
		enc  func(*net.TCPAddr) string
	}{{"/proc/net/tcp", procAddr4}, {"/proc/net/tcp6", procAddr6}} {
		f, err := os.Open(table.path)
		if err != nil {
			continue
		}
		l, r := table.enc(local), table.enc(remote)
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) > 9 && fields[1] == l && fields[2] == r {
				_ = f.Close()
				return fields[9], nil
			}
		}
		_ = f.Close()
	}
	return "", fmt.Errorf("faultnet: no socket %s -> %s in /proc/net/tcp or tcp6", local, remote)
}

// procAddr4 is an IPv4 address as /proc/net/tcp writes it: the address as
// a little-endian 32-bit word in hex, a colon, the port in hex.
func procAddr4(a *net.TCPAddr) string {
	ip := a.IP.To4()
	if ip == nil {
		return ""
	}
	return fmt.Sprintf("%08X:%04X", binary.LittleEndian.Uint32(ip), a.Port)
}

// procAddr6 is an address as /proc/net/tcp6 writes it (an IPv4 one as its
// v4-mapped IPv6 form): four little-endian 32-bit words in hex.
func procAddr6(a *net.TCPAddr) string {
	ip := a.IP.To16()
	if ip == nil {
		return ""
	}
	var b strings.Builder
	for i := 0; i < 16; i += 4 {
		fmt.Fprintf(&b, "%08X", binary.LittleEndian.Uint32(ip[i:i+4]))
	}
	return fmt.Sprintf("%s:%04X", b.String(), a.Port)
}

package kafkatest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// process is a broker JVM this package launched (or found by its pid file,
// for the command's stop and status). Each JVM leads its own process group,
// which its children (the plugin's `rlmm serve`) join: stopping a node
// ends the group's members too, each by its pid. No goroutine waits for
// it: alive reaps a child that exited (wait4 with WNOHANG), so a test's
// leak check sees nothing of a broker that outlives the test.
type process struct {
	pid int
	// child is this process's child, nil for a process it did not start
	// (then its exit is seen in /proc).
	child *os.Process

	mu     sync.Mutex
	exited bool // the child was reaped
	status int  // its exit status once reaped: the code, 128+N for signal N; -1 when not known
}

// launch starts argv with its output appended to out, in its own process
// group. Unless detached, the kernel sends it SIGKILL when this process
// dies (PR_SET_PDEATHSIG), however it dies: a test binary killed by its
// timeout leaves no broker. The signal follows the OS thread that forked,
// and the Go runtime ends a thread only under a goroutine that locked it
// and returned: no code here locks one.
func launch(argv []string, dir, out string, env []string, detached bool) (*process, error) {
	f, err := os.OpenFile(out, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir, cmd.Stdout, cmd.Stderr, cmd.Env = dir, f, f, env
	if detached {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	} else {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &process{pid: cmd.Process.Pid}
	if detached {
		_ = cmd.Process.Release()
		return p, nil
	}
	p.child = cmd.Process
	return p, nil
}

// alive reports whether the process still runs (a zombie does not: a
// child that exited is reaped here).
func (p *process) alive() bool {
	if p.child == nil {
		return pidAlive(p.pid)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.exited {
		return false
	}
	var ws syscall.WaitStatus
	got, err := syscall.Wait4(p.pid, &ws, syscall.WNOHANG, nil)
	if got == p.pid || errors.Is(err, syscall.ECHILD) {
		p.exited, p.status = true, -1
		if got == p.pid {
			p.status = exitStatus(ws)
		}
		_ = p.child.Release()
		return false
	}
	return true
}

// exitStatus is a reaped process's status as a shell reports it: its exit
// code, or 128+N when signal N ended it.
func exitStatus(ws syscall.WaitStatus) int {
	if ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ws.ExitStatus()
}

// exitCode waits until the process has exited (at most until ctx ends) and
// returns its exit status; -1 when it is not known (a process this package
// did not start).
func (p *process) exitCode(ctx context.Context) (int, error) {
	for p.alive() {
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	if p.child == nil {
		return -1, nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.status, nil
}

// signal sends sig to the process alone.
func (p *process) signal(sig syscall.Signal) error {
	if !p.alive() {
		return fmt.Errorf("process %d is not running", p.pid)
	}
	return syscall.Kill(p.pid, sig)
}

// wait waits until the process has exited or d passes.
func (p *process) wait(d time.Duration) bool {
	deadline := time.Now().Add(d)
	for p.alive() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}

// stop sends SIGTERM (and SIGCONT, so a paused process can act on it),
// then SIGKILL after grace, and waits until the process is gone; then the
// members of its group get the same, with a few seconds of grace (a
// sidecar ends by itself when its broker's pipe closes).
func (p *process) stop(grace time.Duration) {
	if p.alive() {
		_ = syscall.Kill(p.pid, syscall.SIGTERM)
		_ = syscall.Kill(p.pid, syscall.SIGCONT)
		if !p.wait(grace) {
			_ = syscall.Kill(p.pid, syscall.SIGKILL)
			p.wait(time.Minute)
		}
	}
	endGroup(p.pid, 5*time.Second)
}

// kill sends SIGKILL and waits until the process is gone; the group's
// other members are left to act as they would (the fault a test asks for).
func (p *process) kill() {
	if p.alive() {
		_ = syscall.Kill(p.pid, syscall.SIGKILL)
		p.wait(time.Minute)
	}
}

// endGroup ends the members of process group pgid: SIGTERM (and SIGCONT),
// then SIGKILL to those left after grace, each by its pid.
func endGroup(pgid int, grace time.Duration) {
	members := groupMembers(pgid)
	if len(members) == 0 {
		return
	}
	for _, pid := range members {
		_ = syscall.Kill(pid, syscall.SIGTERM)
		_ = syscall.Kill(pid, syscall.SIGCONT)
	}
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) && len(groupMembers(pgid)) > 0 {
		time.Sleep(50 * time.Millisecond)
	}
	for _, pid := range groupMembers(pgid) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// groupMembers lists the live (not zombie) processes of group pgid, from
// /proc.
func groupMembers(pgid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if g, state, ok := procStat(pid); ok && g == pgid && state != "Z" && state != "X" {
			out = append(out, pid)
		}
	}
	return out
}

// procStat reads a process's group and state from /proc/PID/stat.
func procStat(pid int) (pgid int, state string, ok bool) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, "", false
	}
	return parseStat(string(b))
}

// parseStat reads the group and state of a /proc/PID/stat line:
// "pid (comm) state ppid pgrp ...", where comm may hold spaces and
// parentheses.
func parseStat(s string) (pgid int, state string, ok bool) {
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, "", false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 3 {
		return 0, "", false
	}
	g, err := strconv.Atoi(f[2])
	if err != nil {
		return 0, "", false
	}
	return g, f[0], true
}

// ProcessRunning reports whether pid runs (a zombie, dead but not yet
// reaped by its parent, does not): what a test checks for leftovers.
func ProcessRunning(pid int) bool { return pidAlive(pid) }

// pidAlive reports whether pid runs and is not a zombie.
func pidAlive(pid int) bool {
	if pid <= 0 || syscall.Kill(pid, 0) != nil {
		return false
	}
	_, state, ok := procStat(pid)
	return ok && state != "Z" && state != "X"
}

// findBroker returns the process of the pid file if it runs a broker of
// the server.properties file props (a stale pid file may name a pid the
// system gave to another process).
func findBroker(pidFile, props string) (*process, error) {
	b, err := os.ReadFile(pidFile)
	if err != nil {
		return nil, err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", pidFile, err)
	}
	cmdline, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	if err != nil || !pidAlive(pid) {
		return nil, fmt.Errorf("pid %d of %s: %w", pid, pidFile, os.ErrNotExist)
	}
	args := strings.Split(string(cmdline), "\x00")
	if !containsAll(args, "kafka.Kafka", props) {
		return nil, fmt.Errorf("pid %d of %s is not the broker of %s: %w", pid, pidFile, props, os.ErrNotExist)
	}
	return &process{pid: pid}, nil
}

func containsAll(args []string, want ...string) bool {
	for _, w := range want {
		found := false
		for _, a := range args {
			if a == w {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// runTool runs a short-lived command (the storage tool), named name in
// errors (its arguments may hold passwords), its output into the file out,
// and fails with the output's tail.
func runTool(ctx context.Context, name string, argv []string, dir, out string, env []string) error {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = dir, env
	b, err := cmd.CombinedOutput()
	_ = os.WriteFile(out, b, 0o600)
	if err != nil {
		return fmt.Errorf("%s: %w\n%s", name, err, tail(string(b), 30))
	}
	return nil
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/rlmm-go/rlmm/rpc/brokerframe"
	"github.com/rlmm-go/rlmm/rpc/rlmmpb"
)

// Linked in at build time (-ldflags -X): the real rlmm binary and how long
// each assignment change is held back.
var (
	rlmm  string
	delay = "0s"
)

// dialPatience bounds how long a plugin connection waits for the real
// server's socket to accept (it starts behind this process's).
const dialPatience = time.Minute

func main() {
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil)).With("seam", "assigndelay")
	code, err := run(logger, os.Args[1:])
	if err != nil {
		logger.Error("assigndelay: " + err.Error())
	}
	os.Exit(code)
}

func run(logger *slog.Logger, args []string) (int, error) {
	hold, err := time.ParseDuration(delay)
	if err != nil || rlmm == "" {
		return 2, fmt.Errorf("built without -X main.rlmm and a valid -X main.delay (rlmm %q, delay %q)", rlmm, delay)
	}
	socket, realArgs, err := replaceSocket(args)
	if err != nil {
		return 2, err
	}
	real := filepath.Join(filepath.Dir(socket), "real.sock")
	realArgs = replaceValue(realArgs, "--socket", real)

	cmd := exec.Command(rlmm, realArgs...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return 2, err
	}
	if err := cmd.Start(); err != nil {
		return 2, fmt.Errorf("starting %s: %w", rlmm, err)
	}
	go func() {
		// Our stdin's end (the plugin gone) is the server's.
		_, _ = io.Copy(stdin, os.Stdin)
		stdin.Close()
	}()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		for s := range sigs {
			_ = cmd.Process.Signal(s)
		}
	}()

	_ = os.Remove(socket)
	l, err := net.Listen("unix", socket)
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return 2, fmt.Errorf("listening on %s: %w", socket, err)
	}
	_ = os.Chmod(socket, 0o600)
	logger.Info("assigndelay: forwarding, holding back each assignment change", "socket", socket, "server_socket", real,
		"delay", hold, "server_pid", cmd.Process.Pid)
	go accept(logger, l, real, hold)

	err = cmd.Wait()
	l.Close()
	_ = os.Remove(socket)
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, nil
	case errors.As(err, &exit) && exit.ExitCode() >= 0:
		return exit.ExitCode(), nil
	default:
		return 2, fmt.Errorf("rlmm serve pid %d: %w", cmd.Process.Pid, err)
	}
}

// replaceSocket returns --socket's value (required) and the arguments.
func replaceSocket(args []string) (string, []string, error) {
	for i, a := range args {
		if a == "--socket" && i+1 < len(args) {
			return args[i+1], append([]string(nil), args...), nil
		}
	}
	return "", nil, fmt.Errorf("no --socket PATH among the arguments %q", args)
}

// replaceValue sets the value following flag in args.
func replaceValue(args []string, flag, value string) []string {
	for i, a := range args {
		if a == flag && i+1 < len(args) {
			args[i+1] = value
		}
	}
	return args
}

// accept forwards every connection until l is closed.
func accept(logger *slog.Logger, l net.Listener, real string, hold time.Duration) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		go forward(logger, c, real, hold)
	}
}

// forward joins the plugin's connection c to one of the server's. The
// hello and its answer go first, the answer (and every ServerInfo reply
// after it) naming this process's pid, which the plugin checks against its
// child's. Then the server's frames go back as they are, and the plugin's
// go on one by one, an assignment change after hold.
func forward(logger *slog.Logger, c net.Conn, real string, hold time.Duration) {
	defer c.Close()
	var s net.Conn
	for deadline := time.Now().Add(dialPatience); ; {
		var err error
		if s, err = net.Dial("unix", real); err == nil {
			break
		}
		if time.Now().After(deadline) {
			logger.Warn("assigndelay: the server's socket does not accept", "error", err)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	defer s.Close()
	r, sr := bufio.NewReader(c), bufio.NewReader(s)
	hello, err := brokerframe.ReadFrame(r, nil, brokerframe.MaxHello)
	if err != nil {
		return
	}
	h, _, err := brokerframe.ParseHello(hello, brokerframe.Version)
	if err != nil {
		logger.Warn("assigndelay: a hello this seam does not read; passing it on", "error", err)
	}
	if _, err := s.Write(brokerframe.Append(nil, hello)); err != nil {
		return
	}
	answer, err := brokerframe.ReadFrame(sr, nil, brokerframe.MaxReply)
	if err != nil {
		return
	}
	if info, err := brokerframe.ParseAnswer(answer, brokerframe.Version); err == nil {
		info.Pid = int64(os.Getpid())
		if a, err := brokerframe.AppendAnswer(nil, brokerframe.Version, &rlmmpb.BrokerAnswer{Server: info}); err == nil {
			answer = a
		}
	}
	if _, err := c.Write(brokerframe.Append(nil, answer)); err != nil {
		return
	}
	go func() {
		defer c.Close() // ends the reads below
		if h.GetPurpose() != rlmmpb.Purpose_PURPOSE_READ {
			_, _ = io.Copy(c, sr)
			return
		}
		for {
			body, err := brokerframe.ReadFrame(sr, nil, brokerframe.MaxReply)
			if err != nil {
				return
			}
			var reply rlmmpb.BrokerReply
			if proto.Unmarshal(body, &reply) == nil && reply.GetServerInfo() != nil {
				reply.GetServerInfo().Pid = int64(os.Getpid())
				if b, err := proto.Marshal(&reply); err == nil {
					body = b
				}
			}
			if _, err := c.Write(brokerframe.Append(nil, body)); err != nil {
				return
			}
		}
	}()
	var buf []byte
	for {
		body, err := brokerframe.ReadFrame(r, buf, brokerframe.MaxRequest)
		if err != nil {
			return
		}
		buf = body[:0]
		var req rlmmpb.BrokerRequest
		if proto.Unmarshal(body, &req) == nil && (req.GetLeadershipChanges() != nil || req.GetStopPartitions() != nil) {
			logger.Warn("assigndelay: holding back an assignment change", "delay", hold, "id", req.GetId(),
				"leaders", len(req.GetLeadershipChanges().GetLeaders()), "followers", len(req.GetLeadershipChanges().GetFollowers()),
				"stopped", len(req.GetStopPartitions().GetPartitions()))
			time.Sleep(hold)
		}
		if _, err := s.Write(brokerframe.Append(nil, body)); err != nil {
			return
		}
	}
}

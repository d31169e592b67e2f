package brokertest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/rlmm-go/rlmm/rpc/brokerframe"
	"github.com/rlmm-go/rlmm/rpc/rlmmpb"
	"github.com/rlmm-go/rlmm/test/kafkatest"
)

// The plugin fails loudly (issue 30, plugin/README.md "Failing loudly"): a
// real Kafka broker JVM with rlmm's plugin exits with status 1 when its
// child refuses its settings, when the server speaks another API version,
// and when the first child is not ready within rlmm.serve.init.timeout.ms,
// each logging the reason at ERROR. The broker runs through test/kafkatest,
// which started its JVM and so reads its exit status; the two children that
// are not rlmm serve are this test binary (failLoudChild below), named in
// rlmm.serve.binary and told what to be by a flag in rlmm.serve.args.

// failLoudFlag, among a child's flags, makes this test binary that child.
const failLoudFlag = "--failloud-child="

// The children failLoudChild can be.
const (
	childOtherVersion = "other-version" // answers every hello as a server of the next API version
	childSilent       = "silent"        // accepts connections and never answers
)

// init turns this test binary into a stand-in for `rlmm serve` when the
// plugin starts it as its child (os.Args: serve --socket PATH ... FLAG).
func init() {
	if len(os.Args) < 2 || os.Args[1] != "serve" {
		return
	}
	for _, a := range os.Args[2:] {
		if kind, ok := strings.CutPrefix(a, failLoudFlag); ok {
			err := failLoudChild(kind, os.Args[2:])
			fmt.Fprintln(os.Stderr, "failloud child:", err)
			os.Exit(2)
		}
	}
}

// failLoudChild serves the plugin's socket as kind until its stdin (a pipe
// from the broker, --exit-with-stdin) ends, then exits 0.
func failLoudChild(kind string, args []string) error {
	var socket string
	for i, a := range args {
		if a == "--socket" && i+1 < len(args) {
			socket = args[i+1]
		}
	}
	if socket == "" {
		return errors.New("no --socket")
	}
	_ = os.Remove(socket)
	l, err := net.Listen("unix", socket)
	if err != nil {
		return err
	}
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}()
	fmt.Fprintf(os.Stderr, "level=INFO msg=\"failloud child %s on %s\"\n", kind, socket)
	for {
		c, err := l.Accept()
		if err != nil {
			return err
		}
		switch kind {
		case childSilent:
			go func() { _, _ = io.Copy(io.Discard, c) }() // reads the hello, never answers
		case childOtherVersion:
			go answerOtherVersion(c)
		default:
			return fmt.Errorf("unknown kind %q", kind)
		}
	}
}

// answerOtherVersion reads the hello and answers it as an rlmm serve of the
// next API version would, accepting it and saying who it is.
func answerOtherVersion(c net.Conn) {
	defer func() { _ = c.Close() }()
	if _, err := brokerframe.ReadFrame(c, nil, brokerframe.MaxHello); err != nil {
		return
	}
	const v = brokerframe.Version + 1
	body, err := brokerframe.AppendAnswer(nil, v, &rlmmpb.BrokerAnswer{Server: &rlmmpb.ServerInfoReply{
		Pid: int64(os.Getpid()), ApiVersion: v, StartedUnixMs: time.Now().UnixMilli(), Log: "failloud child"}})
	if err != nil {
		return
	}
	_, _ = c.Write(brokerframe.Append(nil, body))
	_, _ = io.Copy(io.Discard, c)
}

// TestFailLoudly: each case starts one broker with rlmm's plugin and waits
// for its JVM to exit by itself: status 1, and the reason in its log.
func TestFailLoudly(t *testing.T) {
	if requireMode(t) != modeRlmm {
		t.Skip("failing loudly is a promise of rlmm's plugin: RLMM_BROKER_TEST=rlmm (make broker-test)")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	version := kafkaVersion()
	tests := []struct {
		name   string
		binary string // rlmm.serve.binary; "" for the rlmm the harness builds
		extra  string // more server.properties lines
		want   []string
	}{
		{
			name:  "a setting the child refuses",
			extra: "rlmm.config.remote.log.metadata.no.such.setting=1",
			want:  []string{"rlmm serve refused its settings (exit code 3)", "remote.log.metadata.no.such.setting"},
		},
		{
			name:   "a server of another API version",
			binary: self,
			extra:  "rlmm.config.rlmm.serve.args=" + failLoudFlag + childOtherVersion,
			want: []string{fmt.Sprintf("speaks version %d of the broker frames, but this plugin speaks version %d",
				brokerframe.Version+1, brokerframe.Version)},
		},
		{
			name:   "a first child not ready within the init timeout",
			binary: self,
			extra: "rlmm.config.rlmm.serve.args=" + failLoudFlag + childSilent + "\n" +
				"rlmm.config.rlmm.serve.init.timeout.ms=5000",
			want: []string{"did not become ready within 5000 ms of configure (rlmm.serve.init.timeout.ms)"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := kafkatest.StartT(t, kafkatest.Config{
				Version: version, Tiered: true, RLMM: kafkatest.RLMMPlugin, PluginJar: pluginJar,
				RLMMBinary: tt.binary, Extra: tt.extra, NoReadyWait: true, StopTimeout: 10 * time.Second,
			}, 5*time.Minute)
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			status, err := c.Node(1).Wait(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if status != 1 {
				t.Errorf("the broker JVM exited with status %d, want 1", status)
			}
			log, err := os.ReadFile(c.Node(1).LogFile())
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range append([]string{"stopping the broker (exit status 1)"}, tt.want...) {
				if !strings.Contains(string(log), want) {
					t.Errorf("the broker's log does not say %q", want)
				}
			}
			if t.Failed() {
				t.Logf("the end of %s:\n%s", c.Node(1).LogFile(), failLoudTail(string(log), 40))
			}
		})
	}
}

// failLoudTail is the last n lines of s.
func failLoudTail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

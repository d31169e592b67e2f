package kafkatest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Node is one KRaft node of a Cluster: a broker, and for the first
// Config.Controllers nodes also a controller voter. Its directory holds
// server.properties and log4j2.properties (written at each start),
// data/ (kept across restarts), broker.log (log4j), broker.out (the JVM's
// stdout and stderr), format.log and pid.
type Node struct {
	c      *Cluster
	layout nodeLayout
	proc   *process // nil when not running (as far as this process knows)
	paused bool
}

// ID is the node's node.id (1-based).
func (n *Node) ID() int { return n.layout.ID }

// Dir is the node's directory.
func (n *Node) Dir() string { return n.layout.Dir }

// Controller reports whether the node is a controller voter.
func (n *Node) Controller() bool { return n.layout.Controller }

// Address returns a listener's addresses (ListenerPlaintext,
// ListenerController, ListenerSecure); false when the node has no such
// listener.
func (n *Node) Address(listener string) (Address, bool) {
	a, ok := n.layout.Listeners[listener]
	return a, ok
}

// LogFile is the node's log4j log.
func (n *Node) LogFile() string { return filepath.Join(n.layout.Dir, "broker.log") }

// OutFile is where the JVM's stdout and stderr go.
func (n *Node) OutFile() string { return filepath.Join(n.layout.Dir, "broker.out") }

// PropertiesFile is the node's server.properties.
func (n *Node) PropertiesFile() string { return filepath.Join(n.layout.Dir, "server.properties") }

func (n *Node) pidFile() string { return filepath.Join(n.layout.Dir, "pid") }

// PID is the broker JVM's pid, 0 when it does not run.
func (n *Node) PID() int {
	n.c.mu.Lock()
	defer n.c.mu.Unlock()
	if n.proc == nil || !n.proc.alive() {
		return 0
	}
	return n.proc.pid
}

// GroupPIDs are the live processes of the node's process group: the
// broker JVM (while it runs) and its children, such as the plugin's
// `rlmm serve` (which may outlive a JVM killed by Kill until it sees its
// pipe close). A fault test pauses or kills a sidecar by these.
func (n *Node) GroupPIDs() []int {
	n.c.mu.Lock()
	defer n.c.mu.Unlock()
	if n.proc == nil {
		return nil
	}
	return groupMembers(n.proc.pid)
}

// Wait waits until the broker JVM exits by itself (at most until ctx
// ends) and returns its exit status: its exit code, or 128+N when signal N
// ended it. A test of a broker that is to stop itself (Config.NoReadyWait)
// asserts the status with it.
func (n *Node) Wait(ctx context.Context) (int, error) {
	n.c.mu.Lock()
	p := n.proc
	n.c.mu.Unlock()
	if p == nil {
		return 0, fmt.Errorf("kafkatest: node %d was not started", n.ID())
	}
	code, err := p.exitCode(ctx)
	if err != nil {
		return 0, fmt.Errorf("kafkatest: node %d still runs: %w", n.ID(), err)
	}
	return code, nil
}

// Running reports whether the broker JVM runs.
func (n *Node) Running() bool { return n.PID() != 0 }

// Paused reports whether Pause stopped the JVM and Resume has not yet
// continued it.
func (n *Node) Paused() bool {
	n.c.mu.Lock()
	defer n.c.mu.Unlock()
	return n.paused
}

// writeConfig writes the node's server.properties and log4j2.properties
// from the cluster's current settings.
func (n *Node) writeConfig() error {
	if err := os.MkdirAll(filepath.Join(n.layout.Dir, "data"), 0o755); err != nil {
		return err
	}
	props := serverProperties(n.c.propsInput(n.layout))
	mode := os.FileMode(0o644)
	if n.c.cfg.Security.secure() {
		mode = 0o600 // the keystore's password
	}
	if err := os.WriteFile(n.PropertiesFile(), []byte(props), mode); err != nil {
		return err
	}
	// WriteFile keeps an existing file's mode.
	if err := os.Chmod(n.PropertiesFile(), mode); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(n.layout.Dir, "log4j2.properties"), []byte(log4jProperties(n.layout.Dir)), 0o644)
}

// format formats the node's storage once (the cluster id, and the SCRAM
// users of a SASLSCRAM cluster).
func (n *Node) format(ctx context.Context) error {
	if _, err := os.Stat(filepath.Join(n.layout.Dir, "data", "meta.properties")); err == nil {
		return nil
	}
	argv := []string{"java", "-Xmx256m", "-Dlog4j2.configurationFile=" + filepath.Join(n.layout.Dir, "log4j2.properties"),
		"-cp", filepath.Join(n.c.libs, "*"), "kafka.tools.StorageTool", "format", "-t", n.c.rec.ClusterID, "-c", n.PropertiesFile()}
	if n.c.cfg.Security == SASLSCRAM {
		argv = append(argv, scramArgs(n.c.security.Users)...)
	}
	out := filepath.Join(n.layout.Dir, "format.log")
	if err := runTool(ctx, "kafka.tools.StorageTool format", argv, n.layout.Dir, out, os.Environ()); err != nil {
		return fmt.Errorf("kafkatest: formatting node %d: %w", n.ID(), err)
	}
	return os.Chmod(out, 0o600)
}

// launch starts the node's JVM unless it runs.
func (n *Node) launch() error {
	n.c.mu.Lock()
	defer n.c.mu.Unlock()
	if n.proc != nil && n.proc.alive() {
		return nil
	}
	argv := []string{"java", "-Xms" + n.c.cfg.Heap, "-Xmx" + n.c.cfg.Heap, "-XX:+UseG1GC", "-Djava.awt.headless=true"}
	if n.c.cfg.Security == GSSAPI {
		// The broker's Kerberos configuration: the test KDC's, not the system's.
		argv = append(argv, "-Djava.security.krb5.conf="+filepath.Join(n.c.cfg.KerberosDir, "krb5.conf"))
	}
	argv = append(argv, "-Dlog4j2.configurationFile="+filepath.Join(n.layout.Dir, "log4j2.properties"),
		"-Dkafka.logs.dir="+n.layout.Dir, "-cp", filepath.Join(n.c.libs, "*"), "kafka.Kafka", n.PropertiesFile())
	p, err := launch(argv, n.layout.Dir, n.OutFile(), os.Environ(), n.c.cfg.Detached)
	if err != nil {
		return fmt.Errorf("kafkatest: starting node %d: %w", n.ID(), err)
	}
	n.proc, n.paused = p, false
	return os.WriteFile(n.pidFile(), []byte(strconv.Itoa(p.pid)+"\n"), 0o644)
}

// waitReady waits until the node's PLAINTEXT listener answers a metadata
// request that lists the node, the JVM exits, or d passes.
func (n *Node) waitReady(ctx context.Context, d time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	addr := n.layout.Listeners[ListenerPlaintext].Advertised
	var last error
	for {
		if !n.Running() {
			return fmt.Errorf("kafkatest: node %d exited while starting; the end of %s:\n%s", n.ID(), n.OutFile(), fileTail(n.OutFile(), 20))
		}
		if last = listsNode(ctx, addr, int32(n.ID())); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kafkatest: node %d at %s did not answer within %s: %w; the end of %s:\n%s",
				n.ID(), addr, d, last, n.LogFile(), fileTail(n.LogFile(), 30))
		case <-time.After(50 * time.Millisecond): // starts are timed by benchmarks: look often
		}
	}
}

// listsNode asks the broker at addr for its brokers and fails unless the
// list holds node.
func listsNode(ctx context.Context, addr string, node int32) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DialTimeout(2*time.Second))
	if err != nil {
		return err
	}
	defer cl.Close()
	attempt, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	brokers, err := kadm.NewClient(cl).ListBrokers(attempt)
	if err != nil {
		return err
	}
	if !slices.Contains(brokers.NodeIDs(), node) {
		return fmt.Errorf("metadata lists nodes %v, not yet %d", brokers.NodeIDs(), node)
	}
	return nil
}

// stop ends the node: SIGTERM, SIGKILL after the stop timeout, then the
// rest of its group.
func (n *Node) stop() {
	n.c.mu.Lock()
	p := n.proc
	n.c.mu.Unlock()
	if p == nil {
		return
	}
	p.stop(n.c.cfg.StopTimeout)
	n.c.mu.Lock()
	n.proc, n.paused = nil, false
	n.c.mu.Unlock()
	_ = os.Remove(n.pidFile())
}

// Kill sends the broker JVM SIGKILL (kill -9) and waits until it is gone;
// its data stays, and Cluster.StartNode brings it back on it. Its
// children are left to notice (the fault under test).
func (n *Node) Kill() error {
	n.c.mu.Lock()
	p := n.proc
	n.c.mu.Unlock()
	if p == nil || !p.alive() {
		return fmt.Errorf("kafkatest: node %d is not running", n.ID())
	}
	p.kill()
	n.c.mu.Lock()
	n.paused = false
	n.c.mu.Unlock()
	_ = os.Remove(n.pidFile())
	return nil
}

// Pause sends the broker JVM SIGSTOP (a frozen broker, as in a long GC).
func (n *Node) Pause() error { return n.signal(syscall.SIGSTOP, true) }

// Resume sends the broker JVM SIGCONT.
func (n *Node) Resume() error { return n.signal(syscall.SIGCONT, false) }

func (n *Node) signal(sig syscall.Signal, paused bool) error {
	n.c.mu.Lock()
	defer n.c.mu.Unlock()
	if n.proc == nil {
		return fmt.Errorf("kafkatest: node %d is not running", n.ID())
	}
	if err := n.proc.signal(sig); err != nil {
		return fmt.Errorf("kafkatest: node %d: %w", n.ID(), err)
	}
	n.paused = paused
	return nil
}

// fileTail is the last n lines of a file, or why it could not be read.
func fileTail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "(no " + filepath.Base(path) + ")"
		}
		return err.Error()
	}
	return tail(string(b), n)
}

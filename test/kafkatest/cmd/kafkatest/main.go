// Command kafkatest starts, stops and shows a real Kafka cluster of the
// test harness test/kafkatest, for a person who wants one by hand:
//
//	go run ./test/kafkatest/cmd/kafkatest start /tmp/k --nodes 3 --tiered --rlmm rlmm
//	go run ./test/kafkatest/cmd/kafkatest status /tmp/k
//	go run ./test/kafkatest/cmd/kafkatest restart /tmp/k --rlmm kafka
//	go run ./test/kafkatest/cmd/kafkatest kill /tmp/k 2     (also pause, resume, pid)
//	go run ./test/kafkatest/cmd/kafkatest restart /tmp/k --node 2
//	go run ./test/kafkatest/cmd/kafkatest stop /tmp/k
//	go run ./test/kafkatest/cmd/kafkatest fetch --version 4.3.1 --rsm local
//	go run ./test/kafkatest/cmd/kafkatest ports 8          (free ports, for a script's own server)
//
// start prints the bootstrap addresses (as KEY=value lines a shell can
// eval) and where each node's log is; the brokers run on after it returns,
// until stop. Run it from the repository (it finds go.mod to build the
// plugin and the test RSM).
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/rlmm-go/rlmm/test/kafkatest"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := newRoot(os.Stdout, os.Stderr).ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "kafkatest:", strings.TrimPrefix(err.Error(), "kafkatest: "))
		os.Exit(1)
	}
}

func newRoot(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "kafkatest",
		Short:         "Start, stop and show real Kafka clusters (KRaft, on 127.0.0.1) for rlmm's tests",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(fetchCmd(stdout, stderr), startCmd(stdout, stderr), stopCmd(stdout), statusCmd(stdout), restartCmd(stdout, stderr),
		pidCmd(stdout), signalCmd("kill", "Send node NODE's broker SIGKILL (kill -9) and wait until it is gone; `restart DIR --node NODE` brings it back",
			(*kafkatest.Node).Kill),
		signalCmd("pause", "Send node NODE's broker SIGSTOP", (*kafkatest.Node).Pause),
		signalCmd("resume", "Send node NODE's broker SIGCONT", (*kafkatest.Node).Resume), portsCmd(stdout))
	return root
}

var versionHelp = fmt.Sprintf("Kafka version, any 4.x (default: $%s, else %s)", kafkatest.EnvVersion, kafkatest.DefaultVersion)

func fetchCmd(stdout, stderr io.Writer) *cobra.Command {
	var (
		version, rsm string
		timeout      time.Duration
	)
	cmd := &cobra.Command{
		Use:   "fetch",
		Short: "Resolve a Kafka version's jars (and an RSM's) into the cache, starting nothing",
		Long: "Resolve org.apache.kafka:kafka_2.13:VERSION and its runtime dependencies with Maven into\n" +
			"~/.cache/rlmm (RLMM_CACHE) unless they are there; with --rsm local also kafka-storage's test jar\n" +
			"(LocalTieredStorage), with --rsm fixture build test/broker/fixture-rsm. Prints the directories.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			if version == "" {
				version = os.Getenv(kafkatest.EnvVersion)
			}
			if version == "" {
				version = kafkatest.DefaultVersion
			}
			cache := &kafkatest.Cache{Log: stderr}
			libs, err := cache.KafkaLibs(ctx, version)
			if err != nil {
				return err
			}
			_, _ = fmt.Fprintf(stdout, "libs: %s\n", libs)
			var jar string
			switch rsm {
			case "":
				return nil
			case kafkatest.RSMLocal:
				jar, err = cache.LocalTieredStorageJar(ctx, version)
			case kafkatest.RSMFixture:
				jar, err = cache.FixtureRSMJar(ctx)
			default:
				return fmt.Errorf("--rsm must be %s or %s, got %q", kafkatest.RSMLocal, kafkatest.RSMFixture, rsm)
			}
			if err != nil {
				return err
			}
			_, _ = fmt.Fprintf(stdout, "rsm: %s\n", jar)
			return nil
		},
	}
	cmd.Flags().StringVar(&version, "version", "", versionHelp)
	cmd.Flags().StringVar(&rsm, "rsm", "", "also the jar of this RSM: local or fixture")
	cmd.Flags().DurationVar(&timeout, "timeout", 20*time.Minute, "bound of the fetch")
	return cmd
}

func startCmd(stdout, stderr io.Writer) *cobra.Command {
	var (
		cfg      kafkatest.Config
		security string
		rlmm     string
		timeout  time.Duration
	)
	cmd := &cobra.Command{
		Use:   "start DIR",
		Short: "Make a new cluster in DIR and start it; the brokers run until `stop DIR`",
		Long: "Make a new cluster in DIR (which must not hold one) and start every node; print the bootstrap\n" +
			"addresses as KEY=value lines, and where each node's log is. The Kafka jars are resolved with\n" +
			"Maven into ~/.cache/rlmm (RLMM_CACHE) the first time.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			// The library's zero means one node; a person who says 0 meant something else.
			if cfg.Nodes < 1 || cfg.Nodes > 9 {
				return fmt.Errorf("--nodes must be 1..9, got %d", cfg.Nodes)
			}
			cfg.Security = kafkatest.Security(security)
			cfg.RLMM = kafkatest.RLMM(rlmm)
			cfg.Detached = true
			// The brokers read these paths from another working directory.
			for _, f := range []struct {
				flag string
				path *string
			}{{"--plugin-jar", &cfg.PluginJar}, {"--rlmm-binary", &cfg.RLMMBinary}, {"--kerberos-dir", &cfg.KerberosDir}} {
				if *f.path == "" {
					continue
				}
				abs, err := filepath.Abs(*f.path)
				if err == nil {
					_, err = os.Stat(abs)
				}
				if err != nil {
					return fmt.Errorf("%s: %w", f.flag, err)
				}
				*f.path = abs
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			c, err := kafkatest.Start(ctx, args[0], cfg, stderr)
			if err != nil {
				return err
			}
			printCluster(stdout, c)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Version, "version", "", versionHelp)
	f.IntVar(&cfg.Nodes, "nodes", 1, "number of nodes (1..9)")
	f.IntVar(&cfg.Controllers, "controllers", 0, "how many of the nodes, the first, are also controllers (0: 1 below 3 nodes, else 3)")
	f.StringVar(&security, "security", string(kafkatest.Plaintext), fmt.Sprintf("the clients' listener beside PLAINTEXT: %v", kafkatest.Securities))
	f.StringVar(&cfg.KerberosDir, "kerberos-dir", "", "with --security gssapi: a directory of scripts/kdc.sh start")
	f.BoolVar(&cfg.Tiered, "tiered", false, "tiered storage on")
	f.StringVar(&cfg.RSM, "rsm", "", "with --tiered: the remote storage manager, local (4.0-4.3) or fixture (default: by version)")
	f.StringVar(&rlmm, "rlmm", string(kafkatest.RLMMKafka), "with --tiered: the RLMM, rlmm (the project's plugin) or kafka (TopicBased)")
	f.StringVar(&cfg.PluginJar, "plugin-jar", "", "with --rlmm rlmm: the plugin jar (default: scripts/plugin.sh build)")
	f.StringVar(&cfg.RLMMBinary, "rlmm-binary", "", "with --rlmm rlmm: the sidecar's rlmm binary (default: go build ./cmd/rlmm into DIR/bin)")
	f.StringVar(&cfg.Heap, "heap", "512m", "each broker JVM's heap")
	f.StringVar(&cfg.Extra, "extra", "", "server.properties lines added to every node (separate lines with \\n)")
	f.DurationVar(&timeout, "timeout", 10*time.Minute, "bound of the whole start (jars resolved, builds, every node answering)")
	return cmd
}

func stopCmd(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "stop DIR",
		Short: "Stop every node of the cluster in DIR (SIGTERM, then SIGKILL); the data stays",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := kafkatest.Open(args[0])
			if err != nil {
				return err
			}
			pids := c.PIDs()
			c.Stop()
			var left []int
			for _, pid := range pids {
				if kafkatest.ProcessRunning(pid) {
					left = append(left, pid)
				}
			}
			if len(left) > 0 {
				return fmt.Errorf("processes %v of %s still run", left, c.Dir())
			}
			_, _ = fmt.Fprintf(stdout, "stopped the cluster in %s\n", c.Dir())
			return nil
		},
	}
}

func restartCmd(stdout, stderr io.Writer) *cobra.Command {
	var (
		rlmm    string
		node    int
		timeout time.Duration
	)
	cmd := &cobra.Command{
		Use:   "restart DIR",
		Short: "Restart every node (or --node NODE) of the cluster in DIR on its data, optionally with another RLMM; a stopped node just starts",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := kafkatest.Open(args[0])
			if err != nil {
				return err
			}
			var opts []kafkatest.RestartOption
			if rlmm != "" {
				opts = append(opts, kafkatest.WithRLMM(kafkatest.RLMM(rlmm)))
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			if node != 0 {
				if node < 1 || node > len(c.Nodes()) {
					return fmt.Errorf("--node must be 1..%d, got %d", len(c.Nodes()), node)
				}
				err = c.RestartNode(ctx, node, opts...)
			} else {
				err = c.Restart(ctx, opts...)
			}
			if err != nil {
				return err
			}
			_, _ = fmt.Fprintln(stderr, "restarted")
			printCluster(stdout, c)
			return nil
		},
	}
	cmd.Flags().StringVar(&rlmm, "rlmm", "", "switch the RLMM of a tiered cluster: rlmm or kafka")
	cmd.Flags().IntVar(&node, "node", 0, "restart this node alone (1-based)")
	cmd.Flags().DurationVar(&timeout, "timeout", 10*time.Minute, "bound of the restart")
	return cmd
}

// openNode opens the cluster of args[0] and returns its node args[1].
func openNode(args []string) (*kafkatest.Node, error) {
	c, err := kafkatest.Open(args[0])
	if err != nil {
		return nil, err
	}
	id, err := strconv.Atoi(args[1])
	if err != nil || id < 1 || id > len(c.Nodes()) {
		return nil, fmt.Errorf("NODE must be 1..%d, got %q", len(c.Nodes()), args[1])
	}
	return c.Node(id), nil
}

func pidCmd(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "pid DIR NODE",
		Short: "Print node NODE's broker pid; exit 1 when it does not run",
		Args:  cobra.ExactArgs(2),
		RunE: func(_ *cobra.Command, args []string) error {
			n, err := openNode(args)
			if err != nil {
				return err
			}
			pid := n.PID()
			if pid == 0 {
				return fmt.Errorf("node %d of %s does not run", n.ID(), args[0])
			}
			_, _ = fmt.Fprintln(stdout, pid)
			return nil
		},
	}
}

func signalCmd(name, short string, act func(*kafkatest.Node) error) *cobra.Command {
	return &cobra.Command{
		Use:   name + " DIR NODE",
		Short: short,
		Args:  cobra.ExactArgs(2),
		RunE: func(_ *cobra.Command, args []string) error {
			n, err := openNode(args)
			if err != nil {
				return err
			}
			return act(n)
		},
	}
}

func portsCmd(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "ports N",
		Short: "Print N distinct free TCP ports of 127.0.0.1, one a line (for a script's own server)",
		Args:  cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			n, err := strconv.Atoi(args[0])
			if err != nil {
				return fmt.Errorf("the number of ports must be a number, got %q", args[0])
			}
			ports, err := kafkatest.FreePorts(n)
			if err != nil {
				return err
			}
			for _, p := range ports {
				_, _ = fmt.Fprintln(stdout, p)
			}
			return nil
		},
	}
}

func statusCmd(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "status DIR",
		Short: "Show the cluster in DIR; exit 1 unless every node runs and answers",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := kafkatest.Open(args[0])
			if err != nil {
				return err
			}
			printCluster(stdout, c)
			for _, n := range c.Nodes() {
				state := "stopped"
				if pid := n.PID(); pid != 0 {
					state = fmt.Sprintf("running (pid %d)", pid)
				}
				_, _ = fmt.Fprintf(stdout, "# node %d: %s\n", n.ID(), state)
			}
			return c.Ready(cmd.Context(), 5*time.Second)
		},
	}
}

// printCluster prints the cluster's addresses as KEY=value lines and its
// logs as comments.
func printCluster(w io.Writer, c *kafkatest.Cluster) {
	cfg := c.Config()
	p := func(format string, args ...any) { _, _ = fmt.Fprintf(w, format+"\n", args...) }
	p("RLMM_KAFKA_BOOTSTRAP=%s", strings.Join(c.Bootstrap(), ","))
	if s := c.Security(); s != nil {
		p("RLMM_KAFKA_SECURE_BOOTSTRAP=%s", strings.Join(c.SecureBootstrap(), ","))
		p("RLMM_KAFKA_SECURITY_DIR=%s", s.Dir)
	}
	if cfg.Tiered {
		p("RLMM_KAFKA_REMOTE_DIR=%s", c.RemoteDir())
		p("RLMM_KAFKA_RSM=%s", cfg.RSM)
	}
	desc := fmt.Sprintf("# %d-node Kafka %s cluster, security %s", cfg.Nodes, cfg.Version, cfg.Security)
	if cfg.Tiered {
		desc += fmt.Sprintf(", tiered storage (RSM %s, RLMM %s)", cfg.RSM, cfg.RLMM)
	}
	p("%s, in %s", desc, c.Dir())
	for _, n := range c.Nodes() {
		p("# node %d log: %s", n.ID(), n.LogFile())
	}
}

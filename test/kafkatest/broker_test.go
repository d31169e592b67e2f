package kafkatest

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// The tests here start real brokers: run them under the shared lock
// (flock /tmp/rlmm-heavy.lock go test ./test/kafkatest).

const (
	startTimeout = 5 * time.Minute
	opTimeout    = 2 * time.Minute
)

func opCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	t.Cleanup(cancel)
	return ctx
}

// client is a franz-go client of the given seeds, closed when t ends.
func client(t *testing.T, seeds []string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(seeds...), kgo.MetadataMinAge(100 * time.Millisecond)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// produce writes n records "v0".."v(n-1)" to topic (created with cfgs).
func produce(t *testing.T, ctx context.Context, seeds []string, topic string, n int, cfgs map[string]*string) {
	t.Helper()
	cl := client(t, seeds, kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
	adm := kadm.NewClient(cl)
	res, err := adm.CreateTopic(ctx, 1, -1, cfgs, topic)
	if err != nil || res.Err != nil {
		t.Fatalf("creating %s: %v %v", topic, err, res.Err)
	}
	for i := range n {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("v" + strconv.Itoa(i))}).FirstErr(); err != nil {
			t.Fatalf("producing record %d: %v", i, err)
		}
	}
}

// consume reads n records of topic from offset 0 and checks each value is
// "v" and its offset.
func consume(t *testing.T, ctx context.Context, seeds []string, topic string, n int) {
	t.Helper()
	consumeChecking(t, ctx, seeds, topic, n, func(r *kgo.Record) bool { return string(r.Value) == "v"+strconv.Itoa(int(r.Offset)) })
}

// consumeChecking reads n records of topic from offset 0 and fails at the
// first whose value ok refuses.
func consumeChecking(t *testing.T, ctx context.Context, seeds []string, topic string, n int, ok func(*kgo.Record) bool) {
	t.Helper()
	cl := client(t, seeds, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := 0
	for got < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("read %d of %d records of %s: %v", got, n, topic, err)
		}
		for _, e := range fs.Errors() {
			t.Logf("fetch of %s: %v", topic, e.Err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if !ok(r) {
				t.Fatalf("offset %d of %s holds %.10q", r.Offset, topic, r.Value)
			}
			got++
		})
	}
}

// TestOneNode: a one-node cluster takes records, keeps them across a
// restart on the same ports, and leaves no process after Stop.
func TestOneNode(t *testing.T) {
	c := StartT(t, Config{}, startTimeout)
	ctx := opCtx(t)
	produce(t, ctx, c.Bootstrap(), "one", 10, nil)
	pid := c.Node(1).PID()
	if err := c.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if c.Node(1).PID() == pid {
		t.Fatal("the restarted node has its old pid")
	}
	consume(t, ctx, c.Bootstrap(), "one", 10)
	pids := c.PIDs()
	if len(pids) != 1 || pids[0] != c.Node(1).PID() {
		t.Fatalf("the node's processes are %v, want its JVM %d alone", pids, c.Node(1).PID())
	}
	c.Stop()
	for _, pid := range pids {
		if pidAlive(pid) {
			t.Fatalf("process %d left after Stop", pid)
		}
	}
	t.Logf("10 records kept across a restart; logs in %s", c.Node(1).LogFile())
}

// TestThreeNodesSCRAM: three voters with a SASL_SSL/SCRAM listener: the
// admin user is served, a wrong password refused; a node killed with
// SIGKILL and one paused come back.
func TestThreeNodesSCRAM(t *testing.T) {
	c := StartT(t, Config{Nodes: 3, Security: SASLSCRAM, Heap: "384m"}, startTimeout)
	ctx := opCtx(t)
	sec := c.Security()
	tlsCfg, err := sec.TLSConfig()
	if err != nil {
		t.Fatal(err)
	}
	admin := kadm.NewClient(client(t, c.SecureBootstrap(), kgo.DialTLSConfig(tlsCfg),
		kgo.SASL(scram.Auth{User: "admin", Pass: sec.Users["admin"]}.AsSha512Mechanism())))
	brokers, err := admin.ListBrokers(ctx)
	if err != nil || len(brokers) != 3 {
		t.Fatalf("admin over SASL_SSL lists %v: %v", brokers.NodeIDs(), err)
	}
	wrong := kadm.NewClient(client(t, c.SecureBootstrap(), kgo.DialTLSConfig(tlsCfg),
		kgo.SASL(scram.Auth{User: "admin", Pass: sec.Users["admin"] + "x"}.AsSha512Mechanism())))
	if _, err := wrong.ListBrokers(ctx); err == nil || !strings.Contains(err.Error(), "SASL_AUTHENTICATION_FAILED") {
		t.Fatalf("a wrong password: %v, want SASL_AUTHENTICATION_FAILED", err)
	}

	// kill -9 of node 3, then its start on its data.
	if err := c.Node(3).Kill(); err != nil {
		t.Fatal(err)
	}
	if c.Node(3).Running() {
		t.Fatal("node 3 runs after Kill")
	}
	if err := c.StartNode(ctx, 3); err != nil {
		t.Fatal(err)
	}
	// SIGSTOP of node 2: the others still answer; after SIGCONT it does too.
	if err := c.Node(2).Pause(); err != nil {
		t.Fatal(err)
	}
	paused := c.Node(2).PID()
	waitState(t, func() string { _, s, _ := procStat(paused); return s }, "T")
	if err := listsNode(ctx, c.Node(1).layout.Listeners[ListenerPlaintext].Advertised, 1); err != nil {
		t.Fatalf("node 1 while node 2 is paused: %v", err)
	}
	if err := c.Node(2).Resume(); err != nil {
		t.Fatal(err)
	}
	if err := c.Ready(ctx, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	t.Logf("3 nodes over SASL_SSL/SCRAM: admin served, wrong password refused, node 3 killed and restarted, node 2 paused and resumed")
}

// TestRestartSwitchesRLMM: a tiered node under Kafka's RLMM tiers a
// topic's segments; restarted with rlmm's plugin on the same data, it runs
// the plugin's sidecar and serves the topic from offset 0 (remote storage);
// restarted with Kafka's RLMM again, the sidecar is gone.
func TestRestartSwitchesRLMM(t *testing.T) {
	c := StartT(t, Config{Tiered: true, RLMM: RLMMKafka, Heap: "384m",
		Extra: "rlmm.config.remote.log.metadata.topic.num.partitions=3"}, startTimeout)
	ctx := opCtx(t)
	topic := "tiered"
	seg, local := strconv.Itoa(1<<20), "1"
	remote := "true"
	// Records of 1000 bytes, uncompressed: about a thousand to a segment.
	cl := client(t, c.Bootstrap(), kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(0), kgo.ProducerBatchCompression(kgo.NoCompression()))
	res, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, map[string]*string{"segment.bytes": &seg,
		"local.retention.bytes": &local, "remote.storage.enable": &remote}, topic)
	if err != nil || res.Err != nil {
		t.Fatalf("creating %s: %v %v", topic, err, res.Err)
	}
	const n = 3500
	value := strings.Repeat("x", 1000)
	for i := 0; i < n; i += 100 {
		var rs []*kgo.Record
		for j := i; j < min(i+100, n); j++ {
			rs = append(rs, &kgo.Record{Value: []byte(fmt.Sprintf("%06d%s", j, value))})
		}
		if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
			t.Fatalf("producing: %v", err)
		}
	}
	// Wait until the first segment is in remote storage and gone locally.
	adm := kadm.NewClient(cl)
	for {
		starts, err := adm.ListStartOffsets(ctx, topic)
		if err == nil {
			if o, ok := starts.Lookup(topic, 0); ok && o.Err == nil && o.Offset == 0 && localStart(t, c, topic) > 0 {
				break
			}
		}
		if ctx.Err() != nil {
			t.Fatalf("the first segment of %s was not tiered: %v", topic, ctx.Err())
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("Kafka's RLMM tiered %s; local log starts at %d", topic, localStart(t, c, topic))

	if err := c.Restart(ctx, WithRLMM(RLMMPlugin)); err != nil {
		t.Fatal(err)
	}
	props, err := os.ReadFile(c.Node(1).PropertiesFile())
	if err != nil || !strings.Contains(string(props), "remote.log.metadata.manager.class.name="+pluginRLMMClass) {
		t.Fatalf("server.properties after the switch lacks the plugin (%v)", err)
	}
	consumeValues(t, ctx, c.Bootstrap(), topic, n)
	if !hasSidecar(c.Node(1)) {
		t.Fatalf("no rlmm sidecar among the node's processes %v", c.Node(1).GroupPIDs())
	}
	t.Logf("with rlmm's plugin on the same data: %d records read from offset 0, sidecar running", n)

	if err := c.Restart(ctx, WithRLMM(RLMMKafka)); err != nil {
		t.Fatal(err)
	}
	if hasSidecar(c.Node(1)) {
		t.Fatalf("a sidecar runs under Kafka's RLMM: %v", c.Node(1).GroupPIDs())
	}
	consumeValues(t, ctx, c.Bootstrap(), topic, n)
	t.Logf("back to Kafka's RLMM: %d records read from offset 0", n)
}

// localStart is the base offset of the node's first local segment of
// topic's partition 0 (its data directory's oldest .log file).
func localStart(t *testing.T, c *Cluster, topic string) int64 {
	t.Helper()
	logs, _ := filepath.Glob(filepath.Join(c.Node(1).Dir(), "data", topic+"-0", "*.log"))
	if len(logs) == 0 {
		return -1
	}
	slices.Sort(logs)
	off, err := strconv.ParseInt(strings.TrimSuffix(filepath.Base(logs[0]), ".log"), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return off
}

// consumeValues reads n records of topic from offset 0, checking each
// starts with its offset.
func consumeValues(t *testing.T, ctx context.Context, seeds []string, topic string, n int) {
	t.Helper()
	consumeChecking(t, ctx, seeds, topic, n, func(r *kgo.Record) bool {
		return strings.HasPrefix(string(r.Value), fmt.Sprintf("%06d", r.Offset))
	})
}

// hasSidecar reports whether a process of the node's group runs `rlmm
// serve` (argv[0] named rlmm, argv[1] serve: the JVM's own command line
// holds both words in its paths).
func hasSidecar(n *Node) bool {
	for _, pid := range n.GroupPIDs() {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil {
			continue
		}
		args := strings.Split(string(b), "\x00")
		if len(args) > 1 && filepath.Base(args[0]) == "rlmm" && args[1] == "serve" {
			return true
		}
	}
	return false
}

// envLeftoverChild makes the test binary the child of TestNoProcessLeft,
// which ends its run the way it names.
const envLeftoverChild = "KAFKATEST_LEFTOVER_CHILD"

// TestNoProcessLeft: a test that starts a cluster and then fails
// (t.Fatal: the cleanup stops it) or is killed (SIGKILL: no Go code runs,
// the kernel's death signal ends the JVM) leaves no process of it.
func TestNoProcessLeft(t *testing.T) {
	if mode := os.Getenv(envLeftoverChild); mode != "" {
		leftoverChild(t, mode)
		return
	}
	Require(t)
	for _, mode := range []string{"fatal", "killed"} {
		t.Run(mode, func(t *testing.T) {
			pids := runLeftoverChild(t, mode)
			deadline := time.Now().Add(60 * time.Second)
			for {
				var alive []int
				for _, pid := range pids {
					if pidAlive(pid) {
						alive = append(alive, pid)
					}
				}
				if len(alive) == 0 {
					break
				}
				if time.Now().After(deadline) {
					for _, pid := range alive {
						_ = syscall.Kill(pid, syscall.SIGKILL)
					}
					t.Fatalf("processes %v of the cluster outlived the %s test", alive, mode)
				}
				time.Sleep(100 * time.Millisecond)
			}
			t.Logf("%s: none of the cluster's processes %v is left", mode, pids)
		})
	}
}

// runLeftoverChild runs the child test in mode and returns the pids it
// printed.
func runLeftoverChild(t *testing.T, mode string) []int {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestNoProcessLeft$", "-test.v")
	cmd.Env = append(os.Environ(), envLeftoverChild+"="+mode)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var pids []int
	var lines []string
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if dir, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "LEFTOVER_DIR "); ok {
			// The child kept its directory (it failed, or was killed).
			t.Cleanup(func() { _ = os.RemoveAll(dir) })
		}
		if v, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "LEFTOVER_PIDS "); ok {
			for f := range strings.FieldsSeq(v) {
				pid, _ := strconv.Atoi(f)
				pids = append(pids, pid)
			}
			if mode == "killed" {
				_ = cmd.Process.Kill()
			}
		}
	}
	err = cmd.Wait()
	if err == nil {
		t.Fatalf("the %s child passed; its output:\n%s", mode, strings.Join(lines, "\n"))
	}
	if len(pids) == 0 {
		t.Fatalf("the %s child printed no pids; its output:\n%s", mode, strings.Join(lines, "\n"))
	}
	t.Logf("the %s child ended with %v", mode, err)
	return pids
}

// leftoverChild starts a cluster and prints its pids; in mode fatal it
// fails, in mode killed it waits for its parent to kill it.
func leftoverChild(t *testing.T, mode string) {
	c := StartT(t, Config{Heap: "256m"}, startTimeout)
	fmt.Printf("LEFTOVER_DIR %s\n", c.Dir())
	fmt.Printf("LEFTOVER_PIDS %s\n", strings.Trim(fmt.Sprint(c.PIDs()), "[]"))
	if mode == "killed" {
		time.Sleep(10 * time.Minute) // the parent kills this process
	}
	t.Fatalf("the test body fails (mode %s): its cleanup must stop the cluster", mode)
}

// TestSecureListeners: an SSL listener serves a client with the cluster's
// client certificate and refuses one without; a SASL_SSL/PLAIN listener
// serves admin and refuses a wrong password.
func TestSecureListeners(t *testing.T) {
	for _, sec := range []Security{SSL, SASLPlain} {
		t.Run(string(sec), func(t *testing.T) {
			c := StartT(t, Config{Security: sec, Heap: "256m"}, startTimeout)
			ctx := opCtx(t)
			tlsCfg, err := c.Security().TLSConfig()
			if err != nil {
				t.Fatal(err)
			}
			good, bad := []kgo.Opt{kgo.DialTLSConfig(tlsCfg)}, []kgo.Opt{}
			want := "SASL_AUTHENTICATION_FAILED"
			switch sec {
			case SSL:
				noCert := tlsCfg.Clone()
				noCert.Certificates = nil
				bad, want = append(bad, kgo.DialTLSConfig(noCert)), ""
			case SASLPlain:
				users := c.Security().Users
				good = append(good, kgo.SASL(plain.Auth{User: "admin", Pass: users["admin"]}.AsMechanism()))
				bad = append(bad, kgo.DialTLSConfig(tlsCfg), kgo.SASL(plain.Auth{User: "admin", Pass: users["rlmm"]}.AsMechanism()))
			}
			if _, err := kadm.NewClient(client(t, c.SecureBootstrap(), good...)).ListBrokers(ctx); err != nil {
				t.Fatalf("%s with the right credentials: %v", sec, err)
			}
			short, cancel := context.WithTimeout(ctx, 20*time.Second)
			defer cancel()
			_, err = kadm.NewClient(client(t, c.SecureBootstrap(), append(bad, kgo.RetryTimeout(10*time.Second))...)).ListBrokers(short)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("%s with wrong credentials: %v, want an error containing %q", sec, err, want)
			}
			t.Logf("%s: served with the right credentials, refused with wrong ones (%v)", sec, err)
		})
	}
}

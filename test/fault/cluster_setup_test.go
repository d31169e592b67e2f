package fault

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rlmm-go/rlmm/test/faultdisk"
	"github.com/rlmm-go/rlmm/test/faultnet"
	"github.com/rlmm-go/rlmm/test/kafkatest"
)

// The cluster fault tests (TestFaultsAlone, TestFaultSoak): a 3-broker
// Kafka 4.3.1 cluster with tiered storage (LocalTieredStorage) and rlmm's
// plugin as its RLMM, every listener behind a faultnet proxy, each
// sidecar's snapshot directory on a faultdisk tmpfs and its Prometheus
// metrics on a port of its own, under the workload of cluster_workload_test.go
// and the checks of cluster_checks_test.go.
const (
	// envClusterFaults turns the cluster fault tests on (make test's
	// cluster-faults step, make soak).
	envClusterFaults = "RLMM_CLUSTER_FAULTS"
	// envSoakSeed and envSoakMinutes drive TestFaultSoak.
	envSoakSeed    = "RLMM_SOAK_SEED"
	envSoakMinutes = "RLMM_SOAK_MINUTES"
	// clusterVersion is the Kafka of the cluster fault tests.
	clusterVersion = "4.3.1"
	// snapshotDiskBytes is each sidecar's snapshot tmpfs.
	snapshotDiskBytes = 16 << 20
	// sidecarBase numbers the sidecars apart from their brokers for
	// faultnet: node n's sidecar is client sidecarBase+n.
	sidecarBase = 10
)

// fcluster is the cluster of the cluster fault tests.
type fcluster struct {
	k       *kafkatest.Cluster
	net     *faultnet.Net
	disks   map[int]*faultdisk.Disk
	metrics map[int]string // node -> the sidecar's metrics address
	rlmmBin string         // the rlmm binary, for verify and scrub
}

// requireClusterFaults returns the shared fault cluster, or skips t saying
// why (fails it when CI=true) when the cluster fault tests are off or the
// cluster could not start for want of root.
func requireClusterFaults(t *testing.T) *fcluster {
	t.Helper()
	reason := envClusterFaults + " is not 1: these tests start a 3-broker tiered cluster with rlmm's plugin behind fault proxies; `make test` (its faults step) and `make soak` run them"
	switch {
	case sharedFC != nil:
		return sharedFC
	case errors.Is(clusterErr, faultdisk.ErrNoPrivilege):
		reason = clusterErr.Error()
	case clusterErr != nil:
		t.Fatalf("the fault cluster did not start: %v", clusterErr)
	}
	if os.Getenv("CI") == "true" {
		t.Fatal(reason + " (CI=true: scripts/test.sh has a step for them)")
	}
	t.Skip(reason)
	return nil
}

// brokerConfigRe finds a broker JVM's node in its command line.
var brokerConfigRe = regexp.MustCompile(`/node-([0-9]+)/server\.properties`)

// nodeOfPid says which node a process belongs to: the broker JVM of
// node-N is N, its child (the sidecar) sidecarBase+N, anything else 0 (the
// test's own clients). It reads /proc, as faultnet does.
func nodeOfPid(pid int) int {
	if n := brokerNode(pid); n > 0 {
		return n
	}
	if ppid := parentPid(pid); ppid > 0 {
		if n := brokerNode(ppid); n > 0 {
			return sidecarBase + n
		}
	}
	return 0
}

func brokerNode(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return 0
	}
	m := brokerConfigRe.FindSubmatch(b)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(string(m[1]))
	return n
}

func parentPid(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// pid (comm) state ppid ...: comm may hold spaces, so after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(f[1])
	return ppid
}

// startFaultCluster starts the cluster in a directory of its own, for every
// test of the run (TestMain starts it, and stops it with stop): the cluster
// fault tests and the fault tests of the other files share it. It needs
// root for the tmpfs disks (faultdisk.ErrNoPrivilege without).
func startFaultCluster() (fc *fcluster, stop func(), err error) {
	if reason := kafkatest.CannotRun(); reason != "" {
		return nil, nil, errors.New(reason)
	}
	dir, err := os.MkdirTemp("", "rlmm-faultcluster-")
	if err != nil {
		return nil, nil, err
	}
	fc = &fcluster{disks: map[int]*faultdisk.Disk{}, metrics: map[int]string{}}
	var k *kafkatest.Cluster
	stop = func() {
		if k != nil {
			// Stop continues a node a failed test left paused, so it
			// can act on SIGTERM.
			k.Stop()
			if pids := k.PIDs(); len(pids) > 0 {
				fmt.Fprintf(os.Stderr, "test/fault: processes %v of the cluster still run\n", pids)
			}
		}
		if fc.net != nil {
			_ = fc.net.Close()
		}
		for _, d := range fc.disks {
			if err := d.Unmount(); err != nil {
				fmt.Fprintln(os.Stderr, err)
			}
		}
		if os.Getenv(envKeep) == "1" {
			fmt.Fprintf(os.Stderr, "test/fault: kept %s\n", dir)
			return
		}
		_ = os.RemoveAll(dir)
	}
	defer func() {
		if err != nil {
			stop()
		}
	}()
	for n := 1; n <= nodes; n++ {
		d, err := faultdisk.MountAt(filepath.Join(dir, fmt.Sprintf("snapshots-%d", n)), snapshotDiskBytes)
		if err != nil {
			return nil, nil, err
		}
		fc.disks[n] = d
		port, err := freePortE()
		if err != nil {
			return nil, nil, err
		}
		fc.metrics[n] = fmt.Sprintf("127.0.0.1:%d", port)
	}
	fc.net = faultnet.New(faultnet.Options{NodeOf: nodeOfPid})
	bin := filepath.Join(dir, "rlmm")
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	if err := (&kafkatest.Cache{Log: os.Stderr}).RLMMBinary(ctx, bin); err != nil {
		return nil, nil, fmt.Errorf("building rlmm: %w", err)
	}
	fc.rlmmBin = bin
	cfg := kafkatest.Config{
		Version: clusterVersion, Nodes: nodes, Tiered: true, RSM: "local", RLMM: kafkatest.RLMMPlugin,
		// The SASL_SSL listener is TestSecurityEndToEnd's.
		Security:   kafkatest.SASLSCRAM,
		RLMMBinary: bin, Proxy: fc.net.Proxy, Heap: "768m",
		Extra: strings.Join([]string{
			"offsets.topic.replication.factor=3",
			"min.insync.replicas=2",
			"default.replication.factor=3",
			"auto.leader.rebalance.enable=false",
			"unclean.leader.election.enable=false",
			"broker.session.timeout.ms=9000",
			"broker.heartbeat.interval.ms=1000",
			"replica.lag.time.max.ms=10000",
		}, "\n"),
		NodeExtra: func(node int) string {
			return "rlmm.config.rlmm.serve.snapshot.dir=" + fc.disks[node].Dir + "\n" +
				"rlmm.config.rlmm.serve.args=--metrics-listen " + fc.metrics[node] + " --snapshot-interval 2s\n"
		},
	}
	began := time.Now()
	if k, err = kafkatest.Start(ctx, filepath.Join(dir, "kafka"), cfg, os.Stderr); err != nil {
		return nil, nil, fmt.Errorf("starting the fault cluster: %w", err)
	}
	fc.k = k
	fmt.Fprintf(os.Stderr, "test/fault: %d-broker tiered Kafka %s cluster with rlmm's plugin up in %s at %s (directory %s)\n",
		nodes, clusterVersion, time.Since(began).Round(time.Millisecond), strings.Join(k.Bootstrap(), ","), dir)
	return fc, stop, nil
}

// freePortE returns a free TCP port on 127.0.0.1.
func freePortE() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// sidecarPid is node n's `rlmm serve` (0 when none runs).
func (fc *fcluster) sidecarPid(n int) int {
	jvm := fc.k.Node(n).PID()
	for _, pid := range fc.k.Node(n).GroupPIDs() {
		if pid != jvm && parentPid(pid) == jvm {
			return pid
		}
	}
	return 0
}

// scrape returns the samples of node n's sidecar metrics: the line's name
// with labels ("rlmm_snapshot_writes_total{result=\"ok\"}") to value.
func (fc *fcluster) scrape(ctx context.Context, n int) (map[string]float64, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+fc.metrics[n]+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("node %d's sidecar metrics: %w", n, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, fmt.Errorf("node %d's sidecar metrics: %s: %s", n, resp.Status, b)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		out[line[:i]] = v
	}
	return out, sc.Err()
}

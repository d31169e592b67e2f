package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/rpc/brokerframe/frametest"
	"github.com/rlmm-go/rlmm/rpc/rlmmpb"
	"github.com/rlmm-go/rlmm/test/faultdisk"
	"github.com/rlmm-go/rlmm/topicbased"
)

var snapshotWritesPattern = regexp.MustCompile(`(?m)^rlmm_snapshot_writes_total\{result="(ok|failed)"\} ([0-9]+)$`)

// snapshotWrites scrapes rlmm_snapshot_writes_total by result.
func snapshotWrites(t *testing.T, metrics string) (ok, failed int) {
	t.Helper()
	_, body := httpGet(t, "http://"+metrics+"/metrics")
	for _, m := range snapshotWritesPattern.FindAllStringSubmatch(body, -1) {
		n, _ := strconv.Atoi(m[2])
		if m[1] == "ok" {
			ok = n
		} else {
			failed = n
		}
	}
	return ok, failed
}

// waitUntil polls cond every 10 ms for at most serveTestTimeout.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(serveTestTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// rlmm serve with its snapshot directory on a disk that fills, then goes
// read-only: it keeps answering and recording, rlmm_snapshot_writes_total
// counts each failed write and the log names it, the next snapshot is
// written when the disk is back; restarted on the read-only disk it
// serves from the last snapshot and the log, and writes snapshots again
// once the disk is writable.
func TestServeSnapshotDiskFaults(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
	disk := faultdisk.Mount(t, 1<<20)
	dir := shortTemp(t)
	snap := filepath.Join(disk.Dir, "snap")
	serve := func(name string) (*servingProc, string, func() *frametest.Client) {
		socket, ready := filepath.Join(dir, name+".sock"), filepath.Join(dir, name+".ready")
		p := startServe(t, "--dir", filepath.Join(dir, "log"), "--snapshot-dir", snap, "--socket", socket,
			"--ready-file", ready, "--metrics-listen", "127.0.0.1:0", "--snapshot-interval", "20ms",
			"--kafka-partitions", "4", "--log-format", "json")
		info := waitFile(t, ready, p.done, &p.stderr)
		return p, info["metrics"], func() *frametest.Client { return rpcClient(t, socket) }
	}
	segment := func(i int) (rlmm.TopicIDPartition, rlmm.Uuid) {
		return rlmm.TopicIDPartition{TopicID: rlmm.UuidFromBits(7, 7), Topic: "orders", Partition: int32(i)},
			rlmm.UuidFromBits(100, int64(i+1))
	}

	p, metrics, client := serve("a")
	c := client()
	for i := range 3 {
		tp, seg := segment(i)
		brokerWork(t, c, tp, seg, 0)
	}
	waitUntil(t, "a snapshot written", func() bool { ok, _ := snapshotWrites(t, metrics); return ok > 0 })

	must(t, disk.Fill())
	tp, seg := segment(3)
	// On the full disk a leadership change is served, but not acknowledged
	// until the hosted set is written: the plugin sends it again.
	assignUnacknowledged(t, c, tp)
	copyAndLookup(t, c, tp, seg, 0) // recorded and answered on the full disk
	waitUntil(t, "a failed snapshot write counted", func() bool { _, failed := snapshotWrites(t, metrics); return failed > 0 })
	if !strings.Contains(p.stderr.String(), "periodic snapshot failed") || !strings.Contains(p.stderr.String(), syscall.ENOSPC.Error()) {
		t.Errorf("the log does not name the failed write:\n%s", p.stderr.String())
	}
	okBefore, _ := snapshotWrites(t, metrics)
	must(t, disk.Free())
	assign(t, c, tp) // sent again, acknowledged once the set is written
	waitUntil(t, "a snapshot once space is back", func() bool { ok, _ := snapshotWrites(t, metrics); return ok > okBefore })
	waitUntil(t, "the log saying it", func() bool { return strings.Contains(p.stderr.String(), "snapshot written again") })

	// Read-only, a stop's final snapshot fails, naming the cause; the last
	// one stays for the restart.
	must(t, disk.ReadOnly())
	if code := p.stop(t); code == 0 || !strings.Contains(p.stderr.String(), syscall.EROFS.Error()) {
		t.Errorf("stop on a read-only snapshot directory: exit %d, want a failure naming %v:\n%s", code, syscall.EROFS, p.stderr.String())
	}
	if _, err := os.Stat(filepath.Join(snap, topicbased.SnapshotFileName)); err != nil {
		t.Fatal(err)
	}

	p, metrics, client = serve("b")
	if !strings.Contains(p.stderr.String(), "snapshot directory is read-only") {
		t.Errorf("the restart on a read-only directory does not say so:\n%s", p.stderr.String())
	}
	c = client()
	ctx, cancel := context.WithTimeout(context.Background(), serveTestTimeout)
	defer cancel()
	for i := range 4 {
		tp, seg := segment(i)
		// The broker hosts its partitions again: the restart answers what
		// the last snapshot and the log hold.
		if _, err := c.OnPartitionLeadershipChanges(ctx, &rlmmpb.LeadershipChangesRequest{Leaders: []*rlmmpb.TopicIdPartition{frametest.TopicIDPartition(tp)}}); err != nil {
			t.Fatal(err)
		}
		waitReady(t, ctx, c, frametest.TopicIDPartition(tp))
		lookup(t, c, tp, 50, seg)
	}
	tp, seg = segment(4)
	assignUnacknowledged(t, c, tp)
	copyAndLookup(t, c, tp, seg, 0)
	waitUntil(t, "a failed snapshot write counted after the restart", func() bool { _, failed := snapshotWrites(t, metrics); return failed > 0 })
	must(t, disk.ReadWrite())
	assign(t, c, tp)
	waitUntil(t, "a snapshot once the directory is writable", func() bool { ok, _ := snapshotWrites(t, metrics); return ok > 0 })
	if code := p.stop(t); code != 0 {
		t.Errorf("stop: exit %d:\n%s", code, p.stderr.String())
	}
}

// assign sends tp's leadership change and wants it acknowledged.
func assign(t *testing.T, c *frametest.Client, tp rlmm.TopicIDPartition) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), serveTestTimeout)
	defer cancel()
	if _, err := c.OnPartitionLeadershipChanges(ctx, &rlmmpb.LeadershipChangesRequest{Leaders: []*rlmmpb.TopicIdPartition{frametest.TopicIDPartition(tp)}}); err != nil {
		t.Fatalf("OnPartitionLeadershipChanges: %v", err)
	}
}

// assignUnacknowledged sends tp's leadership change while the hosted set
// cannot be written and wants it refused NOT_READY, which
// the plugin sends again; the change is served all the same.
func assignUnacknowledged(t *testing.T, c *frametest.Client, tp rlmm.TopicIDPartition) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), serveTestTimeout)
	defer cancel()
	_, err := c.OnPartitionLeadershipChanges(ctx, &rlmmpb.LeadershipChangesRequest{Leaders: []*rlmmpb.TopicIdPartition{frametest.TopicIDPartition(tp)}})
	if frametest.Kind(err) != rlmmpb.ErrorKind_NOT_READY || !strings.Contains(err.Error(), "hosted set") {
		t.Fatalf("a leadership change while the hosted set cannot be written: %v, want NOT_READY naming the hosted set", err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rlmm-go/rlmm/console"
	"github.com/rlmm-go/rlmm/console/consoletest"
	"github.com/rlmm-go/rlmm/eventlog/filelog"
)

// The console listens on loopback unless told otherwise, and says why.
func TestCheckListen(t *testing.T) {
	cases := []struct {
		addr        string
		allowRemote bool
		wantErr     string
	}{
		{"127.0.0.1:9405", false, ""},
		{"127.0.0.1:0", false, ""},
		{"[::1]:9405", false, ""},
		{"localhost:9405", false, ""},
		{"127.1.2.3:80", false, ""},
		{"0.0.0.0:9405", false, "host 0.0.0.0 is not a loopback address; the console has no authentication"},
		{":9405", false, "no host (every interface) is not a loopback address"},
		{"10.1.2.3:9405", false, "unless --allow-remote is given"},
		{"console.example.com:9405", false, "host console.example.com is not a loopback address"},
		{"0.0.0.0:9405", true, ""},
		{":9405", true, ""},
		{"127.0.0.1", false, "not host:port"},
		{"127.0.0.1:http-nope", false, "port \"http-nope\""},
	}
	for _, c := range cases {
		err := checkListen(c.addr, c.allowRemote)
		switch {
		case c.wantErr == "" && err != nil:
			t.Errorf("--listen %s (allow remote %v): %v", c.addr, c.allowRemote, err)
		case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
			t.Errorf("--listen %s (allow remote %v): error %v, want one saying %q", c.addr, c.allowRemote, err, c.wantErr)
		case err != nil && exitStatus(err) != exitCouldNotRun:
			t.Errorf("--listen %s: exit status %d, want %d", c.addr, exitStatus(err), exitCouldNotRun)
		}
	}
}

// Bad flags stop the console before it reads anything, with exit status 2.
func TestConsoleFlagErrors(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		args    []string
		wantErr string
	}{
		{[]string{"--listen", "0.0.0.0:1"}, "not a loopback address"},
		{[]string{"--refresh", "-1s"}, "--refresh -1s"},
		{[]string{"--stuck-after", "0s"}, "--stuck-after 0s"},
		{[]string{"--stuck-reference", "tomorrow"}, "--stuck-reference \"tomorrow\""},
		{[]string{"--remote-dir", dir}, "--remote-dir names remote storage: give --layout too"},
		{[]string{"--layout", "nope"}, "--layout"},
		{[]string{"--layout", "local"}, "--layout local needs --remote-dir"},
		{[]string{"--dir", dir + "/none"}, "no directory"},
	}
	for _, c := range cases {
		_, stderr, status := runInProcess(t, "", append([]string{"console", "-q"}, c.args...)...)
		if status != exitCouldNotRun || !strings.Contains(stderr, c.wantErr) {
			t.Errorf("rlmm console %v: status %d, stderr %q; want %d and %q", c.args, status, stderr, exitCouldNotRun, c.wantErr)
		}
	}
}

// lockedBuffer is an io.Writer safe to read while a command writes to it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// The console reads the log at start, re-reads it every --refresh (records
// appended meanwhile appear), and stops cleanly, exit status 0, when its
// context ends.
func TestConsoleRefreshes(t *testing.T) {
	dir := t.TempDir()
	l, err := filelog.Open(dir, filelog.Options{Partitions: consoletest.MetadataPartitions})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	recs, err := consoletest.Records()
	if err != nil {
		t.Fatal(err)
	}
	const first = 5
	for _, r := range recs[:first] {
		if _, err := l.Publish(ctx, r.Partition, r.Value); err != nil {
			t.Fatal(err)
		}
	}
	var stdout, stderr lockedBuffer
	runCtx, stop := context.WithCancel(ctx)
	status := make(chan int, 1)
	go func() {
		status <- run(runCtx, []string{"console", "-q", "--dir", dir, "--listen", "127.0.0.1:0", "--refresh", "50ms"},
			strings.NewReader(""), &stdout, &stderr)
	}()
	var url string
	for url == "" {
		if m := regexp.MustCompile(`http://\S+/`).FindString(stdout.String()); m != "" {
			url = m
			break
		}
		select {
		case s := <-status:
			t.Fatalf("rlmm console exited %d before serving: %s", s, stderr.String())
		case <-ctx.Done():
			t.Fatalf("rlmm console did not serve: %s", stderr.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	records := func() int64 {
		resp, err := http.Get(url + "api/overview")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var o console.Overview
		if err := json.NewDecoder(resp.Body).Decode(&o); err != nil {
			t.Fatal(err)
		}
		return o.Counts.Records
	}
	if n := records(); n != first {
		t.Fatalf("first reading: %d records, want %d", n, first)
	}
	for _, r := range recs[first:] {
		if _, err := l.Publish(ctx, r.Partition, r.Value); err != nil {
			t.Fatal(err)
		}
	}
	for n := records(); n != int64(len(recs)); n = records() {
		if ctx.Err() != nil {
			t.Fatalf("after a minute of refreshes every 50 ms: %d records, want %d", n, len(recs))
		}
		time.Sleep(20 * time.Millisecond)
	}
	stop()
	if s := <-status; s != 0 {
		t.Fatalf("rlmm console exited %d when stopped, want 0: %s", s, stderr.String())
	}
}

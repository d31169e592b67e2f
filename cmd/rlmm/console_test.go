package main

import (
	"strings"
	"testing"
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

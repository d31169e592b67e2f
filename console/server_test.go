package console

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/rlmm-go/rlmm/scrub"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The answers of the API over consoletest's log. The files in testdata were
// checked by hand against the fixture (consoletest's comment lists its
// segments): 7 segments of orders-0 (9100 bytes, the oldest finished at
// offset 100), the stuck copy of segment 7 two hours old, the gaps [200,
// 249] (epoch 0) and [550, 599] (epoch 1), the overlap [340, 349] of epoch
// 1, segment 4 in a second lane.
func TestAPI(t *testing.T) {
	srv := NewServer(Options{})
	srv.Set(fixtureSnapshot(t, nil))
	const orders = "/api/partitions/AQIDBAUGBwgREhMUFRYXGA"
	cases := []struct {
		name, method, path string
		status             int
		// want is the answer's JSON, or @file for testdata/file.
		want string
	}{
		{"overview", "GET", "/api/overview", 200, "@overview.json"},
		{"anomalies", "GET", "/api/anomalies", 200, "@anomalies.json"},
		{"a partition", "GET", orders + "/0", 200, "@partition-orders-0.json"},
		{"no storage given", "GET", "/api/scrub", 200, `{"enabled": false}`},
		{"a partition the log does not name", "GET", orders + "/1", 404,
			`{"error": "no user partition 1 of topic id AQIDBAUGBwgREhMUFRYXGA in the metadata log"}`},
		{"an unknown topic id", "GET", "/api/partitions/nope/0", 404,
			`{"error": "no user partition 0 of topic id nope in the metadata log"}`},
		{"a partition that is not a number", "GET", orders + "/x", 400,
			`{"error": "partition \"x\": not a partition number (0 or more)"}`},
		{"a negative partition", "GET", orders + "/-1", 400,
			`{"error": "partition \"-1\": not a partition number (0 or more)"}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, ctype, body := do(t, srv, c.method, c.path)
			if status != c.status || ctype != "application/json" {
				t.Fatalf("%s %s: status %d (%s), want %d (application/json): %s", c.method, c.path, status, ctype, c.status, body)
			}
			want := c.want
			if name, ok := strings.CutPrefix(want, "@"); ok {
				b, err := os.ReadFile("testdata/" + name)
				if err != nil {
					t.Fatal(err)
				}
				want = string(b)
			}
			mustEqualJSON(t, body, want)
		})
	}
}

// Nothing changes anything: every method but GET and HEAD is refused, on
// every route.
func TestReadOnly(t *testing.T) {
	srv := NewServer(Options{})
	srv.Set(fixtureSnapshot(t, nil))
	for _, path := range []string{"/", "/assets/app.js", "/api/overview", "/api/anomalies", "/api/scrub", "/api/partitions/AQIDBAUGBwgREhMUFRYXGA/0"} {
		for _, method := range []string{"POST", "PUT", "PATCH", "DELETE"} {
			if status, _, body := do(t, srv, method, path); status != 405 {
				t.Errorf("%s %s: status %d, want 405: %s", method, path, status, body)
			}
		}
		if status, _, _ := do(t, srv, "HEAD", path); status != 200 {
			t.Errorf("HEAD %s: status %d, want 200", path, status)
		}
	}
}

// The page and its assets come from the binary, with their types.
func TestAssets(t *testing.T) {
	srv := NewServer(Options{})
	cases := []struct {
		path, ctype, contains string
	}{
		{"/", "text/html; charset=utf-8", `<svg id="timeline"`},
		{"/assets/app.js", "text/javascript; charset=utf-8", "function drawTimeline"},
		{"/assets/style.css", "text/css; charset=utf-8", "#timeline"},
	}
	for _, c := range cases {
		status, ctype, body := do(t, srv, "GET", c.path)
		if status != 200 || ctype != c.ctype || !strings.Contains(string(body), c.contains) {
			t.Errorf("GET %s: status %d, type %q (want 200, %q), contains %q: %v", c.path, status, ctype, c.ctype, c.contains, strings.Contains(string(body), c.contains))
		}
	}
	if status, _, _ := do(t, srv, "GET", "/assets/nothing.js"); status != 404 {
		t.Errorf("GET /assets/nothing.js: status %d, want 404", status)
	}
}

// Before the first reading the API says so; a failed re-reading keeps the
// snapshot and shows its error.
func TestNotReadYetAndFailedRefresh(t *testing.T) {
	srv := NewServer(Options{RefreshEvery: time.Minute})
	status, _, body := do(t, srv, "GET", "/api/overview")
	if status != 503 {
		t.Fatalf("before Set: status %d, want 503", status)
	}
	mustEqualJSON(t, body, `{"error": "the metadata log has not been read yet"}`)
	srv.Set(fixtureSnapshot(t, nil))
	srv.SetError(errors.New("broker down"), readAt.Add(time.Minute))
	_, _, body = do(t, srv, "GET", "/api/overview")
	var o Overview
	if err := json.Unmarshal(body, &o); err != nil {
		t.Fatal(err)
	}
	if o.LastError != "broker down" || o.LastErrorAt == nil || !o.LastErrorAt.Equal(readAt.Add(time.Minute)) ||
		o.RefreshEveryMs != 60_000 || o.Counts.Records != 16 {
		t.Fatalf("overview after a failed refresh: error %q at %v, refresh %d ms, %d records", o.LastError, o.LastErrorAt, o.RefreshEveryMs, o.Counts.Records)
	}
}

// With storage given, scrub's findings are served whole, summed up in the
// overview and per partition.
func TestScrubFindings(t *testing.T) {
	missing := scrub.PartitionReport{TopicIDPartition: "AQIDBAUGBwgREhMUFRYXGA:orders-0", LiveSegments: 7,
		Missing: []scrub.Missing{{SegmentID: "AAAAAAAAdwAAAAAAAAAAAg", State: "COPY_SEGMENT_FINISHED", StartOffset: 100, EndOffset: 199,
			Keys: []string{"orders-0/seg.log"}}}, Orphans: []scrub.Orphan{}, Mismatches: []scrub.Mismatch{}}
	rep := &scrub.Report{Layout: "local", Summary: scrub.Summary{Objects: 9, Bytes: 8000, LiveSegments: 8, Partitions: 2, Missing: 1},
		Warnings: []string{}, Partitions: []scrub.PartitionReport{missing}}
	srv := NewServer(Options{})
	srv.Set(fixtureSnapshot(t, &Scrub{Store: "directory /t", Report: rep}))
	_, _, body := do(t, srv, "GET", "/api/scrub")
	mustEqualJSON(t, body, `{"enabled": true, "store": "directory /t", "report": {"layout": "local",
		"summary": {"objects": 9, "bytes": 8000, "liveSegments": 8, "userPartitions": 2, "missing": 1, "orphans": 0,
			"orphanBytes": 0, "protectedOrphans": 0, "mismatches": 0},
		"warnings": [], "partitions": [{"topicIdPartition": "AQIDBAUGBwgREhMUFRYXGA:orders-0", "liveSegments": 7,
			"missing": [{"segmentId": "AAAAAAAAdwAAAAAAAAAAAg", "state": "COPY_SEGMENT_FINISHED", "startOffset": 100,
				"endOffset": 199, "missingKeys": ["orders-0/seg.log"]}],
			"orphans": [], "orphanBytes": 0, "mismatches": []}]}}`)
	var parts struct {
		Overview struct {
			Scrub json.RawMessage `json:"scrub"`
		}
		Orders, Payments struct {
			Scrub json.RawMessage `json:"scrub"`
		}
	}
	_, _, body = do(t, srv, "GET", "/api/overview")
	_ = json.Unmarshal(body, &parts.Overview)
	mustEqualJSON(t, parts.Overview.Scrub, `{"store": "directory /t", "layout": "local", "summary": {"objects": 9, "bytes": 8000,
		"liveSegments": 8, "userPartitions": 2, "missing": 1, "orphans": 0, "orphanBytes": 0, "protectedOrphans": 0, "mismatches": 0}}`)
	_, _, body = do(t, srv, "GET", "/api/partitions/AQIDBAUGBwgREhMUFRYXGA/0")
	_ = json.Unmarshal(body, &parts.Orders)
	want, _ := json.Marshal(missing)
	mustEqualJSON(t, parts.Orders.Scrub, string(want))
	_, _, body = do(t, srv, "GET", "/api/partitions/ISIjJCUmJygxMjM0NTY3OA/2")
	_ = json.Unmarshal(body, &parts.Payments)
	mustEqualJSON(t, parts.Payments.Scrub, `null`)

	srv.Set(fixtureSnapshot(t, &Scrub{Store: "bucket b", Error: "listing: access denied"}))
	_, _, body = do(t, srv, "GET", "/api/scrub")
	mustEqualJSON(t, body, `{"enabled": true, "store": "bucket b", "report": null, "error": "listing: access denied"}`)
}

// Lanes: the lowest lane free at a segment's start; a segment starting
// right after another's end shares its lane.
func TestAssignLanes(t *testing.T) {
	cases := []struct {
		name  string
		spans [][2]int64
		lanes []int
		count int
	}{
		{"none", nil, []int{}, 0},
		{"end to end", [][2]int64{{0, 9}, {10, 19}, {20, 29}}, []int{0, 0, 0}, 1},
		{"an overlap", [][2]int64{{0, 9}, {5, 14}, {15, 19}}, []int{0, 1, 0}, 2},
		{"one inside another", [][2]int64{{0, 99}, {10, 19}, {20, 29}, {100, 109}}, []int{0, 1, 1, 0}, 2},
		{"three deep", [][2]int64{{0, 9}, {0, 9}, {0, 9}, {5, 20}}, []int{0, 1, 2, 3}, 4},
		{"lower lane freed first", [][2]int64{{0, 50}, {10, 19}, {30, 60}, {55, 70}}, []int{0, 1, 1, 0}, 2},
	}
	for _, c := range cases {
		segs := make([]Segment, len(c.spans))
		for i, s := range c.spans {
			segs[i] = Segment{StartOffset: s[0], EndOffset: s[1]}
		}
		n := assignLanes(segs)
		got := make([]int, len(segs))
		for i := range segs {
			got[i] = segs[i].Lane
		}
		if n != c.count || !equalInts(got, c.lanes) {
			t.Errorf("%s: lanes %v (%d), want %v (%d)", c.name, got, n, c.lanes, c.count)
		}
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Refresh re-reads on its interval, keeps the snapshot when a reading
// fails, and returns when its context ends.
func TestRefresh(t *testing.T) {
	srv := NewServer(Options{RefreshEvery: time.Millisecond})
	first := fixtureSnapshot(t, nil)
	srv.Set(first)
	var calls atomic.Int32
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	second := fixtureSnapshot(t, nil)
	go func() {
		defer close(done)
		Refresh(ctx, srv, time.Millisecond, func(context.Context) (*Snapshot, error) {
			switch calls.Add(1) {
			case 1:
				return nil, errors.New("broker down")
			case 2:
				return second, nil
			}
			cancel()
			return nil, ctx.Err()
		}, nil)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Refresh did not return after its context ended")
	}
	srv.mu.Lock()
	snap, lastErr := srv.snap, srv.lastErr
	srv.mu.Unlock()
	if calls.Load() != 3 || snap != second || lastErr != "" {
		t.Fatalf("after 3 readings (%d): snapshot is the second %v, last error %q", calls.Load(), snap == second, lastErr)
	}
	// Interval 0: read once, never again.
	Refresh(context.Background(), srv, 0, func(context.Context) (*Snapshot, error) {
		t.Fatal("Refresh with interval 0 read the log")
		return nil, nil
	}, nil)
}

// Requests are served concurrently from one snapshot while another is set
// (run with -race).
func TestConcurrentRequests(t *testing.T) {
	srv := NewServer(Options{})
	srv.Set(fixtureSnapshot(t, nil))
	next := fixtureSnapshot(t, nil)
	done := make(chan struct{})
	for range 4 {
		go func() {
			defer func() { done <- struct{}{} }()
			for _, path := range []string{"/api/overview", "/api/partitions/AQIDBAUGBwgREhMUFRYXGA/0", "/api/anomalies", "/api/scrub", "/"} {
				if status, _, body := do(t, srv, "GET", path); status != 200 {
					t.Errorf("GET %s: status %d: %s", path, status, body)
				}
			}
		}()
	}
	srv.Set(next)
	for range 4 {
		<-done
	}
}

package console

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"
	"time"

	"github.com/rlmm-go/rlmm/console/consoletest"
	"github.com/rlmm-go/rlmm/internal/view"
)

// readAt is the reading time of the test snapshots.
var readAt = time.Date(2026, 1, 1, 3, 0, 0, 0, time.UTC)

// fixtureBuilder returns a view of consoletest's records.
func fixtureBuilder(t *testing.T) *view.Builder {
	t.Helper()
	recs, err := consoletest.Records()
	if err != nil {
		t.Fatal(err)
	}
	b := view.NewBuilder(consoletest.MetadataPartitions)
	for _, r := range recs {
		if _, err := b.Apply(r); err != nil {
			t.Fatalf("applying record %d of metadata partition %d: %v", r.Offset, r.Partition, err)
		}
	}
	return b
}

// fixtureSnapshot returns the snapshot of consoletest's log read at readAt,
// ages measured against its newest event, stuck after an hour.
func fixtureSnapshot(t *testing.T, sc *Scrub) *Snapshot {
	t.Helper()
	b := fixtureBuilder(t)
	return NewSnapshot(Input{Source: "embedded log test", Builder: b, ReadAt: readAt, ReferenceMs: b.NewestEventMs(),
		StuckAfter: time.Hour, Scrub: sc})
}

// do sends one request to srv and returns the status, the Content-Type and
// the body.
func do(t *testing.T, srv http.Handler, method, path string) (int, string, []byte) {
	t.Helper()
	req := httptest.NewRequest(method, path, nil)
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, req)
	body, err := io.ReadAll(rec.Result().Body)
	if err != nil {
		t.Fatal(err)
	}
	return rec.Code, rec.Header().Get("Content-Type"), body
}

// mustEqualJSON fails t when got and want are not the same JSON value.
func mustEqualJSON(t *testing.T, got []byte, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("the answer is not JSON: %v\n%s", err, got)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("the expected answer is not JSON: %v\n%s", err, want)
	}
	if !reflect.DeepEqual(g, w) {
		var pretty bytes.Buffer
		_ = json.Indent(&pretty, got, "", "  ")
		t.Fatalf("answer differs:\ngot  %s\nwant %s", pretty.String(), want)
	}
}

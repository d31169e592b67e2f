package browser

import (
	"context"
	"math"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/console/consoletest"
	"github.com/rlmm-go/rlmm/eventlog/filelog"
	"github.com/rlmm-go/rlmm/eventlog/kafkalog"
)

// The console of an embedded log holding consoletest's partitions draws
// the known partition's timeline in Chromium.
func TestConsoleInChromium(t *testing.T) {
	ctx := newBrowser(t)
	dir := t.TempDir()
	l, err := filelog.Open(dir, filelog.Options{Partitions: consoletest.MetadataPartitions})
	if err != nil {
		t.Fatal(err)
	}
	err = consoletest.Publish(context.Background(), l)
	if cerr := l.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	url := startConsole(t, "--dir", dir)
	checkPage(t, ctx, url, "dir")
}

// The same against a real Kafka broker's metadata topic (make test's
// broker, RLMM_KAFKA_BOOTSTRAP): the fixture published with rlmm's kafkalog
// to a fresh topic, the console reading it with --kafka.
func TestConsoleInChromiumKafka(t *testing.T) {
	addr := os.Getenv("RLMM_KAFKA_BOOTSTRAP")
	if addr == "" {
		cannotRun(t, "RLMM_KAFKA_BOOTSTRAP unset: no Kafka broker; `go run ./test/kafkatest/cmd/kafkatest start <dir>` starts one and prints it (make test does)")
	}
	ctx := newBrowser(t)
	topic := "rlmm-console-test." + rlmm.RandomUuid().String()[:8]
	openCtx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	l, err := kafkalog.Open(openCtx, kafkalog.Config{BootstrapServers: strings.Split(addr, ","), Topic: topic,
		NumPartitions: consoletest.MetadataPartitions, ReplicationFactor: 1, MinInSyncReplicas: 1})
	if err != nil {
		t.Fatalf("opening topic %s at %s: %v", topic, addr, err)
	}
	err = consoletest.Publish(openCtx, l)
	l.Close()
	if err != nil {
		t.Fatal(err)
	}
	url := startConsole(t, "--kafka", addr, "--kafka-topic", topic)
	checkPage(t, ctx, url, "kafka")
}

// span is one drawn rectangle of a segment's leader epoch.
type span struct {
	Epoch int32   `json:"epoch"`
	Fill  string  `json:"fill"`
	X     float64 `json:"x"`
	W     float64 `json:"w"`
}

// drawn is what the page shows, read from its DOM.
type drawn struct {
	Drawn    string `json:"drawn"`
	Title    string `json:"title"`
	Segments []struct {
		ID      string `json:"id"`
		State   string `json:"state"`
		Stuck   bool   `json:"stuck"`
		Hatched bool   `json:"hatched"`
		Lane    int    `json:"lane"`
		Spans   []span `json:"spans"`
	} `json:"segments"`
	Gaps      []mark   `json:"gaps"`
	Overlaps  []mark   `json:"overlaps"`
	Topics    []string `json:"topics"`
	Anomalies []string `json:"anomalies"`
}

// mark is a gap or overlap marker: its offsets and where it is drawn.
type mark struct {
	First int64   `json:"first"`
	Last  int64   `json:"last"`
	X     float64 `json:"x"`
	W     float64 `json:"w"`
}

// readDOM collects what drawn holds, from the page's elements.
const readDOM = `(() => {
  const svg = document.getElementById('timeline');
  const num = (e, a) => Number(e.getAttribute(a));
  const marks = (cls) => [...svg.querySelectorAll('rect.' + cls)].map((r) => ({
    first: Number(r.dataset.first), last: Number(r.dataset.last), x: num(r, 'x'), w: num(r, 'width') }));
  return {
    drawn: svg.dataset.drawn || '',
    title: document.getElementById('timeline-title').textContent,
    segments: [...svg.querySelectorAll('g.seg')].map((g) => ({
      id: g.dataset.segmentId, state: g.dataset.state, stuck: g.classList.contains('stuck'),
      hatched: g.querySelector('rect.hatch') !== null, lane: Number(g.dataset.lane),
      spans: [...g.querySelectorAll('rect.span')].map((r) => ({
        epoch: Number(r.dataset.epoch), fill: r.getAttribute('fill'), x: num(r, 'x'), w: num(r, 'width') })),
    })),
    gaps: marks('gap'),
    overlaps: marks('overlap'),
    topics: [...document.querySelectorAll('#topics tbody tr td:first-child')].map((td) => td.textContent),
    anomalies: [...document.querySelectorAll('#anomalies tbody tr')].map((tr) => tr.dataset.kind),
  };
})()`

// checkPage loads the console's page on the Orders partition, checks the
// timeline against consoletest.OrdersTimeline and saves a screenshot.
func checkPage(t *testing.T, ctx context.Context, url, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, testTimeout)
	defer cancel()
	orders := consoletest.Orders
	err := chromedp.Do(ctx,
		chromedp.Navigate(url+"#p="+orders.TopicID.String()+"/0"),
		chromedp.WaitReady(`body[data-loaded]`),
		chromedp.WaitReady(`svg#timeline[data-drawn]`),
	)
	if err != nil {
		t.Fatalf("loading %s in Chromium: %v", url, err)
	}
	got, err := chromedp.Run(ctx, chromedp.Evaluate[drawn](readDOM))
	if err != nil {
		t.Fatalf("reading the page's DOM: %v", err)
	}
	t.Logf("screenshot of the console: %s", screenshot(t, ctx, name))

	want := consoletest.OrdersTimeline
	if got.Drawn != orders.String() || !strings.Contains(got.Title, "orders-0") {
		t.Fatalf("the timeline drew %q (%q), want %s", got.Drawn, got.Title, orders)
	}
	if !slices.Equal(got.Topics, []string{"orders", "payments"}) {
		t.Errorf("topics table: %v, want [orders payments]", got.Topics)
	}
	if !slices.Equal(got.Anomalies, []string{"stuck_copy", "offset_gap", "overlapping_segments", "offset_gap"}) {
		t.Errorf("anomalies listed: %v", got.Anomalies)
	}
	if len(got.Segments) != want.Segments {
		t.Fatalf("%d segments drawn, want %d: %+v", len(got.Segments), want.Segments, got.Segments)
	}
	spans, byEpoch := 0, map[int32]int{}
	fillOf := map[int32]string{}
	for i, s := range got.Segments {
		n := int64(i + 1)
		if id := consoletest.SegmentID(orders, n).ID.String(); s.ID != id {
			t.Errorf("segment %d drawn is %s, want %s", n, s.ID, id)
		}
		started := slices.Contains(want.Started, n)
		deleting := slices.Contains(want.Deleting, n)
		if s.Hatched != (started || deleting) || s.Stuck != slices.Contains(want.Stuck, n) {
			t.Errorf("segment %d (%s): hatched %v, stuck %v", n, s.State, s.Hatched, s.Stuck)
		}
		if started && s.State != "COPY_SEGMENT_STARTED" || deleting && s.State != "DELETE_SEGMENT_STARTED" {
			t.Errorf("segment %d: state %s", n, s.State)
		}
		for _, sp := range s.Spans {
			spans++
			byEpoch[sp.Epoch]++
			if f, ok := fillOf[sp.Epoch]; ok && f != sp.Fill {
				t.Errorf("leader epoch %d drawn in %s and %s", sp.Epoch, f, sp.Fill)
			}
			fillOf[sp.Epoch] = sp.Fill
		}
	}
	if spans != want.Spans || !reflect.DeepEqual(byEpoch, want.SpansByEpoch) {
		t.Errorf("epoch spans drawn: %d %v, want %d %v", spans, byEpoch, want.Spans, want.SpansByEpoch)
	}
	if fillOf[0] == "" || fillOf[0] == fillOf[1] {
		t.Errorf("leader epochs 0 and 1 drawn in %q and %q: want two colours", fillOf[0], fillOf[1])
	}
	// Segment 4 overlaps segment 3: a second lane; every other one in the first.
	for i, s := range got.Segments {
		if wantLane := 0; i == 3 && s.Lane != 1 || i != 3 && s.Lane != wantLane {
			t.Errorf("segment %d in lane %d", i+1, s.Lane)
		}
	}
	checkMarks(t, "gap", got.Gaps, want.Gaps)
	checkMarks(t, "overlap", got.Overlaps, want.Overlaps)
	// Where: the first gap runs from the end of segment 2 to the start of
	// segment 3, the overlap from segment 4's start to segment 3's end.
	seg2, seg3, seg4 := got.Segments[1].Spans, got.Segments[2].Spans, got.Segments[3].Spans
	if len(got.Gaps) > 0 && len(seg2) == 1 && len(seg3) == 2 && len(seg4) == 1 {
		g := got.Gaps[0]
		if !near(g.X, seg2[0].X+seg2[0].W) || !near(g.X+g.W, seg3[0].X) {
			t.Errorf("gap [200, 249] drawn at x %.2f..%.2f, segments 2 and 3 end and start at %.2f and %.2f",
				g.X, g.X+g.W, seg2[0].X+seg2[0].W, seg3[0].X)
		}
		if o := got.Overlaps; len(o) == 1 && (!near(o[0].X, seg4[0].X) || !near(o[0].X+o[0].W, seg3[1].X+seg3[1].W)) {
			t.Errorf("overlap [340, 349] drawn at x %.2f..%.2f, segment 4 starts at %.2f, segment 3 ends at %.2f",
				o[0].X, o[0].X+o[0].W, seg4[0].X, seg3[1].X+seg3[1].W)
		}
	}
}

func checkMarks(t *testing.T, what string, got []mark, want [][2]int64) {
	t.Helper()
	var offs [][2]int64
	for _, m := range got {
		offs = append(offs, [2]int64{m.First, m.Last})
	}
	if !reflect.DeepEqual(offs, want) {
		t.Errorf("%s markers at %v, want %v", what, offs, want)
	}
}

func near(a, b float64) bool { return math.Abs(a-b) < 0.01 }

package svgchart

import (
	"bytes"
	"encoding/xml"
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"
)

// node is an SVG element, parsed generically.
type node struct {
	XMLName xml.Name
	Attrs   []xml.Attr `xml:",any,attr"`
	Nodes   []node     `xml:",any"`
	Text    string     `xml:",chardata"`
}

func (n node) attr(name string) string {
	for _, a := range n.Attrs {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

// walk calls f on n and every element under it.
func (n node) walk(f func(node)) {
	f(n)
	for _, c := range n.Nodes {
		c.walk(f)
	}
}

func parse(t *testing.T, svg []byte) node {
	t.Helper()
	var root node
	if err := xml.NewDecoder(bytes.NewReader(svg)).Decode(&root); err != nil {
		t.Fatalf("the SVG does not parse: %v\n%s", err, svg)
	}
	if root.XMLName.Local != "svg" {
		t.Fatalf("root element %q, want svg", root.XMLName.Local)
	}
	return root
}

// TestLogLogSeries checks that every series is drawn as one group holding a
// line through its points and one marker per point, in the order given, on
// a logarithmic x axis ticked at the points' x values, that the legend
// names each series, and that the labels are written.
func TestLogLogSeries(t *testing.T) {
	events := []float64{1e6, 1e7, 3e7}
	c := Chart{
		Title: "restart <curve> & ratio", XLabel: "events", YLabel: "seconds",
		XTick: func(v float64) string { return strconv.FormatFloat(v/1e6, 'g', -1, 64) + "M" },
		Series: []Series{
			{Name: "Kafka's RLMM", Points: []Point{{X: events[0], Y: 1.7, Label: "12x"}, {X: events[1], Y: 17, Label: "40x"}, {X: events[2], Y: 50, Label: "80x"}}},
			{Name: "rlmm's plugin", Points: []Point{{X: events[0], Y: 0.14}, {X: events[1], Y: 0.4}, {X: events[2], Y: 0.6}}},
			{Name: "no tiered storage", Points: []Point{{X: events[0], Y: 0.05}, {X: events[1], Y: 0.06}, {X: events[2], Y: 0.07}}},
		},
		Note: "a note",
	}
	svg, err := LogLog(c)
	if err != nil {
		t.Fatal(err)
	}
	root := parse(t, svg)
	var series []node
	var labels, legend, xticks []string
	root.walk(func(n node) {
		switch n.attr("class") {
		case "xtick":
			xticks = append(xticks, n.Text)
		case "series":
			series = append(series, n)
		case "label":
			labels = append(labels, n.Text)
		case "legend":
			n.walk(func(m node) {
				if m.XMLName.Local == "text" {
					legend = append(legend, m.Text)
				}
			})
		}
	})
	if len(series) != len(c.Series) {
		t.Fatalf("%d series groups, want %d", len(series), len(c.Series))
	}
	for i, g := range series {
		want := c.Series[i]
		if g.attr("data-name") != want.Name {
			t.Errorf("series %d named %q, want %q", i, g.attr("data-name"), want.Name)
		}
		var lines, points int
		var xs []float64
		for _, n := range g.Nodes {
			switch {
			case n.XMLName.Local == "polyline":
				lines++
				if got := len(strings.Fields(n.attr("points"))); got != len(want.Points) {
					t.Errorf("series %q: polyline of %d points, want %d", want.Name, got, len(want.Points))
				}
				for _, p := range strings.Fields(n.attr("points")) {
					x, _, err := parsePoint(p)
					if err != nil {
						t.Fatalf("polyline point %q: %v", p, err)
					}
					xs = append(xs, x)
				}
			case n.attr("class") == "point":
				points++
			}
		}
		if lines != 1 || points != len(want.Points) {
			t.Errorf("series %q: %d lines and %d markers, want 1 and %d", want.Name, lines, points, len(want.Points))
		}
		// Log x axis: 1M to 10M is one decade, 10M to 30M log10(3) of one.
		if len(xs) == 3 {
			ratio := (xs[2] - xs[1]) / (xs[1] - xs[0])
			if math.Abs(ratio-math.Log10(3)) > 0.01 {
				t.Errorf("series %q: x spacing ratio %.3f, want log10(3) = %.3f (a log axis)", want.Name, ratio, math.Log10(3))
			}
		}
	}
	if strings.Join(legend, "|") != "Kafka's RLMM|rlmm's plugin|no tiered storage" {
		t.Errorf("legend %q", legend)
	}
	if strings.Join(xticks, "|") != "1M|10M|30M" {
		t.Errorf("x ticks %q, want one at each event count", xticks)
	}
	if strings.Join(labels, "|") != "12x|40x|80x" {
		t.Errorf("labels %q, want the three ratios", labels)
	}
	if !bytes.Contains(svg, []byte("restart &lt;curve&gt; &amp; ratio")) {
		t.Errorf("the title is not escaped")
	}
}

// parsePoint parses a polyline point "x,y".
func parsePoint(p string) (x, y float64, err error) {
	a, b, ok := strings.Cut(p, ",")
	if !ok {
		return 0, 0, errors.New("no comma")
	}
	if x, err = strconv.ParseFloat(a, 64); err != nil {
		return 0, 0, err
	}
	y, err = strconv.ParseFloat(b, 64)
	return x, y, err
}

// TestLogLogDeterministic: the same chart gives the same bytes (the file
// is committed; a rerun with the same figures must not change it).
func TestLogLogDeterministic(t *testing.T) {
	c := Chart{Series: []Series{{Name: "a", Points: []Point{{X: 10, Y: 1}, {X: 100, Y: 2}}}}}
	a, err := LogLog(c)
	if err != nil {
		t.Fatal(err)
	}
	b, err := LogLog(c)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Fatal("two renderings of one chart differ")
	}
	parse(t, a)
}

// TestLogLogRejects names what it cannot draw.
func TestLogLogRejects(t *testing.T) {
	for _, tc := range []struct {
		name  string
		chart Chart
		want  string
	}{
		{"no series", Chart{}, "no series"},
		{"empty series", Chart{Series: []Series{{Name: "a"}}}, `series "a" has no point`},
		{"zero", Chart{Series: []Series{{Name: "a", Points: []Point{{X: 0, Y: 1}}}}}, "not positive"},
		{"negative", Chart{Series: []Series{{Name: "a", Points: []Point{{X: 1, Y: -1}}}}}, "not positive"},
		{"NaN", Chart{Series: []Series{{Name: "a", Points: []Point{{X: 1, Y: math.NaN()}}}}}, "not positive"},
		{"infinite", Chart{Series: []Series{{Name: "a", Points: []Point{{X: math.Inf(1), Y: 1}}}}}, "finite"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LogLog(tc.chart)
			if !errors.Is(err, ErrBadChart) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("LogLog = %v, want ErrBadChart naming %q", err, tc.want)
			}
		})
	}
}

// TestLogLogOnePoint: a single x value still gets a decade-wide axis.
func TestLogLogOnePoint(t *testing.T) {
	svg, err := LogLog(Chart{Series: []Series{{Name: "a", Points: []Point{{X: 1e6, Y: 3}}}}})
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(svg, []byte("NaN")) || bytes.Contains(svg, []byte("Inf")) {
		t.Fatalf("coordinates not finite:\n%s", svg)
	}
	parse(t, svg)
}

package svgchart

import (
	"encoding/xml"
	"errors"
	"fmt"
	"math"
	"strings"
)

// Point is one point of a series, in data units (both > 0: the axes are
// logarithmic).
type Point struct {
	X, Y float64
	// Label, when set, is written beside the point (e.g. a ratio).
	Label string
}

// Series is one line of the chart.
type Series struct {
	Name   string
	Points []Point // drawn in the order given
}

// Chart is what LogLog draws.
type Chart struct {
	Title  string
	XLabel string
	YLabel string
	// XTick and YTick format an axis's tick values (default %g).
	XTick, YTick func(float64) string
	Series       []Series
	// Note is a line of small text under the plot (e.g. the source).
	Note string
}

// ErrBadChart is returned for a chart LogLog cannot draw.
var ErrBadChart = errors.New("svgchart: bad chart")

// The drawing's geometry, in SVG user units (px): the plot, under it the
// x axis's ticks and label (padBottom), then the legend, a line per
// series, and the note.
const (
	width     = 820.0
	padLeft   = 80.0
	padRight  = 30.0
	padTop    = 50.0
	padBottom = 60.0
	plotW     = width - padLeft - padRight
	plotH     = 400.0
	legendRow = 20.0
)

// style is a series' color, dash pattern and marker shape, by its index.
type style struct{ color, dash, marker string }

var styles = []style{
	{"#d62728", "", "circle"},    // red, solid
	{"#1f77b4", "8 4", "square"}, // blue, dashed
	{"#7f7f7f", "2 4", "diamond"},
	{"#2ca02c", "12 4 2 4", "circle"},
	{"#9467bd", "", "square"},
}

// LogLog returns the chart as an SVG document, both axes in decades.
func LogLog(c Chart) ([]byte, error) {
	if len(c.Series) == 0 {
		return nil, fmt.Errorf("%w: no series", ErrBadChart)
	}
	xs, ys := span{math.Inf(1), math.Inf(-1)}, span{math.Inf(1), math.Inf(-1)}
	for _, s := range c.Series {
		if len(s.Points) == 0 {
			return nil, fmt.Errorf("%w: series %q has no point", ErrBadChart, s.Name)
		}
		for _, p := range s.Points {
			if !(p.X > 0 && p.Y > 0) || math.IsInf(p.X, 0) || math.IsInf(p.Y, 0) {
				return nil, fmt.Errorf("%w: series %q: point (%v, %v) is not positive and finite (log axes)", ErrBadChart, s.Name, p.X, p.Y)
			}
			xs.add(p.X)
			ys.add(p.Y)
		}
	}
	xt, yt := c.XTick, c.YTick
	if xt == nil {
		xt = func(v float64) string { return fmt.Sprintf("%g", v) }
	}
	if yt == nil {
		yt = func(v float64) string { return fmt.Sprintf("%g", v) }
	}
	// The y axis spans whole decades; the x axis the points' range and a
	// margin, its ticks at the points' x values (e.g. the event counts).
	xd, yd := xs.padded(0.15), ys.decades()
	height := padTop + plotH + padBottom + legendRow*float64(len(c.Series)) + 35
	px := func(x float64) float64 { return padLeft + plotW*(math.Log10(x)-xd.lo)/(xd.hi-xd.lo) }
	py := func(y float64) float64 { return padTop + plotH*(1-(math.Log10(y)-yd.lo)/(yd.hi-yd.lo)) }

	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	w(`<svg xmlns="http://www.w3.org/2000/svg" width="%g" height="%g" viewBox="0 0 %g %g" font-family="sans-serif" font-size="13">`+"\n", width, height, width, height)
	w(`<rect width="100%%" height="100%%" fill="white"/>` + "\n")
	w(`<text x="%g" y="28" font-size="16" font-weight="bold" text-anchor="middle">%s</text>`+"\n", width/2, esc(c.Title))

	// Grid and ticks: a line per decade and faint ones at 2..9 of it; y
	// labelled at the decades, x at the points' values.
	w(`<g class="grid" stroke-width="1">` + "\n")
	for d := math.Floor(xd.lo); d <= xd.hi; d++ {
		for m := 1; m <= 9; m++ {
			v := float64(m) * math.Pow(10, d)
			if l := math.Log10(v); l < xd.lo || l > xd.hi {
				continue
			}
			w(`<line x1="%.1f" y1="%g" x2="%.1f" y2="%g" stroke="%s"/>`+"\n", px(v), padTop, px(v), padTop+plotH, gridColor(m))
		}
	}
	seen := map[float64]bool{}
	for _, s := range c.Series {
		for _, p := range s.Points {
			if !seen[p.X] {
				seen[p.X] = true
				w(`<text class="xtick" x="%.1f" y="%g" text-anchor="middle">%s</text>`+"\n", px(p.X), padTop+plotH+18, esc(xt(p.X)))
			}
		}
	}
	for d := yd.lo; d <= yd.hi; d++ {
		for m := 1; m <= 9; m++ {
			v := float64(m) * math.Pow(10, d)
			if math.Log10(v) > yd.hi+1e-9 {
				break
			}
			y := py(v)
			w(`<line x1="%g" y1="%.1f" x2="%g" y2="%.1f" stroke="%s"/>`+"\n", padLeft, y, padLeft+plotW, y, gridColor(m))
			if m == 1 {
				w(`<text x="%g" y="%.1f" text-anchor="end" dominant-baseline="middle">%s</text>`+"\n", padLeft-8, y, esc(yt(v)))
			}
		}
	}
	w("</g>\n")
	w(`<rect class="frame" x="%g" y="%g" width="%g" height="%g" fill="none" stroke="black"/>`+"\n", padLeft, padTop, plotW, plotH)
	w(`<text class="xlabel" x="%g" y="%g" text-anchor="middle">%s</text>`+"\n", padLeft+plotW/2, padTop+plotH+42, esc(c.XLabel))
	w(`<text class="ylabel" x="18" y="%g" text-anchor="middle" transform="rotate(-90 18 %g)">%s</text>`+"\n", padTop+plotH/2, padTop+plotH/2, esc(c.YLabel))

	// The series, then their labels on top.
	for i, s := range c.Series {
		st := styles[i%len(styles)]
		w(`<g class="series" data-name="%s" stroke="%s" fill="%s">`+"\n", esc(s.Name), st.color, st.color)
		var pts []string
		for _, p := range s.Points {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(p.X), py(p.Y)))
		}
		dash := ""
		if st.dash != "" {
			dash = fmt.Sprintf(` stroke-dasharray="%s"`, st.dash)
		}
		w(`<polyline points="%s" fill="none" stroke-width="2.5"%s/>`+"\n", strings.Join(pts, " "), dash)
		for _, p := range s.Points {
			w("%s\n", marker(st.marker, px(p.X), py(p.Y), p))
		}
		w("</g>\n")
	}
	for i, s := range c.Series {
		st := styles[i%len(styles)]
		for _, p := range s.Points {
			if p.Label == "" {
				continue
			}
			w(`<text class="label" x="%.1f" y="%.1f" fill="%s" font-weight="bold" text-anchor="middle">%s</text>`+"\n",
				px(p.X), py(p.Y)-12, st.color, esc(p.Label))
		}
	}

	// The legend, under the plot (inside it, it would hide points).
	lx, ly := padLeft, padTop+plotH+padBottom+10
	w(`<g class="legend">` + "\n")
	for i, s := range c.Series {
		st := styles[i%len(styles)]
		y := ly + legendRow*float64(i)
		dash := ""
		if st.dash != "" {
			dash = fmt.Sprintf(` stroke-dasharray="%s"`, st.dash)
		}
		w(`<line x1="%g" y1="%g" x2="%g" y2="%g" stroke="%s" stroke-width="2.5"%s/>`, lx+8, y, lx+38, y, st.color, dash)
		w(`<text x="%g" y="%g" dominant-baseline="middle">%s</text>`+"\n", lx+46, y, esc(s.Name))
	}
	w("</g>\n")
	if c.Note != "" {
		w(`<text class="note" x="%g" y="%g" font-size="11" fill="#555">%s</text>`+"\n", padLeft, height-12, esc(c.Note))
	}
	w("</svg>\n")
	return []byte(b.String()), nil
}

// span is the smallest and largest value of an axis.
type span struct{ lo, hi float64 }

func (s *span) add(v float64) { s.lo, s.hi = min(s.lo, v), max(s.hi, v) }

// padded returns the span's exponents widened by pad decades each side (a
// single value: half a decade each side).
func (s span) padded(pad float64) span {
	lo, hi := math.Log10(s.lo), math.Log10(s.hi)
	if hi-lo < 1e-9 {
		pad = 0.5
	}
	return span{lo - pad, hi + pad}
}

// decades returns the whole decades (as exponents) that hold the span:
// at least one decade wide.
func (s span) decades() span {
	lo, hi := math.Floor(math.Log10(s.lo)), math.Ceil(math.Log10(s.hi))
	if hi <= lo {
		hi = lo + 1
	}
	return span{lo, hi}
}

func gridColor(m int) string {
	if m == 1 {
		return "#bbb"
	}
	return "#eee"
}

// marker draws a point's marker, its data in a <title> (a tooltip).
func marker(shape string, x, y float64, p Point) string {
	title := fmt.Sprintf("<title>%g, %g</title>", p.X, p.Y)
	switch shape {
	case "square":
		return fmt.Sprintf(`<rect class="point" x="%.1f" y="%.1f" width="9" height="9">%s</rect>`, x-4.5, y-4.5, title)
	case "diamond":
		return fmt.Sprintf(`<polygon class="point" points="%.1f,%.1f %.1f,%.1f %.1f,%.1f %.1f,%.1f">%s</polygon>`,
			x, y-6, x+6, y, x, y+6, x-6, y, title)
	default:
		return fmt.Sprintf(`<circle class="point" cx="%.1f" cy="%.1f" r="5">%s</circle>`, x, y, title)
	}
}

// esc escapes text for SVG's character data and attribute values.
func esc(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

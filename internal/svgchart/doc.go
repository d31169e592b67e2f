// Package svgchart draws a log-log line chart as a standalone SVG document:
// the restart curve of the broker benchmark (test/broker/cmd/brokerbench
// curve-report), events in the metadata topic against seconds to the first
// remote fetch, one line per RLMM, each point's label beside it.
//
// It is the standard library only (fmt, math, strings, encoding/xml for the
// escaping). gonum.org/v1/plot, the well-kept Go plotting library, was the
// alternative: it would add gonum, x/image, a PDF and a LaTeX module and
// their fonts to the go.mod of a library module for one chart of three
// lines, while a log-log chart with decade ticks, a legend and point labels
// is a page of arithmetic that a test can check by parsing the SVG (every
// series is a <g class="series"> holding one <polyline> and a marker per
// point, so a reader or a test can find them).
//
// LogLog is pure: the same Chart gives the same bytes. Text widths are
// estimated (no font metrics), which places the legend and the labels well
// enough for the sans-serif fonts SVG renderers use.
package svgchart
